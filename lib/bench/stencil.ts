// Stencil benchmark: the report's grid sizes plus 8192² and 16384², float32 and float64, 100 sweeps
// of box9 with tolerance 0, every method. Rate: effective GB/s = 2·rows·cols·bytes·sweeps / time
// (each sweep read and written once), to set beside the run's `copy` row; temporal blocking lets
// `fast` go past it. The time is the whole `stencil()` call with preallocated out/scratch buffers:
// sweeps, the host's checks of the residual and the checksum reduction.
import { dtypeBytes, empty, type DeviceArray } from '../array';
import { stencil, stencilMethods, type StencilMethod } from '../ops/stencil';
import { type BenchContext, type BenchFamily, benchVariants, withDtype } from './harness';
import type { BenchRow } from './results';

const SIDES = [8, 16, 32, 256, 1024, 2048, 4096, 5120, 8192, 16384];
const SWEEPS = 100;

const DTYPES = ['float32', 'float64'] as const;
const sidesFor = (ctx: BenchContext) => ctx.sizes ?? (ctx.quick ? [256, 1024] : SIDES);

export const stencilFamily: BenchFamily = {
  op: 'stencil',
  description: `periodic 3×3 stencil, ${SWEEPS} sweeps (effective GB/s = 2·rows·cols·bytes·sweeps/time)`,
  reference: 'basic',
  bandwidth: true,
  // Against a 1 GiB device copy: `fast` reads and writes less than a sweep's worth per sweep.
  pairs: [{ a: 'fast', b: 'copy', sizes: [8192] }],
  methodNames: () => stencilMethods,
  maxSize: { value: 32768, what: 'per grid side' },
  plan: (ctx) => DTYPES.length * sidesFor(ctx).length,
  run(ctx: BenchContext): BenchRow[] {
    const sides = sidesFor(ctx);
    const methods = (ctx.methods ?? [...stencilMethods]) as StencilMethod[];
    const rows: BenchRow[] = [];
    for (const dtype of DTYPES) {
      for (const n of sides) {
        ctx.progress(`stencil ${dtype} ${methods.join(', ')} ${n}x${n}`);
        const cells = n * n;
        using g = empty(dtype, cells, { device: ctx.device }).fillRandom(n * 7 + dtype.length);
        using scratch = empty(dtype, cells, { device: ctx.device });
        const opts = { tolerance: 0, maxIterations: SWEEPS, weights: 'box9' as const };
        // The reference is the textbook kernel; on small grids box9 can reach an exact fixed point
        // before 100 sweeps, so each method's rate counts the sweeps it really did.
        const ref = stencil(g, n, n, { ...opts, method: 'basic' });
        const sweeps = methods.map((method) => {
          const r = stencil(g, n, n, { ...opts, method });
          r.grid.free();
          return r.iterations;
        });
        try {
          const batch = benchVariants(ctx, {
            op: 'stencil',
            size: `${n}x${n}`,
            labels: methods,
            run: (i, out) => {
              stencil(g, n, n, { ...opts, method: methods[i], out: out as DeviceArray<typeof dtype>, scratch });
            },
            makeOut: () => empty(dtype, cells, { device: ctx.device }),
            ref: ref.grid,
            refName: 'basic',
            tolerance: dtype === 'float64' ? 1e-12 : 1e-5,
            rate: (ms, i) => (2 * cells * dtypeBytes(dtype) * sweeps[i]) / (ms * 1e-3) / 1e9,
            unit: 'GB/s',
            reps: cells >= 8192 * 8192 ? Math.min(ctx.reps, 5) : ctx.reps,
          });
          rows.push(
            ...batch.map((r) => {
              const i = methods.indexOf(r.method as StencilMethod);
              const note = sweeps[i] === SWEEPS ? r.note : `${r.note}; converged after ${sweeps[i]} sweeps`;
              return { ...withDtype(r, dtype), note };
            }),
          );
        } finally {
          ref.grid.free();
        }
      }
    }
    return rows;
  },
};
