import { checkArray, type DeviceArray, empty } from '../array';
import { abortError, AbortError, isCancelled, type ProgressOptions, resolveAsync, throwIfAborted } from '../async';
import { APSP_MAX_N, apspBlockFactor, apspMethods, INF } from './apsp-spec';
import { checkDevice } from '../device';
import { checkInteger, rangeError, typeError, elements, inWords } from '../errors';
import { native } from '../native';
import { canAccessPeer, checkDeviceIndex, peerCopy } from './peer';
import { reduce } from './scan';

export { APSP_MAX_N, apspBlockFactor, apspMethods, apspRounds, INF } from './apsp-spec';

/**
 * Largest vertex count `apspDistributed` accepts: its matrix is spread over the ranks (n = 262144 is
 * 256 GiB of int32 in all), and the band kernels' tile counts and offsets stay in range up to there.
 */
export const APSP_DIST_MAX_N = 262144;

/**
 * A variant name, `auto` (`fast`), or `replicated`: with several {@link ApspOptions.devices}, the
 * APSP report's multi-GPU scheme (see {@link apsp}); on one device it is `fast`.
 */
export type ApspMethod = (typeof apspMethods)[number] | 'auto' | 'replicated';

/**
 * The multi-GPU schemes of {@link apsp} with several devices: `band` (method `auto` or `fast`) and
 * `replicated` (method `replicated`).
 */
export const apspMultiSchemes = ['band', 'replicated'] as const;

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
   * It may read `dist` and `out` (a `toHost()` then sees the distances so far); writing them from it
   * throws, and a `free()` of them takes effect when the run returns, since later rounds still use them.
   */
  onRound?: (done: number, rounds: number) => void;
  /**
   * Check on the GPU that every weight is in [0, INF] before running (default true): two reductions
   * that wait for the GPU. Pass false for inputs known to be valid.
   */
  validate?: boolean;
  /**
   * Run on these devices (distinct indices; `dist` may be on any device). The result is on
   * `devices[0]` (and `out`, if given, must be there). One device runs the single-GPU method there;
   * several split the work by row bands (see {@link apsp}) with the `fast` kernels, and take methods
   * `auto`, `fast` or `replicated` only, without `paths` or `onRound`.
   */
  devices?: readonly number[];
  /**
   * How GPUs exchange data each round with several devices: `peer` (device to device, peer access
   * enabled for every pair), `host` (through pinned host memory) or `auto` (default: `peer` where
   * every pair of devices can access each other, else `host`, with a warning the first time).
   */
  transfer?: 'auto' | 'peer' | 'host';
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
 * Several GPUs (`devices: [0, 1, …]`, `fast` kernels, block factor 128): with the default method each
 * device owns a band of 128-row tile rows (bands differ by at most one tile row; devices beyond the
 * number of tile rows get none). Each round the owner of the pivot tile row closes the pivot block,
 * computes the pivot row panel and sends that 128×n panel to every other device; every device then
 * updates its part of the pivot column and the rest of its band. The next round's owner updates its
 * next pivot row first and computes and sends the next panel on a high-priority stream while the rest
 * of its band is updated (look-ahead), so the transfers hide behind the work. Method `replicated` is
 * the APSP report's scheme: every device holds the whole matrix, repeats phases 1 and 2, updates its
 * band in phase 3 and sends the band to every other device each round — for comparison. Either way
 * the result is a new array on `devices[0]` (or `out` there), equal to the single-GPU result, and the
 * call returns when the GPUs are done. See {@link ApspOptions.transfer} for how devices exchange data.
 *
 * @example
 * ```ts
 * const w = new Int32Array(n * n).fill(INF); // then set w[i * n + j] for each edge
 * using g = upload(w);
 * using d = apsp(g, n);                      // method 'auto'
 * const { dist, next } = apsp(g, n, { paths: true });
 * const route = reconstructPath(await next.toHost(), 0, n - 1);
 * using all4 = apsp(g, n, { devices: [0, 1, 2, 3] }); // on device 0
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
  const plan = planApsp(dist, n, options);
  if (plan.kind === 'multi') {
    if (plan.validate) validateWeights(dist);
    const out = plan.out ?? empty('int32', n * n, { device: plan.devices[0], shape: [n, n] });
    try {
      native.apspRunMulti(dist.handle('dist'), out.handle('options.out'), n, plan.devices, plan.scheme, plan.viaHost);
    } catch (e) {
      if (!plan.out) out.free();
      throw e;
    }
    return out;
  }
  if (plan.kind === 'elsewhere') {
    using local = empty('int32', n * n, { device: plan.device, shape: [n, n] });
    peerCopy(local, dist);
    return apsp(local, n, { ...options, devices: undefined });
  }
  if (plan.validate) validateWeights(dist);
  const out = plan.out ?? empty('int32', n * n, { device: dist.device, shape: [n, n] });
  let next: DeviceArray<'int32'> | undefined;
  try {
    if (plan.paths) next = empty('int32', n * n, { device: dist.device, shape: [n, n] });
    native.apspRun(
      dist.handle('dist'),
      out.handle('options.out'),
      next ? next.handle('next') : null,
      n,
      plan.method,
      plan.factor,
      options.onRound,
    );
  } catch (e) {
    if (!plan.out) out.free();
    next?.free();
    throw e;
  }
  return next ? { dist: out, next } : out;
}

/** What {@link apsp} and {@link apspAsync} run, after the same checks: one device, several, or another. */
type ApspPlan =
  | {
      kind: 'single';
      method: number;
      factor: number;
      paths: boolean;
      validate: boolean;
      out?: DeviceArray<'int32'>;
    }
  | {
      kind: 'multi';
      devices: number[];
      scheme: 0 | 1;
      viaHost: boolean;
      validate: boolean;
      out?: DeviceArray<'int32'>;
    }
  | { kind: 'elsewhere'; device: number };

function planApsp(dist: DeviceArray<'int32'>, n: number, options: ApspOptions): ApspPlan {
  checkArray('dist', dist, 'int32');
  checkInteger('n', n, 1, APSP_MAX_N);
  if (n * n !== dist.length) throw rangeError('dist', `n·n = ${n * n} elements long`, elements(dist.length));
  if (typeof options !== 'object' || options === null) throw typeError('options', 'an object', options);
  const method = options.method ?? 'auto';
  if (method !== 'auto' && method !== 'replicated' && !(apspMethods as readonly string[]).includes(method)) {
    throw rangeError('options.method', `one of auto, ${apspMethods.join(', ')}, replicated`, method);
  }
  if (options.devices !== undefined) {
    const devices = checkDevices(options.devices);
    if (devices.length > 1) return planMulti(dist, n, devices, method, options);
    if (devices[0] !== dist.device) return { kind: 'elsewhere', device: devices[0] };
  }
  const resolved = method === 'auto' || method === 'replicated' ? 'fast' : method;
  const factor = apspBlockFactor(resolved, n, options.blockFactor);
  const paths = options.paths ?? false;
  if (typeof paths !== 'boolean') throw typeError('options.paths', 'a boolean', paths);
  const validate = options.validate ?? true;
  if (typeof validate !== 'boolean') throw typeError('options.validate', 'a boolean', validate);
  if (options.onRound !== undefined && typeof options.onRound !== 'function') {
    throw typeError('options.onRound', 'a function', options.onRound);
  }
  const out = options.out;
  if (out !== undefined) {
    checkArray('options.out', out, 'int32');
    if (out.length !== n * n) throw rangeError('options.out', `n·n = ${n * n} elements long`, elements(out.length));
    if (out.device !== dist.device)
      throw rangeError('options.out', `on device ${dist.device}`, inWords(`device ${out.device}`));
    if (out === dist)
      throw new RangeError('options.out must not be dist: the input is read while the output is written');
  }
  return { kind: 'single', method: apspMethods.indexOf(resolved), factor, paths, validate, out };
}

function checkDevices(value: unknown): number[] {
  if (!Array.isArray(value)) throw typeError('options.devices', 'an array of device indices', value);
  if (value.length === 0) throw rangeError('options.devices', 'at least one device index', inWords('an empty array'));
  const devices = value.map((d, i) => checkDeviceIndex(`options.devices[${i}]`, d));
  if (new Set(devices).size !== devices.length) {
    throw rangeError('options.devices', 'distinct device indices', inWords(`[${devices.join(', ')}]`));
  }
  return devices;
}

let warnedHost = false;

/** Whether the multi-GPU run must go through the host (`transfer`, or a pair without peer access). */
function viaHostFor(transfer: unknown, devices: readonly number[]): boolean {
  if (transfer === 'host') return true;
  if (transfer === 'peer') return false;
  if (transfer !== 'auto') throw rangeError('options.transfer', 'one of auto, peer, host', transfer);
  const blocked: string[] = [];
  for (const a of devices)
    for (const b of devices) if (a < b && !(canAccessPeer(a, b) && canAccessPeer(b, a))) blocked.push(`${a}↔${b}`);
  if (blocked.length === 0) return false;
  if (!warnedHost) {
    warnedHost = true;
    process.emitWarning(
      `apsp: devices ${blocked.join(', ')} cannot access each other's memory; multi-GPU runs copy through the host`,
      { code: 'CK_PEER_UNAVAILABLE' },
    );
  }
  return true;
}

function planMulti(
  dist: DeviceArray<'int32'>,
  n: number,
  devices: number[],
  method: ApspMethod,
  options: ApspOptions,
): ApspPlan {
  if (method !== 'auto' && method !== 'fast' && method !== 'replicated') {
    throw rangeError('options.method', 'auto, fast or replicated with several devices', method);
  }
  apspBlockFactor('fast', n, options.blockFactor);
  if (options.paths !== undefined && options.paths !== false) {
    throw rangeError('options.paths', 'false with several devices (paths are single-GPU only)', options.paths);
  }
  if (options.onRound !== undefined) {
    throw rangeError(
      'options.onRound',
      'undefined with several devices (progress is single-GPU only)',
      inWords('a value'),
    );
  }
  const validate = options.validate ?? true;
  if (typeof validate !== 'boolean') throw typeError('options.validate', 'a boolean', validate);
  const out = options.out;
  if (out !== undefined) {
    checkArray('options.out', out, 'int32');
    if (out.length !== n * n) throw rangeError('options.out', `n·n = ${n * n} elements long`, elements(out.length));
    if (out.device !== devices[0])
      throw rangeError('options.out', `on devices[0] = ${devices[0]}`, inWords(`device ${out.device}`));
    if (out === dist)
      throw new RangeError('options.out must not be dist: the input is read while the output is written');
  }
  const viaHost = viaHostFor(options.transfer ?? 'auto', [...new Set([...devices, dist.device])]);
  return { kind: 'multi', devices, scheme: method === 'replicated' ? 1 : 0, viaHost, validate, out };
}

function validateWeights(dist: DeviceArray<'int32'>): void {
  checkWeightRange(reduce(dist, 'min'), reduce(dist, 'max'));
}

function checkWeightRange(lo: number, hi: number): void {
  if (lo < 0) throw rangeError('dist', `a weight matrix with weights in [0, INF] (no negative weights)`, lo);
  if (hi > INF) throw rangeError('dist', `a weight matrix with weights in [0, INF = ${INF}]`, hi);
}

/** Options of {@link apspAsync}: those of {@link apsp} but `onRound`, an AbortSignal and a progress callback. */
export interface ApspAsyncOptions extends Omit<ApspOptions, 'onRound'>, ProgressOptions {}

/**
 * {@link apsp} as a Promise, on one device or several (`devices`): the same distances, next hops and
 * argument checks, with the run on a libuv pool thread that waits for each round (the next one already
 * queued, so the GPUs stay busy), so the JS thread keeps running. After each round it reports
 * `options.onProgress({ done, total })` (rounds done and ⌈n / block factor⌉, or the 128-row tile rows
 * with several devices; the last report comes when the result is complete) and checks `options.signal`.
 * `options.onRound` is not taken: use `onProgress`, which also works with several devices.
 *
 * It computes on `dist` as it is at the call: before it returns, it queues the weight check
 * (`validate`) and the copy of `dist` the run works on, so writing `dist` afterwards — even before the
 * promise settles — changes neither the result nor the check, which covers exactly the matrix computed
 * on. A weight outside [0, INF] rejects with the RangeError {@link apsp} throws, before any round runs
 * (`options.out` may then hold the padded copy).
 *
 * Rejects, never throws: TypeError/RangeError as {@link apsp} throws them, {@link CudaError}, or
 * {@link AbortError} within one round of the abort (the round in flight completes on the GPU; `dist`
 * is intact and `options.out` holds partial distances, usable at once). From the call until it
 * settles, `options.out` is refused as an output of other calls and a `free()` of it takes effect when
 * it settles; `dist` may be written or freed at once. See docs/async.md.
 *
 * @example
 * ```ts
 * const d = await apspAsync(g, n, { signal: AbortSignal.timeout(60_000), onProgress: ({ done, total }) => bar.update(done / total) });
 * const { dist, next } = await apspAsync(g, n, { paths: true });
 * ```
 */
export function apspAsync(
  dist: DeviceArray<'int32'>,
  n: number,
  options?: ApspAsyncOptions & { paths?: false },
): Promise<DeviceArray<'int32'>>;
export function apspAsync(
  dist: DeviceArray<'int32'>,
  n: number,
  options: ApspAsyncOptions & { paths: true },
): Promise<ApspResult>;
export function apspAsync(
  dist: DeviceArray<'int32'>,
  n: number,
  options?: ApspAsyncOptions,
): Promise<DeviceArray<'int32'> | ApspResult>;
export async function apspAsync(
  dist: DeviceArray<'int32'>,
  n: number,
  options: ApspAsyncOptions = {},
): Promise<DeviceArray<'int32'> | ApspResult> {
  const what = 'apspAsync';
  if (typeof options === 'object' && options !== null && (options as ApspOptions).onRound !== undefined) {
    throw typeError(
      'options.onRound',
      'undefined (apspAsync reports progress through options.onProgress)',
      inWords('a value'),
    );
  }
  const plan = planApsp(dist, n, options);
  const { signal, onProgress } = resolveAsync(options, true);
  throwIfAborted(signal, what);
  if (plan.kind === 'elsewhere') {
    using local = empty('int32', n * n, { device: plan.device, shape: [n, n] });
    peerCopy(local, dist);
    // Awaited here: `local` is freed when this function returns.
    return await apspAsync(local, n, { ...options, devices: undefined });
  }
  const device = plan.kind === 'multi' ? plan.devices[0] : dist.device;
  const out = plan.out ?? empty('int32', n * n, { device, shape: [n, n] });
  let next: DeviceArray<'int32'> | undefined;
  const token = native.asyncToken();
  // The rounds the run had finished when the signal fired (it stops within one more): the progress
  // reports JS has seen by then may lag behind.
  let roundsAtAbort: number | undefined;
  const cancel = () => {
    const steps = native.asyncCancel(token);
    roundsAtAbort ??= steps;
  };
  signal?.addEventListener('abort', cancel, { once: true });
  let done = 0;
  let total = 0;
  let thrown: { error: unknown } | undefined;
  const progress = (d: number, t: number) => {
    if (thrown) return;
    done = d;
    total = t;
    try {
      onProgress?.({ done: d, total: t });
    } catch (error) {
      thrown = { error };
      cancel();
    }
  };
  try {
    // The native call queues, before it returns, everything that reads `dist` (the weight check and the
    // copy the run works on), so later writes to `dist` cannot reach the run; the rounds follow on a
    // pool thread only if the check passed, and it resolves to the [min, max] it found.
    let range: [number, number] | undefined;
    if (plan.kind === 'multi') {
      range = await native.apspRunMultiAsync(
        dist.handle('dist'),
        out.handle('options.out'),
        n,
        plan.devices,
        plan.scheme,
        plan.viaHost,
        plan.validate,
        token,
        progress,
      );
    } else {
      if (plan.paths) next = empty('int32', n * n, { device, shape: [n, n] });
      range = await native.apspRunAsync(
        dist.handle('dist'),
        out.handle('options.out'),
        next ? next.handle('next') : null,
        n,
        plan.method,
        plan.factor,
        plan.validate,
        token,
        progress,
      );
    }
    if (range) checkWeightRange(range[0], range[1]);
    if (thrown) throw thrown.error;
    throwIfAborted(signal, `${what} (after ${done} of ${total} rounds)`);
  } catch (e) {
    const where =
      roundsAtAbort === undefined
        ? `after ${done} of ${total} rounds`
        : `after ${done} of ${total} rounds; aborted during round ${roundsAtAbort + 1}`;
    if (!plan.out) out.free();
    next?.free();
    if (thrown) throw thrown.error;
    if (isCancelled(e) || (signal?.aborted && !(e instanceof AbortError)))
      throw abortError(signal, `${what} (${where})`);
    throw e;
  } finally {
    signal?.removeEventListener('abort', cancel);
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

/** The generator's parameters, checked ({@link randomGraph}, and the distributed graphs made band by band). */
export interface RandomGraphParams {
  density: number;
  minWeight: number;
  maxWeight: number;
  seed: number;
}

/**
 * Checks random-graph options (`name` prefixes the argument in errors) and fills in the defaults;
 * `leastWeight` is the smallest `minWeight` allowed.
 * @internal
 */
export function randomGraphParams(name: string, options: unknown, leastWeight = 0): RandomGraphParams {
  if (typeof options !== 'object' || options === null) throw typeError(name, 'an object', options);
  const o = options as Omit<RandomGraphOptions, 'device'>;
  const density = o.density ?? 0.1;
  if (typeof density !== 'number' || !(density >= 0 && density <= 1)) {
    throw rangeError(`${name}.density`, 'a number in [0, 1]', density);
  }
  const minWeight = checkInteger(`${name}.minWeight`, o.minWeight ?? 1, leastWeight, INF - 1);
  const maxWeight = checkInteger(`${name}.maxWeight`, o.maxWeight ?? 1000, minWeight, INF - 1);
  const seed = checkInteger(`${name}.seed`, o.seed ?? 1);
  return { density, minWeight, maxWeight, seed };
}

/**
 * A random n×n weight matrix made on the GPU: each off-diagonal entry is an edge with probability
 * `density` and a weight uniform in [minWeight, maxWeight], else `INF`; the diagonal is 0. For
 * benchmarks and tests of large graphs without a host copy.
 */
export function randomGraph(n: number, options: RandomGraphOptions = {}): DeviceArray<'int32'> {
  checkInteger('n', n, 1, APSP_MAX_N);
  const { density, minWeight, maxWeight, seed } = randomGraphParams('options', options);
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
