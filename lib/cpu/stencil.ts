import { typeError } from '../errors';
import { checkGridShape, resolveStencilOptions, type StencilOptions, type StencilResult } from '../ops/stencil-spec';

/**
 * CPU reference of the periodic 3×3 stencil with the GPU's semantics: each sweep sets
 * new[i][j] = Σ w[3a+b]·old[(i+a−1) mod rows][(j+b−1) mod cols] (summed in float64, stored in the
 * grid's precision), and iteration stops after the first sweep whose residual is ≤ tolerance or
 * after maxIterations sweeps. The input is not modified.
 */
export function stencil<G extends Float32Array | Float64Array>(
  grid: G,
  rows: number,
  cols: number,
  options: StencilOptions = {},
): StencilResult<G> {
  if (!(grid instanceof Float32Array || grid instanceof Float64Array))
    throw typeError('grid', 'a Float32Array or Float64Array', grid);
  checkGridShape(grid.length, rows, cols);
  const { weights: w, tolerance, maxIterations } = resolveStencilOptions(options);
  const ctor = grid.constructor as { new (n: number): G };
  let cur = new ctor(grid.length);
  cur.set(grid);
  let next = new ctor(grid.length);
  let iterations = 0;
  let residual = NaN;
  while (iterations < maxIterations) {
    residual = 0;
    for (let i = 0; i < rows; i++) {
      const up = ((i + rows - 1) % rows) * cols;
      const mid = i * cols;
      const down = ((i + 1) % rows) * cols;
      for (let j = 0; j < cols; j++) {
        const l = (j + cols - 1) % cols;
        const r = (j + 1) % cols;
        const v =
          w[0] * cur[up + l] +
          w[1] * cur[up + j] +
          w[2] * cur[up + r] +
          w[3] * cur[mid + l] +
          w[4] * cur[mid + j] +
          w[5] * cur[mid + r] +
          w[6] * cur[down + l] +
          w[7] * cur[down + j] +
          w[8] * cur[down + r];
        next[mid + j] = v;
        // Not Math.abs: hot loops run ~60× slower with Math calls inside jest's sandbox.
        const diff = next[mid + j] - cur[mid + j];
        const d = diff < 0 ? -diff : diff;
        // A NaN, once seen, stays the residual (as on the GPU).
        if (d > residual || (Number.isNaN(d) && !Number.isNaN(residual))) residual = d;
      }
    }
    [cur, next] = [next, cur];
    iterations++;
    if (residual <= tolerance) break;
  }
  let checksum = 0;
  for (let i = 0; i < cur.length; i++) checksum += cur[i];
  return { grid: cur, iterations, residual, checksum };
}
