// Checks against the CPU references that several suites share: the symmetry of an AᵀA result, the
// float32 dot-product bound of a GEMM, and the random patterns an Mlp trains on.
import * as ck from '../../lib';

/** How many pairs (i, j), i < j, of the n×n row-major `c` differ bitwise from (j, i). */
export function symmetryDefect(c: Float64Array, n: number): number {
  let bad = 0;
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) if (c[i * n + j] !== c[j * n + i]) bad++;
  return bad;
}

/**
 * The first element of `got` (m×n) outside the float32 dot-product bound k·2^-23·Σ|a||b| of the
 * float64 product of `a` (m×k) and `b` (k×n), or -1. A relative-error test fails by chance where the
 * random signs cancel (1.8e-5 for one 1×1000×1 product on the H100 at adee321); NaN (an element not
 * written) is always outside.
 */
export function outsideGemmBound(got: Float32Array, a: Float32Array, b: Float32Array, m: number, k: number, n: number) {
  const ref = ck.cpu.gemm(a, b, m, k, n);
  const magnitude = ck.cpu.gemm(a.map(Math.abs), b.map(Math.abs), m, k, n);
  return got.findIndex((v, i) => !(Math.abs(v - ref[i]) <= k * 2 ** -23 * magnitude[i] + 1e-30));
}

/** P patterns of n inputs in [-1, 1) and m targets in [0, 1). */
export function mlpData(P: number, n: number, m: number, seed: number): { X: Float32Array; T: Float32Array } {
  const X = ck.cpu.randomArray(Float32Array, P * n, seed);
  const T = ck.cpu.randomArray(Float32Array, P * m, seed + 1).map((v) => (v + 1) / 2);
  return { X, T };
}
