// Child process of test/datapath.test.ts: the ends of a large pageable copyFromAsync() that only a
// process of its own can show. One mode per run (argv[2]); prints one JSON line (the last one).
//
//   gc       the source's only reference is the call's argument; collections run while it is staged
//   exit     process.exit() right after the call, while the staging threads copy: a clean exit 0
//   worker   a worker thread is terminated while its uploads are staged; the main thread's copies,
//            on the same device and ring, still arrive intact
//   cancel   the main thread's upload waits on the ring (the stream is held) when a worker's later
//            upload on the same ring is cancelled by the worker's termination: the main thread's
//            data must still arrive whole (cancelling once let its waits pass before it was staged)
//   fault    after a sticky device fault, a copy is a CudaError (the enqueue fails), and the exit is clean
//   abort    a copy held behind a busy stream is failed as a device failure would fail it: its promise
//            rejects, the stream's waits are released, later copies take the calling thread and arrive
//   path     which path a large copy took (run with CK_NO_STREAM_STAGING=1 for the fallback)
import * as path from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

import * as ck from '../../lib';
import { native } from '../../lib/native';

const MiB = 1 << 20;
const N = 64 * MiB; // 256 MiB of int32
const gc = (globalThis as { gc?: () => void }).gc;

/** Element i of the pattern that `seed` names (cheap to make and to check). */
const pattern = (n: number, seed: number) => {
  const a = new Int32Array(n);
  for (let i = 0; i < n; i++) a[i] = Math.imul(i + seed, 2654435761) ^ seed;
  return a;
};

/** The first element of `a` that differs from pattern(seed), or -1. */
const mismatch = (a: Int32Array, seed: number) => ck.cpu.firstMismatch(a, pattern(a.length, seed));

const print = (o: unknown) => process.stdout.write(JSON.stringify(o) + '\n');

async function gcMode() {
  if (!gc) throw new Error('run with --expose-gc');
  using a = ck.zeros('int32', N);
  // No variable holds the source: only the pending copy keeps it alive.
  const p = a.copyFromAsync(pattern(N, 11));
  let collections = 0;
  let settled = false;
  void p.then(() => (settled = true));
  while (!settled) {
    gc();
    collections++;
    new Array(1 << 16).fill({}); // garbage, so that the collector has something to do
    await new Promise((r) => setImmediate(r));
  }
  await p;
  print({ mismatch: mismatch(a.toHostSync(), 11), collections, path: native.uploadPath(0) });
}

function exitMode() {
  const a = ck.zeros('int32', N);
  const src = pattern(N, 5);
  void a.copyFromAsync(src);
  void a.copyFromAsync(src, { offset: 0 });
  print({ calledExit: true, path: native.uploadPath(0) });
  process.exit(0);
}

async function workerMode() {
  if (!isMainThread) {
    const arrays = [0, 1, 2, 3].map(() => ck.zeros('int32', N));
    const pending = arrays.map((a, i) => a.copyFromAsync(pattern(N, 100 + i)));
    parentPort!.postMessage('started');
    await Promise.all(pending);
    parentPort!.postMessage('finished');
    return;
  }
  const w = startWorker({ mode: 'worker' });
  let workerFinished = false;
  const started = new Promise<void>((resolve, reject) => {
    w.on('message', (m) => {
      if (m === 'started') resolve();
      if (m === 'finished') workerFinished = true;
    });
    w.on('error', reject);
  });
  await started;
  const exitCode = await w.terminate();
  // The same device, and so the same staging ring, right after.
  const results: number[] = [];
  for (const seed of [21, 22]) {
    using a = ck.zeros('int32', N);
    await a.copyFromAsync(pattern(N, seed));
    results.push(mismatch(await a.toHost(), seed));
  }
  ck.synchronize();
  print({ exitCode, workerFinished, results, path: native.uploadPath(0) });
}

function startWorker(data: unknown): Worker {
  const register = path.join(__dirname, 'ts-register.js');
  return new Worker(`require(${JSON.stringify(register)}); require(${JSON.stringify(__filename)});`, {
    eval: true,
    workerData: data,
  });
}

async function cancelMode() {
  if (!isMainThread) {
    // Enqueued behind the main thread's upload on the device's one ring; never awaited.
    const b = ck.zeros('int32', N);
    void b.copyFromAsync(pattern(N, 41)).catch(() => undefined);
    parentPort!.postMessage('started');
    return;
  }
  using a = ck.zeros('int32', N);
  await a.copyFromAsync(pattern(N, 1)); // the ring exists
  native.debugHoldStream!(0, 60_000);
  let main: Promise<unknown>;
  let exitCode: number;
  try {
    // 64 chunks over 8 slots: 8 are staged, the rest wait for the held stream to drain them.
    main = a.copyFromAsync(pattern(N, 31));
    const w = startWorker({ mode: 'cancel' });
    await new Promise<void>((resolve, reject) => {
      w.on('message', (m) => m === 'started' && resolve());
      w.on('error', reject);
    });
    exitCode = await w.terminate();
  } finally {
    native.debugReleaseStream!();
  }
  await main;
  const got = a.toHostSync() as Int32Array;
  const want = pattern(N, 31);
  let wrong = 0;
  for (let i = 0; i < N; i++) if (got[i] !== want[i]) wrong++;
  print({ exitCode, mismatch: ck.cpu.firstMismatch(got, want), wrong, path: native.uploadPath(0) });
}

async function faultMode() {
  const first = ck.zeros('int32', N);
  await first.copyFromAsync(pattern(N, 1)); // the device's ring exists, so the next copy enqueues on it
  first.free(); // before the fault: after it, free() reports the lost context too
  const a = ck.zeros('int32', N);
  const src = pattern(N, 3);
  let fault: unknown = 'none';
  try {
    native.debugFault!(1); // an illegal address: the context is lost
  } catch (e) {
    fault = (e as ck.CudaError).code;
  }
  let outcome: Record<string, unknown>;
  try {
    await a.copyFromAsync(src);
    outcome = { result: 'resolved' };
  } catch (e) {
    outcome = { result: 'failed', name: (e as Error).name, code: (e as ck.CudaError).code };
  }
  print({ fault, ...outcome, path: native.uploadPath(0) });
}

async function abortMode() {
  using a = ck.zeros('int32', N);
  await a.copyFromAsync(pattern(N, 1));
  native.debugHoldStream!(0, 30_000);
  let settled = 'pending';
  const p = a.copyFromAsync(pattern(N, 2)).then(
    () => (settled = 'resolved'),
    (e: ck.CudaError) => {
      settled = 'rejected';
      return e;
    },
  );
  // Longer than the watchdog's stall check: a stream that is merely busy must not fail the copy.
  await new Promise((r) => setTimeout(r, 1500));
  const whileHeld = settled;
  native.debugFailStagedUploads!(0);
  const error = await p;
  native.debugReleaseStream!();
  ck.synchronize(); // returns only if every wait the failed copy left was released
  using b = ck.zeros('int32', N);
  await b.copyFromAsync(pattern(N, 4));
  print({
    whileHeld,
    settled,
    code: (error as ck.CudaError).code,
    after: mismatch(b.toHostSync(), 4),
    path: native.uploadPath(0),
  });
}

async function pathMode() {
  using a = ck.zeros('int32', N);
  await a.copyFromAsync(pattern(N, 9));
  print({ mismatch: mismatch(a.toHostSync(), 9), path: native.uploadPath(0) });
}

const modes: Record<string, () => unknown> = {
  gc: gcMode,
  exit: exitMode,
  worker: workerMode,
  cancel: cancelMode,
  fault: faultMode,
  abort: abortMode,
  path: pathMode,
};
const mode = isMainThread ? (process.argv[2] ?? '') : (workerData as { mode: string }).mode;
Promise.resolve()
  .then(() => {
    if (!modes[mode]) throw new Error(`unknown mode ${mode}`);
    return modes[mode]();
  })
  .catch((e) => {
    print({ fatal: String(e?.stack ?? e) });
    process.exitCode = 1;
  });
