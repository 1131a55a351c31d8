// CPU references, exported as `cpu.*`. Each family adds its reference here.
export { atA } from './ata';
export { gemm } from './gemm';
export { scan, reduce, type ReduceOp } from './scan';
export { stencil } from './stencil';
export type { StencilOptions } from '../ops/stencil-spec';
export { apsp, type CpuApspOptions, type CpuApspResult } from './apsp';
/** "No edge" in a weight matrix and "unreachable" in a distance matrix (the same `INF` as the GPU `apsp`). */
export { INF } from '../ops/apsp-spec';
export { Mlp } from './mlp';

/** Any array-like of numbers: a typed array or a plain array. */
export type Numeric = ArrayLike<number>;

/**
 * ‖out − ref‖₂ / ‖ref‖₂ computed in float64 (‖out − ref‖₂ when ref is all zeros). NaN anywhere in
 * `out` gives NaN, so a comparison `< tol` fails for unwritten (NaN-poisoned) elements.
 */
export function relativeError(out: Numeric, ref: Numeric): number {
  if (out.length !== ref.length) throw new RangeError(`out has ${out.length} elements, ref ${ref.length}`);
  let diff = 0;
  let norm = 0;
  for (let i = 0; i < ref.length; i++) {
    const d = out[i] - ref[i];
    diff += d * d;
    norm += ref[i] * ref[i];
  }
  return norm > 0 ? Math.sqrt(diff / norm) : Math.sqrt(diff);
}

/** Index of the first element where `a` and `b` differ (NaN differs from everything), or -1. */
export function firstMismatch(a: Numeric, b: Numeric): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (!(a[i] === b[i])) return i;
  return a.length === b.length ? -1 : n;
}

/**
 * Deterministic pseudo-random floats in [-1, 1) (xorshift128+), for reproducible test and bench
 * inputs; pass a fresh seed per run for fresh data.
 */
export function randomArray<T extends Float32Array | Float64Array>(
  ctor: { new (n: number): T },
  length: number,
  seed = 1,
): T {
  const out = new ctor(length);
  let s0 = (seed * 0x9e3779b9) >>> 0 || 1;
  let s1 = (seed ^ 0x85ebca6b) >>> 0 || 2;
  for (let i = 0; i < length; i++) {
    let x = s0;
    const y = s1;
    s0 = y;
    x ^= x << 23;
    x ^= x >>> 17;
    x ^= y ^ (y >>> 26);
    s1 = x >>> 0;
    out[i] = (((s0 + s1) >>> 0) / 4294967296) * 2 - 1;
  }
  return out;
}
