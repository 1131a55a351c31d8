import { checkInteger, rangeError, elements } from '../errors';

/**
 * C = AᵀA in float64 for a row-major rows×cols matrix A; returns the full cols×cols matrix,
 * row-major. The loops run in i-k-j order so the innermost one walks rows of A and C contiguously.
 */
export function atA(a: ArrayLike<number>, rows: number, cols: number): Float64Array {
  checkInteger('rows', rows, 1);
  checkInteger('cols', cols, 1);
  if (a.length !== rows * cols) throw rangeError('a', `rows·cols = ${rows * cols} elements long`, elements(a.length));
  const c = new Float64Array(cols * cols);
  for (let i = 0; i < cols; i++) {
    const ci = i * cols;
    for (let k = 0; k < rows; k++) {
      const ak = k * cols;
      const aki = a[ak + i];
      if (aki === 0) continue;
      for (let j = 0; j < cols; j++) c[ci + j] += aki * a[ak + j];
    }
  }
  return c;
}
