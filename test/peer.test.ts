import { execFileSync } from 'node:child_process';

import * as ck from '../lib';
import { native } from '../lib/native';
import { apspMultiFamily, gpuCounts } from '../lib/bench/apsp-multi';
import { peerFamily } from '../lib/bench/peer';
import { expectThrows } from './helpers/errors';
import { describeGpu, describeNoGpu, gpuCount } from './helpers/gpu';

type HostOf = Float32Array | Float64Array | Int32Array | Uint32Array;

/** Distinct values of every dtype: the index, scrambled, in the dtype's range. */
function hostData(dtype: ck.Dtype, n: number, seed: number): HostOf {
  const out =
    dtype === 'float32'
      ? new Float32Array(n)
      : dtype === 'float64'
        ? new Float64Array(n)
        : dtype === 'int32'
          ? new Int32Array(n)
          : new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const h = (Math.imul(i + seed, 2654435761) ^ (i >>> 3)) >>> 0;
    out[i] = dtype.startsWith('float') ? (h / 4294967296) * 2 - 1 + i : dtype === 'int32' ? h | 0 : h;
  }
  return out;
}

/**
 * Peer access as the driver's own tool reports it (`nvidia-smi topo -p2p r`), keyed by PCI bus
 * (CUDA and nvidia-smi may number the devices differently); undefined where nvidia-smi is missing.
 */
function p2pFromNvidiaSmi(): Map<string, boolean> | undefined {
  let topo: string, buses: string;
  try {
    topo = execFileSync('nvidia-smi', ['topo', '-p2p', 'r'], { encoding: 'utf8' });
    buses = execFileSync('nvidia-smi', ['--query-gpu=index,pci.bus', '--format=csv,noheader'], { encoding: 'utf8' });
  } catch {
    return undefined;
  }
  const busOf = new Map(
    buses
      .trim()
      .split('\n')
      .map((l) => l.split(',').map((c) => c.trim()))
      .map(([i, bus]) => [Number(i), Number.parseInt(bus, 16)]),
  );
  const result = new Map<string, boolean>();
  for (const line of topo.split('\n')) {
    const cells = line.trim().split(/\s+/);
    const row = /^GPU(\d+)$/.exec(cells[0] ?? '');
    if (!row) continue;
    cells.slice(1).forEach((c, col) => {
      if (c === 'X') return;
      result.set(`${busOf.get(Number(row[1]))}>${busOf.get(col)}`, c === 'OK');
    });
  }
  return result;
}

/** Element by element: dst[dstOffset + k] = src[srcOffset + k] for k < length, the rest still `fill`. */
function expectCopied(dst: HostOf, src: HostOf, dstOffset: number, srcOffset: number, length: number, fill: number) {
  let bad = -1;
  for (let i = 0; i < dst.length && bad < 0; i++) {
    const inside = i >= dstOffset && i < dstOffset + length;
    const want = inside ? src[srcOffset + i - dstOffset] : fill;
    if (dst[i] !== want) bad = i;
  }
  expect(bad).toBe(-1);
}

describe('peer copies: arguments (no GPU needed)', () => {
  test('device indices must be integers ≥ 0', () => {
    expect(() => ck.canAccessPeer('0' as never, 1)).toThrow(TypeError);
    expect(() => ck.canAccessPeer(0, -1)).toThrow(RangeError);
    expect(() => ck.canAccessPeer(1.5, 0)).toThrow(/a must be an integer/);
    expect(() => ck.enablePeerAccess(0, NaN)).toThrow(RangeError);
    expect(() => ck.enablePeerAccess(null as never, 0)).toThrow(TypeError);
  });

  test('peerCopy and copyViaHost take DeviceArrays', () => {
    expect(() => ck.peerCopy(new Float32Array(4) as never, new Float32Array(4) as never)).toThrow(
      /dst must be a DeviceArray/,
    );
    expect(() => ck.copyViaHost({} as never, {} as never)).toThrow(TypeError);
  });

  test('bench plug-ins: GPU counts and plans', () => {
    expect(gpuCounts(0)).toEqual([]);
    expect(gpuCounts(1)).toEqual([1]);
    expect(gpuCounts(2)).toEqual([1, 2]);
    expect(gpuCounts(3)).toEqual([1, 2, 3]);
    expect(gpuCounts(4)).toEqual([1, 2, 4]);
    expect(gpuCounts(8)).toEqual([1, 2, 4, 8]);
    const ctx = { device: 0, reps: 3, warmup: 1, quick: false, progress: () => {} };
    expect(peerFamily.plan?.(ctx)).toBe(6);
    expect(peerFamily.plan?.({ ...ctx, quick: true })).toBe(2);
    expect(apspMultiFamily.plan?.({ ...ctx, sizes: [1024] })).toBe(gpuCounts(gpuCount).length);
  });
});

describeNoGpu('peer copies without a GPU', () => {
  test('canAccessPeer and enablePeerAccess throw a CudaError', () => {
    expectThrows(() => ck.canAccessPeer(0, 1), 'CudaError', /no CUDA device|driver/);
    expectThrows(() => ck.enablePeerAccess(0, 1), 'CudaError');
  });
});

describeGpu('peer copies on one device', () => {
  test('canAccessPeer(d, d) is true; enablePeerAccess(d, d) is a no-op', () => {
    expect(ck.canAccessPeer(0, 0)).toBe(true);
    expect(() => ck.enablePeerAccess(0, 0)).not.toThrow();
  });

  test('device indices past the last device are RangeErrors', () => {
    expect(() => ck.canAccessPeer(0, gpuCount)).toThrow(RangeError);
    expect(() => ck.enablePeerAccess(gpuCount + 3, 0)).toThrow(/below/);
  });

  test.each(ck.dtypes)('%s: offsets and lengths, both copies, element by element', (dtype) => {
    const n = 1000;
    const host = hostData(dtype, n, 7);
    using src = ck.upload(host);
    for (const copy of [ck.peerCopy, ck.copyViaHost]) {
      for (const [dstOffset, srcOffset, length] of [
        [0, 0, n],
        [3, 17, 500],
        [999, 0, 1],
        [10, 990, 10],
        [0, 5, 0],
      ]) {
        using dst = ck.empty(dtype, n).fill(0);
        copy(dst, src, { dstOffset, srcOffset, length });
        expectCopied(dst.toHostSync(), host, dstOffset, srcOffset, length, 0);
      }
      using whole = ck.empty(dtype, n).fill(0);
      copy(whole, src);
      expectCopied(whole.toHostSync(), host, 0, 0, n, 0);
    }
  });

  test('bad lengths, offsets, dtypes and freed arrays', () => {
    using a = ck.zeros('float32', 100);
    using b = ck.zeros('float32', 50);
    using c = ck.zeros('int32', 100);
    expect(() => ck.peerCopy(b, a)).toThrow(/options.length must be at most 50/);
    expect(() => ck.peerCopy(a, b, { srcOffset: 51 })).toThrow(RangeError);
    expect(() => ck.peerCopy(a, b, { dstOffset: 60, length: 41 })).toThrow(RangeError);
    expect(() => ck.copyViaHost(a, b, { length: 51 })).toThrow(RangeError);
    expect(() => ck.peerCopy(a, b, { length: -1 })).toThrow(RangeError);
    expect(() => ck.peerCopy(a, b, { length: 2.5 })).toThrow(RangeError);
    expect(() => ck.peerCopy(a, b, { length: '3' as never })).toThrow(TypeError);
    expect(() => ck.peerCopy(a, c as never)).toThrow(/src must be a DeviceArray of float32/);
    const d = ck.zeros('float32', 10);
    d.free();
    expect(() => ck.peerCopy(a, d)).toThrow(/src has been freed/);
    expect(() => ck.copyViaHost(d, a)).toThrow(/dst has been freed/);
  });

  test('copyViaHost: more than the pinned ring (4 × 32 MiB) in one copy', () => {
    const n = 40 << 20; // 160 MiB of uint32: five chunks, so the ring wraps
    using src = ck.empty('uint32', n).fillRandom(11);
    using dst = ck.empty('uint32', n).fill(0);
    ck.copyViaHost(dst, src);
    expect(ck.cpu.firstMismatch(dst.toHostSync(), src.toHostSync())).toBe(-1);
  });
});

describeGpu(
  'peer copies between devices',
  () => {
    const pairs: [number, number][] = [];
    for (let a = 0; a < Math.min(gpuCount, 4); a++)
      for (let b = 0; b < Math.min(gpuCount, 4); b++) if (a !== b) pairs.push([a, b]);

    const hookTest = native.debugCurrentDevice ? test : test.skip;
    hookTest('work on device 1 leaves the calling thread on the device it was on', async () => {
      const current = () => native.debugCurrentDevice!();
      ck.synchronize(0);
      expect(current()).toBe(0);
      const steps: [string, () => unknown][] = [];
      using a = ck.empty('float64', 64 * 64, { device: 1 }).fillRandom(3);
      using f = ck.empty('float32', 64 * 64, { device: 1 }).fillRandom(4);
      using z = ck.zeros('float32', 64 * 64, { device: 0 });
      steps.push(
        ['atA', () => ck.atA(a, 64, 64, { method: 'tiled' }).free()],
        ['gemm', () => ck.gemm(f, f, 64, 64, 64, { method: 'fast' }).free()],
        ['scan', () => ck.scan(f).free()],
        ['reduce', () => ck.reduce(f, 'sum')],
        ['toHostSync', () => f.toHostSync()],
        ['peerCopy 1 → 0', () => ck.peerCopy(z, f)],
        ['copyViaHost 1 → 0', () => ck.copyViaHost(z, f)],
        ['timed on device 1', () => ck.timed(() => f.fill(1), { device: 1 })],
        ['synchronize(1)', () => ck.synchronize(1)],
        ['memoryInfo(1)', () => ck.memoryInfo(1)],
        ['free on device 1', () => ck.empty('int32', 8, { device: 1 }).free()],
      );
      const moved: string[] = [];
      for (const [name, step] of steps) {
        step();
        if (current() !== 0) moved.push(`${name} left device ${current()}`);
      }
      await f.toHost();
      if (current() !== 0) moved.push(`toHost left device ${current()}`);
      expect(moved).toEqual([]);
    });

    test('enablePeerAccess is idempotent where peer access is possible', () => {
      for (const [a, b] of pairs) {
        // The driver's own tool says the same (by PCI bus), where it is there.
        const smi = p2pFromNvidiaSmi()?.get(`${ck.deviceProperties(a).pciBusId}>${ck.deviceProperties(b).pciBusId}`);
        if (smi !== undefined) expect(ck.canAccessPeer(a, b)).toBe(smi);
        expect(ck.canAccessPeer(a, b)).toBe(ck.deviceProperties(a).peers.includes(b));
        if (ck.canAccessPeer(a, b) && ck.canAccessPeer(b, a)) {
          ck.enablePeerAccess(a, b);
          ck.enablePeerAccess(a, b);
          ck.enablePeerAccess(b, a);
        } else {
          expectThrows(() => ck.enablePeerAccess(a, b), 'CudaError', /cannot access/);
        }
      }
    });

    test.each(ck.dtypes)('%s: every pair, offsets and lengths, both copies, element by element', (dtype) => {
      const n = 4099;
      for (const [from, to] of pairs) {
        const host = hostData(dtype, n, from * 10 + to);
        using src = ck.upload(host, { device: from });
        for (const copy of [ck.peerCopy, ck.copyViaHost]) {
          for (const [dstOffset, srcOffset, length] of [
            [0, 0, n],
            [1, 2, 4000],
            [4098, 4098, 1],
            [7, 0, 0],
          ]) {
            using dst = ck.empty(dtype, n, { device: to }).fill(0);
            copy(dst, src, { dstOffset, srcOffset, length });
            expectCopied(dst.toHostSync(), host, dstOffset, srcOffset, length, 0);
          }
        }
      }
    });

    test('ordered after the source is written and before it is overwritten', () => {
      const n = 1 << 24;
      for (const copy of [ck.peerCopy, ck.copyViaHost]) {
        using src = ck.empty('uint32', n, { device: 0 });
        using dst = ck.empty('uint32', n, { device: 1 }).fill(0);
        using expected = ck.empty('uint32', n, { device: 0 }).fillRandom(5);
        src.fillRandom(5); // a kernel on device 0 still running when the copy is enqueued
        copy(dst, src);
        src.fill(7); // must wait for the copy to have read src
        expect(ck.cpu.firstMismatch(dst.toHostSync(), expected.toHostSync())).toBe(-1);
        expect(src.toHostSync()[n - 1]).toBe(7);
      }
    });

    test('a device index past the last device is a RangeError', () => {
      using a = ck.zeros('float32', 10, { device: 1 });
      expect(() => ck.canAccessPeer(1, gpuCount)).toThrow(RangeError);
      expect(a.device).toBe(1);
    });
  },
  2,
);
