import { checkArray, type DeviceArray, empty } from '../array';
import { INF } from '../cpu/apsp';
import { checkDevice } from '../device';
import { checkInteger, rangeError, typeError } from '../errors';
import { native } from '../native';
import { reduce } from './scan';

export { INF };

/** Largest vertex count {@link apsp} accepts (n² int32 is then 64 GiB). */
export const APSP_MAX_N = 131072;

/**
 * The APSP variants (blocked Floyd–Warshall), in the order of native/apsp/methods.cc (the test suite
 * checks the two agree).
 *
 * - `basic`: the report's first design — one thread per element, global memory only, block factor
 *   up to 256 (`blockFactor`, default min(256, n)), one launch per k of phases 1 and 2.
 * - `shared`: the report's shared-memory design — 32×32 tiles, thread x along the columns so the
 *   tile reads are broadcasts or 32 consecutive words (no bank conflicts).
 * - `fast`: ours — pivot depth 128; the pivot block closed in shared memory, then the panels and the
 *   rest as min-plus tile products (128×128 tiles, 8×8 outputs per thread, cp.async slabs, DPX
 *   `VIADDMNMX` on sm_90).
 */
export const apspMethods = ['basic', 'shared', 'fast'] as const;

/** A variant name, or `auto` (`fast`). */
export type ApspMethod = (typeof apspMethods)[number] | 'auto';

const FIXED_FACTOR: Record<(typeof apspMethods)[number], number> = { basic: 0, shared: 32, fast: 128 };

/** The block factor (pivot depth) a method runs with for n vertices: `basic` takes `requested`. */
export function apspBlockFactor(method: (typeof apspMethods)[number], n: number, requested?: number): number {
  const fixed = FIXED_FACTOR[method];
  if (fixed) {
    if (requested !== undefined && requested !== fixed) {
      throw rangeError('options.blockFactor', `${fixed} for method ${method} (only basic takes others)`, requested);
    }
    return fixed;
  }
  if (requested === undefined) return Math.min(256, n);
  return checkInteger('options.blockFactor', requested, 1, 256);
}

/** Rounds (pivot blocks) a run of `method` without paths makes for n vertices: ⌈n / block factor⌉. */
export function apspRounds(method: (typeof apspMethods)[number], n: number, blockFactor?: number): number {
  return Math.ceil(n / apspBlockFactor(method, n, blockFactor));
}

/** Options of {@link apsp}. */
export interface ApspOptions {
  /** Variant (default `auto`). */
  method?: ApspMethod;
  /** Block factor of `basic`, 1–256 (default min(256, n)); `shared` is 32 and `fast` 128. */
  blockFactor?: number;
  /**
   * Also compute the next-hop matrix (see {@link ApspResult}). The path-tracking kernels keep a
   * hop-count matrix too and compare candidates by (distance, hops), so the paths have the fewest
   * edges among the shortest and following next hops never loops (zero-weight cycles included).
   * `basic` and `shared` track paths in their own kernels; `fast` runs `shared`'s (its 128×128
   * register tiles have no room for the hop counts and next hops), so with paths it is as fast as
   * `shared` at best.
   */
  paths?: boolean;
  /** An int32 DeviceArray of n·n elements on the same device to write the distances into (not `dist`). */
  out?: DeviceArray<'int32'>;
  /**
   * Called after each round with the rounds completed and the total. Setting it makes the run wait
   * for each round (with the next already queued, so the GPU stays busy) and return when the GPU is done.
   */
  onRound?: (done: number, rounds: number) => void;
  /**
   * Check on the GPU that every weight is in [0, INF] before running (default true): two reductions
   * that wait for the GPU. Pass false for inputs known to be valid.
   */
  validate?: boolean;
}

/**
 * Distances and next hops: `next[i·n + j]` is the vertex after i on a shortest path to j (the one
 * with the fewest edges among the shortest), j itself when i = j, −1 when j is unreachable.
 */
export interface ApspResult {
  dist: DeviceArray<'int32'>;
  next: DeviceArray<'int32'>;
}

/**
 * All-pairs shortest paths of a dense directed graph by blocked Floyd–Warshall on the GPU.
 *
 * `dist` is the n×n int32 weight matrix, row-major: `dist[i·n + j]` is the weight of edge i → j, in
 * [0, INF), or `INF` for no edge; the diagonal is taken as 0. The result is a new n×n matrix (or
 * `options.out`) of shortest distances, `INF` where j cannot be reached from i (or only by a path of
 * length ≥ INF). Any n ≥ 1: the matrix is padded internally to a multiple of the block factor. The
 * input is not modified. Every method gives exactly the same distances.
 *
 * With `paths: true` it returns `{ dist, next }`; rebuild a path with {@link reconstructPath}.
 *
 * @example
 * ```ts
 * const w = new Int32Array(n * n).fill(INF); // then set w[i * n + j] for each edge
 * using g = upload(w);
 * using d = apsp(g, n);                      // method 'auto'
 * const { dist, next } = apsp(g, n, { paths: true });
 * const route = reconstructPath(await next.toHost(), 0, n - 1);
 * ```
 */
export function apsp(
  dist: DeviceArray<'int32'>,
  n: number,
  options?: ApspOptions & { paths?: false },
): DeviceArray<'int32'>;
export function apsp(dist: DeviceArray<'int32'>, n: number, options: ApspOptions & { paths: true }): ApspResult;
export function apsp(dist: DeviceArray<'int32'>, n: number, options?: ApspOptions): DeviceArray<'int32'> | ApspResult;
export function apsp(
  dist: DeviceArray<'int32'>,
  n: number,
  options: ApspOptions = {},
): DeviceArray<'int32'> | ApspResult {
  checkArray('dist', dist, 'int32');
  checkInteger('n', n, 1, APSP_MAX_N);
  if (n * n !== dist.length) throw rangeError('dist', `n·n = ${n * n} elements long`, `${dist.length} elements`);
  if (typeof options !== 'object' || options === null) throw typeError('options', 'an object', options);
  const method = options.method ?? 'auto';
  if (method !== 'auto' && !(apspMethods as readonly string[]).includes(method)) {
    throw rangeError('options.method', `one of auto, ${apspMethods.join(', ')}`, method);
  }
  const resolved = method === 'auto' ? 'fast' : method;
  const factor = apspBlockFactor(resolved, n, options.blockFactor);
  const paths = options.paths ?? false;
  if (typeof paths !== 'boolean') throw typeError('options.paths', 'a boolean', paths);
  const validate = options.validate ?? true;
  if (typeof validate !== 'boolean') throw typeError('options.validate', 'a boolean', validate);
  if (options.onRound !== undefined && typeof options.onRound !== 'function') {
    throw typeError('options.onRound', 'a function', options.onRound);
  }
  let out = options.out;
  if (out !== undefined) {
    checkArray('options.out', out, 'int32');
    if (out.length !== n * n) throw rangeError('options.out', `n·n = ${n * n} elements long`, `${out.length} elements`);
    if (out.device !== dist.device) throw rangeError('options.out', `on device ${dist.device}`, `device ${out.device}`);
    if (out === dist)
      throw new RangeError('options.out must not be dist: the input is read while the output is written');
  }
  if (validate) {
    const lo = reduce(dist, 'min');
    if (lo < 0) throw rangeError('dist', `a weight matrix with weights in [0, INF] (no negative weights)`, lo);
    const hi = reduce(dist, 'max');
    if (hi > INF) throw rangeError('dist', `a weight matrix with weights in [0, INF = ${INF}]`, hi);
  }
  const owned = out === undefined;
  out ??= empty('int32', n * n, { device: dist.device, shape: [n, n] });
  let next: DeviceArray<'int32'> | undefined;
  try {
    if (paths) next = empty('int32', n * n, { device: dist.device, shape: [n, n] });
    native.apspRun(
      dist.handle('dist'),
      out.handle('options.out'),
      next ? next.handle('next') : null,
      n,
      apspMethods.indexOf(resolved),
      factor,
      options.onRound,
    );
  } catch (e) {
    if (owned) out.free();
    next?.free();
    throw e;
  }
  return next ? { dist: out, next } : out;
}

/**
 * The vertices of a shortest path from `i` to `j` (both included) read off a next-hop matrix from
 * {@link apsp} or `cpu.apsp` with `paths: true` (n is √length): `[i]` when i = j, `[]` when j cannot
 * be reached. Throws if the matrix does not describe a path (a hop out of range, or a cycle).
 */
export function reconstructPath(next: Int32Array, i: number, j: number): number[] {
  if (!(next instanceof Int32Array)) throw typeError('next', 'an Int32Array (copy it to the host first)', next);
  const n = Math.round(Math.sqrt(next.length));
  if (n * n !== next.length || n === 0)
    throw rangeError('next', 'an n×n matrix (a non-zero square length)', next.length);
  checkInteger('i', i, 0, n - 1);
  checkInteger('j', j, 0, n - 1);
  if (i === j) return [i];
  if (next[i * n + j] < 0) return [];
  const path = [i];
  let at = i;
  while (at !== j) {
    const hop = next[at * n + j];
    if (hop < 0 || hop >= n) throw new RangeError(`next[${at}][${j}] = ${hop} is not a vertex: not a next-hop matrix`);
    if (path.length > n) throw new RangeError(`the hops from ${i} to ${j} loop: not a next-hop matrix`);
    path.push(hop);
    at = hop;
  }
  return path;
}

/** Options of {@link randomGraph}. */
export interface RandomGraphOptions {
  /** Probability that an off-diagonal entry is an edge (default 0.1). */
  density?: number;
  /** Smallest edge weight (default 1; 0 allowed). */
  minWeight?: number;
  /** Largest edge weight (default 1000, below INF). */
  maxWeight?: number;
  /** The graph depends only on the seed (default 1). */
  seed?: number;
  /** Device index (default 0). */
  device?: number;
}

/**
 * A random n×n weight matrix made on the GPU: each off-diagonal entry is an edge with probability
 * `density` and a weight uniform in [minWeight, maxWeight], else `INF`; the diagonal is 0. For
 * benchmarks and tests of large graphs without a host copy.
 */
export function randomGraph(n: number, options: RandomGraphOptions = {}): DeviceArray<'int32'> {
  checkInteger('n', n, 1, APSP_MAX_N);
  if (typeof options !== 'object' || options === null) throw typeError('options', 'an object', options);
  const density = options.density ?? 0.1;
  if (typeof density !== 'number' || !(density >= 0 && density <= 1)) {
    throw rangeError('options.density', 'a number in [0, 1]', density);
  }
  const minWeight = checkInteger('options.minWeight', options.minWeight ?? 1, 0, INF - 1);
  const maxWeight = checkInteger('options.maxWeight', options.maxWeight ?? 1000, minWeight, INF - 1);
  const seed = checkInteger('options.seed', options.seed ?? 1);
  const device = checkDevice(options.device ?? 0, 'options.device');
  const out = empty('int32', n * n, { device, shape: [n, n] });
  try {
    native.apspRandomGraph(out.handle('out'), n, density, minWeight, maxWeight, seed);
  } catch (e) {
    out.free();
    throw e;
  }
  return out;
}
