// APSP benchmark: blocked Floyd–Warshall on random graphs of n = 2048, 6144 (the report's sizes),
// 12288 and 16384 vertices, every method; rate = relaxations/s = n³/time. `basic` is left out at a
// size where its time, extrapolated by n³ from the size before, would pass 10 s.
import { empty } from '../array';
import { apsp, apspBlockFactor, apspMethods, randomGraph, type ApspMethod } from '../ops/apsp';
import { type BenchContext, type BenchFamily, benchVariants } from './harness';
import type { BenchRow } from './results';

const BASIC_LIMIT_MS = 10_000;

/**
 * The report's GFLOPS figure: (10 + 4·BF)·(N/BF)·N² operations — four per relaxation (add, compare,
 * branch, store) and ten of index arithmetic per element and round.
 */
export function reportGflops(n: number, blockFactor: number, ms: number): number {
  return ((10 + 4 * blockFactor) * (n / blockFactor) * n * n) / (ms * 1e-3) / 1e9;
}

/** The `apsp` benchmark family: every method at each size, checked against `shared` exactly. */
const sizesFor = (ctx: BenchContext) => ctx.sizes ?? (ctx.quick ? [512, 2048] : [2048, 6144, 12288, 16384]);

export const apspFamily: BenchFamily = {
  op: 'apsp',
  description: 'all-pairs shortest paths, blocked Floyd–Warshall (Grelax/s = n³/time/1e9)',
  reference: 'shared',
  pairs: [{ a: 'fast', b: 'shared', sizes: [16384] }],
  methodNames: () => apspMethods,
  // Every method writes its own n² int32 result: 16 GiB each at 65536.
  maxSize: { value: 65536, what: 'vertices' },
  // One progress step per size, whether or not basic is left out there.
  plan: (ctx) => sizesFor(ctx).length,
  run(ctx: BenchContext): BenchRow[] {
    const sizes = sizesFor(ctx);
    const wanted = (ctx.methods ?? [...apspMethods]).filter((m) => (apspMethods as readonly string[]).includes(m));
    const rows: BenchRow[] = [];
    let basicAt: { n: number; ms: number } | undefined;
    for (const n of sizes) {
      let leftOut = '';
      const methods = wanted.filter((m) => {
        if (m !== 'basic' || basicAt === undefined) return true;
        const predicted = basicAt.ms * (n / basicAt.n) ** 3;
        if (predicted <= BASIC_LIMIT_MS) return true;
        leftOut = ` (basic left out: about ${(predicted / 1e3).toFixed(0)} s a run, over 10 s)`;
        return false;
      });
      ctx.progress(`apsp ${methods.join(', ') || 'nothing'} n=${n}${leftOut}`);
      if (methods.length === 0) continue;
      using g = randomGraph(n, { density: 0.05, minWeight: 1, maxWeight: 1000, seed: n + 17, device: ctx.device });
      // The textbook kernel is the reference; the tests compare every method with the CPU.
      using ref = apsp(g, n, { method: 'shared', validate: false });
      const batch = benchVariants(ctx, {
        op: 'apsp',
        size: `${n}`,
        labels: methods,
        // Validation (two reductions) is left out of the timed region: the graph is valid by construction.
        run: (i, out) => {
          apsp(g, n, { method: methods[i] as ApspMethod, out: out as never, validate: false });
        },
        makeOut: () => empty('int32', n * n, { device: ctx.device }),
        ref,
        refName: 'shared',
        tolerance: Number.MIN_VALUE, // distances must match exactly
        rate: (ms) => n ** 3 / (ms * 1e-3) / 1e9,
        unit: 'Grelax/s',
        reps: n >= 12288 ? Math.min(ctx.reps, 3) : n >= 6144 ? Math.min(ctx.reps, 5) : ctx.reps,
      });
      for (const r of batch) {
        const bf = apspBlockFactor(r.method as (typeof apspMethods)[number], n);
        r.note = `${r.note}; block factor ${bf}; report's GFLOPS (10+4·BF)·(N/BF)·N²/t = ${reportGflops(n, bf, r.ms).toFixed(0)}`;
        if (r.method === 'basic') basicAt = { n, ms: r.ms };
        r.gpus = 1;
      }
      rows.push(...batch);
    }
    return rows;
  },
};
