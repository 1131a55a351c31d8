/**
 * cuda-kernels: CUDA kernels for Node.js, with device arrays, CUDA-event timing and device
 * properties. See the README for an overview.
 *
 * @packageDocumentation
 */
export { CudaError } from './errors';
// The shapes of deviceProperties() and cublasInfo(), as the addon returns them (binding.d.ts).
export type { NativeDeviceProperties, NativeCublasInfo, NativeBuildInfo, NativeNcclInfo } from '../binding';
// Which binary runtimeInfo() says was loaded, and the candidates tried (lib/loader.ts).
export type { BinaryInfo, BinaryAttempt, DeclaredRequirements } from './loader';
export {
  deviceCount,
  deviceProperties,
  memoryInfo,
  memoryPool,
  trimMemoryPool,
  synchronize,
  runtimeInfo,
  cublasInfo,
  type DeviceProperties,
  type RuntimeInfo,
  type MemoryPoolStats,
  type MemoryInfo,
} from './device';
export {
  DeviceArray,
  upload,
  empty,
  zeros,
  full,
  copyDevice,
  deviceRelativeError,
  dtypes,
  dtypeBytes,
  type Dtype,
  type HostArray,
  type HostArrayOf,
  type DtypeOfHost,
  type ArrayOptions,
  type CopyFromOptions,
} from './array';
export { pinned, isPinned, type PinnedArray } from './pinned';
export { EventTimer, timed, timedAsync, type Timed, type TimedAsyncOptions } from './timing';
export { synchronizeAsync, AbortError, type AsyncOptions, type ProgressOptions, type Progress } from './async';
export { atA, ataMethods, ataAutoMethod, type AtaMethod, type AtaOptions } from './ops/ata';
export { gemm, gemmMethods, gemmTiles, gemmAutoMethod, type GemmMethod, type GemmOptions } from './ops/gemm';
export { scan, reduce, reduceAsync, scanMethods, type ScanMethod, type ScanOptions } from './ops/scan';
export type { ReduceOp } from './ops/scan-spec';
export {
  stencil,
  stencilAsync,
  stencilMethods,
  type StencilMethod,
  type StencilOptions,
  type StencilAsyncOptions,
} from './ops/stencil';
export { stencilPresets, type StencilResult, type StencilWeights } from './ops/stencil-spec';
export {
  apsp,
  apspAsync,
  apspMethods,
  apspBlockFactor,
  apspRounds,
  apspMultiSchemes,
  reconstructPath,
  randomGraph,
  INF,
  APSP_MAX_N,
  APSP_DIST_MAX_N,
  type ApspMethod,
  type ApspOptions,
  type ApspAsyncOptions,
  type ApspResult,
  type RandomGraphOptions,
} from './ops/apsp';
export {
  Mlp,
  mlpMethods,
  type MlpMethod,
  type MlpOptions,
  type MlpRunOptions,
  type MlpInput,
  type MlpTrainOptions,
  type MlpTrainAsyncOptions,
} from './ops/mlp';
export {
  mlpActivations,
  mlpOutputs,
  type MlpActivation,
  type MlpOutput,
  type MlpSpec,
  type MlpWeights,
  type EpochResult,
  type TrainOptions,
  type PatternData,
} from './ops/mlp-spec';
export { canAccessPeer, enablePeerAccess, peerCopy, copyViaHost, type PeerCopyOptions } from './ops/peer';
export {
  readGraph,
  writeGraph,
  readDistances,
  writeDistances,
  graphFormatOf,
  matrixFormatOf,
  GraphFileError,
  type GraphFormat,
  type MatrixFormat,
  type GraphMatrix,
} from './io/graph';
export {
  Communicator,
  collectiveOps,
  DEFAULT_TIMEOUT_MS,
  type CollectiveOp,
  type CommunicatorOptions,
  type ArrayRange,
} from './distributed/communicator';
export {
  rankFromEnv,
  jobIdFromEnv,
  bootstrapAddress,
  DEFAULT_MASTER_PORT,
  type JobId,
  type RankEnv,
  type RankSource,
  type EnvVars,
} from './distributed/env';
export { ncclInfo, NcclError, type NcclInfo } from './distributed/nccl';
export {
  apspDistributed,
  apspBandOf,
  apspBellmanCheck,
  type ApspBellmanOptions,
  type ApspBellmanReport,
  type ApspRows,
  type ApspDistInput,
  type ApspDistOutput,
  type ApspDistOptions,
  type ApspDistResult,
  type ApspRandomInput,
} from './distributed/apsp';
export {
  compile,
  compileAsync,
  clearKernelCache,
  kernelCacheInfo,
  nvrtcInfo,
  elementwise,
  reduction,
  Module,
  Kernel,
  CompileError,
  cxxStandards,
  type CompileOptions,
  type CxxStandard,
  type KernelParam,
  type KernelAttributes,
  type LaunchConfig,
  type KernelArg,
  type Diagnostic,
  type NvrtcInfo,
  type KernelCacheInfo,
  type KernelCacheStats,
  type CacheSource,
  type ElementwiseSpec,
  type ElementwiseCallOptions,
  type ElementwiseKernel,
  type ReductionSpec,
  type ReductionCallOptions,
  type ReductionKernel,
} from './kernels/index';
export * as cpu from './cpu/index';
