// What the kernels' JavaScript (lib/kernels/module.ts) asks of the addon about a device and a compiled
// kernel, stood in for runs without a GPU: an H100's launch limits, and kernelsGetKernel's numbers for
// a parameter layout. Used by test/kernels-module.test.ts, test/kernels-launch.test.ts and
// bench/dev/kernels/hit_js.ts.
import type { NativeKernelDeviceInfo } from '../../binding';

/** kernelsDeviceInfo of an H100 (sm_90, 132 SMs). */
export const H100_KERNEL_DEVICE_INFO: NativeKernelDeviceInfo = {
  major: 9,
  minor: 0,
  smCount: 132,
  maxThreadsPerBlock: 1024,
  maxBlockDim: [1024, 1024, 64],
  maxGridDim: [2147483647, 65535, 65535],
  sharedMemPerBlockOptin: 232448,
};

/**
 * Fills kernelsGetKernel's `out` as the addon would for `layout` ([size, kind] per parameter): `fixed`
 * (bytes, paramsChecked, maxThreadsPerBlock, sharedSizeBytes, maxDynamicSharedSizeBytes, constSizeBytes,
 * localSizeBytes, numRegs, ptxVersion, binaryVersion), its bytes replaced by the packed size, then
 * each parameter's offset at its natural alignment.
 */
export function standInKernelInfo(layout: Int32Array, out: Float64Array, fixed: readonly number[]): void {
  let at = 0;
  for (let i = 0; i < layout.length / 2; i++) {
    const size = layout[2 * i];
    at = Math.ceil(at / size) * size;
    out[fixed.length + i] = at;
    at += size;
  }
  out.set(fixed);
  out[0] = Math.ceil(at / 8) * 8;
}
