import type { BufferHandle, DtypeCode } from '../binding';
import { checkDevice } from './device';
import { checkInteger, rangeError, typeError, elements, inWords } from './errors';
import { native } from './native';

/** Element types a DeviceArray can hold. */
export type Dtype = 'float32' | 'float64' | 'int32' | 'uint32';

/** The host typed array that matches a dtype. */
export type HostArrayOf<D extends Dtype> = D extends 'float32'
  ? Float32Array
  : D extends 'float64'
    ? Float64Array
    : D extends 'int32'
      ? Int32Array
      : Uint32Array;

export type HostArray = Float32Array | Float64Array | Int32Array | Uint32Array;

interface DtypeInfo {
  code: DtypeCode;
  bytes: number;
  ctor: { new (length: number): HostArray; new (buffer: ArrayBuffer, byteOffset: number, length: number): HostArray };
}

const DTYPES: Record<Dtype, DtypeInfo> = {
  float32: { code: 0, bytes: 4, ctor: Float32Array },
  float64: { code: 1, bytes: 8, ctor: Float64Array },
  int32: { code: 2, bytes: 4, ctor: Int32Array },
  uint32: { code: 3, bytes: 4, ctor: Uint32Array },
};

/** @internal The typed-array constructor of a dtype. */
export function hostConstructor(dtype: Dtype): {
  new (buffer: ArrayBuffer, byteOffset: number, length: number): HostArray;
} {
  return DTYPES[dtype].ctor as never;
}

/** All supported dtypes, in a fixed order. */
export const dtypes: readonly Dtype[] = Object.freeze(Object.keys(DTYPES) as Dtype[]);

/** Checks a dtype name; returns it. */
export function checkDtype(name: string, value: unknown): Dtype {
  if (typeof value !== 'string' || !Object.prototype.hasOwnProperty.call(DTYPES, value)) {
    throw typeError(name, `one of ${dtypes.join(', ')}`, value);
  }
  return value as Dtype;
}

/** The dtype of a host typed array, or a TypeError naming the argument. */
export function dtypeOfHost(name: string, value: unknown): Dtype {
  if (value instanceof Float32Array) return 'float32';
  if (value instanceof Float64Array) return 'float64';
  if (value instanceof Int32Array) return 'int32';
  if (value instanceof Uint32Array) return 'uint32';
  throw typeError(name, 'a Float32Array, Float64Array, Int32Array or Uint32Array', value);
}

/** Whether a typed array's memory is a SharedArrayBuffer's. */
function isShared(a: HostArray): boolean {
  return typeof SharedArrayBuffer === 'function' && a.buffer instanceof SharedArrayBuffer;
}

/** Whether a typed array's buffer has been detached (transferred, or a freed {@link pinned} array). */
function isDetached(a: HostArray): boolean {
  if (a.buffer.byteLength !== 0) return false;
  try {
    // Constructing a view of a detached buffer throws; of an empty one it does not.
    new Uint8Array(a.buffer);
    return false;
  } catch {
    return true;
  }
}

/**
 * Checks a host typed array given for a transfer: its dtype (TypeError), that its buffer is attached
 * (TypeError) and, when `length` is given, its length (RangeError).
 */
function checkHost(name: string, value: unknown, dtype: Dtype, length?: number): HostArray {
  const got = dtypeOfHost(name, value);
  const a = value as HostArray;
  if (got !== dtype) throw typeError(name, `a typed array of ${dtype}`, value);
  if (isDetached(a)) throw new TypeError(`${name}'s buffer is detached (transferred, or a freed pinned array)`);
  if (length !== undefined && a.length !== length)
    throw rangeError(name, `${length} elements long`, elements(a.length));
  return a;
}

/** Options of {@link DeviceArray.copyFrom} and {@link DeviceArray.copyFromAsync}. */
export interface CopyFromOptions {
  /** First element of the device array to write (default 0); the source fills the elements after it. */
  offset?: number;
}

/** Options shared by the functions that create device arrays. */
export interface ArrayOptions {
  /** Device index (default 0). */
  device?: number;
  /** Informational shape (e.g. `[rows, cols]`); its product must equal the length. */
  shape?: readonly number[];
}

function checkShape(shape: readonly number[] | undefined, length: number): readonly number[] | undefined {
  if (shape === undefined) return undefined;
  if (!Array.isArray(shape)) throw typeError('shape', 'an array of integers', shape);
  let product = 1;
  shape.forEach((d, i) => {
    product *= checkInteger(`shape[${i}]`, d);
  });
  if (product !== length) throw rangeError('shape', `dimensions whose product is the length ${length}`, shape);
  return Object.freeze([...shape]);
}

/**
 * Typed memory on a GPU. Results of every kernel stay on the device as a DeviceArray until read
 * back with {@link DeviceArray.toHost} or {@link DeviceArray.toHostSync}.
 *
 * Free it with {@link DeviceArray.free} or a `using` declaration; a finalizer frees arrays that are
 * garbage-collected while still holding memory, but that is a safety net, not the contract.
 */
export class DeviceArray<D extends Dtype = Dtype> {
  readonly dtype: D;
  readonly length: number;
  readonly device: number;
  readonly shape: readonly number[] | undefined;
  #handle: BufferHandle | null;

  /** @internal Use {@link upload}, {@link empty} or {@link zeros}. */
  constructor(handle: BufferHandle, dtype: D, length: number, device: number, shape?: readonly number[]) {
    this.#handle = handle;
    this.dtype = dtype;
    this.length = length;
    this.device = device;
    this.shape = shape;
  }

  /** Bytes of device memory the array holds. */
  get byteLength(): number {
    return this.length * DTYPES[this.dtype].bytes;
  }

  /** True once {@link DeviceArray.free} has been called. */
  get freed(): boolean {
    return this.#handle === null;
  }

  /** @internal The native handle; throws if the array was freed. */
  handle(name = 'array'): BufferHandle {
    if (this.#handle === null)
      throw new TypeError(`${name} has been freed (DeviceArray ${this.dtype}[${this.length}])`);
    return this.#handle;
  }

  /**
   * Copies the array to the host: into `target` when given (a typed array of the same dtype and
   * length, returned), else into a new typed array.
   *
   * The copy is a snapshot taken when `toHost()` is called: it is enqueued on the device's library
   * stream right away, so writes made after the call (`fill`, `copyFrom`, an op with `out` set to this
   * array, `free()`) never change what the promise resolves to. The waits run on worker threads, so
   * the event loop keeps turning.
   *
   * Into {@link pinned} memory the copy engine writes the target directly (at the link's rate).
   * Into ordinary (pageable) memory the data goes through pinned staging blocks, arrays above 1 MiB
   * through a ring of them after a snapshot on the device. A large new array (no `target`) or one over
   * a `SharedArrayBuffer` is written by a worker thread. A pageable `target` you pass is written on the
   * JS thread, in pieces of at most 16 MiB (under a millisecond each) as they arrive, each after
   * checking that the target is still there: if its buffer is transferred away (`postMessage`,
   * `structuredClone` with `transfer`) before the copy ends, nothing more is written and the promise
   * rejects with a TypeError. (Past two such copies in flight, the data comes down into memory of the
   * library's and is copied into the target whole at the end, so pinned memory stays bounded.) The
   * target must not be read or written until the promise resolves.
   * Several `toHost()` calls into the same target: with a pinned target the one called last wins
   * (they run in call order); with a pageable target the result is unspecified, so await one before
   * starting the next.
   *
   * When the device has no memory left for the snapshot of an array above 1 MiB, the copy is made
   * during the call instead, on the JS thread (correct, and the promise is already resolved, but the
   * call blocks until the GPU work queued before it is done).
   *
   * @throws TypeError when `target` is not a typed array of this dtype or its buffer is detached,
   *   RangeError when its length differs.
   */
  toHost(target?: HostArrayOf<D>): Promise<HostArrayOf<D>> {
    const handle = this.handle();
    const out =
      target === undefined
        ? new DTYPES[this.dtype].ctor(this.length)
        : checkHost('target', target, this.dtype, this.length);
    return native.downloadAsync(handle, out, target === undefined) as Promise<HostArrayOf<D>>;
  }

  /**
   * Copies the array to the host, blocking until the GPU work queued before it is done: into `target`
   * when given (same dtype and length, returned), else into a new typed array. Large copies into
   * pageable memory go through a pinned ring, the host side split over a few threads.
   *
   * @throws TypeError when `target` is not a typed array of this dtype or its buffer is detached,
   *   RangeError when its length differs.
   */
  toHostSync(target?: HostArrayOf<D>): HostArrayOf<D> {
    const handle = this.handle();
    const out =
      target === undefined
        ? new DTYPES[this.dtype].ctor(this.length)
        : checkHost('target', target, this.dtype, this.length);
    native.download(handle, out);
    return out as HostArrayOf<D>;
  }

  /**
   * Overwrites elements `offset … offset + source.length − 1` with a host typed array of the same
   * dtype (by default the whole array, from element 0). Returns once `source` has been read: from
   * {@link pinned} memory the copy engine reads it directly and this waits for the copy; pageable
   * memory is copied into pinned staging first, and the device copy then completes in stream order,
   * before any later work on the array.
   *
   * @throws TypeError for another dtype or a detached buffer, RangeError when the source does not
   *   fit at `offset`.
   */
  copyFrom(source: HostArrayOf<D>, options: CopyFromOptions = {}): this {
    const [src, offset] = this.#checkSource(source, options);
    native.upload(this.handle(), src, offset);
    return this;
  }

  /**
   * {@link DeviceArray.copyFrom} as a promise that never blocks the event loop for the copy. The
   * device copy is enqueued on the device's library stream during the call, so work started after
   * the call (`scan(a)`, `fill`, `copyDevice`, `toHost()`, `free()`) sees the new data without
   * awaiting anything. The promise resolves, with this array, once `source` may be reused: it has
   * then been read, and the device copy completes in stream order.
   *
   * - From {@link pinned} memory the copy engine reads `source` directly; the promise resolves when
   *   it has.
   * - From ordinary (pageable) memory larger than 1 MiB, the library's staging threads copy `source`
   *   into a ring of pinned blocks while the stream waits for each block (a stream memory operation,
   *   not a blocked thread); the promise resolves once every block has been staged. Until then do
   *   not write `source`, and do not transfer or detach its buffer: the call keeps the array alive,
   *   not memory handed to another thread (a source found detached when the staging is done makes
   *   the promise reject with a TypeError: the device array's contents are then undefined). Where
   *   the driver lacks stream memory operations the blocks are staged on the calling thread before
   *   it returns (about 20 ms per 256 MiB), as `copyFrom` does.
   * - Pageable sources of up to 1 MiB are copied into a pinned block during the call (a memcpy of at
   *   most 1 MiB); while earlier copies fill the staging budget (their blocks wait behind queued GPU
   *   work), into ordinary memory during the call instead, which the staging threads then stage: the
   *   call never waits for the GPU.
   *
   * If the device fails while a copy is staged (a lost context), the promise rejects with the
   * {@link CudaError}. Typed arrays over a `SharedArrayBuffer` are sources like any other; a source
   * over a resizable `ArrayBuffer` is refused (TypeError), as its memory could shrink while it is read.
   *
   * @throws TypeError for another dtype or a detached buffer, or when this array was freed;
   *   RangeError when the source does not fit at `offset` (thrown, not rejected).
   */
  copyFromAsync(source: HostArrayOf<D>, options: CopyFromOptions = {}): Promise<this> {
    const [src, offset] = this.#checkSource(source, options);
    // Staging threads read the source after the call returns; a resizable buffer could shrink under
    // them (its memory decommitted). A growable SharedArrayBuffer only grows, and is fine.
    if ((src.buffer as ArrayBuffer & { resizable?: boolean }).resizable === true && !isShared(src))
      throw new TypeError('source must not be over a resizable ArrayBuffer (its memory can shrink while it is read)');
    return native.uploadAsync(this.handle(), src, offset).then(() => this);
  }

  #checkSource(source: unknown, options: CopyFromOptions): [HostArray, number] {
    if (typeof options !== 'object' || options === null) throw typeError('options', 'an object', options);
    const src = checkHost('source', source, this.dtype);
    const offset = checkInteger('options.offset', options.offset ?? 0);
    if (offset + src.length > this.length) {
      throw rangeError(
        'source',
        `at most ${Math.max(0, this.length - offset)} elements long (offset ${offset})`,
        elements(src.length),
      );
    }
    return [src, offset];
  }

  /** Sets every element to `value` (on the device). */
  fill(value: number): this {
    if (typeof value !== 'number') throw typeError('value', 'a number', value);
    if (this.dtype === 'int32') checkInteger('value', value, -0x80000000, 0x7fffffff);
    if (this.dtype === 'uint32') checkInteger('value', value, 0, 0xffffffff);
    native.fill(this.handle(), value);
    return this;
  }

  /**
   * Fills the array on the device with pseudo-random values that depend only on `seed` (a
   * counter-based hash of seed and index): floats uniform in [-1, 1), integers over their range.
   */
  fillRandom(seed: number): this {
    checkInteger('seed', seed);
    native.fillRandom(this.handle(), seed);
    return this;
  }

  /** A new device array with the same contents (a device-to-device copy). */
  clone(): DeviceArray<D> {
    const out = empty(this.dtype, this.length, { device: this.device, shape: this.shape });
    try {
      copyDevice(out, this);
    } catch (e) {
      out.free();
      throw e;
    }
    return out;
  }

  /**
   * Returns the device memory to the device's memory pool. Idempotent. Never waits for the device:
   * the memory is released in the order of the library stream, after the work already queued on
   * the array (a `toHost()` in flight included), and reused by later allocations.
   */
  free(): void {
    if (this.#handle === null) return;
    const h = this.#handle;
    this.#handle = null;
    native.free(h);
  }

  /** Frees the array at the end of a `using` block. */
  [Symbol.dispose](): void {
    this.free();
  }

  toString(): string {
    return `DeviceArray<${this.dtype}>[${this.length}] on device ${this.device}${this.freed ? ' (freed)' : ''}`;
  }
}

/**
 * An uninitialised device array of `length` elements, from the device's memory pool (see
 * {@link memoryPool}): no device synchronization, and memory freed earlier is reused.
 *
 * @throws CudaError `cudaErrorMemoryAllocation` when it does not fit even after the pool has given
 *   its unused memory back to the driver.
 */
export function empty<D extends Dtype>(dtype: D, length: number, options: ArrayOptions = {}): DeviceArray<D> {
  checkDtype('dtype', dtype);
  checkInteger('length', length);
  const device = checkDevice(options.device ?? 0, 'options.device');
  const shape = checkShape(options.shape, length);
  const handle = native.alloc(device, DTYPES[dtype].code, length);
  return new DeviceArray(handle, dtype, length, device, shape);
}

/** A device array of `length` zeros. */
export function zeros<D extends Dtype>(dtype: D, length: number, options: ArrayOptions = {}): DeviceArray<D> {
  const a = empty(dtype, length, options);
  try {
    native.fill(a.handle(), 0);
  } catch (e) {
    a.free();
    throw e;
  }
  return a;
}

/** A device array of `length` copies of `value`. */
export function full<D extends Dtype>(
  dtype: D,
  length: number,
  value: number,
  options: ArrayOptions = {},
): DeviceArray<D> {
  const a = empty(dtype, length, options);
  try {
    a.fill(value);
  } catch (e) {
    a.free();
    throw e;
  }
  return a;
}

/**
 * Copies a host typed array to a new device array of the matching dtype (one native call: the
 * allocation and the copy). Returns once `data` has been read; see {@link DeviceArray.copyFrom}.
 */
export function upload<T extends HostArray>(data: T, options: ArrayOptions = {}): DeviceArray<DtypeOfHost<T>> {
  const dtype = dtypeOfHost('data', data) as DtypeOfHost<T>;
  checkHost('data', data, dtype);
  const device = checkDevice(options.device ?? 0, 'options.device');
  const shape = checkShape(options.shape, data.length);
  const handle = native.alloc(device, DTYPES[dtype].code, data.length, data);
  return new DeviceArray(handle, dtype, data.length, device, shape);
}

/** The dtype matching a host typed array type. */
export type DtypeOfHost<T extends HostArray> = T extends Float32Array
  ? 'float32'
  : T extends Float64Array
    ? 'float64'
    : T extends Int32Array
      ? 'int32'
      : 'uint32';

/** Checks that `value` is a live DeviceArray (optionally of one dtype); returns it. */
export function checkArray<D extends Dtype>(name: string, value: unknown, dtype?: D): DeviceArray<D> {
  if (!(value instanceof DeviceArray)) throw typeError(name, 'a DeviceArray', value);
  if (value.freed) throw new TypeError(`${name} has been freed`);
  if (dtype !== undefined && value.dtype !== dtype) {
    throw new TypeError(`${name} must be a DeviceArray of ${dtype}, got ${value.dtype}`);
  }
  return value as DeviceArray<D>;
}

/**
 * Device-to-device copy of `count` elements (default: all of `src`) from `src` at `srcOffset` to
 * `dst` at `dstOffset`. Both arrays must have the same dtype; they may be on different devices.
 * `dst` and `src` may be the same array with overlapping ranges: the copy then behaves like
 * `memmove` (it goes through a temporary from the pool).
 */
export function copyDevice<D extends Dtype>(
  dst: DeviceArray<D>,
  src: DeviceArray<D>,
  options: { dstOffset?: number; srcOffset?: number; count?: number } = {},
): void {
  checkArray('dst', dst);
  checkArray('src', src, dst.dtype);
  const dstOffset = checkInteger('dstOffset', options.dstOffset ?? 0);
  const srcOffset = checkInteger('srcOffset', options.srcOffset ?? 0);
  const count = checkInteger('count', options.count ?? src.length - srcOffset);
  if (srcOffset + count > src.length) throw rangeError('count', `at most ${src.length - srcOffset} (src)`, count);
  if (dstOffset + count > dst.length) throw rangeError('count', `at most ${dst.length - dstOffset} (dst)`, count);
  native.copy(dst.handle('dst'), src.handle('src'), dstOffset, srcOffset, count);
}

/** Bytes per element of a dtype. */
export function dtypeBytes(dtype: Dtype): number {
  return DTYPES[checkDtype('dtype', dtype)].bytes;
}

/**
 * ‖out − ref‖₂ / ‖ref‖₂ computed on the device in float64 (‖out − ref‖₂ when ref is all zeros);
 * NaN if `out` holds a NaN; exactly 0 for equal integer arrays. For checking large results without
 * copying them to the host.
 */
export function deviceRelativeError<D extends Dtype>(out: DeviceArray<D>, ref: DeviceArray<D>): number {
  checkArray('out', out);
  checkArray('ref', ref, out.dtype);
  if (out.length !== ref.length) throw rangeError('ref', `${out.length} elements long`, elements(ref.length));
  if (out.device !== ref.device) throw rangeError('ref', `on device ${out.device}`, inWords(`device ${ref.device}`));
  return native.relativeError(out.handle('out'), ref.handle('ref'));
}
