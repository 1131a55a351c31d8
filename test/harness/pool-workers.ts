// Child process of test/datapath.test.ts: worker threads allocating and freeing on one device at
// the same time as the main thread, some arrays left to their finalizers, every array's data
// checked. The pool's `used` must be back where it started once the workers are gone.
import * as path from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

import * as ck from '../../lib';

const register = path.join(__dirname, 'ts-register.js');
const CYCLES = Number(process.env.CK_POOL_WORKER_CYCLES ?? 1500);

/** Allocates, uploads, checks and frees arrays of many sizes; every 7th is dropped without free(). */
async function churn(id: number): Promise<{ id: number; cycles: number; failures: string[] }> {
  const failures: string[] = [];
  const host = new Int32Array(300_000).map((_, i) => (i * 2654435761 + id) | 0);
  for (let i = 0; i < CYCLES; i++) {
    const n = 1 + ((i * 7919 + id * 104729) % host.length);
    const src = host.subarray(0, n);
    const a = ck.upload(src);
    if (i % 25 === 0) {
      const back = i % 50 === 0 ? await a.toHost() : a.toHostSync(new Int32Array(n));
      const at = ck.cpu.firstMismatch(back, src);
      if (at >= 0) failures.push(`worker ${id} cycle ${i}: element ${at} of ${n}`);
    }
    if (i % 7 !== 0) a.free();
  }
  return { id, cycles: CYCLES, failures };
}

if (isMainThread) {
  (async () => {
    ck.empty('float32', 1).free();
    ck.synchronize();
    const before = ck.memoryPool();
    const workers = [1, 2, 3, 4].map(
      (id) =>
        // The TypeScript hook first, as in the child process itself.
        new Worker(`require(${JSON.stringify(register)}); require(${JSON.stringify(__filename)});`, {
          eval: true,
          workerData: { id },
        }),
    );
    const done = workers.map(
      (w) =>
        new Promise<{ id: number; cycles: number; failures: string[] }>((resolve, reject) => {
          w.once('message', resolve);
          w.once('error', reject);
        }),
    );
    const exited = Promise.all(workers.map((w) => new Promise((r) => w.once('exit', r))));
    const mine = await churn(0);
    const results = [mine, ...(await Promise.all(done))];
    await exited;
    // The main thread's dropped arrays: collected and finalized (their frees are stream-ordered).
    for (let i = 0; i < 3; i++) {
      (globalThis as { gc?: () => void }).gc?.();
      await new Promise((r) => setTimeout(r, 20));
    }
    ck.synchronize();
    const after = ck.memoryPool();
    process.stdout.write(JSON.stringify({ results, before, after }) + '\n');
  })().catch((e) => {
    process.stdout.write(JSON.stringify({ fatal: String(e?.stack ?? e) }) + '\n');
    process.exitCode = 2;
  });
} else {
  const { id } = workerData as { id: number };
  // The worker's own dropped arrays are freed by its environment's teardown when it exits.
  churn(id).then((r) => parentPort!.postMessage(r));
}
