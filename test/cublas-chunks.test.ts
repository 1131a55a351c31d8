// The cuBLAS methods with K in chunks (core/cublas.h: cuBLAS 13.0 went wrong with long K inside its
// int range, so K goes in chunks of at most 2^30 and accumulates into C). Real chunks need tens of GB
// (test/ata.test.ts and test/gemm.test.ts run them); here the test hook forces K into chunks of 1, 7
// and 64, at small sizes where every K of atA and gemm, and every K but the last batch's rows in
// Mlp, is longer than 64, against the CPU references. The hook also counts the chunk calls, so each
// test checks that K was split as forced.
import * as ck from '../lib';
import { native } from '../lib/native';
import { flatWeights, freshSeed } from './harness/families';
import { describeNeeding, gpuCount } from './helpers/gpu';
import { mlpData, outsideGemmBound, symmetryDefect } from './helpers/reference-checks';

const forceChunk = native.debugCublasKChunk;

function missing(): string | null {
  if (gpuCount === 0) return `no GPU — ${ck.runtimeInfo().noDeviceReason}`;
  const cublas = ck.cublasInfo();
  if (!cublas.available) return `no cuBLAS — ${cublas.code}`;
  if (typeof forceChunk !== 'function') return 'a release build (no test hooks)';
  return null;
}

const CHUNKS = [1, 7, 64];

/** How many cuBLAS chunk calls `run` makes with K forced into chunks of `chunk` (0: the default). */
function chunkCalls(chunk: number, run: () => void): number {
  forceChunk?.(chunk);
  run();
  return forceChunk?.(chunk) ?? 0;
}

describeNeeding(
  'cuBLAS methods with K in forced chunks',
  () => {
    afterEach(() => forceChunk?.(0));

    test.each(CHUNKS)(
      'K in chunks of %i: atA cublas and cublas-syrk match cpu.atA (cublas-syrk exactly symmetric)',
      (chunk) => {
        for (const [rows, cols] of [
          [129, 33],
          [1000, 17],
          [300, 257],
        ]) {
          const host = ck.cpu.randomArray(Float64Array, rows * cols, freshSeed());
          const ref = ck.cpu.atA(host, rows, cols);
          using a = ck.upload(host);
          using out = ck.empty('float64', cols * cols);
          for (const method of ['cublas', 'cublas-syrk'] as const) {
            out.fill(NaN);
            const calls = chunkCalls(chunk, () => ck.atA(a, rows, cols, { method, out }));
            const got = out.toHostSync();
            const err = ck.cpu.relativeError(got, ref);
            const asym = symmetryDefect(got, cols);
            // Names the case in the failure message.
            expect({ method, rows, cols, calls, within: err < 1e-12, asym: method === 'cublas' ? 0 : asym }).toEqual({
              method,
              rows,
              cols,
              calls: Math.ceil(rows / chunk),
              within: true,
              asym: 0,
            });
          }
        }
      },
    );

    test.each(CHUNKS)('K in chunks of %i: gemm cublas matches cpu.gemm within the float32 bound', (chunk) => {
      for (const [m, k, n] of [
        [7, 129, 5],
        [33, 1000, 17],
      ]) {
        const a = ck.cpu.randomArray(Float32Array, m * k, freshSeed());
        const b = ck.cpu.randomArray(Float32Array, k * n, freshSeed());
        using dA = ck.upload(a);
        using dB = ck.upload(b);
        using out = ck.full('float32', m * n, NaN);
        const calls = chunkCalls(chunk, () => ck.gemm(dA, dB, m, k, n, { method: 'cublas', out }));
        const bad = outsideGemmBound(out.toHostSync(), a, b, m, k, n);
        expect({ m, k, n, calls, bad }).toEqual({ m, k, n, calls: Math.ceil(k / chunk), bad: -1 });
      }
    });

    // Mlp's cuBLAS path: K is the layer width in the forward pass (70, 67) and the backward deltas (65),
    // and the batch's rows in the weight gradients (100, 100, 31; A transposed there), so at every
    // forced chunk each of the three operand layouts runs split.
    test.each(CHUNKS)('K in chunks of %i: Mlp cublas trains as cpu.Mlp (weights and errors within 1e-4)', (chunk) => {
      const seed = freshSeed();
      const layers = [70, 67, 65];
      const P = 231;
      const batchSize = 100;
      const { X, T } = mlpData(P, layers[0], layers[2], seed);
      const spec = {
        layers,
        eta: 0.05 / batchSize,
        alpha: 0.5,
        seed,
        activation: 'tanh' as const,
        output: 'sigmoid' as const,
      };
      using whole = new ck.Mlp({ ...spec, method: 'cublas', streams: 3 });
      using gpu = new ck.Mlp({ ...spec, method: 'cublas', streams: 3 });
      const cpu = new ck.cpu.Mlp(spec);
      const unforced = chunkCalls(0, () => whole.train(X, T, { epochs: 3, batchSize }));
      let g: ck.EpochResult[] = [];
      const forced = chunkCalls(chunk, () => (g = gpu.train(X, T, { epochs: 3, batchSize })));
      const c = cpu.train(X, T, { epochs: 3, batchSize });
      const errors = g.map((r, i) => Math.abs(r.error - c[i].error) / c[i].error < 1e-4);
      const weights = ck.cpu.relativeError(flatWeights(gpu.getWeights()), flatWeights(cpu.getWeights()));
      expect({ seed, split: forced > unforced, errors, weights: weights < 1e-4 }).toEqual({
        seed,
        split: true,
        errors: [true, true, true],
        weights: true,
      });
    });
  },
  missing(),
);
