// MLP benchmark: one training epoch (full batch, sigmoid) of the issue's nets — [784, 1024, 1024, 10]
// × 60,000 patterns and [4096, 4096, 4096, 4096] × 16,384 — for every method and stream count;
// TFLOP/s = 6·P·Σ n_l·n_{l+1} / time. Beside them, `sgemm-cublas`: cuBLAS SGEMM (TF32 off) on the
// net's own GEMM shapes, 3 × the forward shapes (the two backward GEMMs of a layer have its flops),
// measured in the same run: the time an epoch would take if it were nothing but cuBLAS GEMMs.
import { empty } from '../array';
import { relativeError } from '../cpu';
import { cublasInfo } from '../device';
import { gemm } from '../ops/gemm';
import { Mlp, type MlpMethod } from '../ops/mlp';
import { timeInterleaved, median, type BenchContext, type BenchFamily } from './harness';
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

interface Variant {
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

const flops = (net: Net) => 6 * net.patterns * net.layers.slice(1).reduce((s, n, l) => s + net.layers[l] * n, 0);
const label = (net: Net) => `[${net.layers.join(',')}]x${net.patterns}`;

export const mlpFamily: BenchFamily = {
  op: 'mlp',
  description: 'one full-batch training epoch, sigmoid (TFLOP/s = 6·P·Σ n_l·n_{l+1}/time)',
  reference: 'sgemm-cublas',
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

      // Correctness: one epoch of each variant from the same initial weights (η = 1e-3 so that the
      // update stands well above float32 rounding): its update W₁ − W₀ and its error against the first.
      const checks: number[] = [];
      {
        let init: Float32Array | undefined;
        let refUpdate: Float64Array | undefined;
        let refError = 0;
        for (const v of variants) {
          using m = new Mlp({ ...spec, eta: 1e-3, method: v.method, streams: v.streams });
          if (init === undefined) {
            using p0 = m.copyParameters();
            init = p0.toHostSync();
          }
          const error = m.train(X, T, { epochs: 1 })[0].error;
          using p = m.copyParameters();
          const w0 = init;
          const update = Float64Array.from(p.toHostSync(), (w, i) => w - w0[i]);
          if (refUpdate === undefined) {
            refUpdate = update;
            refError = error;
            checks.push(0);
          } else {
            const e = relativeError(update, refUpdate);
            const de = (error > refError ? error - refError : refError - error) / refError;
            checks.push(e > de ? e : de);
          }
        }
      }

      // Timing: one epoch per sample, the variants interleaved, ms from CUDA events inside train().
      const nets = variants.map((v) => new Mlp({ ...spec, method: v.method, streams: v.streams }));
      try {
        const samples: number[][] = variants.map(() => []);
        for (const m of nets) m.train(X, T, { epochs: 1 }); // warm-up (workspace, handles)
        for (let r = 0; r < reps; r++) nets.forEach((m, i) => samples[i].push(m.train(X, T, { epochs: 1 })[0].ms));
        variants.forEach((v, i) => {
          const ms = median(samples[i]);
          rows.push({
            op: 'mlp',
            method: v.label,
            size: label(net),
            ms,
            rate: tf(ms),
            unit: 'TFLOP/s',
            reps,
            check: checks[i] < 1e-3 ? 'ok' : 'fail',
            note: `${Math.min(...samples[i]).toFixed(2)}–${Math.max(...samples[i]).toFixed(2)} ms; ${v.method}, ${v.streams} stream(s); first epoch's update and error vs ${variants[0].label}: ${checks[i].toExponential(2)}`,
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
          const per = timeInterleaved(
            shapes.map((s, i) => () => {
              gemm(ins[i].a, ins[i].b, s.m, s.k, s.n, { method: 'cublas', out: ins[i].c });
            }),
            { device: ctx.device, reps, warmup: 1 },
          ).map(median);
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
