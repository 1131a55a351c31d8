// The data path: the stream-ordered memory pool behind every allocation, pinned host memory,
// transfers into caller buffers (toHost(target), copyFrom at an offset, copyFromAsync), the
// snapshot toHost() takes at call time, and copies within one array whose ranges overlap.
// Random properties of the same paths run in the reliability harness (family `transfer`).
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';

import * as ck from '../lib';
import { native } from '../lib/native';
import { freshSeed, hostData, SANITIZER } from './harness/families';
import { report } from './harness/report';
import { expectThrows } from './helpers/errors';
import { describeGpu } from './helpers/gpu';

const MiB = 1 << 20;
const root = path.join(__dirname, '..');

const CTORS = { float32: Float32Array, float64: Float64Array, int32: Int32Array, uint32: Uint32Array };

/** Detaches a typed array's buffer the way postMessage with a transfer list does. */
function detached(n: number): Float32Array {
  const t = new Float32Array(n);
  structuredClone(t.buffer, { transfer: [t.buffer] });
  return t;
}

function childJson(
  script: string,
  args: string[] = [],
  env: Record<string, string> = {},
  scriptArgs: string[] = [],
): Record<string, unknown> {
  const child = spawnSync(process.execPath, [...args, '-r', './test/harness/ts-register.js', script, ...scriptArgs], {
    cwd: root,
    encoding: 'utf8',
    timeout: 300_000,
    maxBuffer: 1 << 26,
    env: { ...process.env, ...env },
  });
  if (child.error) throw child.error;
  const detail = `stdout:\n${child.stdout}\nstderr:\n${child.stderr}`;
  if (child.signal || child.status !== 0)
    throw new Error(`${script} ended by ${child.signal ?? child.status}\n${detail}`);
  const out = JSON.parse(child.stdout.trim().split('\n').pop()!);
  if (out.fatal) throw new Error(out.fatal);
  return out;
}

describeGpu('memory pool', () => {
  afterAll(() => ck.trimMemoryPool(0));

  test('freed memory comes back to the next allocation (the same bytes), and the pool stops growing', () => {
    const n = MiB; // 4 MiB of float32
    const pattern = hostData('float32', n, freshSeed());
    const a = ck.upload(pattern);
    // While `a` lives, its memory is not handed out again: a new array does not hold its bytes.
    // Reading an empty() array is the point here, and exactly what initcheck reports: skipped there.
    const readsUninitialized = SANITIZER !== 'initcheck';
    using other = ck.empty('float32', n);
    if (readsUninitialized) expect(ck.cpu.firstMismatch(other.toHostSync(), pattern)).toBe(0);
    a.free();
    using b = ck.empty('float32', n);
    if (readsUninitialized) expect(ck.cpu.firstMismatch(b.toHostSync(), pattern)).toBe(-1);
    b.free();

    // 2000 allocations of mixed sizes up to n, each freed: no new memory after the first round.
    for (let i = 0; i < 20; i++) ck.empty(ck.dtypes[i % 4], 1 + ((i * 7919) % n)).free();
    ck.synchronize();
    const reserved = ck.memoryPool().reserved;
    for (let i = 0; i < 2000; i++) ck.empty(ck.dtypes[i % 4], 1 + ((i * 7919) % n)).free();
    ck.synchronize();
    const after = ck.memoryPool();
    expect(after.reserved).toBe(reserved);
    expect(after.highWater).toBeGreaterThanOrEqual(4 * n);

    // An operation's workspace (scan's tile states, reduce's partials) is reused the same way.
    using s = ck.empty('int32', 1 << 22).fill(1);
    ck.scan(s, { out: s });
    ck.reduce(s, 'sum');
    ck.synchronize();
    const withWorkspaces = ck.memoryPool().reserved;
    for (let i = 0; i < 200; i++) {
      ck.scan(s, { out: s });
      ck.reduce(s, 'max');
    }
    ck.synchronize();
    expect(ck.memoryPool().reserved).toBe(withWorkspaces);
    report(
      `pool: 2000 alloc/free and 200 scan+reduce calls reserved nothing new (${reserved} / ${withWorkspaces} bytes)`,
    );
  });

  // The stream-holding hooks exist in development builds only (CMakeLists.txt: CK_TEST_HOOKS).
  // Under initcheck and synccheck the stream was found idle after the uploads (the tools wait for
  // the device at some host calls), so under a sanitizer the test has nothing to see.
  const holdTest = native.debugHoldStream && !SANITIZER ? test : test.skip;
  holdTest('free() and allocation never wait for the device: the library stream keeps running', () => {
    const hold = native.debugHoldStream!;
    const busy = native.debugStreamBusy!;
    // The probe can tell: a synchronize() does end a held stream.
    hold(0, 200);
    expect(busy(0)).toBe(true);
    ck.synchronize();
    expect(busy(0)).toBe(false);

    hold(0, 30_000);
    try {
      for (let i = 0; i < 100; i++) ck.empty('float32', 1024 * (1 + (i % 7))).free();
      const a = ck.upload(new Float64Array(5000).fill(2));
      const s = ck.scan(a); // queued behind the held kernel, with its workspace
      a.free();
      s.free();
      expect(busy(0)).toBe(true);
    } finally {
      native.debugReleaseStream!();
    }
    ck.synchronize();
    expect(busy(0)).toBe(false);
  });

  // initcheck keeps device memory of its own for each allocation (32 MiB for this one on the H100),
  // which the free-memory figures below would count.
  const accountingTest = SANITIZER === 'initcheck' ? test.skip : test;
  accountingTest('trimMemoryPool gives the unused reserve back; memoryInfo counts it as free', () => {
    ck.synchronize();
    ck.trimMemoryPool(0);
    const m0 = ck.memoryInfo();
    const p0 = ck.memoryPool();
    const a = ck.empty('float32', 64 * MiB); // 256 MiB
    expect(ck.memoryPool().used).toBeGreaterThanOrEqual(p0.used + 256 * MiB);
    a.free();
    ck.synchronize();
    const p1 = ck.memoryPool();
    const m1 = ck.memoryInfo();
    expect(p1.used).toBe(p0.used);
    expect(p1.reserved).toBeGreaterThanOrEqual(p0.reserved + 256 * MiB); // kept for reuse
    // free counts the kept reserve; driverFree does not.
    expect(Math.abs(m1.free - m0.free)).toBeLessThanOrEqual(2 * MiB);
    expect(m1.driverFree).toBeLessThanOrEqual(m0.driverFree - 250 * MiB);
    ck.trimMemoryPool(0);
    const m2 = ck.memoryInfo();
    expect(ck.memoryPool().reserved).toBeLessThanOrEqual(p0.reserved);
    expect(m2.driverFree).toBeGreaterThanOrEqual(m0.driverFree - 2 * MiB);

    // keepBytes: at most that much of the unused reserve stays.
    ck.empty('float32', 64 * MiB).free();
    ck.trimMemoryPool(0, 128 * MiB);
    expect(ck.memoryPool().reserved).toBeLessThanOrEqual(p0.reserved + 128 * MiB);

    expectThrows(() => ck.trimMemoryPool(0, -1), 'RangeError', /keepBytes/);
    expectThrows(() => ck.memoryPool(-1), 'RangeError', /device/);
    expectThrows(() => ck.memoryPool(ck.deviceCount()), 'CudaError', /does not exist/);
  });

  const oomTest = SANITIZER ? test.skip : test;
  oomTest(
    `out of memory: the pool trims and retries once; after freeing, a large request fits${SANITIZER ? ' [skipped under a sanitizer]' : ''}`,
    () => {
      ck.synchronize();
      ck.trimMemoryPool(0);
      const GiB = 1024 * MiB;
      const held: ck.DeviceArray[] = [];
      const retries0 = ck.memoryPool().oomRetries;
      let oom: unknown;
      try {
        for (let i = 0; i < ck.memoryInfo().total / GiB + 2; i++) held.push(ck.empty('uint32', GiB / 4));
      } catch (e) {
        oom = e;
      }
      expect((oom as ck.CudaError)?.code).toBe('cudaErrorMemoryAllocation');
      // The failing allocation trimmed and retried before it threw.
      const retries1 = ck.memoryPool().oomRetries;
      expect(retries1).toBeGreaterThan(retries0);
      const heldBytes = held.length * GiB;
      for (const a of held) a.free();
      ck.synchronize();
      // After freeing, one array of half of it fits (the pool reuses its reserve, or trims and retries).
      const big = Math.floor(heldBytes / 2 / 4);
      const a = ck.empty('uint32', big).fill(7);
      try {
        expect(ck.reduce(a, 'min')).toBe(7);
        expect(ck.reduce(a, 'max')).toBe(7);
      } finally {
        a.free();
        ck.trimMemoryPool(0); // give the device back to the suites (and child processes) after this one
      }
      report(
        `pool: out of memory after ${held.length} GiB (retries ${retries0} → ${retries1}), then one ${(big * 4) / GiB} GiB array after freeing (retries ${ck.memoryPool().oomRetries})`,
      );
    },
  );

  test('worker threads allocate and free on one device at once; the pool ends where it started', () => {
    const out = childJson('test/harness/pool-workers.ts', ['--expose-gc'], {
      CK_POOL_WORKER_CYCLES: SANITIZER ? '200' : '1500',
    });
    const results = out.results as { id: number; cycles: number; failures: string[] }[];
    const before = out.before as ck.MemoryPoolStats;
    const after = out.after as ck.MemoryPoolStats;
    expect(results.flatMap((r) => r.failures)).toEqual([]);
    expect(results).toHaveLength(5);
    expect(after.used).toBe(before.used);
    report(
      `pool: 4 workers + main, ${results[0].cycles} alloc/upload/free cycles each; used ${before.used} → ${after.used}`,
    );
  });
});

describeGpu('pinned host memory', () => {
  test('pinned() is a typed array over page-locked memory; free() and using give it back', () => {
    const p = ck.pinned('float64', 1000);
    expect(p).toBeInstanceOf(Float64Array);
    expect(p.length).toBe(1000);
    expect(p.every((v) => v === 0)).toBe(true);
    expect(ck.isPinned(p)).toBe(true);
    expect(ck.isPinned(p.subarray(10, 20))).toBe(true);
    expect(ck.isPinned(new Float64Array(1000))).toBe(false);
    p.free();
    expect(p.length).toBe(0);
    expect(ck.isPinned(p)).toBe(false);
    p.free();
    let escaped: ck.PinnedArray<'int32'> | undefined;
    {
      using q = ck.pinned('int32', 5);
      q[4] = 3;
      escaped = q;
    }
    expect(escaped.length).toBe(0);
    // Empty: no memory behind it, and free() is a no-op (the transfer property found it threw).
    const none = ck.pinned('uint32', 0);
    expect(none.length).toBe(0);
    none.free();
    none.free();
    expectThrows(() => ck.pinned('float32', -1), 'RangeError', /length/);
    expectThrows(() => ck.pinned('int8' as never, 4), 'TypeError', /dtype/);
  });

  test.each(ck.dtypes)('%s: transfers from and into pinned memory, every size class', async (dtype) => {
    for (const n of [1, 7, 257, 262_145, 3 * MiB + 5]) {
      const host = hostData(dtype, n, freshSeed());
      using src = ck.pinned(dtype, n);
      src.set(host as never);
      using a = ck.empty(dtype, n).fill(0);
      a.copyFrom(src as never);
      using t1 = ck.pinned(dtype, n);
      expect(ck.cpu.firstMismatch(a.toHostSync(t1 as never), host)).toBe(-1);
      using b = ck.empty(dtype, n).fill(0);
      expect(await b.copyFromAsync(src as never)).toBe(b);
      using t2 = ck.pinned(dtype, n);
      const got = await b.toHost(t2 as never);
      expect(got).toBe(t2);
      expect(ck.cpu.firstMismatch(got, host)).toBe(-1);
    }
  });

  test('pinned arrays dropped without free() are freed by the garbage collector (child process)', () => {
    const out = childJson('test/harness/pinned-gc.ts', ['--expose-gc']) as Record<string, number> & {
      lengthsAfterFree: number[];
    };
    const GiB = 1024 * MiB;
    // The control: 1 GiB kept shows in the resident set, and free() gives it back.
    expect(out.withKept - out.base).toBeGreaterThan(0.9 * GiB);
    expect(out.lengthsAfterFree.every((l) => l === 0)).toBe(true);
    expect(out.afterFree - out.base).toBeLessThan(0.25 * GiB);
    // 4 GiB dropped: the finalizers keep the process far below that.
    expect(out.peak - out.base).toBeLessThan(1 * GiB);
    expect(out.end - out.base).toBeLessThan(0.5 * GiB);
    report(
      `pinned GC: rss +${((out.withKept - out.base) / MiB).toFixed(0)} MiB with 1 GiB kept, ` +
        `+${((out.afterFree - out.base) / MiB).toFixed(0)} MiB after free(); 4 GiB dropped → peak +${((out.peak - out.base) / MiB).toFixed(0)} MiB, end +${((out.end - out.base) / MiB).toFixed(0)} MiB`,
    );
  });
});

describeGpu('transfers into caller buffers', () => {
  test.each(ck.dtypes)(
    '%s: toHost(target), toHostSync(target), copyFrom at offsets, every size class',
    async (dtype) => {
      // Around the staging limit (1 MiB) and well into the ring (several 1-16 MiB chunks).
      for (const n of [0, 1, 7, 33, 257, 65_537, 262_143, 262_144, 262_145, 5_000_011]) {
        const host = hostData(dtype, n, freshSeed());
        using a = ck.upload(host);
        const target = new CTORS[dtype](n).fill(dtype.startsWith('float') ? NaN : 5);
        const got = await a.toHost(target as never);
        expect(got).toBe(target);
        expect(ck.cpu.firstMismatch(got, host)).toBe(-1);
        const target2 = new CTORS[dtype](n).fill(dtype.startsWith('float') ? NaN : 5);
        expect(a.toHostSync(target2 as never)).toBe(target2);
        expect(ck.cpu.firstMismatch(target2, host)).toBe(-1);

        // Part of the array from a shorter source: elements before the offset keep their old values.
        const offset = Math.floor(n / 3);
        const part = hostData(dtype, n - offset, freshSeed());
        a.copyFrom(part as never, { offset });
        const want = host.slice();
        want.set(part as never, offset);
        expect(ck.cpu.firstMismatch(a.toHostSync(), want)).toBe(-1);
        const part2 = hostData(dtype, Math.max(0, n - offset - 1), freshSeed());
        await a.copyFromAsync(part2 as never, { offset });
        want.set(part2 as never, offset);
        expect(ck.cpu.firstMismatch(a.toHostSync(), want)).toBe(-1);
      }
    },
  );

  test('wrong targets and sources: TypeError / RangeError naming the argument', () => {
    using a = ck.empty('float32', 8);
    for (const f of [(t: unknown) => a.toHost(t as never), (t: unknown) => a.toHostSync(t as never)]) {
      expectThrows(() => f(new Float64Array(8)), 'TypeError', /target must be a typed array of float32/);
      expectThrows(() => f([1, 2, 3]), 'TypeError', /target/);
      expectThrows(() => f(new Float32Array(7)), 'RangeError', /target must be 8 elements long/);
      expectThrows(() => f(new Float32Array(9)), 'RangeError', /target/);
      expectThrows(() => f(detached(8)), 'TypeError', /detached/);
      const p = ck.pinned('float32', 8);
      p.free();
      expectThrows(() => f(p), 'TypeError', /detached/);
    }
    // The native side checks again (a caller going around lib/).
    expectThrows(() => native.download(a.handle(), detached(8)), 'TypeError', /detached/);
    expectThrows(() => native.download(a.handle(), new Float32Array(7)), 'RangeError', /target has 7 elements/);
    expectThrows(() => native.upload(a.handle(), new Float32Array(4), 5), 'RangeError', /does not fit/);
    for (const f of [
      (s: unknown, o?: unknown) => a.copyFrom(s as never, o as never),
      (s: unknown, o?: unknown) => a.copyFromAsync(s as never, o as never),
    ]) {
      expectThrows(() => f(new Int32Array(8)), 'TypeError', /source must be a typed array of float32/);
      expectThrows(() => f(new Float32Array(9)), 'RangeError', /source must be at most 8 elements/);
      expectThrows(() => f(new Float32Array(4), { offset: 5 }), 'RangeError', /at most 3 elements/);
      expectThrows(() => f(new Float32Array(1), { offset: 1.5 }), 'RangeError', /options.offset/);
      expectThrows(() => f(new Float32Array(1), { offset: -1 }), 'RangeError', /options.offset/);
      expectThrows(() => f(detached(2)), 'TypeError', /detached/);
      expectThrows(() => f(new Float32Array(1), null), 'TypeError', /options/);
    }
    a.free();
    expectThrows(() => a.toHost(new Float32Array(8)), 'TypeError', /freed/);
    expectThrows(() => a.copyFromAsync(new Float32Array(8)), 'TypeError', /freed/);
  });

  test('copyFromAsync from pinned memory: ordered before later work, timers fire while a large one runs', async () => {
    const n = 64 * MiB; // 256 MiB of float32
    using a = ck.zeros('float32', n);
    using src = ck.pinned('float32', n);
    src.fill(2);
    let ticks = 0;
    const interval = setInterval(() => ticks++, 1);
    try {
      const pending = a.copyFromAsync(src);
      // Queued after the copy on the library stream: sees the new data without awaiting it.
      expect(ck.reduce(a, 'max')).toBe(2);
      await pending;
      await new Promise((r) => setTimeout(r, 5));
    } finally {
      clearInterval(interval);
    }
    expect(ck.reduce(a, 'min')).toBe(2);
    expect(ticks).toBeGreaterThan(0);
  });
});

/**
 * Random host data as hostData() makes it, but fast for large integer arrays (xorshift written through
 * a Uint32Array view: storing doubles above 2^31 into an Int32Array is slow in V8).
 */
function bigData(dtype: ck.Dtype, n: number, seed: number): ck.HostArray {
  if (dtype === 'float32' || dtype === 'float64') return hostData(dtype, n, seed);
  const out = dtype === 'int32' ? new Int32Array(n) : new Uint32Array(n);
  const bits = new Uint32Array(out.buffer);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bits[i] = x;
  }
  return out;
}

/** Applies the copies a device array received, in call order, to its host image. */
function applied<T extends ck.HostArray>(start: T, copies: [ck.HostArray, number][]): T {
  const want = start.slice() as T;
  for (const [src, offset] of copies) want.set(src as never, offset);
  return want;
}

// Large pageable sources are staged by the library's threads while the stream waits on counters in
// mapped memory (native/core/staged_upload.h); the caller returns at once.
describeGpu('copyFromAsync from pageable memory', () => {
  const stagingOff = !!process.env.CK_NO_STREAM_STAGING;

  test('256 MiB: the event loop turns while it is staged; scan, fill, copyDevice, toHost right after see it', async () => {
    const n = 64 * MiB; // 256 MiB of int32
    const host = bigData('int32', n, freshSeed()) as Int32Array;
    using a = ck.full('int32', n, -1);
    let settled = false;
    let ticks = 0;
    const interval = setInterval(() => ticks++, 1);
    try {
      const pending = a.copyFromAsync(host).then((r) => {
        settled = true;
        return r;
      });
      // Enqueued after the copy, without awaiting it:
      const snapshot = a.toHost(); // the copied data
      using copied = ck.empty('int32', n);
      ck.copyDevice(copied, a);
      using scanned = ck.scan(a); // in int32, wrapping as the CPU reference does
      a.fill(7); // later work wins over the copy
      await new Promise((r) => setImmediate(r));
      const turnedBeforeSettled = !settled;
      expect(await pending).toBe(a);
      const path = native.uploadPath(0);
      if (!stagingOff) {
        // The H100s this runs on support stream memory operations: a fallback here is a regression.
        expect({ path: path.path, reason: path.reason }).toEqual({ path: 'stream-ordered', reason: null });
        // Under a sanitizer the launches enqueued right after wait for the stream (the tool waits for
        // the device at some calls; seen under memcheck and synccheck): the copy is staged by then.
        if (!SANITIZER) expect(turnedBeforeSettled).toBe(true);
      }
      expect(ck.cpu.firstMismatch(await snapshot, host)).toBe(-1);
      expect(ck.cpu.firstMismatch(copied.toHostSync(), host)).toBe(-1);
      expect(ck.cpu.firstMismatch(scanned.toHostSync(), ck.cpu.scan(host))).toBe(-1);
      expect(ck.reduce(a, 'min')).toBe(7);
      expect(ck.reduce(a, 'max')).toBe(7);
      report(
        `copyFromAsync 256 MiB pageable: path ${path.path}${path.reason ? ` (${path.reason})` : ''}, ${path.threads} staging threads; ` +
          `event loop turned before it settled: ${turnedBeforeSettled}; 1 ms timer ticks while pending: ${ticks}`,
      );
    } finally {
      clearInterval(interval);
    }
  });

  test('the check above can fail: the data and the order are really compared', async () => {
    const n = 3 * MiB + 5;
    const host = hostData('float32', n, freshSeed()) as Float32Array;
    using a = ck.zeros('float32', n);
    const p = a.copyFromAsync(host);
    a.fill(1); // ordered after the copy: the copied data is gone
    await p;
    expect(ck.cpu.firstMismatch(a.toHostSync(), host)).toBe(0);
    // One element changed after the promise resolved: the comparison sees it, the device does not.
    const b = ck.zeros('float32', n);
    try {
      await b.copyFromAsync(host);
      const changed = host.slice();
      host[n - 1] += 1;
      expect(ck.cpu.firstMismatch(b.toHostSync(), host)).toBe(n - 1);
      expect(ck.cpu.firstMismatch(b.toHostSync(), changed)).toBe(-1);
    } finally {
      b.free();
    }
  });

  test.each(ck.dtypes)(
    '%s: odd sizes and offsets across the chunk and ring boundaries, compared exactly',
    async (dtype) => {
      const elem = ck.dtypeBytes(dtype);
      // Bytes just above the 1 MiB staging limit, around the 256 KiB minimum chunk, one ring (8 × 4 MiB)
      // and a few ring turns, each in odd element counts.
      const sizes = [MiB + elem, 2 * MiB - elem, 8 * 256 * 1024 + 3 * elem, 32 * MiB + elem, 77 * MiB + 13 * elem].map(
        (bytes) => Math.floor(bytes / elem) | 1,
      );
      for (const n of sizes) {
        const start = bigData(dtype, n + 9, freshSeed());
        using a = ck.upload(start);
        const whole = bigData(dtype, n, freshSeed());
        // A source that is a view into a larger buffer, at an element offset.
        const backing = bigData(dtype, n + 6, freshSeed());
        const view = backing.subarray(3, 3 + n - 2);
        const copies: [ck.HostArray, number][] = [
          [whole, 9],
          [view, 1],
        ];
        const pending = copies.map(([src, offset]) => a.copyFromAsync(src as never, { offset }));
        await Promise.all(pending);
        const at = ck.cpu.firstMismatch(a.toHostSync(), applied(start, copies));
        if (at !== -1) throw new Error(`${dtype} n ${n}: element ${at} differs`);
      }
    },
  );

  test('many concurrent copies into different arrays and into one array: each lands, in call order', async () => {
    const sizes = [262_147, 1_000_003, 3 * MiB + 1, 5_000_011, 9 * MiB + 7, 17 * MiB + 3];
    const arrays = sizes.map((n, i) => ({
      n,
      dtype: ck.dtypes[i % 4],
      start: bigData(ck.dtypes[i % 4], n, freshSeed()),
    }));
    const devs = arrays.map((x) => ck.upload(x.start));
    try {
      const copies: [ck.HostArray, number][][] = arrays.map(() => []);
      const pending: Promise<unknown>[] = [];
      // Four rounds over all arrays, mixing large pageable (staged by threads), small pageable and
      // pinned sources, the later rounds overlapping the earlier ones.
      for (let round = 0; round < 4; round++) {
        arrays.forEach((x, i) => {
          const offset = (round * 104_729 + i * 17) % Math.floor(x.n / 3);
          const len = round === 2 ? 1000 + i : x.n - offset - round;
          const src = bigData(x.dtype, len, freshSeed());
          if (round === 3 && i % 2 === 0) {
            const pin = ck.pinned(x.dtype, len);
            pin.set(src as never);
            pending.push(devs[i].copyFromAsync(pin as never, { offset }).then(() => pin.free()));
          } else {
            pending.push(devs[i].copyFromAsync(src as never, { offset }));
          }
          copies[i].push([src, offset]);
        });
      }
      const results = await Promise.all(pending);
      expect(results).toHaveLength(4 * arrays.length);
      arrays.forEach((x, i) => {
        const at = ck.cpu.firstMismatch(devs[i].toHostSync(), applied(x.start, copies[i]));
        if (at !== -1) throw new Error(`array ${i} (${x.dtype}, ${x.n}): element ${at} differs`);
      });
    } finally {
      for (const d of devs) d.free();
    }
  });

  test('a copy followed at once by synchronize(), free() and trimMemoryPool(0) (the calls that hung before)', async () => {
    const n = 64 * MiB + 3;
    const host = hostData('float32', n, freshSeed()) as Float32Array;
    // synchronize() waits for the staged copy; free() and trim after it.
    const a = ck.zeros('float32', n);
    const p1 = a.copyFromAsync(host);
    ck.synchronize();
    expect(ck.cpu.firstMismatch(a.toHostSync(), host)).toBe(-1);
    a.free();
    ck.trimMemoryPool(0);
    await p1;

    // free() while the copy is staged: the memory goes back after the copy, in stream order, so an
    // array that reuses it right away is not overwritten by the copy's late chunks.
    const b = ck.zeros('float32', n);
    const p2 = b.copyFromAsync(host);
    b.free();
    using c = ck.full('float32', n, 5);
    const p3 = (() => {
      const d = ck.zeros('float32', n);
      const p = d.copyFromAsync(host);
      ck.trimMemoryPool(0); // waits for the stream, which waits for the staging threads
      d.free();
      return p;
    })();
    await Promise.all([p2, p3]);
    expect(ck.reduce(c, 'min')).toBe(5);
    expect(ck.reduce(c, 'max')).toBe(5);
    expect(() => b.copyFromAsync(host)).toThrow(/freed/);
    ck.synchronize();
  });

  const child = (mode: string, env: Record<string, string> = {}, args: string[] = []) =>
    childJson('test/harness/upload-staging.ts', [...args], env, [mode]);

  test('the source is kept alive while it is staged (collections run meanwhile; child process)', () => {
    const out = child('gc', {}, ['--expose-gc']);
    expect(out.mismatch).toBe(-1);
    expect(out.collections).toBeGreaterThan(0);
  });

  test('process.exit() while a copy is staged exits cleanly (child process)', () => {
    const out = child('exit');
    expect(out.calledExit).toBe(true);
  });

  test('a worker terminated while its copies are staged; the device ring still serves the main thread', () => {
    const out = child('worker') as { exitCode: number; results: number[]; path: { path: string } };
    expect(out.results).toEqual([-1, -1]);
    if (!stagingOff) expect(out.path.path).toBe('stream-ordered');
  });

  const hooks = typeof native.debugFault === 'function' && typeof native.debugFailStagedUploads === 'function';
  const faultTest = hooks && !SANITIZER ? test : test.skip;

  // Cancelling once raised every slot's counter to the cancelled upload's last chunk, so the earlier
  // upload's waits passed before its data was staged (52,926,560 of 67,108,864 elements wrong).
  faultTest("a worker's upload cancelled behind the main thread's on one ring leaves the main one whole", () => {
    const out = child('cancel') as { exitCode: number; mismatch: number; wrong: number; path: { path: string } };
    expect({ mismatch: out.mismatch, wrong: out.wrong }).toEqual({ mismatch: -1, wrong: 0 });
    if (!stagingOff) expect(out.path.path).toBe('stream-ordered');
  });
  faultTest('after a sticky fault, a copy is a CudaError, not a hang (child process)', () => {
    const out = child('fault');
    expect(out.fault).toBe('cudaErrorIllegalAddress');
    expect(out).toMatchObject({ result: 'failed', name: 'CudaError', code: 'cudaErrorIllegalAddress' });
  });

  // Held streams are meaningless under the sanitizers (they wait for the device at some calls).
  faultTest('a failed staged copy rejects and releases the stream; later copies take the calling thread', () => {
    const out = child('abort') as Record<string, unknown> & { path: { path: string; reason: string } };
    expect(out.whileHeld).toBe('pending');
    expect(out.settled).toBe('rejected');
    expect(out.code).toBe('ckInjectedFailure');
    expect(out.after).toBe(-1);
    expect(out.path.path).toBe('calling thread');
    expect(out.path.reason).toMatch(/failed/);
  });

  test('CK_NO_STREAM_STAGING=1: the calling thread stages, says so, and the data is the same (child process)', () => {
    const out = child('path', { CK_NO_STREAM_STAGING: '1' }) as { mismatch: number; path: Record<string, unknown> };
    expect(out.mismatch).toBe(-1);
    expect(out.path).toMatchObject({ path: 'calling thread', reason: 'disabled by CK_NO_STREAM_STAGING' });
    expect(out.path.callingThread).toBe(1);
  });
});

describeGpu('toHost() takes its snapshot when called', () => {
  type Write = [string, (a: ck.DeviceArray<'float32'>) => unknown];
  const other = (n: number) => new Float32Array(n).fill(-3);
  const writes: Write[] = [
    ['fill', (a) => a.fill(9)],
    ['fillRandom', (a) => a.fillRandom(77)],
    ['copyFrom', (a) => a.copyFrom(other(a.length))],
    ['copyFromAsync', (a) => a.copyFromAsync(other(a.length))],
    [
      'copyDevice into it',
      (a) => {
        using b = ck.full('float32', a.length, 4);
        ck.copyDevice(a, b);
      },
    ],
    ['scan with out: a', (a) => ck.scan(a, { out: a })],
    ['free', (a) => a.free()],
  ];
  // Staged (≤ 1 MiB), device snapshot + ring (larger), and pinned targets.
  for (const n of [7, 200_003, 3 * MiB + 1]) {
    for (const target of ['new', 'pageable', 'pinned'] as const) {
      test.each(writes)(`${n} elements into a ${target} target, then %s`, async (_, write) => {
        const host = hostData('float32', n, freshSeed()) as Float32Array;
        const a = ck.upload(host);
        const t = target === 'new' ? undefined : target === 'pinned' ? ck.pinned('float32', n) : new Float32Array(n);
        try {
          const p = a.toHost(t);
          await write(a);
          // The write really changed the array (else this test could not fail).
          if (!a.freed) expect(ck.cpu.firstMismatch(a.toHostSync(), host)).not.toBe(-1);
          expect(ck.cpu.firstMismatch(await p, host)).toBe(-1);
        } finally {
          a.free();
          (t as Partial<ck.PinnedArray>)?.free?.();
        }
      });
    }
  }

  test('two toHost() calls into one pinned target: the later call wins; pageable: one or the other', async () => {
    const n = 300_007;
    using a = ck.full('float32', n, 1);
    using t = ck.pinned('float32', n);
    const p1 = a.toHost(t);
    a.fill(2);
    const p2 = a.toHost(t);
    const [r1, r2] = await Promise.all([p1, p2]);
    expect(r1).toBe(t);
    expect(r2).toBe(t);
    expect(t.every((v) => v === 2)).toBe(true);
    // Pageable: documented as unspecified; each element is one of the two snapshots.
    const u = new Float32Array(n);
    a.fill(1);
    const q1 = a.toHost(u);
    a.fill(2);
    const q2 = a.toHost(u);
    await Promise.all([q1, q2]);
    expect(u.every((v) => v === 1 || v === 2)).toBe(true);
  });
});

describeGpu('copies within one array (overlapping ranges)', () => {
  test.each([7, 33, 257, 1_000_003])('%i elements: copyDevice, peerCopy and copyViaHost behave like memmove', (n) => {
    const host = hostData('float64', n, freshSeed()) as Float64Array;
    const shift = Math.max(1, Math.floor(n / 3));
    const count = n - shift;
    const cases: [string, (a: ck.DeviceArray<'float64'>, dst: number, src: number) => void][] = [
      ['copyDevice', (a, dstOffset, srcOffset) => ck.copyDevice(a, a, { dstOffset, srcOffset, count })],
      ['peerCopy', (a, dstOffset, srcOffset) => ck.peerCopy(a, a, { dstOffset, srcOffset, length: count })],
      ['copyViaHost', (a, dstOffset, srcOffset) => ck.copyViaHost(a, a, { dstOffset, srcOffset, length: count })],
    ];
    for (const [name, copy] of cases) {
      for (const [dst, src] of [
        [shift, 0],
        [0, shift],
      ]) {
        using a = ck.upload(host);
        copy(a, dst, src);
        const want = host.slice().copyWithin(dst, src, src + count);
        const at = ck.cpu.firstMismatch(a.toHostSync(), want);
        if (at !== -1) throw new Error(`${name} dst ${dst} src ${src}: element ${at} differs`);
      }
    }
  });
});

describe('SharedArrayBuffer views without a GPU', () => {
  test('isPinned is false for them (it threw "Invalid argument")', () => {
    expect(ck.isPinned(new Float32Array(new SharedArrayBuffer(64)))).toBe(false);
    expect(ck.isPinned(new Int32Array(new SharedArrayBuffer(64), 8, 4))).toBe(false);
    expect(ck.isPinned(new Float64Array(new SharedArrayBuffer(0)))).toBe(false);
  });
});

describeGpu('typed arrays over a SharedArrayBuffer are sources and targets like any other', () => {
  // Staged (≤ 1 MiB), ring and stream-ordered staging (larger); offsets into the shared memory too.
  test.each([7, 200_003, 3 * MiB + 1])('%i float32 elements through every transfer', async (n) => {
    const host = hostData('float32', n, freshSeed()) as Float32Array;
    const shared = () => {
      const t = new Float32Array(new SharedArrayBuffer(4 * (n + 3)), 12, n);
      t.fill(-1);
      return t;
    };
    const src = shared();
    src.set(host);
    expect(ck.isPinned(src)).toBe(false);
    const check = (got: ck.HostArray, what: string) => {
      const at = ck.cpu.firstMismatch(got, host);
      if (at !== -1) throw new Error(`${what}: element ${at} differs`);
    };
    using a = ck.upload(src);
    check(a.toHostSync(), 'upload');
    using b = ck.full('float32', n, 5);
    b.copyFrom(src);
    check(b.toHostSync(), 'copyFrom');
    using c = ck.full('float32', n, 5);
    await c.copyFromAsync(src);
    check(c.toHostSync(), 'copyFromAsync');
    check(a.toHostSync(shared()), 'toHostSync(target)');
    const t = shared();
    expect(await a.toHost(t)).toBe(t);
    check(t, 'toHost(target)');
  });

  test('a source over a resizable ArrayBuffer is refused by copyFromAsync (TypeError)', () => {
    using a = ck.empty('float32', 4);
    const Resizable = ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ArrayBuffer;
    const src = new Float32Array(new Resizable(16, { maxByteLength: 64 }));
    expectThrows(() => a.copyFromAsync(src), 'TypeError', /resizable/);
    a.copyFrom(src); // the blocking form reads it during the call: fine
  });
});

describeGpu('pinned staging memory stays bounded and can be given back', () => {
  afterAll(() => ck.trimMemoryPool(0));

  test('1,500 concurrent toHost() of 300 KB: staging stays within its budget, every result is right', async () => {
    const n = 75_000; // 300 KB of float32
    const host = hostData('float32', n, freshSeed());
    using a = ck.upload(host);
    ck.trimMemoryPool(0);
    const pending = Array.from({ length: 1500 }, () => a.toHost());
    // Every call has been made: the blocks they hold are what the bound is about (64 MiB, plus a
    // block per libuv thread for those past it).
    const during = ck.memoryPool().hostStaging;
    const results = await Promise.all(pending);
    for (const r of results) expect(ck.cpu.firstMismatch(r, host)).toBe(-1);
    expect(during.used).toBeLessThanOrEqual(72 * MiB);
    expect(during.reserved).toBeLessThanOrEqual(80 * MiB);
    ck.trimMemoryPool(0);
    const after = ck.memoryPool().hostStaging;
    report(`staging after 1,500 toHost(): during ${JSON.stringify(during)}, after trim ${JSON.stringify(after)}`);
    expect(after).toMatchObject({ used: 0, reserved: 0 });
    expect(after.highWater).toBeGreaterThanOrEqual(during.used);
  });

  test('3,000 copyFrom() of 300 KB in a row pin no more than the budget', () => {
    const n = 75_000;
    const host = hostData('float32', n, freshSeed());
    using a = ck.empty('float32', n);
    ck.trimMemoryPool(0);
    for (let i = 0; i < 3000; i++) a.copyFrom(host as Float32Array);
    expect(ck.cpu.firstMismatch(a.toHostSync(), host)).toBe(-1);
    expect(ck.memoryPool().hostStaging.reserved).toBeLessThanOrEqual(68 * MiB);
  });

  test('large transfers keep their rings until trimMemoryPool gives them back', async () => {
    using a = ck.zeros('float32', 8 * MiB);
    await a.toHost(new Float32Array(8 * MiB));
    a.toHostSync();
    expect(ck.memoryPool().hostStaging.reserved).toBeGreaterThanOrEqual(64 * MiB);
    ck.trimMemoryPool(0);
    expect(ck.memoryPool().hostStaging).toMatchObject({ used: 0, reserved: 0 });
  });
});

describeGpu('a toHost() target transferred away while the copy runs', () => {
  // Written from another thread, the transferred target's memory could have been freed by the
  // collector meanwhile: only the JS thread writes a target the caller passed, checking it first.
  test.each([200_003, 16 * MiB + 3])('%i elements: the promise rejects (TypeError), nothing crashes', async (n) => {
    using a = ck.upload(hostData('float32', n, freshSeed()));
    const t = new Float32Array(n);
    const p = a.toHost(t);
    const moved = structuredClone(t.buffer, { transfer: [t.buffer] });
    // The error comes from the addon's realm: compared by name, as expectThrows does.
    await expect(p).rejects.toMatchObject({ name: 'TypeError', message: expect.stringMatching(/detached/) });
    expect(moved.byteLength).toBe(4 * n);
    // The device and the next copy are fine.
    const again = await a.toHost(new Float32Array(n));
    expect(again.length).toBe(n);
  });
});

describeGpu('the Promise forms neither wait for nor pin staging memory per call', () => {
  afterAll(() => ck.trimMemoryPool(0));
  const holdTest = native.debugHoldStream && !SANITIZER ? test : test.skip;

  /** `count` distinct 300 KB sources (each takes a 1 MiB staging block), and their concatenation. */
  const sources = (count: number, n: number) => {
    const all = new Float32Array(count * n);
    for (let i = 0; i < all.length; i++) all[i] = (i % 1009) - 500; // exact in float32, sums exact
    return { all, part: (i: number) => all.slice(i * n, (i + 1) * n) };
  };

  // A reduceAsync held a 64 KiB block from the call until it settled: 3,000 in flight pinned 190 MiB,
  // kept by the cache until trimMemoryPool (issue 32's unbounded staging, through another door).
  test('3,000 reduceAsync calls in flight pin a few bytes each, not a 64 KiB block', async () => {
    const host = Float32Array.from({ length: 1001 }, (_, i) => (i % 13) - 6);
    const want = host.reduce((s, v) => s + v, 0);
    using a = ck.upload(host);
    ck.synchronize();
    ck.trimMemoryPool(0);
    const before = ck.memoryPool().hostStaging;
    const pending = Array.from({ length: 3000 }, () => ck.reduceAsync(a, 'sum'));
    // Every call has been made and none can have settled yet: each holds what it holds now.
    const during = ck.memoryPool().hostStaging;
    const got = await Promise.all(pending);
    expect(got.filter((v) => v !== want)).toEqual([]);
    report(`staging with 3,000 reduceAsync in flight: ${JSON.stringify(during)} (before ${JSON.stringify(before)})`);
    expect(during.used - before.used).toBeLessThanOrEqual(4 * MiB);
  });

  // With the budget full of blocks whose copies wait behind queued GPU work, a small copyFromAsync
  // waited for the oldest of them on the JS thread: the event loop stopped for as long as the GPU
  // work ahead took (here the held stream's 8 s), for a call documented never to block.
  holdTest(
    '100 small copyFromAsync calls behind a busy GPU return at once (past the staging budget too)',
    async () => {
      const n = 75_000;
      const count = 100;
      const { all, part } = sources(count, n);
      using a = ck.full('float32', count * n, 7);
      ck.synchronize();
      ck.trimMemoryPool(0);
      expect(ck.memoryPool().hostStaging.used).toBe(0);
      const pending: Promise<unknown>[] = [];
      native.debugHoldStream!(0, 8000);
      let elapsed: number;
      try {
        const t0 = performance.now();
        for (let i = 0; i < count; i++) pending.push(a.copyFromAsync(part(i), { offset: i * n }));
        elapsed = performance.now() - t0;
      } finally {
        native.debugReleaseStream!();
      }
      await Promise.all(pending);
      expect(ck.cpu.firstMismatch(a.toHostSync(), all)).toBe(-1);
      const path = native.uploadPath(0) as { path: string };
      report(`100 copyFromAsync of 300 KB behind a held stream: ${elapsed.toFixed(0)} ms in the calls (${path.path})`);
      // Where the driver has no stream memory operations, past the budget is the calling thread's path.
      if (path.path === 'stream-ordered') expect(elapsed).toBeLessThan(2000);
    },
    60_000,
  );

  // Documented as not allowed, and read from memory its new owner may free: the promise used to
  // resolve as if the data had arrived.
  holdTest(
    'a large pageable source transferred away while it is staged: the promise rejects (TypeError)',
    async () => {
      const n = 16 * MiB; // 64 MiB: 16 chunks over the ring's 8 slots
      using a = ck.zeros('float32', n);
      const src = new Float32Array(n).fill(3);
      let p: Promise<unknown>;
      let moved: ArrayBuffer;
      native.debugHoldStream!(0, 8000);
      try {
        p = a.copyFromAsync(src);
        p.catch(() => undefined);
        moved = structuredClone(src.buffer, { transfer: [src.buffer] }); // kept alive: no use after free here
      } finally {
        native.debugReleaseStream!();
      }
      const path = native.uploadPath(0) as { path: string };
      if (path.path === 'stream-ordered') {
        await expect(p).rejects.toMatchObject({ name: 'TypeError', message: expect.stringMatching(/detached/) });
      } else {
        await p; // the calling thread had read it before the call returned
      }
      expect(moved.byteLength).toBe(4 * n);
      // The ring and the device are fine.
      using b = ck.zeros('float32', n);
      await b.copyFromAsync(new Float32Array(n).fill(5));
      expect(ck.reduce(b, 'min')).toBe(5);
    },
    60_000,
  );

  // The same wait, in a reduceAsync (and evaluateAsync) call: its result block was taken with
  // stagingAcquire, which waits for the oldest recycled block when the budget is full.
  holdTest(
    'reduceAsync returns at once while copyFrom blocks fill the staging budget behind a busy GPU',
    async () => {
      const n = 75_000;
      const count = 64; // 64 blocks of 1 MiB: the whole 64 MiB budget
      const { all, part } = sources(count, n);
      const want = all.reduce((s, v) => s + v, 0);
      using a = ck.full('float32', count * n, 7);
      ck.synchronize();
      ck.trimMemoryPool(0);
      expect(ck.memoryPool().hostStaging.used).toBe(0);
      let p: Promise<number>;
      let elapsed: number;
      native.debugHoldStream!(0, 8000);
      try {
        for (let i = 0; i < count; i++) a.copyFrom(part(i), { offset: i * n }); // each within the budget
        expect(ck.memoryPool().hostStaging.used).toBeGreaterThanOrEqual(64 * MiB - 64 * 1024);
        const t0 = performance.now();
        p = ck.reduceAsync(a, 'sum');
        elapsed = performance.now() - t0;
      } finally {
        native.debugReleaseStream!();
      }
      expect(await p).toBe(want); // after the copies, which were queued first
      report(`reduceAsync behind a full staging budget: ${elapsed.toFixed(0)} ms in the call`);
      expect(elapsed).toBeLessThan(1000);
    },
    60_000,
  );

  // A toHost() into a caller's pageable target above 1 MiB leases a 64 MiB pinned ring from its first
  // chunk until its last has been copied out on the JS thread, and rings are not capped: calls made
  // while the JS thread is busy each lease their own, and the cache keeps them all until
  // trimMemoryPool (32 calls of 2 MiB pinned 2 GiB). Not fixed on this branch: see the review's report.
  test('32 toHost(target) calls of 2 MiB while the JS thread is busy pin a bounded number of rings', async () => {
    const n = MiB / 2 + 1; // 2 MiB + 4 bytes: three 1 MiB chunks, one ring
    const host = hostData('float32', n, freshSeed());
    using a = ck.upload(host);
    ck.synchronize();
    ck.trimMemoryPool(0);
    const pending = Array.from({ length: 32 }, () => a.toHost(new Float32Array(n)));
    // Busy on the JS thread (as a program computing while its copies run): the chunks arrive on the
    // pool threads meanwhile, but no download can finish, so none gives its ring back.
    let used = ck.memoryPool().hostStaging.used;
    let stableSince = performance.now();
    const deadline = performance.now() + 10_000;
    while (performance.now() < deadline && performance.now() - stableSince < 500) {
      const now = ck.memoryPool().hostStaging.used;
      if (now !== used) [used, stableSince] = [now, performance.now()];
    }
    const during = ck.memoryPool().hostStaging;
    for (const r of await Promise.all(pending)) expect(ck.cpu.firstMismatch(r, host)).toBe(-1);
    report(`staging with 32 toHost(target) of 2 MiB while the JS thread is busy: ${JSON.stringify(during)}`);
    ck.trimMemoryPool(0);
    expect(during.used).toBeLessThanOrEqual(8 * 64 * MiB);
  }, 60_000);
});

describeGpu('transfers cut short: exit, a terminated worker, a device failure (child processes)', () => {
  const hooks = typeof native.debugFault === 'function' && !SANITIZER;
  const child = (mode: string) => childJson('test/harness/transfer-faults.ts', [], { UV_THREADPOOL_SIZE: '4' }, [mode]);

  test('process.exit() while large toHost() calls are brought down exits cleanly', () => {
    expect(child('exit')).toEqual({ calledExit: true });
  }, 120_000);

  test('a worker terminated while its large toHost() calls run; the main thread copies on', () => {
    const out = child('worker');
    expect(out.results).toEqual([-1, -1]);
  }, 120_000);

  (hooks ? test : test.skip)(
    'large toHost() calls whose work starts after a sticky fault reject with a CudaError; the process does not abort',
    () => {
      const out = child('lost-stream');
      expect(out.fault).toBe('cudaErrorIllegalAddress');
      expect(out.fresh).toMatch(/^cuda/);
      expect(out.target).toMatch(/^cuda/);
    },
    120_000,
  );
});

describeGpu(
  'transfers after a device failure on another device (child process)',
  () => {
    const hooks = typeof native.debugFault === 'function' && !SANITIZER;
    (hooks ? test : test.skip)(
      "a fault on device 1 leaves device 0's large pageable copies working (they lease the same pinned ring)",
      () => {
        const out = childJson('test/harness/transfer-faults.ts', [], {}, ['other-device']);
        expect(out).toEqual({
          fault: 'cudaErrorIllegalAddress',
          'first copyFrom': -1,
          'second copyFrom': -1,
          toHost: -1,
        });
      },
      120_000,
    );
  },
  2,
);
