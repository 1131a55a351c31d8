// MLP benchmark: one training epoch (full batch, sigmoid) of the issue's nets — [784, 1024, 1024, 10]
// × 60,000 patterns and [4096, 4096, 4096, 4096] × 16,384 — for every method and stream count;
// TFLOP/s = 6·P·Σ n_l·n_{l+1} / time. Beside them, `sgemm-cublas`: cuBLAS SGEMM (TF32 off) on the
// net's own GEMM shapes, 3 × the forward shapes (the two backward GEMMs of a layer have its flops),
// measured in the same run: the time an epoch would take if it were nothing but cuBLAS GEMMs.
import { copyDevice, empty, type DeviceArray } from '../array';
import { relativeError } from '../cpu';
import { Mlp as CpuMlp } from '../cpu/mlp';
import { flatWeights } from '../ops/mlp-spec';
import { cublasInfo } from '../device';
import { gemm } from '../ops/gemm';
import { Mlp, type MlpMethod } from '../ops/mlp';
import { timeBalanced, median, verdict, type BenchContext, type BenchFamily } from './harness';
import { deBruijnOrder } from './protocol';
import type { BenchRow } from './results';

interface Net {
  layers: number[];
  patterns: number;
}

const netsFor = (ctx: BenchContext): Net[] =>
  ctx.quick
    ? [
        { layers: [784, 256, 10], patterns: 4096 },
        { layers: [512, 512, 512], patterns: 2048 },
      ]
    : [
        { layers: [784, 1024, 1024, 10], patterns: 60000 },
        { layers: [4096, 4096, 4096, 4096], patterns: 16384 },
      ];

export interface Variant {
  label: string;
  method: Exclude<MlpMethod, 'auto'>;
  streams: number;
}

function variantsFor(ctx: BenchContext): Variant[] {
  const all: Variant[] = [
    ...(cublasInfo().available
      ? [
          { label: 'cublas', method: 'cublas' as const, streams: 1 },
          { label: 'cublas-s2', method: 'cublas' as const, streams: 2 },
        ]
      : []),
    { label: 'custom', method: 'custom', streams: 1 },
    { label: 'custom-s2', method: 'custom', streams: 2 },
    { label: 'custom-s4', method: 'custom', streams: 4 },
  ];
  return ctx.methods ? all.filter((v) => ctx.methods?.some((m) => v.label.startsWith(m))) : all;
}

/** Relative error of a variant's first-epoch update and error against cpu.Mlp that still passes. */
export const CHECK_TOLERANCE = 1e-3;

/**
 * For each variant, the worse of two relative errors against cpu.Mlp after one epoch on the first
 * `P` patterns of X and T, from the same initial weights: of the update W₁ − W₀ (norm-wise) and of
 * the epoch's error. NaN anywhere gives NaN (Math.max keeps it), which {@link verdict} fails.
 */
export function checkAgainstCpu(
  variants: readonly Variant[],
  spec: { layers: number[]; eta: number; alpha: number; seed: number; device: number },
  X: DeviceArray<'float32'>,
  T: DeviceArray<'float32'>,
  P: number,
): number[] {
  const { layers, device } = spec;
  const nIn = layers[0];
  const nOut = layers.at(-1) as number;
  using xs = empty('float32', P * nIn, { device });
  using ts = empty('float32', P * nOut, { device });
  copyDevice(xs, X, { count: P * nIn });
  copyDevice(ts, T, { count: P * nOut });
  const cpuNet = new CpuMlp(spec);
  const w0 = flatWeights(cpuNet.getWeights());
  // validate: false: a NaN in the data must reach the result, where verdict() fails it, not stop the run.
  const cpuError = cpuNet.train(xs.toHostSync(), ts.toHostSync(), { epochs: 1, validate: false })[0].error;
  const w1 = flatWeights(cpuNet.getWeights());
  const cpuUpdate = w1.map((w, i) => w - w0[i]);
  return variants.map((v) => {
    using m = new Mlp({ ...spec, method: v.method, streams: v.streams });
    const error = m.train(xs, ts, { epochs: 1, validate: false })[0].error;
    using p = m.copyParameters();
    const update = Float64Array.from(p.toHostSync(), (w, i) => w - w0[i]);
    return Math.max(relativeError(update, cpuUpdate), Math.abs(error - cpuError) / Math.abs(cpuError));
  });
}

const flops = (net: Net) => 6 * net.patterns * net.layers.slice(1).reduce((s, n, l) => s + net.layers[l] * n, 0);
const label = (net: Net) => `[${net.layers.join(',')}]x${net.patterns}`;

export const mlpFamily: BenchFamily = {
  op: 'mlp',
  description: 'one full-batch training epoch, sigmoid (TFLOP/s = 6·P·Σ n_l·n_{l+1}/time)',
  reference: 'sgemm-cublas',
  methodNames: () => ['cublas', 'cublas-s2', 'custom', 'custom-s2', 'custom-s4'],
  methodsByPrefix: true,
  plan: (ctx) => netsFor(ctx).length,
  run(ctx: BenchContext): BenchRow[] {
    const rows: BenchRow[] = [];
    const variants = variantsFor(ctx);
    for (const net of netsFor(ctx)) {
      const { layers, patterns: P } = net;
      ctx.progress(`mlp ${variants.map((v) => v.label).join(', ')} ${label(net)}`);
      const nIn = layers[0];
      const nOut = layers.at(-1) as number;
      using X = empty('float32', P * nIn, { device: ctx.device }).fillRandom(11);
      using T = empty('float32', P * nOut, { device: ctx.device }).fillRandom(12);
      const spec = { layers, eta: 1e-6, alpha: 0.9, seed: 5, device: ctx.device };
      const reps = P * layers[1] > 1e8 ? Math.min(ctx.reps, 5) : ctx.reps;
      const tf = (ms: number) => flops(net) / (ms * 1e-3) / 1e12;

      // Correctness: one epoch of each variant on the first `checkP` patterns from the same initial
      // weights (η = 1e-3, so that the update stands well above float32 rounding), its update W₁ − W₀
      // and its error against cpu.Mlp in float64. The CPU's share of the work limits checkP.
      const checkP = Math.min(P, layers[1] >= 4096 ? 16 : 256);
      const checks = checkAgainstCpu(variants, { ...spec, eta: 1e-3 }, X, T, checkP);

      // Timing: one epoch per sample, ms from CUDA events inside train(), the variants in the
      // balanced order of protocol.ts (each follows each equally often; the warm-up ends with the
      // variant each cycle ends with).
      const nets = variants.map((v) => new Mlp({ ...spec, method: v.method, streams: v.streams }));
      try {
        const samples: number[][] = variants.map(() => []);
        for (const m of nets) m.train(X, T, { epochs: 1 }); // warm-up (workspace, handles)
        const order = deBruijnOrder(nets.length);
        const cycles = Math.ceil(reps / (order.length / nets.length));
        for (let c = 0; c < cycles; c++)
          for (const i of order) samples[i].push(nets[i].train(X, T, { epochs: 1 })[0].ms);
        variants.forEach((v, i) => {
          const ms = median(samples[i]);
          rows.push({
            op: 'mlp',
            method: v.label,
            size: label(net),
            ms,
            rate: tf(ms),
            unit: 'TFLOP/s',
            reps: samples[i].length,
            check: verdict(checks[i], CHECK_TOLERANCE),
            protocol: 'balanced',
            note: `${Math.min(...samples[i]).toFixed(2)}–${Math.max(...samples[i]).toFixed(2)} ms; ${v.method}, ${v.streams} stream(s); one epoch on ${checkP} patterns, update and error vs cpu.Mlp (float64): ${checks[i].toExponential(2)}`,
          });
        });
      } finally {
        for (const m of nets) m.free();
      }

      // cuBLAS SGEMM on the net's forward shapes (P × n_l)·(n_l × n_{l+1}), ×3 for the epoch.
      if (cublasInfo().available) {
        const shapes = layers.slice(1).map((n, l) => ({ m: P, k: layers[l], n }));
        const ins = shapes.map((s) => ({
          a: empty('float32', s.m * s.k, { device: ctx.device }).fillRandom(1),
          b: empty('float32', s.k * s.n, { device: ctx.device }).fillRandom(2),
          c: empty('float32', s.m * s.n, { device: ctx.device }),
        }));
        try {
          const per = timeBalanced(
            shapes.map((s, i) => () => {
              gemm(ins[i].a, ins[i].b, s.m, s.k, s.n, { method: 'cublas', out: ins[i].c });
            }),
            { device: ctx.device, reps, warmup: 1 },
          ).samples.map(median);
          const ms = 3 * per.reduce((a, b) => a + b, 0);
          rows.push({
            op: 'mlp',
            method: 'sgemm-cublas',
            size: label(net),
            ms,
            rate: tf(ms),
            unit: 'TFLOP/s',
            reps,
            check: 'skipped',
            note: `3 × Σ cublasSgemm of the forward shapes (${shapes.map((s, i) => `${s.m}×${s.k}×${s.n}: ${per[i].toFixed(3)} ms`).join(', ')}); TF32 off`,
          });
        } finally {
          for (const t of ins) for (const a of Object.values(t)) a.free();
        }
      }
    }
    return rows;
  },
};
