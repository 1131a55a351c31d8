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
 * The input must be a readable file, and the output a file that can be written: a new one in an
 * existing, writable folder, or an existing file we may write (a read-only one would otherwise fail
 * only after the whole run). Checked before the graph is read and before any GPU work, so a mistyped
 * path is reported as a file error (GraphFileError), not as a device problem.
 */
export function checkFiles(input: string, output: string): void {
  try {
    if (!fs.statSync(input).isFile()) throw new GraphFileError(input, 0, 'cannot read the input graph: not a file');
    fs.accessSync(input, fs.constants.R_OK);
  } catch (e) {
    if (e instanceof GraphFileError) throw e;
    throw new GraphFileError(input, 0, `cannot read the input graph: ${reason(e)}`);
  }
  if (fs.existsSync(output)) {
    if (fs.statSync(output).isDirectory())
      throw new GraphFileError(output, 0, 'cannot write the distance matrix: it is a folder');
    try {
      fs.accessSync(output, fs.constants.W_OK);
    } catch (e) {
      throw new GraphFileError(output, 0, `cannot write the distance matrix over the existing file: ${reason(e)}`);
    }
    // An existing file is written in place: its folder's permissions do not matter (/dev/null, a
    // writable file in a read-only folder).
    return;
  }
  const dir = path.dirname(path.resolve(output));
  try {
    if (!fs.statSync(dir).isDirectory()) throw new Error('not a folder');
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (e) {
    throw new GraphFileError(output, 0, `cannot write the distance matrix into ${dir}: ${reason(e)}`);
  }
}
