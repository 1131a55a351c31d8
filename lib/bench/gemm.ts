// SGEMM benchmark: the report's tables (tile 8/16/32 at 1024; 128…2048 for naive and shared) and
// 1024…8192 for every method.
import { empty, type DeviceArray } from '../array';
import { cublasInfo } from '../device';
import { gemm, type GemmOptions } from '../ops/gemm';
import { type BenchContext, type BenchFamily, benchVariants } from './harness';
import type { BenchRow } from './results';

interface Item {
  n: number;
  label: string;
  options: GemmOptions;
}

function plannedItems(ctx: BenchContext): Item[] {
  const haveCublas = cublasInfo().available;
  const all = (n: number): Item[] => [
    { n, label: 'naive', options: { method: 'naive' } },
    ...([8, 16, 32] as const).map((tile) => ({
      n,
      label: `shared${tile}`,
      options: { method: 'shared' as const, tile },
    })),
    { n, label: 'fast', options: { method: 'fast' } },
    ...(haveCublas ? [{ n, label: 'cublas', options: { method: 'cublas' as const } }] : []),
  ];
  const sizes = ctx.sizes ?? (ctx.quick ? [512, 2048] : [128, 256, 512, 1024, 2048, 4096, 8192]);
  const items = sizes.flatMap(all);
  if (ctx.methods) return items.filter((it) => ctx.methods?.some((m) => it.label.startsWith(m)));
  return items;
}

export const gemmFamily: BenchFamily = {
  op: 'gemm',
  description: 'C = A·B in float32 (GFLOP/s = 2·m·k·n/time)',
  reference: 'cublas',
  pairs: [{ a: 'fast', b: 'cublas', sizes: [4096, 8192] }],
  methodNames: () => ['naive', 'shared8', 'shared16', 'shared32', 'fast', 'cublas'],
  methodsByPrefix: true,
  maxSize: { value: 16384, what: 'per side' },
  // One step per size: its methods are timed together.
  plan: (ctx) => new Set(plannedItems(ctx).map((it) => it.n)).size,
  run(ctx: BenchContext): BenchRow[] {
    const rows: BenchRow[] = [];
    const haveCublas = cublasInfo().available;
    const items = plannedItems(ctx);
    for (const n of [...new Set(items.map((it) => it.n))]) {
      using a = empty('float32', n * n, { device: ctx.device }).fillRandom(n * 7 + 1);
      using b = empty('float32', n * n, { device: ctx.device }).fillRandom(n * 7 + 2);
      const refOptions: GemmOptions = haveCublas ? { method: 'cublas' } : { method: 'fast' };
      using ref = gemm(a, b, n, n, n, refOptions);
      const here = items.filter((x) => x.n === n);
      ctx.progress(`gemm ${here.map((it) => it.label).join(', ')} ${n}³`);
      rows.push(
        ...benchVariants(ctx, {
          op: 'gemm',
          size: `${n}x${n}x${n}`,
          labels: here.map((it) => it.label),
          run: (i, out) => gemm(a, b, n, n, n, { ...here[i].options, out: out as DeviceArray<'float32'> }),
          makeOut: () => empty('float32', n * n, { device: ctx.device }),
          ref,
          refName: refOptions.method as string,
          tolerance: 1e-5,
          rate: (ms) => (2 * n * n * n) / (ms * 1e-3) / 1e9,
          unit: 'GFLOP/s',
          reps: n >= 4096 ? Math.min(ctx.reps, 5) : ctx.reps,
        }),
      );
    }
    return rows;
  },
};
