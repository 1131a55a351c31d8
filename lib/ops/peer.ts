// Several GPUs: peer access between devices and copies between them.
import { checkArray, type DeviceArray, type Dtype } from '../array';
import { deviceCount } from '../device';
import { checkInteger, rangeError } from '../errors';
import { native } from '../native';

/**
 * Checks a device index for the multi-GPU functions: an integer ≥ 0 (else a TypeError or RangeError)
 * and, where devices are present, below {@link deviceCount} (else a RangeError). Without any device
 * the call that follows reports that with a `CudaError`.
 */
export function checkDeviceIndex(name: string, value: unknown): number {
  const d = checkInteger(name, value, 0, 1 << 20);
  const count = deviceCount();
  if (count > 0 && d >= count) throw rangeError(name, `a device index below ${count} (the devices present)`, d);
  return d;
}

/**
 * Whether device `a` can read and write device `b`'s memory directly (over NVLink or PCIe), as
 * `cudaDeviceCanAccessPeer` says. True when `a === b`. Bad indices give a RangeError; without a GPU
 * it throws a `CudaError`.
 */
export function canAccessPeer(a: number, b: number): boolean {
  return native.peerCanAccess(checkDeviceIndex('a', a), checkDeviceIndex('b', b));
}

/**
 * Lets devices `a` and `b` access each other's memory (both directions), so that {@link peerCopy}
 * between them takes the direct path. Idempotent: enabling a pair twice, or a pair someone else in
 * the process enabled, is not an error; a no-op when `a === b`. Throws a `CudaError`
 * (`cudaErrorPeerAccessUnsupported`) where {@link canAccessPeer} is false.
 */
export function enablePeerAccess(a: number, b: number): void {
  native.peerEnable(checkDeviceIndex('a', a), checkDeviceIndex('b', b));
}

/** Options of {@link peerCopy} and {@link copyViaHost}: element offsets and count. */
export interface PeerCopyOptions {
  /** First element of `src` to copy (default 0). */
  srcOffset?: number;
  /** Where the first element lands in `dst` (default 0). */
  dstOffset?: number;
  /** Elements to copy (default: the rest of `src` from `srcOffset`). */
  length?: number;
}

function copyArgs<D extends Dtype>(
  dst: DeviceArray<D>,
  src: DeviceArray<D>,
  options: PeerCopyOptions,
): [number, number, number] {
  checkArray('dst', dst);
  checkArray('src', src);
  if (src.dtype !== dst.dtype) {
    throw new TypeError(`src must be a DeviceArray of ${dst.dtype} like dst, got ${src.dtype}`);
  }
  if (typeof options !== 'object' || options === null) throw new TypeError('options must be an object');
  const srcOffset = checkInteger('options.srcOffset', options.srcOffset ?? 0, 0, src.length);
  const dstOffset = checkInteger('options.dstOffset', options.dstOffset ?? 0, 0, dst.length);
  const length = checkInteger('options.length', options.length ?? src.length - srcOffset);
  if (srcOffset + length > src.length) {
    throw rangeError('options.length', `at most ${src.length - srcOffset} (src from srcOffset)`, length);
  }
  if (dstOffset + length > dst.length) {
    throw rangeError('options.length', `at most ${dst.length - dstOffset} (dst from dstOffset)`, length);
  }
  return [dstOffset, srcOffset, length];
}

/**
 * Copies `length` elements of `src` (from `srcOffset`) into `dst` (from `dstOffset`); the arrays may
 * be on different devices or the same one, and must have the same dtype.
 *
 * Asynchronous: it returns once the copy is enqueued, on the destination device's library stream,
 * after the work already queued on both devices (so a kernel that writes `src` comes first), and the
 * source device's later work waits for it (so a kernel that overwrites `src` comes after). Reading
 * `dst` back (`toHost`) or any library call on its device sees the copied data. Between devices with
 * peer access enabled ({@link enablePeerAccess}) the data goes directly over NVLink or PCIe
 * (`cudaMemcpyPeerAsync`); otherwise CUDA stages it through host memory.
 *
 * @example
 * ```ts
 * enablePeerAccess(0, 1);
 * using a = upload(new Float32Array(1 << 20).fill(1), { device: 0 });
 * using b = empty('float32', 1 << 20, { device: 1 });
 * peerCopy(b, a, { srcOffset: 1024, dstOffset: 0, length: 4096 });
 * const head = (await b.toHost()).subarray(0, 4096);
 * ```
 */
export function peerCopy<D extends Dtype>(
  dst: DeviceArray<D>,
  src: DeviceArray<D>,
  options: PeerCopyOptions = {},
): void {
  const [dstOffset, srcOffset, length] = copyArgs(dst, src, options);
  native.peerCopy(dst.handle('dst'), src.handle('src'), dstOffset, srcOffset, length, false);
}

/**
 * The same copy as {@link peerCopy}, staged through pinned host memory: device to host on the
 * source's stream and host to device on the destination's, in 32 MiB chunks so that the two
 * directions overlap (a process-wide ring of four chunks, 128 MiB of pinned memory allocated on first
 * use). Asynchronous and ordered like {@link peerCopy}. For comparison with the direct path, and for
 * devices that cannot access each other.
 */
export function copyViaHost<D extends Dtype>(
  dst: DeviceArray<D>,
  src: DeviceArray<D>,
  options: PeerCopyOptions = {},
): void {
  const [dstOffset, srcOffset, length] = copyArgs(dst, src, options);
  native.peerCopy(dst.handle('dst'), src.handle('src'), dstOffset, srcOffset, length, true);
}
