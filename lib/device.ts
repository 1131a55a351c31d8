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

/** Free and total device memory in bytes. */
export function memoryInfo(device = 0): { free: number; total: number } {
  return native.memoryInfo(checkDevice(device));
}

/** Waits until all work queued on `device` has finished. */
export function synchronize(device = 0): void {
  native.synchronize(checkDevice(device));
}

/** Whether cuBLAS (loaded at run time) is available, where it was found, its version or why not. */
export function cublasInfo(): NativeCublasInfo {
  return native.cublasInfo();
}
