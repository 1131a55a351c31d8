import { checkArray, copyDevice, type DeviceArray, empty } from '../array';
import {
  checkGridShape,
  resolveStencilOptions,
  type StencilOptions as CpuStencilOptions,
  type StencilResult,
} from '../cpu/stencil';
import { checkInteger, rangeError } from '../errors';
import { native } from '../native';
import { reduce } from './scan';

/**
 * The stencil variants, in the order of native/stencil/stencil.cu (the test suite checks the two
 * agree).
 *
 * - `basic`: the report's kernel — one thread per cell in 32×16 blocks, modular neighbour indices,
 *   a shared "changed by more than the tolerance" flag.
 * - `tiled`: a 32×16 shared-memory tile with a one-cell halo, persistent blocks sized from the
 *   device's occupancy, the residual reduced per block.
 * - `fast`: temporal blocking — each block loads its tile with an 8-cell halo once (16-byte loads
 *   where the rows allow), runs up to 8 sweeps in shared memory with a register sliding window, and
 *   keeps each sweep's residual exact.
 */
export const stencilMethods = ['basic', 'tiled', 'fast'] as const;

/** A variant name, or `auto` (`fast`). */
export type StencilMethod = (typeof stencilMethods)[number] | 'auto';

/** Options of {@link stencil}: the shared ones plus how to run it on the GPU. */
export interface StencilOptions extends CpuStencilOptions {
  /** Variant (default `auto`). */
  method?: StencilMethod;
  /**
   * Sweeps queued between checks of the residual by the host (default 64; `fast` rounds it up to
   * whole passes of 8). It never changes the result — the kernels skip every sweep after the one
   * that met the tolerance — only how often the host waits for the GPU.
   */
  checkEvery?: number;
  /**
   * Where the final grid goes (same dtype, length and device as `grid`, not `grid` itself); it is
   * then the returned `grid`. Default: a new array.
   */
  out?: DeviceArray;
  /**
   * A second buffer like `out` for the sweeps to alternate with, so that repeated calls allocate
   * nothing. Default: allocated and freed by the call.
   */
  scratch?: DeviceArray;
}

/**
 * Iterates a periodic 3×3 stencil on a rows×cols float32 or float64 grid (row-major, both axes
 * wrap around: a torus) until the largest change of a sweep is ≤ `tolerance` or `maxIterations`
 * sweeps are done. Returns the final grid as a new DeviceArray (the input is left unchanged), the
 * sweep count, the last sweep's residual and the grid's sum (`checksum`, via {@link reduce}).
 *
 * @example
 * ```ts
 * using g = upload(heat, { shape: [512, 512] });
 * const { grid, iterations, residual, checksum } = stencil(g, 512, 512, { weights: 'jacobi5', tolerance: 1e-4 });
 * ```
 */
export function stencil<G extends DeviceArray<'float32' | 'float64'>>(
  grid: G,
  rows: number,
  cols: number,
  options: StencilOptions = {},
): StencilResult<G> {
  checkArray('grid', grid);
  if (grid.dtype !== 'float32' && grid.dtype !== 'float64')
    throw new TypeError(`grid must be a DeviceArray of float32 or float64, got ${grid.dtype}`);
  checkGridShape(grid.length, rows, cols);
  const { weights, tolerance, maxIterations } = resolveStencilOptions(options);
  const checkEvery = checkInteger('options.checkEvery', options.checkEvery ?? 64, 1);
  const method = options.method ?? 'auto';
  if (method !== 'auto' && !(stencilMethods as readonly string[]).includes(method))
    throw rangeError('options.method', `one of auto, ${stencilMethods.join(', ')}`, method);
  const resolved = method === 'auto' ? 'fast' : method;
  const shape = [rows, cols];
  const given: DeviceArray[] = [grid];
  for (const name of ['out', 'scratch'] as const) {
    const arr = options[name];
    if (arr === undefined) continue;
    checkArray(`options.${name}`, arr, grid.dtype);
    if (arr.length !== grid.length)
      throw rangeError(`options.${name}`, `${grid.length} elements long`, `${arr.length} elements`);
    if (arr.device !== grid.device)
      throw rangeError(`options.${name}`, `on device ${grid.device}`, `device ${arr.device}`);
    if (given.includes(arr)) throw new RangeError(`options.${name} must be an array other than grid and options.out`);
    given.push(arr);
  }
  const ownA = options.out === undefined;
  const ownB = options.scratch === undefined;
  const a = options.out ?? empty(grid.dtype, grid.length, { device: grid.device, shape });
  let b: DeviceArray | undefined;
  try {
    b = options.scratch ?? empty(grid.dtype, grid.length, { device: grid.device, shape });
    const r = native.stencilRun(
      grid.handle('grid'),
      a.handle('a'),
      b.handle('b'),
      rows,
      cols,
      weights,
      tolerance,
      maxIterations,
      checkEvery,
      stencilMethods.indexOf(resolved),
    );
    let result = r.finalBuffer === 0 ? a : b;
    if (result === b && !(ownA && ownB)) {
      // A run that converged after an odd number of passes ended in the second buffer; the grid
      // goes to `out` (or to a new array rather than to the caller's scratch).
      copyDevice(a, b);
      result = a;
    }
    if (ownA && result !== a) a.free();
    if (ownB && result !== b) b.free();
    return { grid: result as G, iterations: r.iterations, residual: r.residual, checksum: reduce(result, 'sum') };
  } catch (e) {
    if (ownA && !a.freed) a.free();
    if (ownB && b && !b.freed) b.free();
    throw e;
  }
}
