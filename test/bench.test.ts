import * as fs from 'node:fs';
import * as path from 'node:path';

import {
  benchVariants,
  families,
  gpuSlug,
  median,
  mergeRows,
  newRunStamp,
  timeGpu,
  timeInterleaved,
  verdict,
  writeResults,
  type BenchRow,
} from '../lib/bench';
import { describeGpuState, parseGpuState } from '../lib/bench/gpu-state';
import { CHECK_TOLERANCE, checkAgainstCpu } from '../lib/bench/mlp';
import * as ck from '../lib';
import { describeGpu } from './helpers/gpu';
import { tempDirs } from './helpers/temp-dirs';

const tmp = tempDirs('ck-bench-');

const row = (op: string, method: string, size: string, ms: number): BenchRow => ({
  op,
  method,
  size,
  ms,
  rate: 1 / ms,
  unit: 'x/s',
  reps: 3,
  check: 'ok',
});

describe('benchmark harness', () => {
  test('gpuSlug follows DESIGN.md', () => {
    expect(gpuSlug('NVIDIA H100 80GB HBM3')).toBe('nvidia-h100-80gb-hbm3');
    expect(gpuSlug('  NVIDIA GeForce RTX 4090 ')).toBe('nvidia-geforce-rtx-4090');
  });

  test('median of odd and even lists', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(() => median([])).toThrow(RangeError);
  });

  test('mergeRows replaces rows with the same op/method/size and keeps the rest', () => {
    const merged = mergeRows(
      [row('copy', 'device', '1MiB', 1), row('copy', 'device', '2MiB', 2)],
      [row('copy', 'device', '2MiB', 5), row('ata', 'fast', '8x8', 3)],
    );
    expect(merged.map((r) => `${r.size}:${r.ms}`)).toEqual(['1MiB:1', '2MiB:5', '8x8:3']);
  });

  test('writeResults merges into <dir>/<slug>.json', () => {
    const dir = tmp();
    const device = { name: 'Test GPU 1' };
    writeResults(dir, device, 'abc', [row('copy', 'device', '1MiB', 1)]);
    const file = writeResults(dir, device, 'def', [row('copy', 'device', '1MiB', 2), row('copy', 'device', '4MiB', 4)]);
    expect(path.basename(file)).toBe('test-gpu-1.json');
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(parsed.commit).toBe('def');
    expect(parsed.device.name).toBe('Test GPU 1');
    expect(Date.parse(parsed.createdAt)).not.toBeNaN();
    expect(parsed.rows.map((r: BenchRow) => r.ms)).toEqual([2, 4]);
  });

  test('verdict fails NaN and anything at or above the tolerance', () => {
    expect(verdict(0, 1e-6)).toBe('ok');
    expect(verdict(1e-7, 1e-6)).toBe('ok');
    expect(verdict(1e-6, 1e-6)).toBe('fail');
    expect(verdict(NaN, 1e-6)).toBe('fail');
    expect(verdict(Infinity, 1e-6)).toBe('fail');
  });

  test('a run stamp names the start time and the commit', () => {
    const s = newRunStamp('abc123', new Date('2026-11-24T10:20:30.456Z'));
    expect(s).toEqual({ run: '20261124T102030Z-abc123', commit: 'abc123', date: '2026-11-24T10:20:30.456Z' });
  });

  test('nvidia-smi state is read for the GPU on the given PCI bus only', () => {
    const csv = '0x1B, 1980, 2619, 312.45, 55\n0x2C, 345, 2619, 70.1, 31\n';
    expect(parseGpuState(csv, 0x2c)).toEqual({ smMHz: 345, memMHz: 2619, powerW: 70.1, tempC: 31 });
    expect(parseGpuState(csv, 0x1b)?.smMHz).toBe(1980);
    expect(parseGpuState(csv, 0x3d)).toBeUndefined();
    expect(parseGpuState('0x1B, [N/A], 2619, 1, 2', 0x1b)).toBeUndefined();
    expect(describeGpuState({ start: parseGpuState(csv, 0x2c), end: parseGpuState(csv, 0x1b) })).toBe(
      'SM 345 MHz, 70 W, 31 °C → SM 1980 MHz, 312 W, 55 °C',
    );
    expect(describeGpuState(undefined)).toBe('GPU state not recorded');
  });

  test('every family has the copy reference registered', () => {
    expect(Object.keys(families)).toContain('copy');
  });
});

describeGpu('benchmark harness on the GPU', () => {
  test('timeGpu returns one positive sample per repetition', () => {
    const samples = timeGpu(() => undefined, { device: 0, reps: 5, warmup: 1 });
    expect(samples).toHaveLength(5);
    for (const s of samples) expect(s).toBeGreaterThanOrEqual(0);
  });

  test('timeInterleaved times each variant once per repetition, in order', () => {
    const calls: string[] = [];
    using src = ck.full('float32', 1 << 22, 1);
    using dst = ck.empty('float32', 1 << 22);
    const samples = timeInterleaved(
      [
        () => calls.push('a'),
        () => {
          calls.push('b');
          for (let i = 0; i < 8; i++) ck.copyDevice(dst, src);
        },
      ],
      { device: 0, reps: 3, warmup: 1 },
    );
    // One warm-up of each, then three rounds.
    expect(calls.join('')).toBe('abababab');
    expect(samples.map((s) => s.length)).toEqual([3, 3]);
    // Eight 16 MiB copies take longer than no GPU work at all.
    expect(median(samples[1])).toBeGreaterThan(median(samples[0]));
  });

  test.each([
    ['ata', [300], ['tiled', 'fast'], ['300x300']],
    ['gemm', [256], ['shared', 'fast'], ['256x256x256']],
    ['scan', [4099], ['blocks', 'fast'], ['4099']],
  ])('the %s family times its variants together and checks each', (family, sizes, methods, labels) => {
    const ctx = { device: 0, reps: 3, warmup: 1, quick: true, sizes, methods, progress: () => {} };
    const rows = families[family].run(ctx);
    expect(rows.length).toBeGreaterThanOrEqual(methods.length);
    for (const r of rows) {
      expect(labels).toContain(r.size);
      // None of these method lists holds the family's reference, so every row is compared with it.
      expect(r.check).toBe('ok');
      // The balanced order times whole cycles: at least the reps asked for.
      expect(r.reps).toBeGreaterThanOrEqual(3);
      expect(r.ms).toBeGreaterThan(0);
      expect(r.note).toMatch(/relative error vs/);
    }
  });

  test('benchVariants says ref for the reference, fail for a wrong or unwritten result', () => {
    const n = 1000;
    using src = ck.empty('float32', n).fillRandom(7);
    using ref = src.clone();
    using wrong = src.clone();
    wrong.fill(0.5);
    const rows = benchVariants(
      { device: 0, reps: 2, warmup: 1, quick: true, progress: () => {} },
      {
        op: 'test',
        size: `${n}`,
        labels: ['copy', 'right', 'wrong', 'nothing'],
        run: (i, out) => {
          if (i <= 1) ck.copyDevice(out as ck.DeviceArray<'float32'>, src);
          if (i === 2) ck.copyDevice(out as ck.DeviceArray<'float32'>, wrong);
        },
        makeOut: () => ck.empty('float32', n),
        ref,
        refName: 'copy',
        tolerance: 1e-6,
        rate: (ms) => n / ms,
        unit: 'x/ms',
        reps: 2,
      },
    );
    expect(rows.map((r) => r.check)).toEqual(['ref', 'ok', 'fail', 'fail']);
    expect(rows[3].note).toMatch(/NaN/);
  });

  test('the MLP benchmark check is against cpu.Mlp for every variant and fails NaN', () => {
    const layers = [5, 7, 3];
    const P = 40;
    const spec = { layers, eta: 1e-3, alpha: 0.9, seed: 3, device: 0 };
    using X = ck.empty('float32', P * 5).fillRandom(1);
    using T = ck.empty('float32', P * 3).fillRandom(2);
    const variants = [
      { label: 'custom', method: 'custom' as const, streams: 1 },
      { label: 'custom-s2', method: 'custom' as const, streams: 2 },
    ];
    const errors = checkAgainstCpu(variants, spec, X, T, 16);
    expect(errors).toHaveLength(2);
    for (const e of errors) expect(verdict(e, CHECK_TOLERANCE)).toBe('ok');
    // A NaN in the data makes both sides NaN: no variant, the first included, may pass.
    const host = X.toHostSync();
    host[3] = NaN;
    X.copyFrom(host);
    for (const e of checkAgainstCpu(variants, spec, X, T, 16)) expect(verdict(e, CHECK_TOLERANCE)).toBe('fail');
  });

  test.each([
    ['gemm', 'fast', 'cublas', [256], '256x256x256', 'cublas'],
    ['scan', 'fast', 'cub', [4099], '4099', 'cub-int32'],
    ['stencil', 'fast', 'copy', [256], '256x256', 'copy'],
  ])(
    'the pair protocol on %s: %s against %s, one row per size with the ratio per round',
    (family, a, b, sizes, size, versus) => {
      const rows = families[family].run({
        device: 0,
        reps: 3,
        warmup: 1,
        quick: true,
        sizes,
        methods: b === 'copy' ? [a] : [a, b],
        pair: { a, b, rounds: 3 },
        progress: () => {},
      });
      expect(rows.length).toBeGreaterThanOrEqual(1);
      for (const r of rows) {
        expect(r).toMatchObject({ size, protocol: 'pair', reps: 6, check: 'ok' });
        expect(r.method.startsWith(a)).toBe(true);
        expect(r.versus?.method.startsWith(versus.split('-')[0])).toBe(true);
        expect(['ok', 'ref']).toContain(r.versus?.check);
        expect(r.ratio?.rounds).toBe(3);
        expect(r.ratio!.min).toBeLessThanOrEqual(r.ratio!.median);
        expect(r.ratio!.median).toBeLessThanOrEqual(r.ratio!.max);
        expect(r.ratio!.median).toBeGreaterThan(0);
      }
      if (family === 'scan') expect(rows.find((r) => r.method === 'fast-int32')?.versus?.method).toBe('cub-int32');
    },
  );

  test('the copy family measures and checks a copy', () => {
    const rows = families.copy.run({ device: 0, reps: 3, warmup: 1, quick: true, sizes: [8], progress: () => {} });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ op: 'copy', method: 'device', size: '8MiB', unit: 'GB/s', check: 'ok', reps: 3 });
    expect(rows[0].rate).toBeGreaterThan(10);
  });
});
