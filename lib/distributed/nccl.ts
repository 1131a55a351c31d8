import type { NativeNcclInfo } from '../../binding';
import { CudaError } from '../errors';
import { native } from '../native';

/**
 * A failure of NCCL or of a communicator: NCCL missing (`ncclLibraryNotFound`), a peer that died or
 * hung (`ncclRemoteError`, `ncclSystemError`, `ncclTimeout`), a communicator that was aborted
 * (`ncclAborted`) or destroyed (`ncclCommDestroyed`), a call NCCL refused (`ncclInvalidUsage`, …).
 * A subclass of {@link CudaError}, so code that handles CUDA failures handles these too.
 */
export class NcclError extends CudaError {
  constructor(message: string, code: string, call: string) {
    super(message, code, call);
    this.name = 'NcclError';
  }
}

/** The CudaError the addon threw as an {@link NcclError} when it came from NCCL; anything else as is. */
export function asNcclError(e: unknown): unknown {
  if (e instanceof CudaError && !(e instanceof NcclError) && e.code.startsWith('nccl')) {
    const n = new NcclError(e.message, e.code, e.call);
    if (e.stack) n.stack = e.stack.replace(/^CudaError/, 'NcclError');
    return n;
  }
  return e;
}

/** Whether NCCL is available: where it was loaded from and its version, or why not (see {@link ncclInfo}). */
export type NcclInfo = NativeNcclInfo;

/**
 * Whether NCCL (loaded at run time, never linked) can be used: `{ available: true, path, version }`,
 * or `{ available: false, code, reason }` with what to install. Never throws. The library is looked
 * up once per process: the file `CUDA_KERNELS_NCCL` names when that is set, else `libnccl.so.2`
 * (then `libnccl.so`) on the loader's path.
 */
export function ncclInfo(): NcclInfo {
  return native.ncclInfo();
}

/** Throws the {@link NcclError} that says what to install when NCCL cannot be loaded. */
export function requireNccl(): void {
  const info = native.ncclInfo();
  if (!info.available) {
    throw new NcclError(info.reason ?? 'NCCL is not available', info.code ?? 'ncclLibraryNotFound', 'dlopen(libnccl)');
  }
}
