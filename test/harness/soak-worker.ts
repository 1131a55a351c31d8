// Worker thread of the soak (test/harness/soak.ts): large pageable copyFromAsync() calls on arrays of
// its own, started and then cut short when the soak terminates the worker at a random moment. Its
// uploads share the device's staging ring with the main thread's, which must still arrive whole.
import { parentPort, workerData } from 'node:worker_threads';

import * as ck from '../../lib';

const { sizes, seed } = workerData as { sizes: number[]; seed: number };
const arrays = sizes.map((n) => ck.empty('int32', n));
const pending = arrays.map((a, i) => {
  const src = new Int32Array(a.length);
  for (let j = 0; j < src.length; j++) src[j] = Math.imul(j + seed + i, 2654435761);
  return a.copyFromAsync(src);
});
parentPort!.postMessage('started');
void Promise.all(pending).then(() => parentPort!.postMessage('done'));
