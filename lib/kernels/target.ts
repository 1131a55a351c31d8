// Which code NVRTC makes for a device. A cubin for the device's own architecture whenever NVRTC knows
// it: loading needs no JIT, and PTX newer than the driver (the most reported failure of run-time
// compilation) cannot happen. PTX only for a GPU newer than NVRTC, and saying so.

/** What to compile for one device. */
export interface Target {
  /** The architecture number NVRTC is given (90 for sm_90 / compute_90). */
  arch: number;
  /** A cubin (`sm_XX`); false: PTX (`compute_XX`) that the driver compiles when it loads it. */
  cubin: boolean;
  /** The NVRTC option that selects it. */
  option: string;
  /** Why this is not a cubin for the device's own architecture; empty when it is. */
  note: string;
}

/**
 * The target for a device of compute capability `device` (e.g. 90 for 9.0) with an NVRTC that
 * supports `supported` (nvrtcGetSupportedArchs): the device's own architecture; else the newest one
 * NVRTC knows of the same major version below it (a cubin runs on later minor versions of its major);
 * else PTX for the newest one below it. Null when NVRTC supports nothing at or below the device.
 */
export function chooseTarget(device: number, supported: readonly number[]): Target | null {
  const sorted = [...supported].sort((a, b) => a - b);
  if (sorted.includes(device))
    return { arch: device, cubin: true, option: `--gpu-architecture=sm_${device}`, note: '' };
  const major = Math.floor(device / 10);
  const below = sorted.filter((a) => a < device);
  const sameMajor = below.filter((a) => Math.floor(a / 10) === major);
  if (sameMajor.length > 0) {
    const arch = sameMajor[sameMajor.length - 1];
    return {
      arch,
      cubin: true,
      option: `--gpu-architecture=sm_${arch}`,
      note: `NVRTC does not know sm_${device}; compiled for sm_${arch}, whose cubins run on it`,
    };
  }
  if (below.length === 0) return null;
  const arch = below[below.length - 1];
  return {
    arch,
    cubin: false,
    option: `--gpu-architecture=compute_${arch}`,
    note:
      `NVRTC supports sm_${sorted[sorted.length - 1]} at most, older than this GPU (sm_${device}): compiled to PTX ` +
      `for compute_${arch}, which the driver compiles when it loads it; a newer NVRTC makes a cubin`,
  };
}
