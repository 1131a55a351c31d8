import type { NativeBuildInfo, NativeCublasInfo, NativeDeviceProperties } from '../binding';
import { checkInteger } from './errors';
import type { BinaryInfo } from './loader';
import { binaryInfo, native } from './native';

/** Properties of one CUDA device (everything the AᵀA report's `-pd` flag prints, and more). */
export type DeviceProperties = NativeDeviceProperties;

/** Versions and device count of the CUDA installation as seen by this process. */
export interface RuntimeInfo {
  /** CUDA runtime the binary was built with, e.g. `13.0`. */
  runtimeVersion: string;
  /** Highest CUDA version the installed driver supports, or `null` without a driver. */
  driverVersion: string | null;
  deviceCount: number;
  /** Why no device can be used (no driver, no device, driver too old), or `null`. */
  noDeviceReason: string | null;
  /** Which binary was loaded (a local build or a platform package), from where, why, and what was tried first. */
  binary: BinaryInfo;
  /** How that binary was built: its GPU architectures, line info, C++ runtime, the glibc it was built against. */
  build: NativeBuildInfo;
}

function versionString(v: number): string {
  return `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}`;
}

/** Number of CUDA devices; 0 when there is no GPU or no driver (never throws). */
export function deviceCount(): number {
  return native.deviceCount();
}

/** CUDA runtime and driver versions, and why no device is usable when that is the case. */
export function runtimeInfo(): RuntimeInfo {
  const r = native.runtimeInfo();
  return {
    runtimeVersion: versionString(r.runtimeVersion),
    driverVersion: r.driverVersion > 0 ? versionString(r.driverVersion) : null,
    deviceCount: r.deviceCount,
    noDeviceReason: r.noDeviceReason,
    binary: binaryInfo,
    build: r.build,
  };
}

/** Validates a device index (an integer ≥ 0); CUDA reports indices past the last device. */
export function checkDevice(device: unknown, name = 'device'): number {
  return checkInteger(name, device, 0, 1 << 20);
}

/** Properties of device `device` (default 0). Throws CudaError when there is no such device. */
export function deviceProperties(device = 0): DeviceProperties {
  return native.deviceProperties(checkDevice(device));
}

/** Device memory in bytes, from {@link memoryInfo}. */
export interface MemoryInfo {
  /**
   * What the library can still allocate: the driver's free memory plus what the library's pool
   * holds unused (freed arrays, kept for reuse). Freeing an array raises it, as it always did.
   */
  free: number;
  /** The device's memory. */
  total: number;
  /**
   * Free memory as the driver reports it (cudaMemGetInfo): what other code in this process or other
   * processes can allocate. Lower than `free` by the pool's unused reserve; {@link trimMemoryPool}
   * gives that back.
   */
  driverFree: number;
}

/** Free and total memory of `device` (default 0); see {@link MemoryInfo} for what `free` counts. */
export function memoryInfo(device = 0): MemoryInfo {
  return native.memoryInfo(checkDevice(device));
}

/** What the library's memory pool of one device holds, in bytes. */
export interface MemoryPoolStats {
  /** Handed out and not yet freed: live DeviceArrays and the workspaces of running operations. */
  used: number;
  /** Taken from the driver: `used` plus freed memory kept for reuse. */
  reserved: number;
  /** The most `used` has been since the process started. */
  highWater: number;
  /**
   * Allocations that found the device full, gave the pool's unused memory back to the driver and
   * tried again (each then either fitted or threw `cudaErrorMemoryAllocation`).
   */
  oomRetries: number;
  /**
   * Page-locked host memory the transfers keep for reuse, for the whole process (not per device):
   * the staging blocks of small transfers and the rings of large pageable ones. `reserved` is held,
   * `used` of it in use by transfers now, `highWater` the most `used` has been. The blocks held by
   * `toHost()` calls in flight are capped (64 MiB; past it small `toHost()` calls snapshot on the
   * device instead), and {@link trimMemoryPool} gives back what is not in use.
   */
  hostStaging: { reserved: number; used: number; highWater: number };
}

/**
 * The memory pool of `device` (default 0). Every DeviceArray and every operation's workspace comes
 * from it: freeing returns memory to the pool without waiting for the device, and later allocations
 * reuse it. The pool keeps what it reserved until {@link trimMemoryPool} (or an allocation that
 * would not fit otherwise) gives it back.
 */
export function memoryPool(device = 0): MemoryPoolStats {
  return native.poolStats(checkDevice(device));
}

/**
 * Gives the unused memory of `device`'s pool back to the driver until at most `keepBytes` (default
 * 0) stay reserved, after waiting for the work queued on the device (frees take effect in stream
 * order). Memory in use is never released. Useful before handing the GPU to other code in the same
 * process; allocations do it themselves when the device is out of memory. Also gives back the
 * page-locked host memory the transfers keep for reuse and do not use now (see
 * {@link MemoryPoolStats.hostStaging}), whatever `device` is.
 */
export function trimMemoryPool(device = 0, keepBytes = 0): void {
  native.poolTrim(checkDevice(device), checkInteger('keepBytes', keepBytes));
}

/** Waits until all work queued on `device` has finished. */
export function synchronize(device = 0): void {
  native.synchronize(checkDevice(device));
}

/** Whether cuBLAS (loaded at run time) is available, where it was found, its version or why not. */
export function cublasInfo(): NativeCublasInfo {
  return native.cublasInfo();
}
