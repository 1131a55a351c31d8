// The cuBLAS methods with K in chunks (core/cublas.h: cuBLAS 13.0 went wrong with long K inside its
// int range, so K goes in chunks of at most 2^30 and accumulates into C). Real chunks need tens of GB
// (test/ata.test.ts and test/gemm.test.ts run them); here the test hook forces chunks of 1, 7 and 64
// rows, so every cuBLAS call of atA, gemm and Mlp runs as many calls with offset operands, at small
// sizes, against the CPU references.
import * as ck from '../lib';
import { native } from '../lib/native';
import { flatWeights, freshSeed } from './harness/families';
import { describeNeeding, gpuCount } from './helpers/gpu';

const forceChunk = native.debugCublasKChunk;

function missing(): string | null {
  if (gpuCount === 0) return `no GPU — ${ck.runtimeInfo().noDeviceReason}`;
  const cublas = ck.cublasInfo();
  if (!cublas.available) return `no cuBLAS — ${cublas.code}`;
  if (typeof forceChunk !== 'function') return 'a release build (no test hooks)';
  return null;
}

const CHUNKS = [1, 7, 64];

describeNeeding(
  'cuBLAS methods with K in forced chunks',
  () => {
    afterEach(() => forceChunk?.(0));

    test.each(CHUNKS)('chunks of %i rows: atA cublas and cublas-syrk match cpu.atA, exactly symmetric', (chunk) => {
      for (const [rows, cols] of [
        [129, 33],
        [1000, 17],
        [300, 257],
      ]) {
        const host = ck.cpu.randomArray(Float64Array, rows * cols, freshSeed());
        const ref = ck.cpu.atA(host, rows, cols);
        using a = ck.upload(host);
        using out = ck.empty('float64', cols * cols);
        forceChunk?.(chunk);
        for (const method of ['cublas', 'cublas-syrk'] as const) {
          out.fill(NaN);
          ck.atA(a, rows, cols, { method, out });
          const got = out.toHostSync();
          const err = ck.cpu.relativeError(got, ref);
          let asym = 0;
          for (let i = 0; i < cols; i++)
            for (let j = i + 1; j < cols; j++) if (got[i * cols + j] !== got[j * cols + i]) asym++;
          // Names the case in the failure message.
          expect({ method, rows, cols, within: err < 1e-12, asym: method === 'cublas' ? 0 : asym }).toEqual({
            method,
            rows,
            cols,
            within: true,
            asym: 0,
          });
        }
      }
    });

    test.each(CHUNKS)('chunks of %i rows: gemm cublas matches cpu.gemm within the float32 bound', (chunk) => {
      for (const [m, k, n] of [
        [7, 129, 5],
        [33, 1000, 17],
      ]) {
        const a = ck.cpu.randomArray(Float32Array, m * k, freshSeed());
        const b = ck.cpu.randomArray(Float32Array, k * n, freshSeed());
        const ref = ck.cpu.gemm(a, b, m, k, n);
        const magnitude = ck.cpu.gemm(a.map(Math.abs), b.map(Math.abs), m, k, n);
        using dA = ck.upload(a);
        using dB = ck.upload(b);
        using out = ck.full('float32', m * n, NaN);
        forceChunk?.(chunk);
        ck.gemm(dA, dB, m, k, n, { method: 'cublas', out });
        const got = out.toHostSync();
        const bad = got.findIndex((v, i) => !(Math.abs(v - ref[i]) <= k * 2 ** -23 * magnitude[i] + 1e-30));
        expect({ m, k, n, bad }).toEqual({ m, k, n, bad: -1 });
      }
    });

    // Mlp's cuBLAS path: K is the layer width in the forward pass and the backward deltas, and the
    // batch's rows in the weight gradients (A transposed there), so all three offsets run chunked.
    test.each(CHUNKS)('chunks of %i rows: Mlp cublas trains as cpu.Mlp (weights and errors within 1e-4)', (chunk) => {
      const seed = freshSeed();
      const layers = [3, 67, 5];
      const P = 131;
      const X = ck.cpu.randomArray(Float32Array, P * 3, seed);
      const T = ck.cpu.randomArray(Float32Array, P * 5, seed + 1).map((v) => (v + 1) / 2);
      const spec = { layers, eta: 0.001, alpha: 0.5, seed, activation: 'tanh' as const, output: 'sigmoid' as const };
      using gpu = new ck.Mlp({ ...spec, method: 'cublas', streams: 3 });
      const cpu = new ck.cpu.Mlp(spec);
      forceChunk?.(chunk);
      const g = gpu.train(X, T, { epochs: 3, batchSize: 50 });
      const c = cpu.train(X, T, { epochs: 3, batchSize: 50 });
      const errors = g.map((r, i) => Math.abs(r.error - c[i].error) / c[i].error < 1e-4);
      const weights = ck.cpu.relativeError(flatWeights(gpu.getWeights()), flatWeights(cpu.getWeights()));
      expect({ seed, errors, weights: weights < 1e-4 }).toEqual({ seed, errors: [true, true, true], weights: true });
    });
  },
  missing(),
);
