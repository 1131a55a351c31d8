// Scan benchmark: 2^20…2^30 elements (2^30 for int32 only), every method and dtype, with the
// rate counted as bytes read plus written (2·n·bytes).
import { dtypeBytes, dtypes, empty, type Dtype } from '../array';
import { scan, scanMethods, type ScanMethod } from '../ops/scan';
import { type BenchContext, type BenchFamily, benchVariants, withDtype } from './harness';
import type { BenchRow } from './results';

/** The (dtype, length) steps of a run: 2^30 for int32 only. */
function steps(ctx: BenchContext): [Dtype, number][] {
  const lengths = ctx.sizes ?? (ctx.quick ? [2 ** 20, 2 ** 24] : [2 ** 20, 2 ** 24, 2 ** 28, 2 ** 30]);
  return (dtypes as readonly Dtype[]).flatMap((dtype) =>
    lengths.filter((n) => n <= 2 ** 28 || dtype === 'int32').map((n): [Dtype, number] => [dtype, n]),
  );
}

export const scanFamily: BenchFamily = {
  op: 'scan',
  description: 'inclusive prefix sum (GB/s = 2·n·bytes/time)',
  // Method names carry the dtype (`fast-int32`), so each is compared with CUB on the same dtype.
  reference: 'cub',
  bandwidth: true,
  pairs: [
    { a: 'fast', b: 'cub', sizes: [2 ** 28] },
    { a: 'fast', b: 'copy', sizes: [2 ** 28] },
  ],
  methodNames: () => scanMethods,
  maxSize: { value: 2 ** 30, what: 'elements' },
  plan: (ctx) => steps(ctx).length,
  run(ctx: BenchContext): BenchRow[] {
    const rows: BenchRow[] = [];
    for (const [dtype, n] of steps(ctx)) {
      // warp (one block, ~10 GB/s) takes about 1 s a run at 2^30: slow, but the table covers it.
      const methods = ctx.methods ?? [...scanMethods];
      using a = empty(dtype, n, { device: ctx.device }).fillRandom(n + dtype.length);
      using ref = scan(a, { method: 'cub' });
      ctx.progress(`scan ${dtype} ${methods.join(', ')} n=${n}`);
      const bytes = 2 * n * dtypeBytes(dtype);
      const batch = benchVariants(ctx, {
        op: 'scan',
        size: `${n}`,
        labels: methods,
        run: (i, out) => scan(a, { method: methods[i] as ScanMethod, out }),
        makeOut: () => empty(dtype, n, { device: ctx.device }),
        ref,
        refName: 'cub',
        // Integers must match exactly; floats differ from CUB's order by rounding.
        tolerance: dtype === 'float32' ? 1e-5 : dtype === 'float64' ? 1e-12 : Number.MIN_VALUE,
        rate: (ms) => bytes / (ms * 1e-3) / 1e9,
        unit: 'GB/s',
        reps: ctx.reps,
      });
      // One row per method, dtype and length: the dtype goes into the method name.
      rows.push(...batch.map((r) => withDtype(r, dtype)));
    }
    return rows;
  },
};
