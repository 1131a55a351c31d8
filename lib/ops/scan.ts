import { checkArray, type DeviceArray, type Dtype, empty } from '../array';
import { type AsyncOptions, resolveAsync, throwIfAborted } from '../async';
import { reduceOpIndex, type ReduceOp } from './scan-spec';
import { rangeError, typeError, elements, inWords } from '../errors';
import { native } from '../native';

/**
 * The scan variants, in the order of native/scan/methods.cc (the test suite checks the two agree).
 *
 * - `warp`: the report's algorithm — warp up-sweep/down-sweep scans, warp totals carried across
 *   the block, one block walking the whole array (a teaching reference, not fast).
 * - `blocks`: the classic three kernels — reduce each block, scan the block sums, scan each block
 *   with its offset.
 * - `cub`: cub::DeviceScan from the toolkit's CCCL headers (at most 2^31 - 1 elements where the addon
 *   was built against CUB before 2.7, such as the CUDA 12 fallback binary: a RangeError past that).
 * - `lookback`: single pass with decoupled look-back, one tile per block.
 * - `fast`: the same look-back from persistent blocks that keep several tiles in flight (bulk
 *   copies into shared memory), so loads go on while a tile waits for its prefix; sm_90 and newer,
 *   from 16 MiB up, `lookback` otherwise.
 */
export const scanMethods = ['warp', 'blocks', 'cub', 'lookback', 'fast'] as const;

/** A variant name, or `auto` (`fast`). */
export type ScanMethod = (typeof scanMethods)[number] | 'auto';

export interface ScanOptions {
  /** Inclusive (default) or exclusive: out[0] = 0, out[i] = Σ in[0..i-1]. */
  inclusive?: boolean;
  /** Variant (default `auto`). */
  method?: ScanMethod;
  /** Output of the same dtype and length on the same device; may be the input itself (in place). */
  out?: DeviceArray;
}

/**
 * Prefix sums of a device array (int32, uint32, float32 or float64, any length), as a new
 * DeviceArray of the same dtype, or written into `options.out` (which may be `arr`).
 *
 * Integer sums wrap around modulo 2^32 (two's complement for int32), as in C. Float scans run in
 * the array's own precision, in an order that differs from the sequential one, so float32 results
 * differ from a float64 prefix by rounding.
 *
 * @example
 * ```ts
 * using counts = upload(new Int32Array([3, 1, 4, 1, 5]));
 * using offsets = scan(counts, { inclusive: false }); // [0, 3, 4, 8, 9]
 * ```
 */
export function scan<D extends Dtype>(arr: DeviceArray<D>, options: ScanOptions = {}): DeviceArray<D> {
  checkArray('arr', arr);
  if (typeof options !== 'object' || options === null) throw typeError('options', 'an object', options);
  const inclusive = options.inclusive ?? true;
  if (typeof inclusive !== 'boolean') throw typeError('options.inclusive', 'a boolean', inclusive);
  const method = options.method ?? 'auto';
  if (method !== 'auto' && !(scanMethods as readonly string[]).includes(method)) {
    throw rangeError('options.method', `one of auto, ${scanMethods.join(', ')}`, method);
  }
  const resolved = method === 'auto' ? 'fast' : method;
  if (resolved === 'cub') checkCubLength(arr.length);
  let out = options.out as DeviceArray<D> | undefined;
  if (out !== undefined) {
    checkArray('options.out', out, arr.dtype);
    if (out.length !== arr.length) throw rangeError('options.out', `${arr.length} elements long`, elements(out.length));
    if (out.device !== arr.device)
      throw rangeError('options.out', `on device ${arr.device}`, inWords(`device ${out.device}`));
  }
  const owned = out === undefined;
  out ??= empty(arr.dtype, arr.length, { device: arr.device, shape: arr.shape });
  try {
    native.scanRun(arr.handle('arr'), out.handle('options.out'), scanMethods.indexOf(resolved), inclusive);
  } catch (e) {
    if (owned) out.free();
    throw e;
  }
  return out;
}

/**
 * CUB before 2.7 counts DeviceScan's items in an int: a longer array would be scanned only in part,
 * without an error, so `cub` refuses it there (the CUDA 12 fallback binary is built against 2.3.2).
 */
function checkCubLength(length: number): void {
  const { version, maxItems } = native.scanCubInfo();
  if (length <= maxItems) return;
  const v = `${Math.floor(version / 100000)}.${Math.floor(version / 100) % 1000}.${version % 100}`;
  throw new RangeError(
    `options.method 'cub' takes at most ${maxItems} elements in this build (CUB ${v} counts items in an int; ` +
      `CUB 2.7 and newer take any length), and arr has ${length}: 'fast' and 'lookback' take any length`,
  );
}

/** The op's index for native reduceRun, after checking `arr` and `op`. */
function reduceOp(arr: DeviceArray, op: ReduceOp): number {
  checkArray('arr', arr);
  return reduceOpIndex(op);
}

/**
 * `sum`, `min` or `max` of a device array, as a number (this waits for the GPU). Float sums
 * accumulate in float64; integer sums wrap around modulo 2^32 like {@link scan}'s last element (an
 * int32 result as the signed value). An empty array gives 0, +Infinity and -Infinity.
 */
export function reduce(arr: DeviceArray, op: ReduceOp): number {
  const code = reduceOp(arr, op);
  return native.reduceRun(arr.handle('arr'), code);
}

/**
 * {@link reduce} as a Promise: the reduction is queued before the call returns, after the work already
 * queued on the array's device (so it reduces the array as it is at the call: writing it afterwards
 * does not change the result), and waited for on a libuv pool thread, so the JS thread keeps running
 * (useful behind a long call such as {@link stencilAsync}). Rejects, never throws: a TypeError/RangeError for bad
 * arguments (as {@link reduce} throws them), a {@link CudaError}, or an {@link AbortError} if
 * `options.signal` is aborted before the call or before the result is in (see docs/async.md).
 *
 * @example
 * ```ts
 * const total = await reduceAsync(arr, 'sum', { signal: AbortSignal.timeout(5000) });
 * ```
 */
export async function reduceAsync(arr: DeviceArray, op: ReduceOp, options: AsyncOptions = {}): Promise<number> {
  const code = reduceOp(arr, op);
  const { signal } = resolveAsync(options, false);
  throwIfAborted(signal, 'reduceAsync');
  const value = await native.reduceRunAsync(arr.handle('arr'), code);
  throwIfAborted(signal, 'reduceAsync');
  return value;
}
