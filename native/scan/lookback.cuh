// The decoupled look-back (Merrill and Garland's single-pass scan): the per-tile status words, the
// walk over a tile's predecessors, and the look-back tile kernel with its launcher template. The
// shipped shape is instantiated in 3_decoupled_lookback.cu; bench/dev/scan/fast_variants.cu
// instantiates the other shapes the tuning sweeps timed.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/pool.h"
#include "scan/tile.cuh"

namespace ck {
namespace scan {
namespace detail {

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

// The look-back's workspace for one launch: a tile counter in its own 16 bytes, then the tiles'
// states, all zero ("no tile taken, every state invalid"), from the stream-ordered pool. Calls
// `launch(states, counter)` (which launches and returns cudaGetLastError()) and frees the
// workspace behind it on the same stream.
template <class T, class Launch>
cudaError_t withLookbackState(int64_t numTiles, cudaStream_t stream, Launch&& launch) {
  const size_t wsBytes = 16 + TileStatus<T>::bytes(numTiles);
  char* ws = nullptr;
  cudaError_t err = poolMalloc(&ws, wsBytes, stream);
  if (err != cudaSuccess) return err;
  err = cudaMemsetAsync(ws, 0, wsBytes, stream);
  if (err == cudaSuccess)
    err = launch(TileStatus<T>::at(ws + 16, numTiles), reinterpret_cast<unsigned long long*>(ws));
  const cudaError_t freeErr = poolFree(ws, stream);
  return err != cudaSuccess ? err : freeErr;
}

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

  return withLookbackState<T>(numTiles, stream, [&](TileStatus<T> status, unsigned long long* counter) {
    kernel<<<grid, THREADS, 0, stream>>>(in, out, static_cast<int64_t>(n), al.pre, al.vec, inclusive,
                                         numTiles, status, counter);
    return cudaGetLastError();
  });
}

// The shape (threads, bytes per thread, min-blocks hint, persistent grid, backoff): 128 threads x
// 256 bytes (64 items of 4 bytes, 32 doubles), one tile per block, was the fastest shape at every
// dtype and size from 2^24 up on the H200 (bench/dev/scan/NOTES.md, run 3) and no other shape beat
// it on the H100. It needs 96 registers and 34.9 KB of static shared memory a block: 5 blocks (160 KB
// of tile data) per Hopper SM, fewer on sm_75/86/89. The other shapes timed are in
// bench/dev/scan/fast_variants.cu. Step 3 (`lookback`) ships it, and step 4 falls back to it.
template <class T>
cudaError_t shippedLookbackScan(const T* in, T* out, size_t n, bool inclusive, cudaStream_t stream) {
  return lookbackScan<T, 128, 256, 4, false, true>(in, out, n, inclusive, stream);
}

}  // namespace detail
}  // namespace scan
}  // namespace ck
