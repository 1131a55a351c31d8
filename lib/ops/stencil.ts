import { checkArray, copyDevice, type DeviceArray, empty } from '../array';
import { holdArrays, type ProgressOptions, resolveAsync, throwIfAborted } from '../async';
import {
  checkGridShape,
  resolveStencilOptions,
  type StencilOptions as CpuStencilOptions,
  type StencilResult,
} from './stencil-spec';
import { checkInteger, rangeError, elements, inWords } from '../errors';
import { native } from '../native';
import { reduce, reduceAsync } from './scan';

/**
 * The stencil variants, in the order of native/stencil/methods.cc (the test suite checks the two
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

/** What {@link stencil} and {@link stencilAsync} run, after checking every argument the same way. */
interface StencilPlan {
  weights: Float64Array;
  tolerance: number;
  maxIterations: number;
  checkEvery: number;
  method: number;
  shape: number[];
}

function planStencil(grid: DeviceArray, rows: number, cols: number, options: StencilOptions): StencilPlan {
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
  const given: DeviceArray[] = [grid];
  for (const name of ['out', 'scratch'] as const) {
    const arr = options[name];
    if (arr === undefined) continue;
    checkArray(`options.${name}`, arr, grid.dtype);
    if (arr.length !== grid.length)
      throw rangeError(`options.${name}`, `${grid.length} elements long`, elements(arr.length));
    if (arr.device !== grid.device)
      throw rangeError(`options.${name}`, `on device ${grid.device}`, inWords(`device ${arr.device}`));
    if (given.includes(arr)) throw new RangeError(`options.${name} must be an array other than grid and options.out`);
    given.push(arr);
  }
  return {
    weights,
    tolerance,
    maxIterations,
    checkEvery,
    method: stencilMethods.indexOf(resolved),
    shape: [rows, cols],
  };
}

/**
 * Iterates a periodic 3×3 stencil on a rows×cols float32 or float64 grid (row-major, both axes
 * wrap around: a torus) until the largest change of a sweep is ≤ `tolerance` or `maxIterations`
 * sweeps are done. Returns the final grid as a new DeviceArray (the input is left unchanged), the
 * sweep count, the last sweep's residual and the grid's sum (`checksum`, via {@link reduce}).
 * {@link stencilAsync} is the same as a Promise.
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
  const plan = planStencil(grid, rows, cols, options);
  const ownA = options.out === undefined;
  const ownB = options.scratch === undefined;
  const a = options.out ?? empty(grid.dtype, grid.length, { device: grid.device, shape: plan.shape });
  let b: DeviceArray | undefined;
  try {
    b = options.scratch ?? empty(grid.dtype, grid.length, { device: grid.device, shape: plan.shape });
    const r = native.stencilRun(
      grid.handle('grid'),
      a.handle('a'),
      b.handle('b'),
      rows,
      cols,
      plan.weights,
      plan.tolerance,
      plan.maxIterations,
      plan.checkEvery,
      plan.method,
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

/** Options of {@link stencilAsync}: those of {@link stencil}, an AbortSignal and a progress callback. */
export interface StencilAsyncOptions extends StencilOptions, ProgressOptions {}

// stencilAsync's steps grow (doubling, in whole multiples of checkEvery) while one takes less than this
// long, so that small grids do not pay a pool-thread round trip every few microseconds of GPU work, and
// an abort still takes effect within about this long.
const STEP_TARGET_MS = 10;

/**
 * {@link stencil} as a Promise: the same sweeps, results and argument checks, with the waiting on a
 * libuv pool thread, so the JS thread keeps running. The sweeps run in steps of whole multiples of
 * `checkEvery` (the first step is `checkEvery` sweeps; later ones double while a step takes under
 * 10 ms); between steps the call checks `options.signal` and reports `options.onProgress({ done, total })`
 * with the sweeps done and `maxIterations` (a run that converges ends with `done` = its iteration count).
 * Continuing a run from the previous step's grid gives exactly the grid of one uninterrupted run.
 * The run starts from a copy of `grid` taken on the device at the call (a third grid-sized buffer
 * besides `out` and `scratch`, which later steps reuse): writing `grid` after the call, even before
 * the promise settles, does not change the result.
 *
 * Rejects, never throws: TypeError/RangeError as {@link stencil} throws them, {@link CudaError},
 * or {@link AbortError} (at the first step boundary after the abort; `grid` is intact, and `out` and
 * `scratch` hold some intermediate grid and are usable at once). While it runs, `out` and `scratch` are
 * refused as outputs of other calls, and a `free()` of them takes effect when it settles. See
 * docs/async.md.
 *
 * @example
 * ```ts
 * const ac = new AbortController();
 * const r = await stencilAsync(g, 4096, 4096, {
 *   tolerance: 0, maxIterations: 100_000, signal: ac.signal,
 *   onProgress: ({ done, total }) => console.log(`${done}/${total} sweeps`),
 * });
 * ```
 */
export async function stencilAsync<G extends DeviceArray<'float32' | 'float64'>>(
  grid: G,
  rows: number,
  cols: number,
  options: StencilAsyncOptions = {},
): Promise<StencilResult<G>> {
  const what = 'stencilAsync';
  const plan = planStencil(grid, rows, cols, options);
  const { signal, onProgress } = resolveAsync(options, true);
  throwIfAborted(signal, what);
  const alloc = () => empty(grid.dtype, grid.length, { device: grid.device, shape: plan.shape });
  const ours: DeviceArray[] = [];
  const own = (arr: DeviceArray): DeviceArray => (ours.push(arr), arr);
  try {
    const a = options.out ?? own(alloc());
    const b = options.scratch ?? own(alloc());
    // The steps run later, on a pool thread: the first reads a copy of `grid` queued here, at the call,
    // so that writes to `grid` after the call cannot reach the run. A step continues from the previous
    // step's grid into the two buffers it is not in.
    const c = own(alloc());
    copyDevice(c, grid);
    const buffers = [a, b, c];
    const names = new Map<DeviceArray, string>([
      [a, options.out ? 'options.out' : 'a'],
      [b, options.scratch ? 'options.scratch' : 'b'],
    ]);
    const release = holdArrays(
      what,
      [],
      buffers.map((x) => [names.get(x) ?? 'c', x]),
    );
    let source: DeviceArray = c;
    let done = 0;
    let residual = NaN;
    let step = plan.checkEvery;
    try {
      for (;;) {
        const sweeps = Math.min(step, plan.maxIterations - done);
        const [p, q] = buffers.filter((x) => x !== source);
        const started = performance.now();
        const r = await native.stencilRunAsync(
          source.handle('grid'),
          p.handle('a'),
          q.handle('b'),
          rows,
          cols,
          plan.weights,
          plan.tolerance,
          sweeps,
          plan.checkEvery,
          plan.method,
        );
        done += r.iterations;
        residual = r.residual;
        source = r.finalBuffer === 0 ? p : q;
        onProgress?.({ done, total: plan.maxIterations });
        throwIfAborted(signal, `${what} (after ${done} of ${plan.maxIterations} sweeps)`);
        if (r.iterations < sweeps || r.residual <= plan.tolerance || done >= plan.maxIterations) break;
        if (performance.now() - started < STEP_TARGET_MS) step *= 2;
      }
    } finally {
      release();
    }
    let result = source;
    if (result !== a && !(options.out === undefined && ours.includes(result))) {
      // The grid goes to `out`, or to an array of ours rather than to the caller's scratch.
      copyDevice(a, result);
      result = a;
    }
    const resultIsOurs = ours.includes(result);
    for (const x of ours) if (x !== result) x.free();
    ours.length = 0;
    if (resultIsOurs) ours.push(result); // freed if the checksum fails or the call is aborted
    const checksum = await reduceAsync(result, 'sum');
    throwIfAborted(signal, what);
    ours.length = 0;
    return { grid: result as G, iterations: done, residual, checksum };
  } finally {
    for (const x of ours) x.free();
  }
}
