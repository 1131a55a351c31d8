// Prefix scans (one-block warp scan, three-kernel tile scan, CUB, single-pass decoupled look-back)
// and reductions. See scan.h for the contract and NOTES.md for the measurements behind the choices.
#include <climits>
#include <cmath>
#include <cstdint>
#include <cub/cub.cuh>

#include "core/block_reduce.cuh"
#include "core/math.h"
#include "core/pool.h"
#include "scan.h"

namespace ck {
namespace scan {
namespace detail {

constexpr unsigned kFullMask = 0xffffffffu;

// ---------------------------------------------------------------------------------------------
// 16-byte vectors. Typed vector types (rather than a uint4 reinterpreted per element) keep the
// element accesses free of type punning.

template <class T>
struct Vec16;
template <>
struct Vec16<float> {
  using type = float4;
};
template <>
struct Vec16<uint32_t> {
  using type = uint4;
};
template <>
struct Vec16<int32_t> {
  using type = int4;
};
template <>
struct Vec16<double> {
  using type = double2;
};

__device__ __forceinline__ void splitVec(const float4& v, float* a) {
  a[0] = v.x;
  a[1] = v.y;
  a[2] = v.z;
  a[3] = v.w;
}
__device__ __forceinline__ void splitVec(const uint4& v, uint32_t* a) {
  a[0] = v.x;
  a[1] = v.y;
  a[2] = v.z;
  a[3] = v.w;
}
__device__ __forceinline__ void splitVec(const int4& v, int32_t* a) {
  a[0] = v.x;
  a[1] = v.y;
  a[2] = v.z;
  a[3] = v.w;
}
__device__ __forceinline__ void splitVec(const double2& v, double* a) {
  a[0] = v.x;
  a[1] = v.y;
}
__device__ __forceinline__ float4 joinVec(const float* a) {
  return make_float4(a[0], a[1], a[2], a[3]);
}
__device__ __forceinline__ uint4 joinVec(const uint32_t* a) {
  return make_uint4(a[0], a[1], a[2], a[3]);
}
__device__ __forceinline__ double2 joinVec(const double* a) {
  return make_double2(a[0], a[1]);
}

// Where the 16-byte grid falls for a pair of pointers. Tiles are laid on a "virtual" index that
// starts `pre` elements before `in`, at the 16-byte boundary below it, so that every tile but the
// first and the last starts on a 16-byte boundary in both arrays. That needs in and out to sit at
// the same offset modulo 16; otherwise every tile takes the scalar path.
struct Alignment {
  int64_t pre = 0;
  bool vec = false;
};

template <class T>
Alignment alignmentOf(const void* in, const void* out) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(in), b = reinterpret_cast<uintptr_t>(out);
  Alignment al;
  if (a % sizeof(T) == 0 && b % sizeof(T) == 0 && a % 16 == b % 16) {
    al.vec = true;
    al.pre = static_cast<int64_t>((a % 16) / sizeof(T));
  }
  return al;
}

// ---------------------------------------------------------------------------------------------
// Tile machinery shared by the three-kernel and the look-back scans.
//
// A tile is THREADS * ITEMS consecutive elements; warp w owns the 32 * ITEMS elements starting at
// w * 32 * ITEMS, and lane l of it the ITEMS consecutive elements starting at l * ITEMS (the serial
// scan in registers needs consecutive items per thread). Global memory is read and written
// warp-striped (lane l touches vector l, l + 32, ...) so every instruction covers 512 contiguous
// bytes, and the transposition between the two layouts goes through a per-warp shared buffer, so
// it needs only __syncwarp, never a block barrier.

template <class T, int THREADS, int ITEMS>
struct TileShape {
  static constexpr int kWarps = THREADS / 32;
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  static constexpr int kVecsPerThread = ITEMS / kVec;
  // One 16-byte vector of padding per lane row: with a row pitch of ITEMS + kVec elements, the 8
  // lanes of a quarter-warp reading their rows as vectors hit 8 distinct 4-bank groups.
  static constexpr int kRow = ITEMS + kVec;
  static constexpr int kWarpItems = 32 * ITEMS;
  static constexpr int kWarpBuffer = 32 * kRow;
  static constexpr int64_t kItems = static_cast<int64_t>(THREADS) * ITEMS;
  static_assert(THREADS % 32 == 0, "whole warps");
  static_assert(ITEMS % kVec == 0, "items per thread must fill whole 16-byte vectors");
  using V = typename Vec16<T>::type;
};

// Loads the warp's 32 * ITEMS elements whose virtual positions start at `seg` into x[], lane l
// getting items l * ITEMS ... Positions outside [pre, end) read as zero (the sum's identity), so
// partial and unaligned tiles need no other special case. `vec`: the whole warp segment lies
// inside the array and is 16-byte aligned in `in`.
template <class T, int THREADS, int ITEMS, bool STREAM = false>
__device__ __forceinline__ void loadWarpItems(const T* __restrict__ in, int64_t seg, int64_t pre, int64_t end,
                                              bool vec, T* sw, int lane, T (&x)[ITEMS]) {
  using S = TileShape<T, THREADS, ITEMS>;
  using V = typename S::V;
  if (vec) {
    const V* src = reinterpret_cast<const V*>(in + (seg - pre));
    V v[S::kVecsPerThread];
#pragma unroll
    for (int j = 0; j < S::kVecsPerThread; ++j)  // all loads in flight first
      v[j] = STREAM ? __ldcs(src + j * 32 + lane) : src[j * 32 + lane];
#pragma unroll
    for (int j = 0; j < S::kVecsPerThread; ++j) {
      const int k = j * 32 + lane;
      *reinterpret_cast<V*>(sw + (k / S::kVecsPerThread) * S::kRow + (k % S::kVecsPerThread) * S::kVec) =
          v[j];
    }
  } else {
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int e = j * 32 + lane;
      const int64_t p = seg + e;
      sw[(e / ITEMS) * S::kRow + e % ITEMS] = (p >= pre && p < end) ? in[p - pre] : T(0);
    }
  }
  __syncwarp();
#pragma unroll
  for (int q = 0; q < S::kVecsPerThread; ++q)
    splitVec(*reinterpret_cast<const V*>(sw + lane * S::kRow + q * S::kVec), &x[q * S::kVec]);
  __syncwarp();  // the store rewrites this buffer
}

// The inverse of loadWarpItems: y[] (lane-consecutive) to global, positions outside [pre, end)
// skipped.
template <class T, int THREADS, int ITEMS, bool STREAM = false>
__device__ __forceinline__ void storeWarpItems(T* __restrict__ out, int64_t seg, int64_t pre, int64_t end,
                                               bool vec, T* sw, int lane, const T (&y)[ITEMS]) {
  using S = TileShape<T, THREADS, ITEMS>;
  using V = typename S::V;
#pragma unroll
  for (int q = 0; q < S::kVecsPerThread; ++q)
    *reinterpret_cast<V*>(sw + lane * S::kRow + q * S::kVec) = joinVec(&y[q * S::kVec]);
  __syncwarp();
  if (vec) {
    V* dst = reinterpret_cast<V*>(out + (seg - pre));
#pragma unroll
    for (int j = 0; j < S::kVecsPerThread; ++j) {
      const int k = j * 32 + lane;
      const V v = *reinterpret_cast<const V*>(sw + (k / S::kVecsPerThread) * S::kRow +
                                              (k % S::kVecsPerThread) * S::kVec);
      if (STREAM)
        __stcs(dst + j * 32 + lane, v);
      else
        dst[j * 32 + lane] = v;
    }
  } else {
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int e = j * 32 + lane;
      const int64_t p = seg + e;
      if (p >= pre && p < end) out[p - pre] = sw[(e / ITEMS) * S::kRow + e % ITEMS];
    }
  }
  __syncwarp();  // the next tile's load rewrites this buffer
}

template <class T>
__device__ __forceinline__ T warpInclusiveScan(T v, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const T up = __shfl_up_sync(kFullMask, v, d);
    if (lane >= d) v = up + v;
  }
  return v;
}

// Per-thread and per-warp part of a tile scan: the thread's total, its exclusive prefix inside
// the warp, and (from lane 31) the warp's total into warpTotals[warp].
template <class T, int ITEMS>
__device__ __forceinline__ T threadExclusiveInWarp(const T (&x)[ITEMS], int lane, int warp, T* warpTotals) {
  T total = x[0];
#pragma unroll
  for (int i = 1; i < ITEMS; ++i) total += x[i];
  const T inc = warpInclusiveScan(total, lane);
  if (lane == 31) warpTotals[warp] = inc;
  // Shifting the inclusive scan by one lane (rather than subtracting the thread's total) keeps
  // float results free of a cancellation error.
  const T exc = __shfl_up_sync(kFullMask, inc, 1);
  return lane == 0 ? T(0) : exc;
}

// Block totals after the barrier that follows threadExclusiveInWarp: the sum of the warps before
// `warp`, and the whole tile's sum. Every thread reads the few warp totals itself (broadcast reads)
// instead of one warp scanning them and a second barrier publishing the result.
template <class T, int WARPS>
__device__ __forceinline__ void warpPrefixAndTotal(const T* warpTotals, int warp, T& prefix, T& total) {
  prefix = T(0);
  total = T(0);
#pragma unroll
  for (int w = 0; w < WARPS; ++w) {
    const T v = warpTotals[w];
    if (w < warp) prefix += v;
    total += v;
  }
}

// x[] becomes its inclusive or exclusive scan starting from `running`. Exclusive output is the
// running sum before each item: the "shift by one" happens here, inside the thread, so out[0] = 0
// comes from tile 0's zero prefix and no element crosses a tile boundary.
template <class T, int ITEMS>
__device__ __forceinline__ void applyScan(T (&x)[ITEMS], T running, bool inclusive) {
  if (inclusive) {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      running += x[i];
      x[i] = running;
    }
  } else {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const T v = x[i];
      x[i] = running;
      running += v;
    }
  }
}

template <class T, int THREADS, int ITEMS>
struct TileSmem {
  using S = TileShape<T, THREADS, ITEMS>;
  alignas(16) T trans[S::kWarps][S::kWarpBuffer];
  T warpTotals[S::kWarps];
  T prefix;
  T aggregate;
  long long tile[2];
};

// ---------------------------------------------------------------------------------------------
// Decoupled look-back state.
//
// Each tile publishes its aggregate (sum of its own items) as soon as it knows it, then its
// inclusive prefix (sum of everything up to its end) once it has found its exclusive prefix.
// A reader needs the flag and the value to be one consistent pair.

constexpr unsigned kFlagInvalid = 0, kFlagAggregate = 1, kFlagInclusive = 2;

__device__ __forceinline__ unsigned long long loadRelaxed(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void storeRelaxed(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ uint32_t toBits(float v) {
  return __float_as_uint(v);
}
__device__ __forceinline__ uint32_t toBits(uint32_t v) {
  return v;
}
template <class T>
__device__ __forceinline__ T fromBits(uint32_t b);
template <>
__device__ __forceinline__ float fromBits<float>(uint32_t b) {
  return __uint_as_float(b);
}
template <>
__device__ __forceinline__ uint32_t fromBits<uint32_t>(uint32_t b) {
  return b;
}

// 4-byte types: flag and value packed into one 64-bit word, written and read with single 64-bit
// accesses, so the pair can never be torn and no fence is needed.
template <class T>
struct PackedTileStatus {
  unsigned long long* words;

  static size_t bytes(int64_t tiles) { return static_cast<size_t>(tiles) * sizeof(unsigned long long); }
  static PackedTileStatus at(void* base, int64_t) { return {static_cast<unsigned long long*>(base)}; }

  __device__ __forceinline__ void publish(int64_t tile, unsigned flag, T v) const {
    storeRelaxed(words + tile, (static_cast<unsigned long long>(flag) << 32) | toBits(v));
  }
  template <bool BACKOFF>
  __device__ __forceinline__ void wait(int64_t tile, unsigned& flag, T& v) const {
    unsigned long long w = loadRelaxed(words + tile);
    for (unsigned ns = 16; static_cast<unsigned>(w >> 32) == kFlagInvalid; ns = ns < 512 ? 2 * ns : ns) {
      if (BACKOFF) __nanosleep(ns);
      w = loadRelaxed(words + tile);
    }
    flag = static_cast<unsigned>(w >> 32);
    v = fromBits<T>(static_cast<uint32_t>(w));
  }
};

// 8-byte types: a 128-bit status as two 64-bit words, each carrying the flag next to one 32-bit
// half of the value. Each word is written and read as a single 64-bit access; a reader accepts the
// pair only when both words carry the same valid flag. Every (word, flag) is written exactly once,
// so equal flags mean both halves belong to the same value, with no fence and no reliance on a
// 16-byte access being indivisible. (A first version used a flag word released after a value array
// and acquired before reading it: the release/acquire fences cost 0.70x CUB at 2^28; see NOTES.md.)
template <class T>
struct PairedTileStatus {
  unsigned long long* words;

  static size_t bytes(int64_t tiles) { return static_cast<size_t>(tiles) * 2 * sizeof(unsigned long long); }
  static PairedTileStatus at(void* base, int64_t) { return {static_cast<unsigned long long*>(base)}; }

  __device__ __forceinline__ void publish(int64_t tile, unsigned flag, T v) const {
    const unsigned long long bits = static_cast<unsigned long long>(__double_as_longlong(v));
    const unsigned long long f = static_cast<unsigned long long>(flag) << 32;
    storeRelaxed(words + 2 * tile, f | (bits & 0xffffffffull));
    storeRelaxed(words + 2 * tile + 1, f | (bits >> 32));
  }
  template <bool BACKOFF>
  __device__ __forceinline__ void wait(int64_t tile, unsigned& flag, T& v) const {
    unsigned long long lo = loadRelaxed(words + 2 * tile), hi = loadRelaxed(words + 2 * tile + 1);
    for (unsigned ns = 16; (lo >> 32) != (hi >> 32) || static_cast<unsigned>(lo >> 32) == kFlagInvalid;
         ns = ns < 512 ? 2 * ns : ns) {
      if (BACKOFF) __nanosleep(ns);
      lo = loadRelaxed(words + 2 * tile);
      hi = loadRelaxed(words + 2 * tile + 1);
    }
    flag = static_cast<unsigned>(lo >> 32);
    v = __longlong_as_double(static_cast<long long>((hi << 32) | (lo & 0xffffffffull)));
  }
};

template <class T>
using TileStatus = typename std::conditional<sizeof(T) == 4, PackedTileStatus<T>, PairedTileStatus<T>>::type;

// The walk alone: the exclusive prefix of `tile` (> 0) from its predecessors' published states,
// run by all 32 lanes of one warp; every lane gets the result.
template <class T, bool BACKOFF, class Status>
__device__ __forceinline__ T walkBack(const Status& status, int64_t tile, int lane) {
  T exclusive = T(0);
  for (int64_t newest = tile - 1;; newest -= 32) {
    const int64_t p = newest - (31 - lane);
    unsigned flag = kFlagInclusive;  // before the array: an inclusive prefix of zero
    T v = T(0);
    if (p >= 0) status.template wait<BACKOFF>(p, flag, v);
    const unsigned inclusiveLanes = __ballot_sync(kFullMask, flag == kFlagInclusive);
    if (inclusiveLanes) {
      const int stop = 31 - __clz(inclusiveLanes);  // nearest inclusive prefix; older lanes are covered by it
      exclusive += warpReduce<SumOp>(lane < stop ? T(0) : v);
      break;
    }
    exclusive += warpReduce<SumOp>(v);
  }
  return exclusive;
}

// Run by all 32 lanes of one warp. Publishes `aggregate`, walks back over the predecessors 32 at a
// time (lane 31 nearest) summing aggregates until the nearest published inclusive prefix, publishes
// this tile's inclusive prefix, and returns the exclusive prefix. A predecessor's state is awaited
// only until it is at least an aggregate, which every started tile publishes without waiting on
// anyone, so the wait is bounded by work already under way.
// BACKOFF: a polling lane that finds a predecessor not yet published sleeps (16 ns doubling to
// 512 ns) before polling again, so that spinning warps do not flood L2 with status reads.
template <class T, bool BACKOFF, class Status>
__device__ __forceinline__ T lookBack(const Status& status, int64_t tile, T aggregate, int lane) {
  if (tile == 0) {
    if (lane == 0) status.publish(0, kFlagInclusive, aggregate);
    return T(0);
  }
  if (lane == 0) status.publish(tile, kFlagAggregate, aggregate);
  const T exclusive = walkBack<T, BACKOFF>(status, tile, lane);
  if (lane == 0) status.publish(tile, kFlagInclusive, exclusive + aggregate);
  return exclusive;
}

// ---------------------------------------------------------------------------------------------
// fast: single-pass decoupled look-back.
//
// Tiles come from an atomic counter, taken when a block is ready to load them, so a block only ever
// waits on tiles already taken by running blocks: no deadlock however many blocks are resident, and
// no tile is held by a block that is still busy with another one. (A first version prefetched the
// next tile's number during the current tile; that parked a taken-but-unstarted tile in every
// block, every later look-back waited on it, and the whole grid ran in convoy: 0.3-0.6x CUB at
// 2^28, worse at 2^30. See NOTES.md.)
// PERSISTENT: a grid of resident blocks loops over tiles; otherwise one block per tile.

template <class T, int THREADS, int ITEMS, int MIN_BLOCKS, bool PERSISTENT, bool BACKOFF, bool STREAM,
          bool BLOCK_ORDER>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    scan_lookback_tiles_kernel(const T* in, T* out, int64_t n, int64_t pre, bool vecOk, bool inclusive,
                               int64_t numTiles, TileStatus<T> status, unsigned long long* tileCounter) {
  using S = TileShape<T, THREADS, ITEMS>;
  __shared__ TileSmem<T, THREADS, ITEMS> sm;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t end = n + pre;
  T* sw = sm.trans[warp];

  for (;;) {
    // Rewritten (persistent grid) only after the previous tile's last barrier, which every reader
    // of the old value has passed.
    int64_t tile;
    if (BLOCK_ORDER && !PERSISTENT) {
      tile = blockIdx.x;
    } else {
      if (threadIdx.x == 0) sm.tile[0] = static_cast<long long>(atomicAdd(tileCounter, 1ull));
      __syncthreads();
      tile = sm.tile[0];
    }
    if (tile >= numTiles) break;
    const int64_t tileStart = tile * S::kItems;
    const bool vec = vecOk && tileStart >= pre && tileStart + S::kItems <= end;
    const int64_t seg = tileStart + static_cast<int64_t>(warp) * S::kWarpItems;

    T x[ITEMS];
    loadWarpItems<T, THREADS, ITEMS, STREAM>(in, seg, pre, end, vec, sw, lane, x);
    const T threadPrefix = threadExclusiveInWarp(x, lane, warp, sm.warpTotals);
    __syncthreads();
    T warpPrefix, aggregate;
    warpPrefixAndTotal<T, S::kWarps>(sm.warpTotals, warp, warpPrefix, aggregate);
    if (warp == 0) {
      const T exclusive = lookBack<T, BACKOFF>(status, tile, aggregate, lane);
      if (lane == 0) sm.prefix = exclusive;
    }
    __syncthreads();
    applyScan(x, sm.prefix + warpPrefix + threadPrefix, inclusive);
    storeWarpItems<T, THREADS, ITEMS, STREAM>(out, seg, pre, end, vec, sw, lane, x);
    if (!PERSISTENT) break;
  }
}

// Shapes are counted in bytes per thread so that float64 tiles hold as many bytes as 4-byte ones.
template <class T, int THREADS, int BYTES_PER_THREAD, int MIN_BLOCKS, bool PERSISTENT, bool BACKOFF,
          bool STREAM = false, bool BLOCK_ORDER = false>
cudaError_t lookbackScan(const T* in, T* out, size_t n, bool inclusive, cudaStream_t stream) {
  constexpr int kItems = BYTES_PER_THREAD / static_cast<int>(sizeof(T));
  using S = TileShape<T, THREADS, kItems>;
  using Status = TileStatus<T>;
  if (n == 0) return cudaSuccess;
  const Alignment al = alignmentOf<T>(in, out);
  const int64_t numTiles = ceilDiv(static_cast<int64_t>(n) + al.pre, S::kItems);
  auto kernel =
      scan_lookback_tiles_kernel<T, THREADS, kItems, MIN_BLOCKS, PERSISTENT, BACKOFF, STREAM, BLOCK_ORDER>;

  cudaError_t err = cudaSuccess;
  int64_t blocks = numTiles;
  if (PERSISTENT) {
    int device = 0, sms = 0, perSm = 0;
    err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err == cudaSuccess) err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, THREADS, 0);
    if (err != cudaSuccess) return err;
    const int64_t resident = static_cast<int64_t>(sms) * (perSm > 0 ? perSm : 1);
    if (resident < blocks) blocks = resident;
  }
  if (blocks > INT_MAX) return cudaErrorInvalidValue;
  const unsigned grid = static_cast<unsigned>(blocks);

  // Counter first (its own 16 bytes), tile states after; all zero = "no tile taken, all invalid".
  const size_t wsBytes = 16 + Status::bytes(numTiles);
  char* ws = nullptr;
  err = poolMalloc(&ws, wsBytes, stream);
  if (err != cudaSuccess) return err;
  err = cudaMemsetAsync(ws, 0, wsBytes, stream);
  if (err == cudaSuccess) {
    kernel<<<grid, THREADS, 0, stream>>>(in, out, static_cast<int64_t>(n), al.pre, al.vec, inclusive,
                                         numTiles, Status::at(ws + 16, numTiles),
                                         reinterpret_cast<unsigned long long*>(ws));
    err = cudaGetLastError();
  }
  const cudaError_t freeErr = poolFree(ws, stream);
  return err != cudaSuccess ? err : freeErr;
}

// ---------------------------------------------------------------------------------------------
// fast, staged: the same look-back, with the tile held in shared memory instead of registers.
//
// Why: at 2^28 the register kernel spends most of a tile's life waiting (its loads, then the
// predecessors' states); the bytes an SM can keep in flight are the tiles it holds, and those were
// capped at 5 x 32 KB by 96 registers a thread, while the 35 KB transposition buffer sat idle during
// the wait. Here cp.async copies the warp-striped 16-byte vectors straight into the padded
// per-warp rows (no register round trip), and the scan reads each thread's row twice from shared
// memory (once for its total, once to write the prefixes back in place), so registers stay low and
// shared memory alone bounds the tiles per SM (6 x 32 KB at 256 B a thread, 7 x 28 KB at 224 B).
// Measured on the H100 (NOTES.md, "H100 tuning, second round"): 1-4 % SLOWER than the register
// kernel, and the early look-back warp slower still, so launchFast does not use it; it stays for the
// harness's tuning sweep (-DCK_TUNING_VARIANTS) as the record of what was tried.
// FLAGS: kStagedBlockOrder takes tile = blockIdx.x (as CUB does) instead of the atomic counter;
// kStagedEvictFirst marks the input's lines evict-first in L2; kStagedNoLookback (timing
// diagnostics only, wrong results) skips the look-back to bound what the look-back costs.

constexpr int kStagedBlockOrder = 1, kStagedEvictFirst = 2, kStagedNoLookback = 4, kStagedLookbackWarp = 8;

// Barrier `id` (1..15; 0 is __syncthreads) over the first `count` threads to arrive (a multiple of 32).
__device__ __forceinline__ void namedBarrier(int id, int count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}

__device__ __forceinline__ void cpAsync16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cpAsync16EvictFirst(void* smem, const void* gmem, unsigned long long policy) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(s), "l"(gmem), "l"(policy)
               : "memory");
}
__device__ __forceinline__ void cpAsyncWaitAll() {
  asm volatile("cp.async.commit_group;\n\tcp.async.wait_group 0;" ::: "memory");
}

template <class T, int THREADS, int ITEMS, int MIN_BLOCKS, int FLAGS>
__global__ void __launch_bounds__(THREADS + ((FLAGS & kStagedLookbackWarp) ? 32 : 0), MIN_BLOCKS)
    scan_lookback_staged_kernel(const T* in, T* out, int64_t n, int64_t pre, bool vecOk, bool inclusive,
                                int64_t numTiles, TileStatus<T> status, unsigned long long* tileCounter) {
  using S = TileShape<T, THREADS, ITEMS>;
  using V = typename S::V;
  __shared__ TileSmem<T, THREADS, ITEMS> sm;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t end = n + pre;
  T* sw = sm.trans[warp];

  int64_t tile;
  if (FLAGS & kStagedBlockOrder) {
    tile = blockIdx.x;
  } else {
    if (threadIdx.x == 0) sm.tile[0] = static_cast<long long>(atomicAdd(tileCounter, 1ull));
    __syncthreads();
    tile = sm.tile[0];
  }
  // kStagedLookbackWarp: an extra warp (the last) walks back over the predecessors from the start,
  // while the data warps' copies are in flight, instead of after the tile's own aggregate is known.
  // The data warps publish the aggregate themselves, so it never waits on the walk (a tile's
  // aggregate that waited on its own look-back would chain every tile to the one before).
  constexpr int kAll = THREADS + 32;
  if ((FLAGS & kStagedLookbackWarp) && warp == S::kWarps) {
    const T exclusive = tile == 0 ? T(0) : walkBack<T, true>(status, tile, lane);
    if (lane == 0) sm.prefix = exclusive;
    namedBarrier(2, kAll);  // the data warps have published the aggregate and left it in sm
    if (lane == 0) status.publish(tile, kFlagInclusive, exclusive + sm.aggregate);
    return;
  }
  const int64_t tileStart = tile * S::kItems;
  const bool vec = vecOk && tileStart >= pre && tileStart + S::kItems <= end;
  const int64_t seg = tileStart + static_cast<int64_t>(warp) * S::kWarpItems;

  // Stage the warp's segment: warp-striped 16-byte vectors (512 contiguous bytes an instruction)
  // into the padded rows, lane l's row holding its ITEMS consecutive elements.
  if (vec) {
    const V* src = reinterpret_cast<const V*>(in + (seg - pre));
    unsigned long long policy = 0;
    if (FLAGS & kStagedEvictFirst) asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#pragma unroll
    for (int j = 0; j < S::kVecsPerThread; ++j) {
      const int k = j * 32 + lane;
      T* dst = sw + (k / S::kVecsPerThread) * S::kRow + (k % S::kVecsPerThread) * S::kVec;
      if (FLAGS & kStagedEvictFirst)
        cpAsync16EvictFirst(dst, src + k, policy);
      else
        cpAsync16(dst, src + k);
    }
    cpAsyncWaitAll();
  } else {
#pragma unroll 4
    for (int j = 0; j < ITEMS; ++j) {
      const int e = j * 32 + lane;
      const int64_t p = seg + e;
      sw[(e / ITEMS) * S::kRow + e % ITEMS] = (p >= pre && p < end) ? in[p - pre] : T(0);
    }
  }
  __syncwarp();

  // Pass 1: the thread's total, one vector at a time (registers stay free for more blocks).
  T* row = sw + lane * S::kRow;
  T total = T(0);
#pragma unroll
  for (int q = 0; q < S::kVecsPerThread; ++q) {
    T e[S::kVec];
    splitVec(*reinterpret_cast<const V*>(row + q * S::kVec), e);
#pragma unroll
    for (int k = 0; k < S::kVec; ++k) total += e[k];
  }
  const T inc = warpInclusiveScan(total, lane);
  if (lane == 31) sm.warpTotals[warp] = inc;
  const T up = __shfl_up_sync(kFullMask, inc, 1);
  const T threadPrefix = lane == 0 ? T(0) : up;
  T warpPrefix, aggregate;
  if (FLAGS & kStagedLookbackWarp) {
    namedBarrier(1, THREADS);  // data warps only
    warpPrefixAndTotal<T, S::kWarps>(sm.warpTotals, warp, warpPrefix, aggregate);
    if (threadIdx.x == 0) {
      if (tile != 0) status.publish(tile, kFlagAggregate, aggregate);
      sm.aggregate = aggregate;
    }
    namedBarrier(2, kAll);  // the walk's prefix is in sm.prefix
  } else {
    __syncthreads();
    warpPrefixAndTotal<T, S::kWarps>(sm.warpTotals, warp, warpPrefix, aggregate);
    if (warp == 0) {
      T exclusive = T(0);
      if (!(FLAGS & kStagedNoLookback)) exclusive = lookBack<T, true>(status, tile, aggregate, lane);
      if (lane == 0) sm.prefix = exclusive;
    }
    __syncthreads();
  }

  // Pass 2: the prefixes written back in place, then the row layout goes out warp-striped.
  T running = sm.prefix + warpPrefix + threadPrefix;
#pragma unroll
  for (int q = 0; q < S::kVecsPerThread; ++q) {
    T e[S::kVec];
    splitVec(*reinterpret_cast<const V*>(row + q * S::kVec), e);
    if (inclusive) {
#pragma unroll
      for (int k = 0; k < S::kVec; ++k) e[k] = running += e[k];
    } else {
#pragma unroll
      for (int k = 0; k < S::kVec; ++k) {
        const T v = e[k];
        e[k] = running;
        running += v;
      }
    }
    *reinterpret_cast<V*>(row + q * S::kVec) = joinVec(e);
  }
  __syncwarp();
  if (vec) {
    V* dst = reinterpret_cast<V*>(out + (seg - pre));
#pragma unroll
    for (int j = 0; j < S::kVecsPerThread; ++j) {
      const int k = j * 32 + lane;
      __stcs(dst + k, *reinterpret_cast<const V*>(sw + (k / S::kVecsPerThread) * S::kRow +
                                                  (k % S::kVecsPerThread) * S::kVec));
    }
  } else {
#pragma unroll 4
    for (int j = 0; j < ITEMS; ++j) {
      const int e = j * 32 + lane;
      const int64_t p = seg + e;
      if (p >= pre && p < end) out[p - pre] = sw[(e / ITEMS) * S::kRow + e % ITEMS];
    }
  }
}

template <class T, int THREADS, int BYTES_PER_THREAD, int MIN_BLOCKS, int FLAGS>
cudaError_t stagedScan(const T* in, T* out, size_t n, bool inclusive, cudaStream_t stream) {
  constexpr int kItems = BYTES_PER_THREAD / static_cast<int>(sizeof(T));
  using S = TileShape<T, THREADS, kItems>;
  using Status = TileStatus<T>;
  if (n == 0) return cudaSuccess;
  const Alignment al = alignmentOf<T>(in, out);
  const int64_t numTiles = ceilDiv(static_cast<int64_t>(n) + al.pre, S::kItems);
  if (numTiles > INT_MAX) return cudaErrorInvalidValue;
  auto kernel = scan_lookback_staged_kernel<T, THREADS, kItems, MIN_BLOCKS, FLAGS>;
  // The whole unified L1/shared array as shared memory: the tiles per SM are what it holds.
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared);
  if (err != cudaSuccess) return err;
  const size_t wsBytes = 16 + Status::bytes(numTiles);
  char* ws = nullptr;
  err = poolMalloc(&ws, wsBytes, stream);
  if (err != cudaSuccess) return err;
  err = cudaMemsetAsync(ws, 0, wsBytes, stream);
  if (err == cudaSuccess) {
    constexpr int kBlock = THREADS + ((FLAGS & kStagedLookbackWarp) ? 32 : 0);
    kernel<<<static_cast<unsigned>(numTiles), kBlock, 0, stream>>>(
        in, out, static_cast<int64_t>(n), al.pre, al.vec, inclusive, numTiles, Status::at(ws + 16, numTiles),
        reinterpret_cast<unsigned long long*>(ws));
    err = cudaGetLastError();
  }
  const cudaError_t freeErr = poolFree(ws, stream);
  return err != cudaSuccess ? err : freeErr;
}

// ---------------------------------------------------------------------------------------------
// blocks: reduce, scan the tile sums, scan the tiles with their offsets.

constexpr int kBlocksThreads = 256;
constexpr int kBlocksBytesPerThread = 64;

template <class T, int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS)
    scan_tile_reduce_kernel(const T* in, int64_t n, int64_t pre, bool vecOk, T* tileSums) {
  using S = TileShape<T, THREADS, ITEMS>;
  __shared__ TileSmem<T, THREADS, ITEMS> sm;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t end = n + pre;
  const int64_t tileStart = static_cast<int64_t>(blockIdx.x) * S::kItems;
  const bool vec = vecOk && tileStart >= pre && tileStart + S::kItems <= end;
  T x[ITEMS];
  loadWarpItems<T, THREADS, ITEMS>(in, tileStart + static_cast<int64_t>(warp) * S::kWarpItems, pre, end, vec,
                                   sm.trans[warp], lane, x);
  T total = x[0];
#pragma unroll
  for (int i = 1; i < ITEMS; ++i) total += x[i];
  total = warpReduce<SumOp>(total);
  if (lane == 0) sm.warpTotals[warp] = total;
  __syncthreads();
  if (threadIdx.x == 0) {
    T sum = T(0);
    for (int w = 0; w < S::kWarps; ++w) sum += sm.warpTotals[w];
    tileSums[blockIdx.x] = sum;
  }
}

// tileOffsets == nullptr: a single tile (the top of the recursion).
template <class T, int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS)
    scan_tile_add_offset_kernel(const T* in, T* out, int64_t n, int64_t pre, bool vecOk, bool inclusive,
                                const T* tileOffsets) {
  using S = TileShape<T, THREADS, ITEMS>;
  __shared__ TileSmem<T, THREADS, ITEMS> sm;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t end = n + pre;
  const int64_t tileStart = static_cast<int64_t>(blockIdx.x) * S::kItems;
  const bool vec = vecOk && tileStart >= pre && tileStart + S::kItems <= end;
  const int64_t seg = tileStart + static_cast<int64_t>(warp) * S::kWarpItems;
  T x[ITEMS];
  loadWarpItems<T, THREADS, ITEMS>(in, seg, pre, end, vec, sm.trans[warp], lane, x);
  const T threadPrefix = threadExclusiveInWarp(x, lane, warp, sm.warpTotals);
  __syncthreads();
  T warpPrefix, total;
  warpPrefixAndTotal<T, S::kWarps>(sm.warpTotals, warp, warpPrefix, total);
  const T offset = tileOffsets ? tileOffsets[blockIdx.x] : T(0);
  applyScan(x, offset + warpPrefix + threadPrefix, inclusive);
  storeWarpItems<T, THREADS, ITEMS>(out, seg, pre, end, vec, sm.trans[warp], lane, x);
}

template <class T>
cudaError_t blocksScan(const T* in, T* out, size_t n, bool inclusive, cudaStream_t stream) {
  constexpr int kItems = kBlocksBytesPerThread / static_cast<int>(sizeof(T));
  using S = TileShape<T, kBlocksThreads, kItems>;
  if (n == 0) return cudaSuccess;
  const Alignment al = alignmentOf<T>(in, out);
  const int64_t numTiles = ceilDiv(static_cast<int64_t>(n) + al.pre, S::kItems);
  if (numTiles > INT_MAX) return cudaErrorInvalidValue;
  if (numTiles == 1) {
    scan_tile_add_offset_kernel<T, kBlocksThreads, kItems><<<1, kBlocksThreads, 0, stream>>>(
        in, out, static_cast<int64_t>(n), al.pre, al.vec, inclusive, nullptr);
    return cudaGetLastError();
  }
  T* sums = nullptr;
  cudaError_t err = poolMalloc(&sums, static_cast<size_t>(numTiles) * sizeof(T), stream);
  if (err != cudaSuccess) return err;
  scan_tile_reduce_kernel<T, kBlocksThreads, kItems>
      <<<static_cast<unsigned>(numTiles), kBlocksThreads, 0, stream>>>(in, static_cast<int64_t>(n), al.pre,
                                                                       al.vec, sums);
  err = cudaGetLastError();
  // Each level divides the count by the tile size (4096 or 2048), so the recursion is 2-3 deep.
  if (err == cudaSuccess) err = blocksScan<T>(sums, sums, static_cast<size_t>(numTiles), false, stream);
  if (err == cudaSuccess) {
    scan_tile_add_offset_kernel<T, kBlocksThreads, kItems>
        <<<static_cast<unsigned>(numTiles), kBlocksThreads, 0, stream>>>(in, out, static_cast<int64_t>(n),
                                                                         al.pre, al.vec, inclusive, sums);
    err = cudaGetLastError();
  }
  const cudaError_t freeErr = poolFree(sums, stream);
  return err != cudaSuccess ? err : freeErr;
}

// ---------------------------------------------------------------------------------------------
// warp: the report's algorithm, one block of 1024 threads walking the array.

constexpr int kWarpScanThreads = 1024;

// Up-sweep/down-sweep (Blelloch) exclusive scan across the 32 lanes, one value per lane, with
// shuffles in place of the shared array of the textbook version. `total` receives the warp's sum
// (lane 31 holds it at the end of the up-sweep, before it is cleared for the down-sweep).
template <class T>
__device__ __forceinline__ T warpBlellochExclusive(T v, int lane, T& total) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {  // up-sweep: right node of each 2d-pair += left node
    const T left = __shfl_up_sync(kFullMask, v, d);
    if ((lane & (2 * d - 1)) == 2 * d - 1) v = left + v;
  }
  total = __shfl_sync(kFullMask, v, 31);
  if (lane == 31) v = T(0);
#pragma unroll
  for (int d = 16; d >= 1; d >>= 1) {  // down-sweep: left <- right, right <- left + right
    const T left = __shfl_up_sync(kFullMask, v, d);
    const T right = __shfl_down_sync(kFullMask, v, d);
    if ((lane & (2 * d - 1)) == 2 * d - 1)
      v = left + v;
    else if ((lane & (2 * d - 1)) == d - 1)
      v = right;
  }
  return v;
}

template <class T>
__global__ void __launch_bounds__(kWarpScanThreads)
    scan_one_block_warp_sweep_kernel(const T* in, T* out, int64_t n, bool inclusive) {
  constexpr int kWarps = kWarpScanThreads / 32;
  // Double-buffered by step parity: a warp writing step s+2's totals has passed step s+1's barrier,
  // so every warp has finished reading step s's. One barrier per step instead of two.
  __shared__ T warpTotals[2][kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  T carry = T(0);  // sum of all earlier steps, kept identical in every thread
  int64_t i = threadIdx.x;
  T x = i < n ? in[i] : T(0);
  for (int step = 0; i - threadIdx.x < n; ++step, i += kWarpScanThreads) {
    // Prefetch the next step's element: the loop is otherwise one dependent load per step.
    const int64_t iNext = i + kWarpScanThreads;
    const T xNext = iNext < n ? in[iNext] : T(0);
    T warpTotal;
    const T inWarp = warpBlellochExclusive(x, lane, warpTotal);
    if (lane == 0) warpTotals[step & 1][warp] = warpTotal;
    __syncthreads();
    // Every warp scans the 32 warp totals itself, so no second barrier publishes them.
    T blockTotal;
    const T warpsBefore = warpBlellochExclusive(warpTotals[step & 1][lane], lane, blockTotal);
    const T warpPrefix = __shfl_sync(kFullMask, warpsBefore, warp);
    if (i < n) out[i] = carry + warpPrefix + inWarp + (inclusive ? x : T(0));
    carry += blockTotal;
    x = xNext;
  }
}

template <class T>
cudaError_t warpScan(const T* in, T* out, size_t n, bool inclusive, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  scan_one_block_warp_sweep_kernel<T>
      <<<1, kWarpScanThreads, 0, stream>>>(in, out, static_cast<int64_t>(n), inclusive);
  return cudaGetLastError();
}

// ---------------------------------------------------------------------------------------------
// cub

template <class T>
cudaError_t cubScan(const T* in, T* out, size_t n, bool inclusive, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const int64_t items = static_cast<int64_t>(n);  // 64-bit num_items: CUB picks 64-bit offsets
  size_t bytes = 0;
  cudaError_t err = inclusive ? cub::DeviceScan::InclusiveSum(nullptr, bytes, in, out, items, stream)
                              : cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, items, stream);
  if (err != cudaSuccess) return err;
  void* temp = nullptr;
  err = poolMalloc(&temp, bytes, stream);
  if (err != cudaSuccess) return err;
  err = inclusive ? cub::DeviceScan::InclusiveSum(temp, bytes, in, out, items, stream)
                  : cub::DeviceScan::ExclusiveSum(temp, bytes, in, out, items, stream);
  const cudaError_t freeErr = poolFree(temp, stream);
  return err != cudaSuccess ? err : freeErr;
}

// ---------------------------------------------------------------------------------------------
// reduce

__device__ __forceinline__ bool isNan(float v) {
  return v != v;
}
__device__ __forceinline__ bool isNan(double v) {
  return v != v;
}
__device__ __forceinline__ bool isNan(int32_t) {
  return false;
}
__device__ __forceinline__ bool isNan(uint32_t) {
  return false;
}

template <class T>
struct Limits;
template <>
struct Limits<float> {
  static __device__ float lowest() { return -INFINITY; }
  static __device__ float highest() { return INFINITY; }
};
template <>
struct Limits<double> {
  static __device__ double lowest() { return -INFINITY; }
  static __device__ double highest() { return INFINITY; }
};
template <>
struct Limits<int32_t> {
  static __device__ int32_t lowest() { return INT_MIN; }
  static __device__ int32_t highest() { return INT_MAX; }
};
template <>
struct Limits<uint32_t> {
  static __device__ uint32_t lowest() { return 0u; }
  static __device__ uint32_t highest() { return UINT_MAX; }
};

// Float sums in double (the contract); integer sums in uint32 so they wrap like the scan.
template <class T>
struct SumToDouble {
  using Acc = double;
  static __device__ Acc identity() { return 0.0; }
  static __device__ Acc lift(T v) { return static_cast<double>(v); }
  static __device__ Acc combine(Acc a, Acc b) { return a + b; }
  static __device__ double empty() { return 0.0; }
};
struct SumWrapped {
  using Acc = uint32_t;
  static __device__ Acc identity() { return 0u; }
  static __device__ Acc lift(uint32_t v) { return v; }
  static __device__ Acc combine(Acc a, Acc b) { return a + b; }
  static __device__ double empty() { return 0.0; }
};
// NaN wins (like Math.min): the first operand is kept when it is NaN, the second is returned when
// the comparison fails, which it does when the second is NaN.
template <class T>
struct MinOf {
  using Acc = T;
  static __device__ Acc identity() { return Limits<T>::highest(); }
  static __device__ Acc lift(T v) { return v; }
  static __device__ Acc combine(Acc a, Acc b) { return (isNan(a) || a < b) ? a : b; }
  static __device__ double empty() { return INFINITY; }
};
template <class T>
struct MaxOf {
  using Acc = T;
  static __device__ Acc identity() { return Limits<T>::lowest(); }
  static __device__ Acc lift(T v) { return v; }
  static __device__ Acc combine(Acc a, Acc b) { return (isNan(a) || a > b) ? a : b; }
  static __device__ double empty() { return -INFINITY; }
};

constexpr int kReduceThreads = 256;
constexpr int kReduceUnroll = 4;  // independent 16-byte loads in flight per thread

// Grid-stride over the 16-byte-aligned body; the few unaligned head and tail elements go to the
// first threads of the grid. One partial per block: no atomics (there is no atomicMin for double,
// and a second pass keeps the result deterministic).
template <class T, class Op>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_to_block_partials_kernel(const T* __restrict__ in, int64_t n, int64_t head,
                                    typename Op::Acc* partials) {
  using Acc = typename Op::Acc;
  using V = typename Vec16<T>::type;
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  __shared__ Acc shared[kReduceThreads / 32];
  const int64_t vectors = (n - head) / kVec;
  const V* body = reinterpret_cast<const V*>(in + head);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  Acc acc = Op::identity();
  int64_t v = g;
  for (; v + (kReduceUnroll - 1) * stride < vectors; v += kReduceUnroll * stride) {
    V r[kReduceUnroll];
#pragma unroll
    for (int u = 0; u < kReduceUnroll; ++u) r[u] = body[v + u * stride];
#pragma unroll
    for (int u = 0; u < kReduceUnroll; ++u) {
      T e[kVec];
      splitVec(r[u], e);
#pragma unroll
      for (int k = 0; k < kVec; ++k) acc = Op::combine(acc, Op::lift(e[k]));
    }
  }
  for (; v < vectors; v += stride) {
    T e[kVec];
    splitVec(body[v], e);
#pragma unroll
    for (int k = 0; k < kVec; ++k) acc = Op::combine(acc, Op::lift(e[k]));
  }
  if (g < head) acc = Op::combine(acc, Op::lift(in[g]));
  const int64_t tail = head + vectors * kVec;
  if (g < n - tail) acc = Op::combine(acc, Op::lift(in[tail + g]));
  acc = blockReduce<Op>(acc, shared, Op::identity());
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

template <class Acc>
__device__ __forceinline__ double accToDouble(Acc a, bool) {
  return static_cast<double>(a);
}
template <>
__device__ __forceinline__ double accToDouble<uint32_t>(uint32_t a, bool asSigned) {
  return asSigned ? static_cast<double>(static_cast<int32_t>(a)) : static_cast<double>(a);
}

template <class Op>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_partials_to_result_kernel(const typename Op::Acc* partials, int count, bool asSigned,
                                     double* result) {
  using Acc = typename Op::Acc;
  __shared__ Acc shared[kReduceThreads / 32];
  Acc acc = Op::identity();
  for (int i = threadIdx.x; i < count; i += blockDim.x) acc = Op::combine(acc, partials[i]);
  acc = blockReduce<Op>(acc, shared, Op::identity());
  if (threadIdx.x == 0) *result = count == 0 ? Op::empty() : accToDouble(acc, asSigned);
}

template <class T, class Op>
cudaError_t reduceWith(const T* in, size_t n, bool asSigned, double* result, cudaStream_t stream) {
  using Acc = typename Op::Acc;
  if (n == 0) {
    reduce_partials_to_result_kernel<Op><<<1, kReduceThreads, 0, stream>>>(nullptr, 0, asSigned, result);
    return cudaGetLastError();
  }
  constexpr int64_t kVec = 16 / sizeof(T);
  const uintptr_t addr = reinterpret_cast<uintptr_t>(in);
  int64_t head = static_cast<int64_t>(((16 - addr % 16) % 16) / sizeof(T));
  if (addr % sizeof(T) != 0) return cudaErrorMisalignedAddress;
  if (head > static_cast<int64_t>(n)) head = static_cast<int64_t>(n);
  const int64_t vectors = (static_cast<int64_t>(n) - head) / kVec;

  int device = 0, sms = 0, perSm = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess)
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, reduce_to_block_partials_kernel<T, Op>,
                                                        kReduceThreads, 0);
  if (err != cudaSuccess) return err;
  // Enough blocks to fill the device once; fewer when there is little work. At least one block,
  // which also covers the head and tail (at most 2 * kVec - 2 elements).
  const int64_t wanted = ceilDiv(vectors > 0 ? vectors : 1, kReduceThreads);
  const int64_t cap = static_cast<int64_t>(sms) * (perSm > 0 ? perSm : 1);
  const int blocks = static_cast<int>(wanted < cap ? wanted : cap);

  Acc* partials = nullptr;
  err = poolMalloc(&partials, static_cast<size_t>(blocks) * sizeof(Acc), stream);
  if (err != cudaSuccess) return err;
  reduce_to_block_partials_kernel<T, Op>
      <<<blocks, kReduceThreads, 0, stream>>>(in, static_cast<int64_t>(n), head, partials);
  err = cudaGetLastError();
  if (err == cudaSuccess) {
    reduce_partials_to_result_kernel<Op>
        <<<1, kReduceThreads, 0, stream>>>(partials, blocks, asSigned, result);
    err = cudaGetLastError();
  }
  const cudaError_t freeErr = poolFree(partials, stream);
  return err != cudaSuccess ? err : freeErr;
}

template <class T>
cudaError_t reduceMinMax(const T* in, size_t n, ReduceOp op, double* result, cudaStream_t stream) {
  return op == ReduceOp::Min ? reduceWith<T, MinOf<T>>(in, n, false, result, stream)
                             : reduceWith<T, MaxOf<T>>(in, n, false, result, stream);
}

// ---------------------------------------------------------------------------------------------
// dtype dispatch. int32 is scanned as uint32: same bits under two's complement, and unsigned
// overflow is defined.

template <template <class> class F, class... Args>
cudaError_t dispatchScan(Dtype dtype, const void* in, void* out, Args... args) {
  switch (dtype) {
    case Dtype::Float32:
      return F<float>::run(static_cast<const float*>(in), static_cast<float*>(out), args...);
    case Dtype::Float64:
      return F<double>::run(static_cast<const double*>(in), static_cast<double*>(out), args...);
    case Dtype::Int32:
    case Dtype::Uint32:
      return F<uint32_t>::run(static_cast<const uint32_t*>(in), static_cast<uint32_t*>(out), args...);
  }
  return cudaErrorInvalidValue;
}

template <class T>
struct WarpRunner {
  static cudaError_t run(const T* i, T* o, size_t n, bool inc, cudaStream_t s) {
    return warpScan(i, o, n, inc, s);
  }
};
template <class T>
struct BlocksRunner {
  static cudaError_t run(const T* i, T* o, size_t n, bool inc, cudaStream_t s) {
    return blocksScan(i, o, n, inc, s);
  }
};
template <class T>
struct CubRunner {
  static cudaError_t run(const T* i, T* o, size_t n, bool inc, cudaStream_t s) {
    return cubScan(i, o, n, inc, s);
  }
};

// Look-back shapes (threads, bytes per thread, min-blocks hint, persistent grid, backoff).
// launchFast uses variant 4 (kFastDefault): 128 threads x 256 bytes (64 items of 4 bytes, 32
// doubles) was the fastest shape at every dtype and size from 2^24 up on the H200 (NOTES.md, run 3);
// the others stay for the harness's tuning sweep. It needs 96 registers and 34.9 KB of static shared
// memory a block: 5 blocks (160 KB of tile data) per Hopper SM, fewer on sm_75/86/89.
// The harness (bench/dev/scan) compiles this file with -DCK_TUNING_VARIANTS; the addon carries only
// the shipped shape.
template <class T>
struct FastVariants {
  static cudaError_t run(int variant, const T* i, T* o, size_t n, bool inc, cudaStream_t s) {
    switch (variant) {
      case 0: return lookbackScan<T, 128, 256, 4, false, true>(i, o, n, inc, s);
#ifdef CK_TUNING_VARIANTS
      case 1: return lookbackScan<T, 128, 256, 4, false, true, true, true>(i, o, n, inc, s);
      case 2: return stagedScan<T, 128, 256, 6, 0>(i, o, n, inc, s);
      case 3: return stagedScan<T, 128, 256, 5, kStagedLookbackWarp>(i, o, n, inc, s);
      case 4: return stagedScan<T, 128, 256, 5, kStagedLookbackWarp | kStagedBlockOrder>(i, o, n, inc, s);
      case 5: return stagedScan<T, 128, 224, 5, kStagedLookbackWarp>(i, o, n, inc, s);
      case 6: return stagedScan<T, 128, 256, 6, kStagedLookbackWarp>(i, o, n, inc, s);
      case 7: return stagedScan<T, 64, 256, 9, kStagedLookbackWarp>(i, o, n, inc, s);
      case 8: return stagedScan<T, 128, 224, 6, kStagedLookbackWarp>(i, o, n, inc, s);
      case 9: return stagedScan<T, 128, 256, 5, kStagedLookbackWarp | kStagedEvictFirst>(i, o, n, inc, s);
      case 10: return stagedScan<T, 128, 256, 6, kStagedNoLookback>(i, o, n, inc, s);
      case 11: return lookbackScan<T, 160, 256, 4, false, true, true, true>(i, o, n, inc, s);
      case 12: return lookbackScan<T, 128, 320, 4, false, true, true, true>(i, o, n, inc, s);
      case 13: return lookbackScan<T, 160, 256, 4, false, true, true, false>(i, o, n, inc, s);
#endif
    }
    return cudaErrorInvalidValue;
  }
};
// "diag" variants give wrong results on purpose (timing bounds only); the harness skips their checks.
#ifdef CK_TUNING_VARIANTS
constexpr int kFastVariants = 14;
#else
constexpr int kFastVariants = 1;
#endif
const char* const kFastVariantNames[] = {"128x256B",
                                         "128x256B stream blockorder",
                                         "S128x256B",
                                         "S128x256B lbwarp",
                                         "S128x256B lbwarp blockorder",
                                         "S128x224B lbwarp",
                                         "S128x256B lbwarp 6blk",
                                         "S64x256B lbwarp",
                                         "S128x224B lbwarp 6blk",
                                         "S128x256B lbwarp evictfirst",
                                         "S128x256B nolookback diag",
                                         "160x256B stream blockorder",
                                         "128x320B stream blockorder",
                                         "160x256B stream"};
constexpr int kFastDefault = 0;

template <class T>
struct FastRunner {
  static cudaError_t run(const T* i, T* o, int variant, size_t n, bool inc, cudaStream_t s) {
    return FastVariants<T>::run(variant, i, o, n, inc, s);
  }
};

// Tuning hooks for scan_harness.cu (not part of the addon's interface).
int fastVariantCount() {
  return kFastVariants;
}
const char* fastVariantName(int v) {
  return v >= 0 && v < kFastVariants ? kFastVariantNames[v] : "?";
}
cudaError_t launchFastVariant(int variant, const void* in, void* out, Dtype dtype, size_t n, bool inclusive,
                              cudaStream_t stream) {
  return dispatchScan<FastRunner>(dtype, in, out, variant, n, inclusive, stream);
}

}  // namespace detail

cudaError_t launchWarp(const void* in, void* out, Dtype dtype, size_t n, bool inclusive,
                       cudaStream_t stream) {
  return detail::dispatchScan<detail::WarpRunner>(dtype, in, out, n, inclusive, stream);
}

cudaError_t launchBlocks(const void* in, void* out, Dtype dtype, size_t n, bool inclusive,
                         cudaStream_t stream) {
  return detail::dispatchScan<detail::BlocksRunner>(dtype, in, out, n, inclusive, stream);
}

cudaError_t launchCub(const void* in, void* out, Dtype dtype, size_t n, bool inclusive, cudaStream_t stream) {
  return detail::dispatchScan<detail::CubRunner>(dtype, in, out, n, inclusive, stream);
}

cudaError_t launchFast(const void* in, void* out, Dtype dtype, size_t n, bool inclusive,
                       cudaStream_t stream) {
  return detail::launchFastVariant(detail::kFastDefault, in, out, dtype, n, inclusive, stream);
}

cudaError_t launchReduce(const void* in, Dtype dtype, size_t n, ReduceOp op, double* result,
                         cudaStream_t stream) {
  using namespace detail;
  if (op != ReduceOp::Sum && op != ReduceOp::Min && op != ReduceOp::Max) return cudaErrorInvalidValue;
  switch (dtype) {
    case Dtype::Float32: {
      const float* p = static_cast<const float*>(in);
      return op == ReduceOp::Sum ? reduceWith<float, SumToDouble<float>>(p, n, false, result, stream)
                                 : reduceMinMax(p, n, op, result, stream);
    }
    case Dtype::Float64: {
      const double* p = static_cast<const double*>(in);
      return op == ReduceOp::Sum ? reduceWith<double, SumToDouble<double>>(p, n, false, result, stream)
                                 : reduceMinMax(p, n, op, result, stream);
    }
    case Dtype::Int32:
      if (op == ReduceOp::Sum)
        return reduceWith<uint32_t, SumWrapped>(static_cast<const uint32_t*>(in), n, true, result, stream);
      return reduceMinMax(static_cast<const int32_t*>(in), n, op, result, stream);
    case Dtype::Uint32:
      if (op == ReduceOp::Sum)
        return reduceWith<uint32_t, SumWrapped>(static_cast<const uint32_t*>(in), n, false, result, stream);
      return reduceMinMax(static_cast<const uint32_t*>(in), n, op, result, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace scan
}  // namespace ck
