import * as ck from '../lib';
import { freshSeed, hostGraph } from './harness/families';
import { describeGpu, gpuCount } from './helpers/gpu';

describeGpu('apsp across devices: options', () => {
  test('devices must be a non-empty array of distinct device indices', () => {
    using g = ck.upload(hostGraph(10, 0.3, 1));
    expect(() => ck.apsp(g, 10, { devices: [] })).toThrow(/at least one device/);
    expect(() => ck.apsp(g, 10, { devices: 0 as never })).toThrow(TypeError);
    expect(() => ck.apsp(g, 10, { devices: [0, 0] })).toThrow(/distinct/);
    expect(() => ck.apsp(g, 10, { devices: [gpuCount] })).toThrow(RangeError);
    expect(() => ck.apsp(g, 10, { devices: [-1] })).toThrow(RangeError);
    expect(() => ck.apsp(g, 10, { devices: ['0'] as never })).toThrow(TypeError);
  });

  test('one device: the single-GPU methods, replicated = fast', () => {
    const n = 130;
    const w = hostGraph(n, 0.05, freshSeed());
    const ref = ck.cpu.apsp(w, n);
    using g = ck.upload(w);
    for (const method of ['basic', 'shared', 'fast', 'replicated'] as const) {
      using d = ck.apsp(g, n, { devices: [0], method });
      expect(d.device).toBe(0);
      expect(ck.cpu.firstMismatch(d.toHostSync(), ref)).toBe(-1);
    }
  });
});

describeGpu(
  'apsp across devices',
  () => {
    const counts = [2, 3, 4].filter((c) => c <= gpuCount);
    const all = Array.from({ length: gpuCount }, (_, i) => i);

    test('several devices: methods, paths, onRound, out and transfer are checked', () => {
      using g = ck.upload(hostGraph(10, 0.3, 1));
      expect(() => ck.apsp(g, 10, { devices: [0, 1], method: 'basic' })).toThrow(/auto, fast or replicated/);
      expect(() => ck.apsp(g, 10, { devices: [0, 1], paths: true } as never)).toThrow(/single-GPU only/);
      expect(() => ck.apsp(g, 10, { devices: [0, 1], onRound: () => {} })).toThrow(RangeError);
      expect(() => ck.apsp(g, 10, { devices: [0, 1], blockFactor: 32 })).toThrow(RangeError);
      expect(() => ck.apsp(g, 10, { devices: [0, 1], transfer: 'pcie' as never })).toThrow(/auto, peer, host/);
      using wrong = ck.empty('int32', 100, { device: 0 });
      expect(() => ck.apsp(g, 10, { devices: [1, 0], out: wrong })).toThrow(/on devices\[0\] = 1/);
    });

    // n = 33 has one tile row (one device does the work), 257 three (bands 2 + 1 on two devices,
    // 1 + 1 + 1 on three, one device idle on four), 1000 eight, 1300 eleven (bands 4 + 4 + 3, 3 + 3 + 3 + 2).
    const SIZES = [33, 257, 1000, 1300];
    const refs = new Map<number, { w: Int32Array; ref: Int32Array }>();
    const refFor = (n: number) => {
      let r = refs.get(n);
      if (!r) {
        const w = hostGraph(n, n > 500 ? 0.01 : 0.05, freshSeed());
        r = { w, ref: ck.cpu.apsp(w, n) };
        refs.set(n, r);
      }
      return r;
    };
    const cases = SIZES.flatMap((n) =>
      counts.flatMap((c) => (['fast', 'replicated'] as const).map((method) => ({ n, c, method }))),
    );

    test.each(cases)('n = $n on $c GPUs, $method: equals cpu.apsp exactly', ({ n, c, method }) => {
      const { w, ref } = refFor(n);
      using g = ck.upload(w);
      using out = ck.full('int32', n * n, 0x5eedbeef, { device: 0 });
      const d = ck.apsp(g, n, { devices: all.slice(0, c), method, out });
      expect(d).toBe(out);
      expect(ck.cpu.firstMismatch(out.toHostSync(), ref)).toBe(-1);
    });

    test.each(counts)('%i GPUs through the host, both schemes, n = 1000', (c) => {
      const { w, ref } = refFor(1000);
      using g = ck.upload(w);
      for (const method of ['fast', 'replicated'] as const) {
        using d = ck.apsp(g, 1000, { devices: all.slice(0, c), method, transfer: 'host' });
        expect(ck.cpu.firstMismatch(d.toHostSync(), ref)).toBe(-1);
      }
    });

    test('input on another device, devices in any order; the result is on devices[0]', () => {
      const n = 300;
      const w = hostGraph(n, 0.05, freshSeed());
      const ref = ck.cpu.apsp(w, n);
      const last = gpuCount - 1;
      using g = ck.upload(w, { device: last });
      for (const devices of [[1, 0], [last, 0], [0, 1].concat(gpuCount > 2 ? [last] : [])]) {
        for (const method of ['fast', 'replicated'] as const) {
          using d = ck.apsp(g, n, { devices, method });
          expect(d.device).toBe(devices[0]);
          expect(ck.cpu.firstMismatch(d.toHostSync(), ref)).toBe(-1);
        }
      }
      using one = ck.apsp(g, n, { devices: [0] });
      expect(one.device).toBe(0);
      expect(ck.cpu.firstMismatch(one.toHostSync(), ref)).toBe(-1);
    });

    test('a large graph made on the GPU: every device count and scheme equals one GPU', () => {
      const n = 2 * 128 * 4 + 77; // 9 tile rows, padded
      using g = ck.randomGraph(n, { density: 0.02, seed: freshSeed(), minWeight: 0, maxWeight: 50 });
      using ref = ck.apsp(g, n, { method: 'fast' });
      for (const c of counts) {
        for (const method of ['fast', 'replicated'] as const) {
          using d = ck.apsp(g, n, { devices: all.slice(0, c), method });
          expect(ck.deviceRelativeError(d, ref)).toBe(0);
        }
      }
    });
  },
  2,
);
