// AᵀA benchmark: the report's square table 2000²…18000² and two tall-skinny shapes, every method.
import { empty, type DeviceArray } from '../array';
import { cublasInfo } from '../device';
import { atA, ataMethods, type AtaMethod } from '../ops/ata';
import { type BenchContext, type BenchFamily, benchVariants } from './harness';
import type { BenchRow } from './results';

const SQUARES = [2000, 4000, 6000, 8000, 10000, 12000, 14000, 16000, 18000];
const TALL: [number, number][] = [
  [1_000_000, 64],
  [200_000, 2000],
];

function randomDevice(rows: number, cols: number, device: number, seed: number): DeviceArray<'float64'> {
  return empty('float64', rows * cols, { device }).fillRandom(seed);
}

/** Rate unit from the issue: GEMM-equivalent GFLOP/s = 2·rows·cols² / time. */
function gflops(rows: number, cols: number, ms: number): number {
  return (2 * rows * cols * cols) / (ms * 1e-3) / 1e9;
}

/** The shapes (rows, cols) a run covers: `--sizes` are squares, then any shapes of a pair claim. */
function shapes(ctx: BenchContext): [number, number][] {
  if (ctx.sizes || ctx.shapes)
    return [...(ctx.sizes ?? []).map((n): [number, number] => [n, n]), ...(ctx.shapes ?? [])];
  if (ctx.quick)
    return [
      [2000, 2000],
      [100_000, 64],
    ];
  return [...SQUARES.map((n): [number, number] => [n, n]), ...TALL];
}

export const ataFamily: BenchFamily = {
  op: 'ata',
  description: 'C = AᵀA in float64 (GEMM-equivalent GFLOP/s = 2·rows·cols²/time)',
  reference: 'cublas-syrk',
  pairs: [
    {
      a: 'fast',
      b: 'cublas-syrk',
      sizes: [4000, 8000, 10000, 16000],
      shapes: [[20000, 8000]],
    },
  ],
  methodNames: () => ataMethods,
  // A and C of 32768² float64 are 8 GiB each, and every method writes its own C.
  maxSize: { value: 32768, what: 'per side' },
  plan: (ctx) => shapes(ctx).length,
  run(ctx: BenchContext): BenchRow[] {
    const haveCublas = cublasInfo().available;
    const methods = (ctx.methods ?? [...ataMethods]).filter((m) => haveCublas || !m.startsWith('cublas'));
    const reference = haveCublas ? 'cublas' : 'tiled';
    const rows: BenchRow[] = [];
    for (const [r, c] of shapes(ctx)) {
      using a = randomDevice(r, c, ctx.device, r * 31 + c);
      using ref = atA(a, r, c, { method: reference });
      const big = r * c * c > 1e12;
      // basic runs at every size too: about 5 s a run at 18000², under the 10 s the report's table allows.
      ctx.progress(`ata ${methods.join(', ')} ${r}x${c}`);
      rows.push(
        ...benchVariants(ctx, {
          op: 'ata',
          size: `${r}x${c}`,
          labels: methods,
          run: (i, out) => atA(a, r, c, { method: methods[i] as AtaMethod, out: out as DeviceArray<'float64'> }),
          makeOut: () => empty('float64', c * c, { device: ctx.device }),
          ref,
          refName: reference,
          tolerance: 1e-12,
          rate: (ms) => gflops(r, c, ms),
          unit: 'GFLOP/s',
          reps: big ? Math.min(ctx.reps, 5) : ctx.reps,
        }),
      );
    }
    return rows;
  },
};
