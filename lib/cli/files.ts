// File checks of the CLI commands, kept apart from the GPU code so that they run (and are tested)
// without loading the native binary.
import * as fs from 'node:fs';
import * as path from 'node:path';

import { GraphFileError } from '../io/graph';

function reason(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  return e instanceof Error ? e.message : String(e);
}

/**
 * The input must be a readable file and the output's folder must exist: checked before the GPU
 * is, so a mistyped path is reported as a file error (GraphFileError), not as a device problem.
 */
export function checkFiles(input: string, output: string): void {
  try {
    if (!fs.statSync(input).isFile()) throw new GraphFileError(input, 0, 'cannot read the input graph: not a file');
    fs.accessSync(input, fs.constants.R_OK);
  } catch (e) {
    if (e instanceof GraphFileError) throw e;
    throw new GraphFileError(input, 0, `cannot read the input graph: ${reason(e)}`);
  }
  const dir = path.dirname(path.resolve(output));
  try {
    if (!fs.statSync(dir).isDirectory()) throw new Error('not a folder');
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (e) {
    throw new GraphFileError(output, 0, `cannot write the distance matrix into ${dir}: ${reason(e)}`);
  }
  if (fs.existsSync(output) && fs.statSync(output).isDirectory()) {
    throw new GraphFileError(output, 0, 'cannot write the distance matrix: it is a folder');
  }
}
