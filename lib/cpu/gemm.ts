import { checkInteger, rangeError, elements } from '../errors';

/**
 * C = A·B for row-major A (m×k) and B (k×n), accumulated in float64 in i-k-j order (the innermost
 * loop walks rows of B and C contiguously); returns C (m×n, row-major) as a Float64Array.
 */
export function gemm(a: ArrayLike<number>, b: ArrayLike<number>, m: number, k: number, n: number): Float64Array {
  checkInteger('m', m, 1);
  checkInteger('k', k, 1);
  checkInteger('n', n, 1);
  if (a.length !== m * k) throw rangeError('a', `m·k = ${m * k} elements long`, elements(a.length));
  if (b.length !== k * n) throw rangeError('b', `k·n = ${k * n} elements long`, elements(b.length));
  const c = new Float64Array(m * n);
  for (let i = 0; i < m; i++) {
    const ci = i * n;
    for (let p = 0; p < k; p++) {
      const aip = a[i * k + p];
      const bp = p * n;
      for (let j = 0; j < n; j++) c[ci + j] += aip * b[bp + j];
    }
  }
  return c;
}
