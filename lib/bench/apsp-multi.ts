// Multi-GPU APSP scaling: `fast` on one GPU (the baseline, measured in the same run) against the band
// scheme and the report's replicated scheme on 2, 4, … GPUs, on random graphs; rate = n³/time. Rows are
// op `apsp` with `gpus` set; the multi-GPU methods are named `band-<N>gpu` and `replicated-<N>gpu`.
import { empty } from '../array';
import { deviceCount } from '../device';
import { apsp, APSP_MAX_N, randomGraph } from '../ops/apsp';
import { type BenchContext, type BenchFamily, benchVariants } from './harness';
import type { BenchRow } from './results';

const sizesFor = (ctx: BenchContext) => ctx.sizes ?? (ctx.quick ? [2048, 4096] : [16384, 32768]);

/** GPU counts to measure: 1, 2, 4, … up to the devices present, and the device count itself. */
export function gpuCounts(available: number): number[] {
  const counts = new Set<number>();
  for (let c = 1; c <= available; c *= 2) counts.add(c);
  if (available >= 1) counts.add(available);
  return [...counts].sort((a, b) => a - b);
}

const SCHEMES = ['band', 'replicated'] as const;

export const apspMultiFamily: BenchFamily = {
  op: 'apsp',
  description: 'all-pairs shortest paths on several GPUs (Grelax/s = n³/time/1e9; rows are op apsp with gpus)',
  methodNames: () => SCHEMES,
  maxSize: { value: APSP_MAX_N, what: 'vertices' },
  // One step per size and GPU count.
  plan: (ctx) => sizesFor(ctx).length * gpuCounts(deviceCount()).length,
  run(ctx: BenchContext): BenchRow[] {
    const available = deviceCount();
    const counts = gpuCounts(available);
    const schemes = SCHEMES.filter((m) => !ctx.methods || ctx.methods.includes(m));
    const rows: BenchRow[] = [];
    const devicesOf = (c: number) => Array.from({ length: c }, (_, i) => (ctx.device + i) % available);
    for (const n of sizesFor(ctx)) {
      using g = randomGraph(n, { density: 0.05, minWeight: 1, maxWeight: 1000, seed: n + 17, device: ctx.device });
      // The single-GPU result is the reference every multi-GPU result must equal exactly.
      using ref = apsp(g, n, { method: 'fast', validate: false });
      const reps = n >= 32768 ? Math.min(ctx.reps, 2) : n >= 16384 ? Math.min(ctx.reps, 3) : Math.min(ctx.reps, 5);
      const rate = (ms: number) => n ** 3 / (ms * 1e-3) / 1e9;
      let single = 0;
      for (const c of counts) {
        const labels = c === 1 ? ['fast'] : schemes.map((s) => `${s}-${c}gpu`);
        ctx.progress(`apsp ${labels.join(', ')} n=${n} on ${c} GPU${c > 1 ? 's' : ''}`);
        const devices = devicesOf(c);
        const batch = benchVariants(ctx, {
          op: 'apsp',
          size: `${n}`,
          labels,
          run: (i, out) => {
            const method = c === 1 ? 'fast' : labels[i].startsWith('replicated') ? 'replicated' : 'fast';
            apsp(g, n, { method, devices, out: out as never, validate: false });
          },
          makeOut: () => empty('int32', n * n, { device: ctx.device }),
          ref,
          refName: 'fast on 1 GPU',
          refLabel: 'fast',
          tolerance: Number.MIN_VALUE,
          rate,
          unit: 'Grelax/s',
          reps,
        });
        for (const r of batch) {
          r.gpus = c;
          if (c === 1) {
            single = r.rate;
            r.note = `${r.note}; 1 GPU (device ${ctx.device}), the multi-GPU baseline of this run`;
          } else {
            const scheme = r.method.startsWith('replicated')
              ? 'replicated (the report: whole matrix on every GPU, bands exchanged each round)'
              : 'row bands, pivot panel broadcast by peer copy with look-ahead';
            r.note =
              `${r.note}; ${c} GPUs (devices ${devices.join(', ')}), ${scheme}` +
              (single > 0 ? `; ${(r.rate / single).toFixed(2)}× the 1-GPU rate of this run` : '');
          }
        }
        rows.push(...batch);
      }
    }
    return rows;
  },
};
