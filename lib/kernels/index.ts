// Users' own kernels: CUDA C++ compiled at run time by NVRTC (cached on disk), launched on DeviceArrays
// on the library stream of their device. See docs/kernels.md.
export { compile, compileAsync, clearKernelCache, kernelCacheInfo, Module, Kernel } from './module';
export type { KernelParam, KernelAttributes } from './module';
export type { LaunchConfig, KernelArg } from './launch';
export type { CompileOptions, CxxStandard } from './options';
export { cxxStandards } from './options';
export { CompileError, type Diagnostic } from './compile-error';
export { nvrtcInfo, type NvrtcInfo } from './nvrtc';
export type { KernelCacheInfo, KernelCacheStats, CacheSource } from './cache';
export { elementwise, type ElementwiseSpec, type ElementwiseCallOptions, type ElementwiseKernel } from './elementwise';
export { reduction, type ReductionSpec, type ReductionCallOptions, type ReductionKernel } from './reduction';
