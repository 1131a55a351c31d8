// Soak: random operations for a given time — every family and variant on random problems (results
// checked against the CPU references), uploads, clones, device copies, fills, frees, and toHost()
// promises left in flight while other work runs; the data path (copyFromAsync from pageable sources
// up to 8 MiB, so the staged ring too, and from pinned ones; toHost/toHostSync into caller targets;
// pinned arrays freed or left to GC; reduceAsync; trimMemoryPool) with every round trip compared
// byte for byte; worker threads terminated in the middle of their large uploads while the main thread
// uploads on the same staging ring (its data compared element by element) — then everything is freed and device memory must be back where it started
// (± 1 MiB), with no failures and no unhandled rejections.
//
//   npm run soak -- --minutes 10 [--seed S] [--check 0.25] [--log soak.log]
//
// Exit code 0 when all of that holds, 1 otherwise. Logs start and end memory and the operation counts.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';

import fc from 'fast-check';

import * as ck from '../../lib';
import { dtypeBytes, hostConstructor } from '../../lib/array';
import { FAMILIES, type Limits, rng, warmUp } from './families';

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const MINUTES = Number(arg('minutes', '10'));
const SEED = Number(arg('seed', String((Date.now() ^ (Math.random() * 2 ** 31)) >>> 0)));
/** Fraction of kernel runs whose results are checked on the CPU (the rest only run). */
const CHECK = Number(arg('check', '0.25'));
const LOG = arg('log', '');
/** Written once the start memory is measured (for a runner that starts other GPU work after it). */
const START_FILE = arg('start-file', '');
/** Before the end measurement, wait (up to 10 minutes) for this file: the other work is done. */
const WAIT_FILE = arg('wait-file', '');
const LIMITS: Limits = { side: 300, length: 1_000_000 };
const MiB = 2 ** 20;

const random = rng(SEED);
/** A new pageable host array of `dtype` (the library's own dtype → typed-array table). */
const hostArray = (dtype: ck.Dtype, n: number) =>
  new (hostConstructor(dtype))(new ArrayBuffer(n * dtypeBytes(dtype)), 0, n) as ck.HostArrayOf<ck.Dtype>;
const bytesOf = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const sameBytes = (a: ArrayBufferView, b: ArrayBufferView) => Buffer.compare(bytesOf(a), bytesOf(b)) === 0;

/** Fills a host array with values every dtype holds exactly (small integers, some negative). */
function fillHost(h: ck.HostArray): void {
  const signed = !(h instanceof Uint32Array);
  for (let i = 0; i < h.length; i++) h[i] = Math.floor(random() * 2000) - (signed ? 1000 : 0);
}

/**
 * One data-path round trip: a host source (pageable, up to 8 MiB so that large ones take the staged
 * ring, or pinned) written at a random offset by copyFrom or copyFromAsync, read back by toHost or
 * toHostSync into a new, pageable or pinned target, compared byte for byte; sometimes a reduceAsync
 * on the same array checked against the host sum. Returns an error text or ''.
 */
async function dataPathRoundTrip(count: (k: string) => void): Promise<string> {
  const dtype = pick(ck.dtypes);
  const bytes = dtypeBytes(dtype);
  const big = random() < 0.3;
  const n = 1 + Math.floor(random() * (big ? (8 * MiB) / bytes : 4096));
  const offset = Math.floor(random() * 64);
  const usePinned = random() < 0.3;
  const src = usePinned ? ck.pinned(dtype, n) : hostArray(dtype, n);
  const pinnedTarget = random() < 0.3 ? ck.pinned(dtype, n) : null;
  const a = ck.empty(dtype, n + offset);
  try {
    fillHost(src);
    if (random() < 0.5) {
      await a.copyFromAsync(src, { offset });
      count(usePinned ? 'copyFromAsync pinned' : big ? 'copyFromAsync staged' : 'copyFromAsync small');
    } else {
      a.copyFrom(src, { offset });
      count('copyFrom');
    }
    // The device copy of the written part: a second array, so the host target has the same length.
    const part = ck.empty(dtype, n);
    try {
      ck.copyDevice(part, a, { count: n, srcOffset: offset });
      const target = pinnedTarget ?? hostArray(dtype, n);
      const back = random() < 0.5 ? await part.toHost(target) : part.toHostSync(target);
      count(pinnedTarget ? 'toHost into pinned' : 'toHost into target');
      if (back !== target) return `toHost(${dtype}[${n}]) did not return its target`;
      if (!sameBytes(back, src)) return `round trip of ${dtype}[${n}] at offset ${offset} changed the data`;
      if (random() < 0.2 && dtype !== 'float32') {
        // Integers below 2^31 in magnitude: the host sum is exact in float64, the device sum too for
        // float64 and (wrapping aside, which 1000 · 2^21 cannot reach) for the integer types.
        let sum = 0;
        for (let i = 0; i < n; i++) sum += src[i];
        const got = await ck.reduceAsync(part, 'sum');
        count('reduceAsync');
        if (got !== sum) return `reduceAsync sum of ${dtype}[${n}]: ${got}, expected ${sum}`;
      }
    } finally {
      part.free();
    }
    return '';
  } finally {
    a.free();
    // Pinned memory: freed explicitly, or left to the garbage collector's finalizer.
    if (random() < 0.5) {
      if (usePinned) (src as ck.PinnedArray).free();
      pinnedTarget?.free();
    }
  }
}
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];

/**
 * A worker thread starts large pageable uploads of its own (2–32 MiB each) and is terminated after a
 * random delay (0–40 ms: before, during or after its staging) while the main thread's own large
 * upload, made just before, waits on the same device's staging ring. The main thread's data must
 * arrive whole. Returns an error text or ''.
 */
async function workerUploadRace(count: (k: string) => void): Promise<string> {
  const register = path.join(__dirname, 'ts-register.js');
  const script = path.join(__dirname, 'soak-worker.ts');
  const sizes = Array.from(
    { length: 1 + Math.floor(random() * 4) },
    () => (1 + Math.floor(random() * 16)) * 512 * 1024,
  );
  const n = (4 + Math.floor(random() * 28)) * 256 * 1024 + Math.floor(random() * 1000);
  const src = new Int32Array(n);
  for (let i = 0; i < n; i++) src[i] = Math.imul(i + 7, 2654435761) ^ n;
  const a = ck.empty('int32', n);
  let mine: Promise<unknown> | null = null;
  try {
    // Half the time the main thread's upload is queued first: the defect of issue 32 (a cancelled job
    // releasing the waits of an earlier live one) hit the earlier upload, not a later one.
    const first = random() < 0.5;
    if (first) mine = a.copyFromAsync(src);
    const w = new Worker(`require(${JSON.stringify(register)}); require(${JSON.stringify(script)});`, {
      eval: true,
      workerData: { sizes, seed: n },
    });
    let done = false;
    const started = new Promise<void>((resolve, reject) => {
      w.on('message', (m) => {
        if (m === 'done') done = true;
        if (m === 'started') resolve();
      });
      w.on('error', reject);
      w.on('exit', () => resolve());
    });
    await started;
    mine ??= a.copyFromAsync(src);
    await new Promise((r) => setTimeout(r, Math.floor(random() * 40)));
    // Counted as cut only when the worker had not reported its uploads done.
    const cut = !done;
    await w.terminate();
    count(
      cut
        ? `worker terminated mid-upload (main upload ${first ? 'before' : 'after'} it)`
        : 'worker terminated after its uploads',
    );
    await mine;
    const back = a.toHostSync() as Int32Array;
    const at = ck.cpu.firstMismatch(back, src);
    return at === -1 ? '' : `main-thread upload of int32[${n}] beside a terminated worker: element ${at} differs`;
  } finally {
    // Settled before the array goes, also when the worker failed to start.
    await mine?.catch(() => undefined);
    a.free();
  }
}

function log(line: string): void {
  const text = `${new Date().toISOString()} ${line}`;
  process.stdout.write(text + '\n');
  if (LOG) fs.appendFileSync(LOG, text + '\n');
}

let unhandled = 0;
process.on('unhandledRejection', (e) => {
  unhandled++;
  log(`unhandled rejection: ${String(e)}`);
});

async function main(): Promise<number> {
  if (ck.deviceCount() === 0) {
    log(`soak needs a GPU: ${ck.runtimeInfo().noDeviceReason}`);
    return 1;
  }
  // Kernels load lazily on first launch (device memory for their code): run every variant on
  // problems across the soak's sizes first, so the start measurement already includes them.
  for (const f of FAMILIES) await warmUp(f, 30, LIMITS);
  // Both measurements after trimMemoryPool(): memoryInfo().free counts the pool's unused reserve as
  // free, but not every cache trimMemoryPool() gives back, and the soak trims at random. Trimmed,
  // both compare what is in use (see the check at the end for the one granule this still leaves).
  const measure = () => {
    ck.synchronize();
    ck.trimMemoryPool(0, 0);
    return ck.memoryInfo();
  };
  const start = measure();
  log(`soak start: seed ${SEED}, ${MINUTES} min, memoryInfo free ${start.free} of ${start.total} bytes`);
  if (START_FILE) fs.writeFileSync(START_FILE, String(start.free));
  const began = Date.now();

  const ops: Record<string, number> = {};
  const count = (k: string) => (ops[k] = (ops[k] ?? 0) + 1);
  const failures: string[] = [];
  const live: ck.DeviceArray[] = [];
  const inFlight = new Set<Promise<unknown>>();
  const deadline = Date.now() + MINUTES * 60_000;
  let lastReport = Date.now();
  let lastWorker = 0;
  let sample = 0;

  while (Date.now() < deadline && failures.length < 10) {
    const r = random();
    try {
      if (r < 0.4) {
        const family = pick(FAMILIES);
        const [p] = fc.sample(family.params(LIMITS), { seed: SEED + sample++, numRuns: 1 });
        const prepared = family.prepare(p);
        try {
          const method = pick(family.methods);
          const ran = prepared.run(method, random() < 0.5);
          if (random() < CHECK) {
            const error = await ran.check();
            if (error) failures.push(`${family.name} ${method} ${family.label(p)}: ${error}`);
          }
          for (const o of ran.outputs) o.free();
          count(family.name);
        } finally {
          for (const a of prepared.inputs) a.free();
        }
      } else if (r < 0.41 && Date.now() - lastWorker > 5_000) {
        // At most one every 5 s: a worker's start costs a few hundred milliseconds.
        lastWorker = Date.now();
        const error = await workerUploadRace(count);
        if (error) failures.push(error);
      } else if (r < 0.5) {
        const error = await dataPathRoundTrip(count);
        if (error) failures.push(error);
        if (random() < 0.02) {
          ck.trimMemoryPool(0, random() < 0.5 ? 0 : 64 * MiB);
          count('trimMemoryPool');
        }
      } else if (r < 0.6) {
        const dtype = pick(ck.dtypes);
        const n = Math.floor(random() * 200_000);
        const a = random() < 0.5 ? ck.empty(dtype, n).fillRandom(sample++) : ck.zeros(dtype, n);
        live.push(a);
        count('alloc');
      } else if (r < 0.7 && live.length) {
        const a = pick(live);
        const b = a.clone();
        live.push(b);
        if (b.length && random() < 0.5) {
          const c = ck.empty(a.dtype, b.length);
          ck.copyDevice(c, b, { count: b.length });
          live.push(c);
        }
        count('clone/copy');
      } else if (r < 0.85 && live.length) {
        // A copy left in flight; its array may be freed before it completes.
        const a = pick(live);
        const p = a.toHost().then((h) => {
          if (h.length !== a.length) failures.push('toHost returned the wrong length');
        });
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
        count('toHost');
      } else if (live.length) {
        const i = Math.floor(random() * live.length);
        live[i].free();
        live.splice(i, 1);
        count('free');
      }
      if (live.length > 200) {
        for (const a of live.splice(0, 100)) a.free();
      }
      if (inFlight.size > 500) await Promise.all(inFlight);
    } catch (e) {
      failures.push(`unexpected ${String(e)}`);
    }
    if (Date.now() - lastReport > 60_000) {
      lastReport = Date.now();
      log(`… ${JSON.stringify(ops)}, ${live.length} live arrays, memoryInfo free ${ck.memoryInfo().free}`);
    }
  }
  await Promise.all(inFlight);
  for (const a of live) a.free();
  const minutes = (Date.now() - began) / 60_000;
  if (WAIT_FILE) {
    const until = Date.now() + 600_000;
    while (!fs.existsSync(WAIT_FILE) && Date.now() < until) await new Promise((r) => setTimeout(r, 1000));
    log(`waited for ${WAIT_FILE}: ${fs.existsSync(WAIT_FILE) ? 'present' : 'still absent'}`);
  }
  const end = measure();
  const delta = start.free - end.free;
  const total = Object.values(ops).reduce((s, n) => s + n, 0);
  log(`soak end: ${minutes.toFixed(2)} min of operations, ${total} operations ${JSON.stringify(ops)}`);
  log(
    `memoryInfo free: start ${start.free}, end ${end.free}, change ${delta} bytes (${(delta / MiB).toFixed(3)} MiB); ` +
      `failures ${failures.length}; unhandled rejections ${unhandled}`,
  );
  for (const f of failures) log(`failure: ${f}`);
  // A leak is less free memory at the end. The 10-minute H100 runs of 2026-11-26 (c583d58 untrimmed,
  // 22fb35f trimmed) both ended with exactly one 2 MiB granule more free than at the start, with no
  // failure; what held it at the start was not found. That one granule is allowed; a larger surplus
  // fails too, since it could hide a leak of the same size.
  if (delta < 0) log(`more free memory at the end than at the start: ${(-delta / MiB).toFixed(3)} MiB`);
  const ok = delta <= MiB && delta >= -2 * MiB && failures.length === 0 && unhandled === 0;
  log(ok ? 'soak passed' : 'soak FAILED');
  return ok ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    log(`soak crashed: ${String(e?.stack ?? e)}`);
    process.exitCode = 1;
  },
);
