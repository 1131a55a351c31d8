import type { BufferHandle, DtypeCode } from '../binding';
import { checkDevice } from './device';
import { checkInteger, rangeError, typeError } from './errors';
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
  ctor: { new (length: number): HostArray };
}

const DTYPES: Record<Dtype, DtypeInfo> = {
  float32: { code: 0, bytes: 4, ctor: Float32Array },
  float64: { code: 1, bytes: 8, ctor: Float64Array },
  int32: { code: 2, bytes: 4, ctor: Int32Array },
  uint32: { code: 3, bytes: 4, ctor: Uint32Array },
};

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
   * Copies the array to a new host typed array. The copy and the wait for earlier GPU work run on a
   * worker thread, so the event loop keeps turning.
   */
  toHost(): Promise<HostArrayOf<D>> {
    const handle = this.handle();
    const target = new DTYPES[this.dtype].ctor(this.length) as HostArrayOf<D>;
    return native.downloadAsync(handle, target);
  }

  /** Copies the array to a new host typed array, blocking until the GPU work before it is done. */
  toHostSync(): HostArrayOf<D> {
    const target = new DTYPES[this.dtype].ctor(this.length) as HostArrayOf<D>;
    native.download(this.handle(), target);
    return target;
  }

  /** Overwrites the array with a host typed array of the same dtype and length. */
  copyFrom(source: HostArrayOf<D>): this {
    const dtype = dtypeOfHost('source', source);
    if (dtype !== this.dtype) throw typeError('source', `a typed array of ${this.dtype}`, source);
    if (source.length !== this.length) {
      throw rangeError('source', `${this.length} elements long`, `${source.length} elements`);
    }
    native.upload(this.handle(), source);
    return this;
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
   * Releases the device memory now. Idempotent. A `toHost()` still in flight completes first; the
   * memory is released when it does.
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

/** An uninitialised device array of `length` elements. */
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

/** Copies a host typed array to a new device array of the matching dtype. */
export function upload<T extends HostArray>(data: T, options: ArrayOptions = {}): DeviceArray<DtypeOfHost<T>> {
  const dtype = dtypeOfHost('data', data) as DtypeOfHost<T>;
  const a = empty(dtype, data.length, options);
  try {
    native.upload(a.handle(), data);
  } catch (e) {
    a.free();
    throw e;
  }
  return a;
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
  if (out.length !== ref.length) throw rangeError('ref', `${out.length} elements long`, `${ref.length} elements`);
  if (out.device !== ref.device) throw rangeError('ref', `on device ${out.device}`, `device ${ref.device}`);
  return native.relativeError(out.handle('out'), ref.handle('ref'));
}
