// Child process of test/workers.test.ts: several worker_threads load the addon at once, each runs
// every family and variant on its own arrays and checks the results; one worker is terminated
// with arrays and a copy in flight; the main thread exits with live device arrays. The parent
// checks this process exits with code 0.
import * as path from 'node:path';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

import * as ck from '../../lib';
import { FAMILIES, type Limits } from './families';
import fc from 'fast-check';

const WORKERS = Number(process.env.CK_WORKERS ?? 4);
const LIMITS: Limits = { side: 96, length: 5000 };

async function work(id: number, rounds: number): Promise<{ id: number; cases: number; failures: string[] }> {
  const failures: string[] = [];
  let cases = 0;
  for (let round = 0; round < rounds; round++) {
    for (const family of FAMILIES) {
      const [p] = fc.sample(family.params(LIMITS), { seed: id * 1000 + round, numRuns: 1 });
      const prepared = family.prepare(p);
      try {
        for (const method of family.methods) {
          const ran = prepared.run(method);
          const error = await ran.check();
          for (const o of ran.outputs) o.free();
          cases++;
          if (error) failures.push(`worker ${id}: ${family.name} ${method} ${family.label(p)}: ${error}`);
        }
      } finally {
        for (const a of prepared.inputs) a.free();
      }
    }
  }
  return { id, cases, failures };
}

const register = path.join(__dirname, 'ts-register.js');
const spawnWorker = (data: unknown) =>
  new Worker(`require(${JSON.stringify(register)}); require(${JSON.stringify(__filename)});`, {
    eval: true,
    workerData: data,
  });

if (isMainThread) {
  (async () => {
    const results = await Promise.all(
      Array.from(
        { length: WORKERS },
        (_, id) =>
          new Promise<unknown>((resolve, reject) => {
            const w = spawnWorker({ id, mode: 'work' });
            w.once('message', resolve);
            w.once('error', reject);
            w.once('exit', (code) => code !== 0 && reject(new Error(`worker ${id} exited with ${code}`)));
          }),
      ).concat([work(99, 1)]),
    );
    // A worker terminated while it holds arrays and has copies in flight: its environment's
    // teardown runs the finalizers, and the process carries on.
    const doomed = spawnWorker({ id: 100, mode: 'terminate' });
    await new Promise<void>((resolve) => doomed.once('message', () => resolve()));
    const code = await doomed.terminate();
    // And the main thread exits with live arrays (no free()): the exit must be clean.
    const live = [ck.upload(new Float32Array(1000).fill(1)), ck.zeros('float64', 12345)];
    const check = await live[0].toHost();
    process.stdout.write(
      JSON.stringify({ results, terminatedExit: code, liveArrays: live.length, liveOk: check[999] === 1 }) + '\n',
    );
  })().catch((e) => {
    process.stdout.write(JSON.stringify({ fatal: String(e?.stack ?? e) }) + '\n');
    process.exitCode = 2;
  });
} else {
  const { id, mode } = workerData as { id: number; mode: string };
  if (mode === 'work') {
    work(id, 2).then((r) => {
      // Leave one live array behind: the worker's exit frees it.
      ck.upload(new Int32Array(100).fill(id));
      parentPort!.postMessage(r);
    });
  } else {
    const arrays = Array.from({ length: 20 }, (_, i) => ck.upload(ck.cpu.randomArray(Float64Array, 100_000, i + 1)));
    for (const a of arrays) void a.toHost();
    parentPort!.postMessage('ready');
  }
}
