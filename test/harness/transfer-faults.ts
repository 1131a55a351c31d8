// Child process of test/datapath.test.ts: what a device failure leaves behind in the host-side
// transfer machinery, which only a process of its own can show (the fault loses the context for the
// rest of the process). One mode per run (argv[2]); prints one JSON line (the last one).
//
//   lost-stream   two large toHost() calls (a new array, and a caller's pageable target) are made,
//                 then the device fails before their libuv work starts, which is the first use of the
//                 device's transfer stream: the promises must reject with a CudaError and the process
//                 exit cleanly (the workers' destructors used to call transferStream(), which throws
//                 when the stream cannot be made, and an exception out of a destructor aborts)
//   exit          process.exit() while large toHost() calls (new arrays and caller targets) are
//                 being brought down by libuv threads: a clean exit 0
//   worker        a worker thread is terminated while its large toHost() calls run; the main thread's
//                 copies on the same device still arrive intact
//   other-device  (two GPUs) a large pageable copy on device 1 leaves the last slots of a pinned ring
//                 recorded on device 1's stream; device 1 then fails. Device 0 is untouched, and its
//                 large pageable copies, which lease the same ring, must work
import { pbkdf2 } from 'node:crypto';
import * as path from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

import * as ck from '../../lib';
import { native } from '../../lib/native';

const MiB = 1 << 20;

const print = (o: unknown) => process.stdout.write(JSON.stringify(o) + '\n');
const code = (e: unknown) => (e as ck.CudaError).code ?? String(e);

const pattern = (n: number, seed: number) => {
  const a = new Int32Array(n);
  for (let i = 0; i < n; i++) a[i] = Math.imul(i + seed, 2654435761) ^ seed;
  return a;
};

async function lostStream() {
  const n = 4 * MiB + 1; // above 1 MiB: a snapshot on the device, brought down on the transfer stream
  const a = ck.zeros('float32', n);
  const b = ck.zeros('float32', n);
  // Every libuv thread busy (run with UV_THREADPOOL_SIZE=4), so that the copies' work starts after the
  // fault below, and their first transferStream() call meets a lost context.
  const busy = Array.from(
    { length: 4 },
    () => new Promise((resolve) => pbkdf2('key', 'salt', 1_500_000, 64, 'sha512', resolve)),
  );
  const fresh = a.toHost().then(
    () => 'resolved',
    (e: unknown) => code(e),
  );
  const target = b.toHost(new Float32Array(n)).then(
    () => 'resolved',
    (e: unknown) => code(e),
  );
  let fault = 'none';
  try {
    native.debugFault!(1);
  } catch (e) {
    fault = code(e);
  }
  await Promise.all(busy);
  print({ fault, fresh: await fresh, target: await target });
}

async function otherDevice() {
  const n = 8 * MiB; // 32 MiB of int32: through a pinned ring
  const src = pattern(n, 7);
  const d1 = ck.zeros('int32', n, { device: 1 });
  d1.copyFrom(src); // returns with the ring's last slots recorded on device 1's stream
  let fault = 'none';
  try {
    native.debugFault!(1, 1);
  } catch (e) {
    fault = code(e);
  }
  const out: Record<string, unknown> = { fault };
  using d0 = ck.zeros('int32', n, { device: 0 });
  for (const step of ['first', 'second']) {
    try {
      d0.copyFrom(pattern(n, 11));
      out[`${step} copyFrom`] = ck.cpu.firstMismatch(d0.toHostSync(), pattern(n, 11));
    } catch (e) {
      out[`${step} copyFrom`] = code(e);
    }
  }
  try {
    out.toHost = ck.cpu.firstMismatch(await d0.toHost(new Int32Array(n)), pattern(n, 11));
  } catch (e) {
    out.toHost = code(e);
  }
  print(out);
}

/** Large toHost() calls of every kind in flight: new arrays (written by libuv threads) and caller targets. */
function manyDownloads(seed: number): Promise<unknown>[] {
  const n = 32 * MiB; // 128 MiB of int32 each
  const a = ck.upload(pattern(n, seed));
  return [a.toHost(), a.toHost(new Int32Array(n)), a.toHost(), a.toHost(new Int32Array(n))];
}

function exitMode() {
  void manyDownloads(3);
  print({ calledExit: true });
  process.exit(0);
}

async function workerMode() {
  if (!isMainThread) {
    const pending = manyDownloads(5);
    parentPort!.postMessage('started');
    await Promise.allSettled(pending);
    parentPort!.postMessage('finished');
    return;
  }
  const register = path.join(__dirname, 'ts-register.js');
  const w = new Worker(`require(${JSON.stringify(register)}); require(${JSON.stringify(__filename)});`, {
    eval: true,
    workerData: { mode: 'worker' },
  });
  await new Promise<void>((resolve, reject) => {
    w.on('message', (m) => m === 'started' && resolve());
    w.on('error', reject);
    w.on('exit', (c) => reject(new Error(`the worker exited (${c}) before it started its copies`)));
  });
  const exitCode = await w.terminate();
  const n = 32 * MiB;
  using a = ck.upload(pattern(n, 9));
  const results = (await Promise.all([a.toHost(), a.toHost(new Int32Array(n))])).map((r) =>
    ck.cpu.firstMismatch(r, pattern(n, 9)),
  );
  print({ exitCode, results });
}

const modes: Record<string, () => unknown> = {
  'lost-stream': lostStream,
  exit: exitMode,
  worker: workerMode,
  'other-device': otherDevice,
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
