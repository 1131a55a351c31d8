// Temporary folders for a test file, removed after its tests (left behind, the suites had piled up over
// a thousand folders in the temporary directory). Call it at the top level of the file, which
// registers the cleanup, and the function it returns wherever a test needs a new folder.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export function tempDirs(prefix: string): () => string {
  const made: string[] = [];
  afterAll(() => {
    for (const d of made) fs.rmSync(d, { recursive: true, force: true });
  });
  return () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    made.push(d);
    return d;
  };
}
