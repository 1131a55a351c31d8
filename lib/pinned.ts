import { checkDtype, type Dtype, dtypeBytes, type HostArray, type HostArrayOf, hostConstructor } from './array';
import { checkInteger } from './errors';
import { native } from './native';

/**
 * A typed array over page-locked (pinned) host memory, from {@link pinned}. The GPU's copy engines
 * read and write it directly, so {@link DeviceArray.toHost}, {@link DeviceArray.copyFrom} and their
 * variants move it at the link's rate (about 50 GB/s on an H100's PCIe 5 link, against about 10 GB/s
 * through pageable memory).
 */
export type PinnedArray<D extends Dtype = Dtype> = HostArrayOf<D> & {
  /**
   * Gives the page-locked memory back now. Idempotent. The array's buffer is detached (its length
   * becomes 0); a transfer still using the memory finishes first.
   */
  free(): void;
  /** Frees the memory at the end of a `using` block. */
  [Symbol.dispose](): void;
};

/**
 * A typed array of `length` elements of `dtype` in page-locked host memory, zero-filled. Use it as
 * the target of `toHost` / `toHostSync` and the source of `copyFrom` / `copyFromAsync` for transfers
 * at the link's rate. It works like any typed array of its type (`subarray` views stay pinned).
 *
 * Page-locked memory is taken from the operating system's pageable pool and allocating it is slow
 * (about 1 ms for a few KiB, 180 ms for 256 MiB on the H100 host): allocate once, reuse. Free it with
 * `free()` or a `using` declaration; a finalizer frees arrays that are garbage-collected.
 *
 * @example
 * ```ts
 * using host = pinned('float32', 1 << 20);
 * using a = empty('float32', 1 << 20);
 * a.copyFrom(host.fill(1));
 * await a.toHost(host);
 * ```
 *
 * @throws CudaError without a GPU, or when the memory cannot be locked.
 */
export function pinned<D extends Dtype>(dtype: D, length: number): PinnedArray<D> {
  checkDtype('dtype', dtype);
  checkInteger('length', length);
  const buffer = native.pinnedAlloc(length * dtypeBytes(dtype));
  const array = new (hostConstructor(dtype))(buffer, 0, length);
  const free = (): void => native.pinnedFree(buffer);
  Object.defineProperties(array, {
    free: { value: free },
    [Symbol.dispose]: { value: free },
  });
  return array as PinnedArray<D>;
}

/** Whether a typed array lies in live memory from {@link pinned} (a transfer then skips staging). */
export function isPinned(array: HostArray): boolean {
  return native.isPinned(array);
}
