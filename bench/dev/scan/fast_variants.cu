// The look-back shapes and the shared-memory-staged kernel that the H100/H200 tuning sweeps timed
// (bench/dev/scan/NOTES.md), for scan_harness.cu only: the addon ships two (native/scan/
// 3_decoupled_lookback.cu and 4_persistent_lookback.cu). Build: see run_gpu.sh.
#include <cstdint>

#include "scan/lookback.cuh"
#include "scan/persistent.cuh"
#include "scan/scan.h"

namespace ck {
namespace scan {
namespace detail {

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
// kernel, and the early look-back warp slower still, so launchFast does not use it; it stays here, in
// the tuning sweep, as the record of what was tried.
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
  if (n == 0) return cudaSuccess;
  const Alignment al = alignmentOf<T>(in, out);
  const int64_t numTiles = ceilDiv(static_cast<int64_t>(n) + al.pre, S::kItems);
  if (numTiles > INT_MAX) return cudaErrorInvalidValue;
  auto kernel = scan_lookback_staged_kernel<T, THREADS, kItems, MIN_BLOCKS, FLAGS>;
  // The whole unified L1/shared array as shared memory: the tiles per SM are what it holds.
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared);
  if (err != cudaSuccess) return err;
  return withLookbackState<T>(numTiles, stream, [&](TileStatus<T> status, unsigned long long* counter) {
    constexpr int kBlock = THREADS + ((FLAGS & kStagedLookbackWarp) ? 32 : 0);
    kernel<<<static_cast<unsigned>(numTiles), kBlock, 0, stream>>>(in, out, static_cast<int64_t>(n), al.pre, al.vec,
                                                                   inclusive, numTiles, status, counter);
    return cudaGetLastError();
  });
}

// Look-back shapes (threads, bytes per thread, min-blocks hint, persistent grid, backoff, streaming
// loads/stores, tiles in block order), staged ones and persistent ones (persistent.cuh: tile bytes,
// stages, scan warps, flags). Variant 0 is step 3's shape (`lookback`, 3_decoupled_lookback.cu) and
// variant 25 the persistent shape `fast` runs from 16 MiB up (4_persistent_lookback.cu).
template <class T>
struct FastVariants {
  static cudaError_t run(int variant, const T* i, T* o, size_t n, bool inc, cudaStream_t s) {
    switch (variant) {
      case 0: return lookbackScan<T, 128, 256, 4, false, true>(i, o, n, inc, s);
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
      // Persistent, several tiles in flight per block (persistent.cuh): tile bytes, stages, scan warps.
      case 14: return persistentScan<T, 32768, 6, 4>(i, o, n, inc, s);
      case 15: return persistentScan<T, 32768, 4, 4>(i, o, n, inc, s);
      case 16: return persistentScan<T, 49152, 4, 4>(i, o, n, inc, s);
      case 17: return persistentScan<T, 16384, 6, 4>(i, o, n, inc, s);
      case 18: return persistentScan<T, 32768, 3, 4>(i, o, n, inc, s);
      case 19: return persistentScan<T, 32768, 2, 4>(i, o, n, inc, s);
      case 20: return persistentScan<T, 32768, 6, 8>(i, o, n, inc, s);
      case 21: return persistentScan<T, 32768, 6, 4, kPersistEvictFirst>(i, o, n, inc, s);
      case 22: return persistentScan<T, 32768, 6, 4, kPersistStaticOrder>(i, o, n, inc, s);
      case 23: return persistentScan<T, 16384, 12, 4>(i, o, n, inc, s);
      case 24: return persistentScan<T, 32768, 6, 4, kPersistNoLookback>(i, o, n, inc, s);
      case 25: return persistentScan<T, 32768, 6, 8, kPersistEvictFirst>(i, o, n, inc, s);
      case 26: return persistentScan<T, 32768, 7, 8, kPersistEvictFirst>(i, o, n, inc, s);
      case 27: return persistentScan<T, 16384, 6, 8, kPersistEvictFirst>(i, o, n, inc, s);
#ifdef CK_SCAN_SELFTEST
      case 28: return persistentScan<T, 32768, 6, 8, kPersistEvictFirst | kPersistBrokenPrefix>(i, o, n, inc, s);
#endif
    }
    return cudaErrorInvalidValue;
  }
};
// "diag" variants give wrong results on purpose (timing bounds only); the harness skips their checks.
#ifdef CK_SCAN_SELFTEST
constexpr int kFastVariants = 29;  // + a deliberately racy shape the checks and racecheck must catch
#else
constexpr int kFastVariants = 28;
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
                                         "160x256B stream",
                                         "P32Kx6w4",
                                         "P32Kx4w4",
                                         "P48Kx4w4",
                                         "P16Kx6w4",
                                         "P32Kx3w4",
                                         "P32Kx2w4",
                                         "P32Kx6w8",
                                         "P32Kx6w4 evictfirst",
                                         "P32Kx6w4 static",
                                         "P16Kx12w4",
                                         "P32Kx6w4 nolookback diag",
                                         "P32Kx6w8 evictfirst",
                                         "P32Kx7w8 evictfirst",
                                         "P16Kx6w8 evictfirst",
                                         "SELFTEST racy prefix"};
template <class T>
struct VariantRunner {
  static cudaError_t run(const T* i, T* o, int variant, size_t n, bool inc, cudaStream_t s) {
    return FastVariants<T>::run(variant, i, o, n, inc, s);
  }
};

// The harness's entry points (declared in scan_harness.cu).
int fastVariantCount() {
  return kFastVariants;
}
const char* fastVariantName(int v) {
  return v >= 0 && v < kFastVariants ? kFastVariantNames[v] : "?";
}
cudaError_t launchFastVariant(int variant, const void* in, void* out, Dtype dtype, size_t n, bool inclusive,
                              cudaStream_t stream) {
  return dispatchScan<VariantRunner>(dtype, in, out, variant, n, inclusive, stream);
}

}  // namespace detail
}  // namespace scan
}  // namespace ck
