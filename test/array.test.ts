import * as ck from '../lib';
import { describeGpu } from './helpers/gpu';

const MiB = 1 << 20;

function hostRandom(dtype: ck.Dtype, n: number, seed: number): ck.HostArray {
  const f = ck.cpu.randomArray(Float64Array, n, seed);
  if (dtype === 'float64') return f;
  if (dtype === 'float32') return new Float32Array(f);
  // Integers spanning the whole range, negative int32 values included.
  const out = dtype === 'int32' ? new Int32Array(n) : new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = f[i] * 2 ** 31;
  return out;
}

const seed = () => (Math.random() * 2 ** 31) | 0;

describeGpu('device arrays', () => {
  describe.each(ck.dtypes)('%s', (dtype) => {
    test.each([0, 1, 7, 10_000_003])('round trip of %i elements (toHost, toHostSync, copyFrom)', async (n) => {
      const host = hostRandom(dtype, n, seed());
      using a = ck.upload(host);
      expect(a.dtype).toBe(dtype);
      expect(a.length).toBe(n);
      expect(a.byteLength).toBe(host.byteLength);
      const back = await a.toHost();
      expect(back.constructor).toBe(host.constructor);
      expect(ck.cpu.firstMismatch(back, host)).toBe(-1);
      const again = hostRandom(dtype, n, seed());
      a.copyFrom(again as never);
      expect(ck.cpu.firstMismatch(a.toHostSync(), again)).toBe(-1);
    });

    test('zeros, full, fill and clone write every element', () => {
      const n = 1_000_003;
      using z = ck.full(dtype, n, 7);
      z.fill(0);
      expect(z.toHostSync().every((v) => v === 0)).toBe(true);
      using f = ck.zeros(dtype, n);
      f.fill(3);
      using c = f.clone();
      f.fill(5);
      expect(c.toHostSync().every((v) => v === 3)).toBe(true);
      expect(f.toHostSync().every((v) => v === 5)).toBe(true);
    });
  });

  test('NaN poisoning works on float arrays', () => {
    using a = ck.full('float64', 33, NaN);
    expect(a.toHostSync().every((v) => Number.isNaN(v))).toBe(true);
  });

  test('integer fill values are range-checked', () => {
    using a = ck.empty('int32', 4);
    expect(() => a.fill(2 ** 31)).toThrow(RangeError);
    expect(() => a.fill(0.5)).toThrow(RangeError);
    using u = ck.empty('uint32', 4);
    expect(() => u.fill(-1)).toThrow(RangeError);
    u.fill(2 ** 32 - 1);
    expect(u.toHostSync()[3]).toBe(2 ** 32 - 1);
  });

  test('copyFrom refuses another dtype or a source that does not fit', () => {
    using a = ck.empty('float32', 8);
    expect(() => a.copyFrom(new Float64Array(8) as never)).toThrow(/source must be a typed array of float32/);
    expect(() => a.copyFrom(new Float32Array(9))).toThrow(RangeError);
    expect(() => a.copyFrom(new Float32Array(7), { offset: 2 })).toThrow(RangeError);
  });

  test('copyDevice copies sub-ranges and checks bounds and dtypes', () => {
    const host = Float64Array.from({ length: 100 }, (_, i) => i);
    using src = ck.upload(host);
    using dst = ck.full('float64', 50, -1);
    ck.copyDevice(dst, src, { srcOffset: 10, dstOffset: 5, count: 20 });
    const out = dst.toHostSync();
    expect(out[4]).toBe(-1);
    expect(Array.from(out.subarray(5, 25))).toEqual(Array.from(host.subarray(10, 30)));
    expect(out[25]).toBe(-1);
    expect(() => ck.copyDevice(dst, src)).toThrow(/count must be at most 50/);
    expect(() => ck.copyDevice(dst, src, { srcOffset: 90, count: 11 })).toThrow(RangeError);
    using other = ck.empty('float32', 50);
    expect(() => ck.copyDevice(other as never, src)).toThrow(/must be a DeviceArray of float32/);
  });

  test('use after free throws, free is idempotent, dispose frees', () => {
    const a = ck.upload(new Int32Array([1, 2, 3]));
    a.free();
    a.free();
    expect(a.freed).toBe(true);
    expect(() => a.toHostSync()).toThrow(/has been freed/);
    expect(() => a.toHost()).toThrow(/has been freed/);
    expect(() => a.fill(1)).toThrow(/has been freed/);
    expect(() => a.clone()).toThrow(/has been freed/);
    let escaped: ck.DeviceArray | undefined;
    {
      using b = ck.zeros('float32', 3);
      escaped = b;
    }
    expect(escaped.freed).toBe(true);
  });

  test('free() while toHost() is in flight still delivers the data', async () => {
    const host = hostRandom('float32', 4 * MiB, seed());
    const a = ck.upload(host);
    const pending = a.toHost();
    a.free();
    expect(ck.cpu.firstMismatch(await pending, host)).toBe(-1);
  });

  test('many concurrent toHost() promises all resolve with the right data', async () => {
    const host = hostRandom('uint32', 4096, seed());
    using a = ck.upload(host);
    const all = await Promise.all(Array.from({ length: 200 }, () => a.toHost()));
    for (const r of all) expect(ck.cpu.firstMismatch(r, host)).toBe(-1);
  });

  test('toHost() lets timers fire while a large copy runs', async () => {
    const n = 128 * MiB; // 512 MiB of float32
    using a = ck.full('float32', n, 1.5);
    using b = ck.empty('float32', n);
    // Keep the stream busy before the download so it takes long enough to observe.
    for (let i = 0; i < 20; i++) ck.copyDevice(b, a);
    let ticks = 0;
    const interval = setInterval(() => ticks++, 1);
    const started = Date.now();
    const out = await b.toHost();
    clearInterval(interval);
    expect(out[n - 1]).toBe(1.5);
    expect(Date.now() - started).toBeGreaterThan(5);
    expect(ticks).toBeGreaterThan(0);
  });

  test('10,000 alloc/free cycles leave memoryInfo flat', () => {
    ck.synchronize(0);
    ck.empty('float32', 1).free();
    const before = ck.memoryInfo(0).free;
    for (let i = 0; i < 10_000; i++) {
      const a = ck.empty(ck.dtypes[i % 4], 1 + ((i * 7919) % 1_000_000));
      a.free();
    }
    ck.synchronize(0);
    const after = ck.memoryInfo(0).free;
    expect(Math.abs(after - before)).toBeLessThanOrEqual(MiB);
  });

  test('an allocation larger than free memory throws cudaErrorMemoryAllocation and the next one works', () => {
    const { free } = ck.memoryInfo(0);
    let caught: unknown;
    try {
      ck.empty('float64', Math.ceil((free + 1024 * MiB) / 8)).free();
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ck.CudaError);
    expect((caught as ck.CudaError).code).toBe('cudaErrorMemoryAllocation');
    expect((caught as ck.CudaError).call).toMatch(/^cudaMalloc/);
    using ok = ck.full('float64', 1000, 2);
    expect(ok.toHostSync()[999]).toBe(2);
  });
});

describeGpu('device properties', () => {
  test('are sane for every device', () => {
    for (let i = 0; i < ck.deviceCount(); i++) {
      const p = ck.deviceProperties(i);
      expect(p.name.length).toBeGreaterThan(0);
      expect(p.smCount).toBeGreaterThan(0);
      expect(p.warpSize).toBe(32);
      expect(p.major).toBeGreaterThanOrEqual(7);
      expect(p.computeCapability).toBe(`${p.major}.${p.minor}`);
      expect(p.maxThreadsPerBlock).toBeGreaterThanOrEqual(1024);
      expect(p.maxBlockDim[0]).toBeGreaterThanOrEqual(1024);
      expect(p.maxGridDim[0]).toBe(2 ** 31 - 1);
      expect(p.sharedMemPerBlock).toBe(48 * 1024);
      expect(p.totalConstMem).toBe(64 * 1024);
      expect(p.regsPerBlock).toBeGreaterThanOrEqual(65536);
      expect(p.totalGlobalMem).toBeGreaterThan(2 ** 30);
      expect(p.l2CacheSize).toBeGreaterThan(0);
      expect(p.clockRateKHz).toBeGreaterThan(100_000);
      expect(p.memoryBusWidth).toBeGreaterThanOrEqual(64);
      expect(p.peers).not.toContain(i);
      const m = ck.memoryInfo(i);
      expect(m.free).toBeGreaterThan(0);
      expect(m.free).toBeLessThanOrEqual(m.total);
    }
  });

  test('an index past the last device is a CudaError', () => {
    expect(() => ck.deviceProperties(ck.deviceCount())).toThrow(/does not exist/);
  });

  test('the driver supports the runtime the binary was built with', () => {
    const info = ck.runtimeInfo();
    expect(info.driverVersion).not.toBeNull();
    expect(parseFloat(info.driverVersion as string)).toBeGreaterThanOrEqual(
      Math.floor(parseFloat(info.runtimeVersion)),
    );
  });
});

describeGpu('device helpers', () => {
  test('fillRandom depends only on the seed and spans [-1, 1) for floats', () => {
    using a = ck.empty('float64', 100_003).fillRandom(42);
    using b = ck.empty('float64', 100_003).fillRandom(42);
    using c = ck.empty('float64', 100_003).fillRandom(43);
    const x = a.toHostSync();
    expect(ck.cpu.firstMismatch(x, b.toHostSync())).toBe(-1);
    expect(ck.cpu.firstMismatch(x, c.toHostSync())).toBe(0);
    let min = Infinity,
      max = -Infinity,
      mean = 0;
    for (const v of x) {
      min = Math.min(min, v);
      max = Math.max(max, v);
      mean += v / x.length;
    }
    expect(min).toBeGreaterThanOrEqual(-1);
    expect(max).toBeLessThan(1);
    expect(min).toBeLessThan(-0.99);
    expect(max).toBeGreaterThan(0.99);
    expect(Math.abs(mean)).toBeLessThan(0.01);
    using i = ck.empty('int32', 10_000).fillRandom(7);
    expect(i.toHostSync().some((v) => v < 0)).toBe(true);
  });

  test('deviceRelativeError matches the CPU computation and sees NaN', () => {
    const x = ck.cpu.randomArray(Float64Array, 10_007, seed());
    const y = ck.cpu.randomArray(Float64Array, 10_007, seed());
    using dx = ck.upload(x);
    using dy = ck.upload(y);
    expect(ck.deviceRelativeError(dx, dy)).toBeCloseTo(ck.cpu.relativeError(x, y), 12);
    expect(ck.deviceRelativeError(dx, dx)).toBe(0);
    using poisoned = ck.full('float64', 10_007, NaN);
    expect(ck.deviceRelativeError(poisoned, dy)).toBeNaN();
    using f = ck.upload(new Float32Array(10_007));
    expect(() => ck.deviceRelativeError(f as never, dy)).toThrow(/DeviceArray of float32/);
    const ints = Int32Array.from({ length: 1000 }, (_, i) => i * 7919 - 3_000_000);
    using di = ck.upload(ints);
    using dj = ck.upload(ints);
    expect(ck.deviceRelativeError(di, dj)).toBe(0);
    ints[999] += 1;
    dj.copyFrom(ints);
    expect(ck.deviceRelativeError(di, dj)).toBeGreaterThan(0);
  });
});
