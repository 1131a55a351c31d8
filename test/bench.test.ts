import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import {
  families,
  gpuSlug,
  median,
  mergeRows,
  timeGpu,
  timeInterleaved,
  writeResults,
  type BenchRow,
} from '../lib/bench';
import * as ck from '../lib';
import { describeGpu } from './helpers/gpu';

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
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-bench-'));
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
      expect(r.check).toBe('ok');
      expect(r.reps).toBe(3);
      expect(r.ms).toBeGreaterThan(0);
      expect(r.note).toMatch(/relative error vs/);
    }
  });

  test('the copy family measures and checks a copy', () => {
    const rows = families.copy.run({ device: 0, reps: 3, warmup: 1, quick: true, sizes: [8], progress: () => {} });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ op: 'copy', method: 'device', size: '8MiB', unit: 'GB/s', check: 'ok', reps: 3 });
    expect(rows[0].rate).toBeGreaterThan(10);
  });
});
