// Types of the raw native module (build/Release/cuda_kernels.node or a prebuild), exactly what
// native/ exports. Only lib/native.ts loads it; everything else goes through lib/.

/** Opaque handle to device memory (a type-tagged N-API External). */
export interface BufferHandle {
  readonly __brand: 'cuda-kernels.buffer';
}

/** Opaque handle to a pair of CUDA events. */
export interface TimerHandle {
  readonly __brand: 'cuda-kernels.timer';
}

/** Opaque cancel flag of one asynchronous call (asyncToken). */
export interface CancelToken {
  readonly __brand: 'cuda-kernels.cancel';
}

/** Opaque set of array locks held across the steps of an asynchronous call (asyncHold). */
export interface HoldHandle {
  readonly __brand: 'cuda-kernels.hold';
}

/** Opaque handle to one rank's NCCL communicator (a type-tagged N-API External). */
export interface CommHandle {
  readonly __brand: 'cuda-kernels.comm';
}

/** Opaque handle to code compiled by NVRTC and loaded (kernelsLoad); never unloaded. */
export interface LibraryHandle {
  readonly __brand: 'cuda-kernels.library';
}

/** Opaque handle to one kernel of loaded code on one device, with its packed-argument layout. */
export interface KernelHandle {
  readonly __brand: 'cuda-kernels.kernel';
}

/** Element type codes: 0 float32, 1 float64, 2 int32, 3 uint32. */
export type DtypeCode = 0 | 1 | 2 | 3;

export type HostArray = Float32Array | Float64Array | Int32Array | Uint32Array;

export interface NativeRuntimeInfo {
  runtimeVersion: number;
  driverVersion: number;
  deviceCount: number;
  noDeviceCode: string | null;
  noDeviceReason: string | null;
  build: NativeBuildInfo;
}

/** How the binary was built (CMakeLists.txt). */
export interface NativeBuildInfo {
  /** The CUDA architectures it carries code for, comma-separated (e.g. `75-real,80-real,90`). */
  cudaArchitectures: string;
  /** Built with `-lineinfo` (a profiling build: CUDA_KERNELS_PROFILE=1). */
  lineinfo: boolean;
  /** libstdc++ and libgcc linked in (a release build: CUDA_KERNELS_PORTABLE=1). */
  staticCxxRuntime: boolean;
  /**
   * The glibc of the headers it was compiled against, e.g. `2.31`: its floor is at most this (a
   * platform package declares the measured floor, `runtimeInfo().binary.declared`).
   */
  glibc: string | null;
}

export interface NativeDeviceProperties {
  index: number;
  name: string;
  computeCapability: string;
  major: number;
  minor: number;
  smCount: number;
  totalGlobalMem: number;
  totalConstMem: number;
  sharedMemPerBlock: number;
  sharedMemPerBlockOptin: number;
  sharedMemPerMultiprocessor: number;
  regsPerBlock: number;
  regsPerMultiprocessor: number;
  warpSize: number;
  maxThreadsPerBlock: number;
  maxThreadsPerMultiProcessor: number;
  maxBlocksPerMultiProcessor: number;
  maxBlockDim: [number, number, number];
  maxGridDim: [number, number, number];
  clockRateKHz: number;
  memoryClockRateKHz: number;
  memoryBusWidth: number;
  l2CacheSize: number;
  asyncEngineCount: number;
  concurrentKernels: boolean;
  eccEnabled: boolean;
  unifiedAddressing: boolean;
  pciBusId: number;
  peers: number[];
}

export interface NativeCublasInfo {
  available: boolean;
  path?: string;
  version?: string;
  code?: string;
  reason?: string;
}

/** The GPU's energy counter (NVML), or why it cannot be read. */
export interface NativeGpuEnergy {
  available: boolean;
  /** Millijoules since the driver loaded. */
  millijoules?: number;
  pciBusId?: string;
  code?: string;
  reason?: string;
}

export interface NativeNcclInfo {
  available: boolean;
  path?: string;
  version?: string;
  code?: string;
  reason?: string;
}

export interface NativeNvrtcInfo {
  /** NVRTC loaded and this binary can load what it compiles (path … archs are set whenever NVRTC loaded). */
  available: boolean;
  path?: string;
  /** major.minor */
  version?: string;
  /** realpath|size|mtime of the loaded library file. */
  identity?: string;
  archs?: number[];
  includeDirs: string[];
  code?: string;
  reason?: string;
}

/** One NVRTC compilation: a failure is a result (ok false), not an exception. */
export interface NativeCompileResult {
  ok: boolean;
  /** NVRTC_SUCCESS or the first failing call's result name. */
  result: string;
  failedCall: string;
  log: string;
  /** The cubin, or the PTX with its terminating NUL (empty on failure). */
  code: Uint8Array;
  /** One lowered name per name expression. */
  lowered: string[];
}

export interface NativeKernelDeviceInfo {
  major: number;
  minor: number;
  smCount: number;
  maxThreadsPerBlock: number;
  maxBlockDim: [number, number, number];
  maxGridDim: [number, number, number];
  sharedMemPerBlockOptin: number;
}

export interface NativeCommState {
  ready: boolean;
  pending: number;
  closed: boolean;
  code?: string;
  reason?: string;
}

export interface NativeBinding {
  setErrorClass(ctor: new (message: string, code: string, call: string) => Error): void;

  runtimeInfo(): NativeRuntimeInfo;
  deviceCount(): number;
  deviceProperties(device: number): NativeDeviceProperties;
  /** free: the driver's free memory plus the pool's unused reserve; driverFree: cudaMemGetInfo's. */
  memoryInfo(device: number): { free: number; total: number; driverFree: number };
  synchronize(device: number): void;

  /** From the device's pool; with `source` (same dtype and length) also uploads it. */
  alloc(device: number, dtype: DtypeCode, length: number, source?: HostArray): BufferHandle;
  /**
   * Back to the pool in the library stream's order (no host wait). `unheld`: without waiting for
   * collectives deferred on the stream, for an array none of them can use.
   */
  free(array: BufferHandle, unheld?: boolean): void;
  /** Host → device at element `offset`; returns once `source` has been read. */
  upload(array: BufferHandle, source: HostArray, offset?: number): void;
  /** The same, resolved once `source` may be reused; the device copy is enqueued at call time. */
  uploadAsync(array: BufferHandle, source: HostArray, offset?: number): Promise<void>;
  /**
   * How uploadAsync() stages large pageable sources on `device`: 'stream-ordered' (our threads, the
   * stream gated by stream memory operations), 'calling thread' (with the reason), or 'not yet used';
   * and how many uploads took each path so far.
   */
  uploadPath(device: number): {
    path: 'stream-ordered' | 'calling thread' | 'not yet used';
    reason: string | null;
    streamOrdered: number;
    callingThread: number;
    threads: number;
  };
  download(array: BufferHandle, target: HostArray): void;
  /**
   * A snapshot of the array at call time, written into `target` when the promise resolves. `fresh`:
   * the caller made `target` for this call and nobody else holds it, so a worker thread may write it
   * (otherwise large pageable targets are written on the JS thread, chunk by chunk, after checking
   * that they were not detached meanwhile).
   */
  downloadAsync<T extends HostArray>(array: BufferHandle, target: T, fresh?: boolean): Promise<T>;

  poolStats(device: number): {
    used: number;
    reserved: number;
    highWater: number;
    oomRetries: number;
    hostStaging: { reserved: number; used: number; highWater: number };
  };
  poolTrim(device: number, keepBytes: number): void;
  /** Page-locked host memory of `bytes` bytes; its finalizer frees it. */
  pinnedAlloc(bytes: number): ArrayBuffer;
  /** Detaches the buffer and frees its memory (after transfers still using it). Idempotent. */
  pinnedFree(buffer: ArrayBuffer): void;
  isPinned(array: HostArray): boolean;
  fill(array: BufferHandle, value: number): void;
  fillRandom(array: BufferHandle, seed: number): void;
  relativeError(out: BufferHandle, ref: BufferHandle): number;
  copy(dst: BufferHandle, src: BufferHandle, dstOffset: number, srcOffset: number, count: number): void;

  timerCreate(device: number): TimerHandle;
  timerRecord(timer: TimerHandle, which: 0 | 1): void;
  timerElapsed(timer: TimerHandle): number;
  timerFree(timer: TimerHandle): void;

  /** A cancel flag for one asynchronous call; asyncCancel sets it, the call stops at its next step. */
  asyncToken(): CancelToken;
  /** Sets the flag; returns the steps (APSP rounds) the call had finished then: it stops within one more. */
  asyncCancel(token: CancelToken): number;
  /**
   * Locks arrays for a call made of several asynchronous steps: a free() of any of them waits for
   * asyncRelease, and the `written` ones (named by `writtenNames` in errors) are refused as outputs of
   * other calls meanwhile. Throws if a written one is being written by a running call.
   */
  asyncHold(owner: string, read: BufferHandle[], written: BufferHandle[], writtenNames: string[]): HoldHandle;
  /** Releases a hold (idempotent); frees deferred by it take effect. */
  asyncRelease(hold: HoldHandle): void;
  /** Resolves once the work queued on the device's library stream before the call has finished. */
  streamWaitAsync(device: number): Promise<void>;

  cublasInfo(): NativeCublasInfo;
  /** NVML's total energy counter of `device`; never throws for a missing NVML or counter. */
  gpuEnergy(device: number): NativeGpuEnergy;
  cublasLoad(): string;

  /** C = AᵀA with the method at `method` in ataMethods(). */
  ataRun(a: BufferHandle, c: BufferHandle, rows: number, cols: number, method: number): void;
  ataMethods(): string[];

  /** C = A·B (float32) with the method at `method` in gemmMethods(); `tile` for `shared`. */
  gemmRun(
    a: BufferHandle,
    b: BufferHandle,
    c: BufferHandle,
    m: number,
    k: number,
    n: number,
    method: number,
    tile: number,
  ): void;
  gemmMethods(): string[];

  /** Prefix sums of `a` into `out` (same dtype and length; may be `a`) with the method at `method`. */
  scanRun(a: BufferHandle, out: BufferHandle, method: number, inclusive: boolean): void;
  scanMethods(): string[];
  /**
   * The CUB the addon was built against: `version` is CUB_VERSION (2.3.2 is 200302); `maxItems` the
   * longest array the `cub` scan takes (2^31 - 1 before CUB 2.7, whose num_items was an int; else
   * 2^53 - 1, any array).
   */
  scanCubInfo(): { version: number; maxItems: number };
  /** op: 0 sum, 1 min, 2 max. */
  reduceRun(a: BufferHandle, op: number): number;
  /** The same, queued before it returns (it reduces `a` as it is at the call), waited for on a libuv pool thread. */
  reduceRunAsync(a: BufferHandle, op: number): Promise<number>;

  /** Copies `grid` into `a`, sweeps a → b → a …; says which buffer holds the result. Waits for the GPU. */
  stencilRun(
    grid: BufferHandle,
    a: BufferHandle,
    b: BufferHandle,
    rows: number,
    cols: number,
    weights: Float64Array,
    tolerance: number,
    maxIterations: number,
    checkEvery: number,
    method: number,
  ): { iterations: number; residual: number; finalBuffer: 0 | 1 };
  /**
   * The same run on a libuv pool thread (one chunk of stencilAsync's sweeps); `a` and `b` must be
   * held for writing (asyncHold) by the caller.
   */
  stencilRunAsync(
    grid: BufferHandle,
    a: BufferHandle,
    b: BufferHandle,
    rows: number,
    cols: number,
    weights: Float64Array,
    tolerance: number,
    maxIterations: number,
    checkEvery: number,
    method: number,
  ): Promise<{ iterations: number; residual: number; finalBuffer: 0 | 1 }>;
  stencilMethods(): string[];
  /**
   * All-pairs shortest paths of the n×n int32 weight matrix `dist` into `out` (and the next-hop
   * matrix into `next` when not null) with the method at `method` in apspMethods() and its block
   * factor; `progress(done, rounds)` after each round when given (the call then waits for the GPU).
   */
  apspRun(
    dist: BufferHandle,
    out: BufferHandle,
    next: BufferHandle | null,
    n: number,
    method: number,
    blockFactor: number,
    progress?: (done: number, rounds: number) => void,
  ): void;
  /**
   * apspRun with its rounds on a libuv pool thread, which waits for each round (with the next one
   * queued): between rounds it stops, rejecting with an Error of code ABORT_ERR, once `token` is
   * cancelled, and it reports `progress(done, rounds)` (delivered on the JS thread, all before the
   * promise settles). What reads `dist` (the min/max check when `validate`, the padded copy) is queued
   * before it returns. With `validate` it resolves to [min, max] of `dist`, and no round runs when
   * they are outside [0, INF]; otherwise to undefined.
   */
  apspRunAsync(
    dist: BufferHandle,
    out: BufferHandle,
    next: BufferHandle | null,
    n: number,
    method: number,
    blockFactor: number,
    validate: boolean,
    token?: CancelToken,
    progress?: (done: number, rounds: number) => void,
  ): Promise<[number, number] | undefined>;
  apspMethods(): string[];
  /**
   * All-pairs shortest paths of `dist` into `out` (on devices[0]) across `devices`: scheme 0 the row
   * bands, 1 replicated; round transfers through pinned host memory when `viaHost`. Waits for the GPUs.
   */
  apspRunMulti(
    dist: BufferHandle,
    out: BufferHandle,
    n: number,
    devices: number[],
    scheme: 0 | 1,
    viaHost: boolean,
  ): void;
  /** apspRunMulti on a libuv pool thread, with validate, a cancel token and progress as apspRunAsync. */
  apspRunMultiAsync(
    dist: BufferHandle,
    out: BufferHandle,
    n: number,
    devices: number[],
    scheme: 0 | 1,
    viaHost: boolean,
    validate: boolean,
    token?: CancelToken,
    progress?: (done: number, rounds: number) => void,
  ): Promise<[number, number] | undefined>;
  /** Random n×n weight matrix into `out`: edges with probability `density`, weights in [minWeight, maxWeight]. */
  apspRandomGraph(
    out: BufferHandle,
    n: number,
    density: number,
    minWeight: number,
    maxWeight: number,
    seed: number,
  ): void;

  /**
   * Floats of workspace a training step (`train`) or a forward pass of `batch` patterns needs.
   * hidden: 0 sigmoid, 1 tanh, 2 relu; output: 0 sigmoid, 3 identity.
   */
  /** The MLP method names in index order (lib/ops/mlp.ts's `mlpMethods`). */
  mlpMethods(): string[];
  /** The activation names in code order: sigmoid 0, tanh 1, relu 2, identity 3. */
  mlpActivations(): string[];
  mlpWorkspace(
    layers: number[],
    hidden: number,
    output: number,
    batch: number,
    streams: number,
    train: boolean,
  ): number;
  /**
   * One epoch of training in batches of `batch` patterns; adds the epoch's ½Σ(y − t)² to `error`
   * (float64[1]). With `comm`, each batch's gradient and the epoch's error are summed over its ranks.
   */
  mlpTrainEpoch(
    params: BufferHandle,
    momentum: BufferHandle,
    workspace: BufferHandle,
    x: BufferHandle,
    t: BufferHandle,
    error: BufferHandle,
    layers: number[],
    hidden: number,
    output: number,
    patterns: number,
    batch: number,
    eta: number,
    alpha: number,
    method: number,
    streams: number,
    comm?: CommHandle,
  ): void;
  /**
   * `error` set to 0, then one epoch as mlpTrainEpoch, enqueued and waited for on a libuv pool thread;
   * params, momentum, workspace and error must be held for writing (asyncHold) by the caller.
   */
  mlpTrainEpochAsync(
    params: BufferHandle,
    momentum: BufferHandle,
    workspace: BufferHandle,
    x: BufferHandle,
    t: BufferHandle,
    error: BufferHandle,
    layers: number[],
    hidden: number,
    output: number,
    patterns: number,
    batch: number,
    eta: number,
    alpha: number,
    method: number,
    streams: number,
    comm?: CommHandle,
  ): Promise<void>;
  /** Y = network(X) for `rows` patterns; with T, adds ½Σ(y − t)² to `error`. method: 0 custom, 1 cublas. */
  mlpForward(
    params: BufferHandle,
    workspace: BufferHandle,
    x: BufferHandle,
    y: BufferHandle,
    t: BufferHandle | null,
    error: BufferHandle | null,
    layers: number[],
    hidden: number,
    output: number,
    rows: number,
    method: number,
  ): void;
  /**
   * mlpForward (`error` set to 0 first when given), enqueued before it returns and waited for on a
   * libuv pool thread; resolves to the error when `t` is given (read back at the call's point in the
   * stream), else undefined.
   */
  mlpForwardAsync(
    params: BufferHandle,
    workspace: BufferHandle,
    x: BufferHandle,
    y: BufferHandle,
    t: BufferHandle | null,
    error: BufferHandle | null,
    layers: number[],
    hidden: number,
    output: number,
    rows: number,
    method: number,
  ): Promise<number | undefined>;
  /** Whether NCCL (loaded at run time) is available, where it was found, its version or why not. */
  ncclInfo(): NativeNcclInfo;
  /** A new ncclUniqueId (128 bytes), for rank 0 to hand to the other ranks. */
  ncclUniqueId(): Buffer;
  /**
   * Starts rank `rank` of `size` on `device` from rank 0's unique id, on the communicator's own
   * thread; `ready` settles when it is initialised and connected to its peers (or failed).
   * `runtimeConnect`: the user set NCCL_RUNTIME_CONNECT, so collectives may connect in the caller.
   */
  ncclCommInit(
    id: Buffer,
    size: number,
    rank: number,
    device: number,
    timeoutMs: number,
  ): { comm: CommHandle; ready: Promise<void>; runtimeConnect: boolean };
  /**
   * Queues a collective on the library stream of the communicator's device: kind 0 allReduce, 1
   * broadcast (root = peer), 2 allGather, 3 reduceScatter, 4 send, 5 recv, 6 send to `peer` and
   * receive from `peer2` in one group; op 0 sum, 1 prod, 2 max, 3 min, 4 avg; offsets and count in
   * elements (count per rank). Settles when it completes on the GPU.
   */
  ncclCollective(
    comm: CommHandle,
    kind: 0 | 1 | 2 | 3 | 4 | 5 | 6,
    send: BufferHandle | null,
    sendOffset: number,
    recv: BufferHandle | null,
    recvOffset: number,
    count: number,
    op: number,
    peer: number,
    peer2?: number,
  ): Promise<void>;
  /** Blocks until every queued operation is done; throws if the communicator failed. */
  ncclCommWait(comm: CommHandle): void;
  ncclCommState(comm: CommHandle): NativeCommState;
  /**
   * Asks the communicator's thread to destroy it (`graceful`: wait for the pending operations, then
   * finalize) or abort it; returns at once, the promise settles when the thread is done. Idempotent.
   */
  ncclCommClose(comm: CommHandle, graceful: boolean): Promise<void>;
  /**
   * The distributed APSP of this rank's rows (`in` → `out`, rows × n int32 each, null without rows)
   * on a worker thread; `progress(done, rounds)` as rounds complete.
   */
  apspDistRun(
    comm: CommHandle,
    input: BufferHandle | null,
    out: BufferHandle | null,
    n: number,
    progress?: (done: number, rounds: number) => void,
  ): Promise<void>;
  /** [row0, rows]: rank `rank`'s rows of an n-vertex distributed APSP over `size` ranks. */
  apspDistBand(n: number, size: number, rank: number): [number, number];
  /** Rows row0 … row0 + rows − 1 of the graph apspRandomGraph(n, …) makes, into `out` (rows × n). */
  apspRandomGraphRows(
    out: BufferHandle,
    n: number,
    row0: number,
    rows: number,
    density: number,
    minWeight: number,
    maxWeight: number,
    seed: number,
  ): void;
  /**
   * This rank's part of the Bellman check of its band (rows × n) against that random graph, for the
   * (i, j) pairs in `pairs`: `partial` gets min over its rows k ≠ i of w[i][k] + d[k][j] (capped at
   * INF), `own` d[i][j] where row i is its own, else 2^31 − 1. Queued on the library stream.
   */
  apspBellmanPartial(
    band: BufferHandle | null,
    n: number,
    row0: number,
    rows: number,
    pairs: BufferHandle,
    partial: BufferHandle,
    own: BufferHandle,
    density: number,
    minWeight: number,
    maxWeight: number,
    seed: number,
  ): void;
  /** NVRTC's state (loads it once per process); never throws. */
  nvrtcInfo(): NativeNvrtcInfo;
  /** What identifies the NVRTC that would compile, without loading it when the file can be found by looking. */
  nvrtcLocate(): { identity: string | null; includeDirs: string[]; loaded: boolean };
  nvrtcCompile(
    source: string,
    name: string,
    options: string[],
    headerNames: string[],
    headerSources: string[],
    nameExpressions: string[],
    ptx: boolean,
  ): NativeCompileResult;
  /** The same on a libuv pool thread. */
  nvrtcCompileAsync(
    source: string,
    name: string,
    options: string[],
    headerNames: string[],
    headerSources: string[],
    nameExpressions: string[],
    ptx: boolean,
  ): Promise<NativeCompileResult>;
  /** Loads a cubin (or NUL-terminated PTX) with cudaLibraryLoadData. */
  kernelsLoad(device: number, code: Uint8Array, ptx: boolean): LibraryHandle;
  /**
   * The parts of the kernel cache entry at `path` when it is a whole, undamaged entry for `key` (magic,
   * lengths, key, CRC-64: native/nvrtc/entry.h): its code (a Buffer of its own), its metadata (JSON
   * text), whether the code is a cubin, and the architecture; false when the file is there but is not
   * such an entry; null when it cannot be read whole. With `touchAfterMs`, an entry last modified longer
   * ago than that is given the current time (best effort).
   */
  kernelsReadEntry(
    path: string,
    key: string,
    touchAfterMs?: number,
  ): [code: Buffer, meta: string, cubin: boolean, arch: number] | false | null;
  /**
   * The kernel `name` of `library` on `device`; `layout` holds [size, kind] per parameter (kind 0
   * scalar, 1 pointer read, 2 pointer written). Refuses a layout the compiled kernel contradicts.
   * Writes into `out` (10 + one per parameter long): [bytes (the packed parameters' size),
   * paramsChecked (1 when the runtime reported the compiled parameters and so checked the layout),
   * maxThreadsPerBlock, sharedSizeBytes, maxDynamicSharedSizeBytes, constSizeBytes, localSizeBytes,
   * numRegs, ptxVersion, binaryVersion, then each parameter's offset in the packed buffer].
   */
  kernelsGetKernel(
    library: LibraryHandle,
    device: number,
    name: string,
    displayName: string,
    layout: Int32Array,
    paramNames: string[],
    out: Float64Array,
  ): KernelHandle;
  /**
   * Queues the kernel on its device's library stream: config [gx, gy, gz, bx, by, bz, sharedMem], the
   * scalars packed in `params` at the kernel's offsets, one array (or null) per pointer parameter.
   */
  kernelsLaunch(
    kernel: KernelHandle,
    config: Uint32Array,
    params: Uint8Array,
    ...arrays: (BufferHandle | null)[]
  ): void;
  /** What compiling for and launching on `device` needs, from single attribute queries. */
  kernelsDeviceInfo(device: number): NativeKernelDeviceInfo;
  /** Whether device `a` can access device `b`'s memory. */
  peerCanAccess(a: number, b: number): boolean;
  /** Enables peer access between `a` and `b`, both directions; idempotent. */
  peerEnable(a: number, b: number): void;
  /** Asynchronous copy of `count` elements between any two devices, direct or staged through the host. */
  peerCopy(
    dst: BufferHandle,
    src: BufferHandle,
    dstOffset: number,
    srcOffset: number,
    count: number,
    viaHost: boolean,
  ): void;
  /**
   * Test-only fault injection (not exported by lib/): 0 launches a kernel with an invalid
   * configuration (a recoverable CudaError), 1 a kernel writing through a null pointer (a sticky
   * cudaErrorIllegalAddress: the process's CUDA context is lost; use it in a child process only).
   * Absent from release builds (`npm run prebuild`), which carry no test-only code.
   */
  debugFault?(kind: 0 | 1, device?: number): void;
  /** Test-only: the calling thread's current CUDA device (null without a driver); release builds lack it. */
  debugCurrentDevice?(): number | null;
  /**
   * Test-only: the host side of a large transfer, `src` copied into `dst` (Uint8Arrays of one length)
   * in `parts` page-aligned pieces on threads of their own (0: the count the library would use, which
   * CK_HOST_COPY_THREADS can force). Returns the part count. Needs no GPU.
   */
  debugHostCopy?(dst: Uint8Array, src: Uint8Array, parts: number): number;
  /**
   * Test-only: every later cuBLAS call (ata's cublas and cublas-syrk, gemm's cublas, mlp's cublas)
   * feeds K in chunks of at most `rows` (0: back to each caller's own limit, at most 2^30), so the
   * suites run the chunked paths at small sizes. Returns the number of chunk calls made since the
   * hook was last called. Needs no GPU.
   */
  debugCublasKChunk?(rows: number): number;
  /**
   * Test-only: every later gemm `fast` launch cuts k into `pieces` pieces (split-K; 0: back to its own
   * plan, which splits only a C of at most one tile per two SMs), so the suites run the split path at
   * small sizes. Pieces are whole slabs of 16 with none empty, so the count can come out lower (6 on
   * 10 slabs gives 5), and a full device runs one. Returns how many pieces the last `fast` launch
   * since the hook was last called used (0: none ran). Needs no GPU.
   */
  debugGemmSplits?(pieces: number): number;
  /**
   * Test-only: kernelsLaunch's launch and a cudaDeviceSynchronize, `reps` times in C++, each timed on
   * the host's clock (µs): the floor under a launch + synchronize() from JavaScript, in this process.
   */
  debugKernelLaunchLoop?(
    reps: number,
    kernel: KernelHandle,
    config: Uint32Array,
    params: Uint8Array,
    ...arrays: (BufferHandle | null)[]
  ): Float64Array;
  /** Test-only: keeps the device's library stream busy until debugReleaseStream() or the timeout. */
  debugHoldStream?(device: number, timeoutMs: number): void;
  debugReleaseStream?(): void;
  /** Test-only: whether the library stream of `device` has unfinished work. */
  debugStreamBusy?(device: number): boolean;
  /**
   * Test-only: fails the device's pending stream-ordered uploads as a device failure would (their
   * promises reject, the stream's waits are released); later large uploads stage on the calling thread.
   */
  debugFailStagedUploads?(device: number): void;
}
