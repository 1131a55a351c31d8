// The persistent decoupled look-back scan (sm_90): a grid of resident blocks, each keeping several
// tiles in flight in a ring of shared-memory stages, with one warp per job so that no tile's wait
// stalls the others. Instantiated by 4_persistent_lookback.cu (the shipped shape) and by
// bench/dev/scan/fast_variants.cu (the shapes the tuning timed).
//
// Why: in the one-tile-per-block kernel (lookback.cuh) a block issues its loads, then holds its SM
// slot while one warp walks back over its predecessors; on the H100 that walk cost ~14 % of copy
// (bench/dev/scan/NOTES.md). Here the loads of the next tiles are already in flight (Hopper bulk
// copies into the other stages) while a tile waits for its prefix, so the memory pipe stays full.
//
// Roles (warps of one block), per stage s = k % STAGES of the block's k-th tile:
//   warp 0, loader:    waits until stage s is empty, THEN takes the next tile number from the
//                      atomic counter and starts its loads at once (one cp.async.bulk, plus scalar
//                      loads and zero fill for the ragged ends), which land on mbarrier full[s].
//   warp 1, reducer:   waits full[s]; sums the tile (one sum per scan warp's chunk) and publishes
//                      the tile's aggregate (or, tile 0, its inclusive prefix) right away; arrives on
//                      reduced[s].
//   warp 2, look-back: waits reduced[s]; walks back over the predecessors' states (lookback.cuh),
//                      publishes the inclusive prefix, leaves the exclusive prefix in shared memory;
//                      arrives on prefixed[s].
//   warps 3.., scan:   wait prefixed[s]; each scans its chunk of the tile from shared memory, 16
//                      bytes a lane, writes the result with streaming stores, and arrives on empty[s].
//
// Why there is no convoy (the first persistent kernel's failure, NOTES.md): a tile number is taken
// only when a stage is free, and its loads start at once; the reducer waits on nothing but its own
// stages' loads, so every taken tile publishes its aggregate as soon as its bytes land, whatever the
// look-back of the block's earlier tiles is doing.
//
// Why it cannot deadlock: the counter hands out tile numbers in increasing order, only to running
// blocks, so when a look-back waits on tile p < t, p has been taken by a running block, its loads
// are in flight and that block's reducer publishes its aggregate without waiting on any other tile
// (above). So every wait is on work that finishes by itself; no assumption about which blocks are
// resident or in what order blocks start is needed.
#pragma once

#include <climits>
#include <cstdint>

#include "core/cp_async.h"
#include "core/mbarrier.cuh"
#include "core/pool.h"
#include "scan/lookback.cuh"
#include "scan/tile.cuh"

namespace ck {
namespace scan {
namespace detail {

__device__ __forceinline__ unsigned long long l2Policy(bool evictFirst) {
  unsigned long long p = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (evictFirst)
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  else
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p));
#endif
  return p;
}

// ---------------------------------------------------------------------------------------------

constexpr int kPersistEvictFirst = 1;  // bulk loads mark the input evict-first in L2
constexpr int kPersistNoLookback = 2;  // timing diagnostic only: prefix 0 for every tile (wrong results)
// Tiles in a static order (block b takes b, b + grid, ...) instead of the atomic counter: saves the
// counter's round trip, but a tile then waits on blocks that may not have started, so it is
// deadlock-free only while every block of the grid is resident at once. Measured, not shipped.
constexpr int kPersistStaticOrder = 4;
// Self-test of the checks only (bench/dev/scan, -DCK_SCAN_SELFTEST): the look-back warp announces the
// prefix before writing it, 1 µs late, so that racecheck and the harness's checks must both fail.
constexpr int kPersistBrokenPrefix = 8;

template <class T, int TILE_BYTES, int STAGES, int SCAN_WARPS>
struct PersistShape {
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  static constexpr int kItems = TILE_BYTES / static_cast<int>(sizeof(T));
  static constexpr int kSlice = 32 * kVec;            // items of one warp-wide 16-byte access (512 bytes)
  static constexpr int kChunk = kItems / SCAN_WARPS;  // items per scan warp
  static constexpr int kChunkSlices = kChunk / kSlice;
  static constexpr int kUnroll = kChunkSlices < 4 ? kChunkSlices : 4;  // slices a scan warp holds at once
  static constexpr int kThreads = (3 + SCAN_WARPS) * 32;
  static_assert(kChunk % kSlice == 0 && kChunkSlices % kUnroll == 0, "a scan warp's chunk is whole slices");
  using V = typename Vec16<T>::type;
};

// The block's bookkeeping, at the start of its dynamic shared memory; the stages follow at 128 B.
template <class T, int STAGES, int SCAN_WARPS>
struct PersistControl {
  unsigned long long full[STAGES];      // the tile's bytes have landed (loader warp: 32 arrivals + bytes)
  unsigned long long reduced[STAGES];   // its chunk sums and aggregate are in shared memory (1 arrival)
  unsigned long long prefixed[STAGES];  // its exclusive prefix is in shared memory (1 arrival)
  unsigned long long empty[STAGES];     // every scan lane has read the stage (32 * SCAN_WARPS arrivals)
  long long tile[STAGES];               // the tile in the stage; >= numTiles: no more tiles, stop
  T aggregate[STAGES];
  T prefix[STAGES];
  T chunkSum[STAGES][SCAN_WARPS];
};

template <class T, int TILE_BYTES, int STAGES, int SCAN_WARPS>
constexpr size_t persistSmemBytes() {
  return (sizeof(PersistControl<T, STAGES, SCAN_WARPS>) + 127) / 128 * 128 +
         static_cast<size_t>(STAGES) * TILE_BYTES;
}

// Warp-wide inclusive scans of U independent values at once (their shuffles interleave).
template <class T, int U>
__device__ __forceinline__ void warpInclusiveScanN(T (&v)[U], int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const T up = __shfl_up_sync(kFullMask, v[u], d);
      if (lane >= d) v[u] += up;
    }
  }
}

// Virtual positions (see Alignment in tile.cuh): position p is in[p - pre], valid for pre <= p < end;
// multiples of kVec are 16-byte boundaries of `in`.
template <class T, int TILE_BYTES, int STAGES, int SCAN_WARPS, int FLAGS>
__global__ void __launch_bounds__(PersistShape<T, TILE_BYTES, STAGES, SCAN_WARPS>::kThreads, 1)
    scan_persistent_kernel(const T* in, T* out, int64_t n, int64_t pre, bool vecOut, bool inclusive,
                           int64_t numTiles, TileStatus<T> status, unsigned long long* tileCounter) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using S = PersistShape<T, TILE_BYTES, STAGES, SCAN_WARPS>;
  using V = typename S::V;
  using Control = PersistControl<T, STAGES, SCAN_WARPS>;
  extern __shared__ __align__(128) unsigned char smemRaw[];
  Control& c = *reinterpret_cast<Control*>(smemRaw);
  T* const stages = reinterpret_cast<T*>(smemRaw + (sizeof(Control) + 127) / 128 * 128);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t end = n + pre;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbarInit(&c.full[s], 32);
      mbarInit(&c.reduced[s], 1);
      mbarInit(&c.prefixed[s], 1);
      mbarInit(&c.empty[s], 32 * SCAN_WARPS);
    }
    fenceBarrierInit();
  }
  __syncthreads();  // the only block-wide barrier: from here on the warps meet only on mbarriers

  if (warp == 0) {
    // ---- loader
    const unsigned long long policy = l2Policy(FLAGS & kPersistEvictFirst);
    for (int k = 0;; ++k) {
      const int s = k % STAGES;
      mbarWait(&c.empty[s], ((k / STAGES) & 1) ^ 1);
      long long tile = 0;
      if (FLAGS & kPersistStaticOrder) {
        tile = static_cast<long long>(blockIdx.x) + static_cast<long long>(k) * gridDim.x;
      } else {
        if (lane == 0) tile = static_cast<long long>(atomicAdd(tileCounter, 1ull));
        tile = __shfl_sync(kFullMask, tile, 0);
      }
      if (lane == 0) c.tile[s] = tile;
      if (tile >= numTiles) {  // no tiles left: pass the stop mark down the pipeline
        mbarArrive(&c.full[s]);
        break;
      }
      T* buf = stages + static_cast<int64_t>(s) * S::kItems;
      const int64_t t0 = tile * S::kItems, t1 = t0 + S::kItems;
      const int64_t lo = t0 > pre ? t0 : pre, hi = t1 < end ? t1 : end;  // valid positions of the tile
      // The bulk part: whole 16-byte vectors of valid positions; the rest (at most the ragged ends
      // of the array, so only the first and last tiles) is loaded element by element or zero-filled.
      const int64_t bulkLo = (lo + S::kVec - 1) / S::kVec * S::kVec;
      int64_t bulkHi = hi / S::kVec * S::kVec;
      if (bulkHi < bulkLo) bulkHi = bulkLo;
      for (int64_t p = t0 + lane; p < bulkLo; p += 32) buf[p - t0] = p >= lo ? in[p - pre] : T(0);
      for (int64_t p = bulkHi + lane; p < t1; p += 32) buf[p - t0] = p < hi ? in[p - pre] : T(0);
      if (lane == 0 && bulkHi > bulkLo) {
        const unsigned bytes = static_cast<unsigned>((bulkHi - bulkLo) * static_cast<int64_t>(sizeof(T)));
        fenceSharedForBulk();
        mbarArriveExpectBytes(&c.full[s], bytes);
        bulkLoad(buf + (bulkLo - t0), in + (bulkLo - pre), bytes, &c.full[s], policy);
      } else {
        mbarArrive(&c.full[s]);
      }
    }
  } else if (warp == 1) {
    // ---- reducer: one sum per scan warp's chunk, lanes reading whole slices (conflict-free).
    for (int k = 0;; ++k) {
      const int s = k % STAGES;
      mbarWait(&c.full[s], (k / STAGES) & 1);
      const long long tile = c.tile[s];
      if (tile >= numTiles) {
        if (lane == 0) mbarArrive(&c.reduced[s]);
        break;
      }
      const V* buf = reinterpret_cast<const V*>(stages + static_cast<int64_t>(s) * S::kItems);
      T part[SCAN_WARPS];
#pragma unroll
      for (int w = 0; w < SCAN_WARPS; ++w) {
        part[w] = T(0);
#pragma unroll 8
        for (int j = 0; j < S::kChunkSlices; ++j) {
          T e[S::kVec];
          splitVec(buf[(w * S::kChunkSlices + j) * 32 + lane], e);
#pragma unroll
          for (int i = 0; i < S::kVec; ++i) part[w] += e[i];
        }
      }
#pragma unroll
      for (int d = 16; d > 0; d >>= 1)
#pragma unroll
        for (int w = 0; w < SCAN_WARPS; ++w) part[w] += __shfl_xor_sync(kFullMask, part[w], d);
      if (lane == 0) {
        T total = T(0);
#pragma unroll
        for (int w = 0; w < SCAN_WARPS; ++w) {
          c.chunkSum[s][w] = part[w];
          total += part[w];
        }
        // Published before anything waits on this block's earlier tiles: see the top of the file.
        if (!(FLAGS & kPersistNoLookback))
          status.publish(tile, tile == 0 ? kFlagInclusive : kFlagAggregate, total);
        c.aggregate[s] = total;
        mbarArrive(&c.reduced[s]);
      }
    }
  } else if (warp == 2) {
    // ---- look-back
    for (int k = 0;; ++k) {
      const int s = k % STAGES;
      mbarWait(&c.reduced[s], (k / STAGES) & 1);
      const long long tile = c.tile[s];
      if (tile >= numTiles) {
        if (lane == 0) mbarArrive(&c.prefixed[s]);
        break;
      }
      T exclusive = T(0);
      if (tile > 0 && !(FLAGS & kPersistNoLookback)) {
        exclusive = walkBack<T, true>(status, tile, lane);
        if (lane == 0) status.publish(tile, kFlagInclusive, exclusive + c.aggregate[s]);
      }
      if (lane == 0) {
        if (FLAGS & kPersistBrokenPrefix) {
          mbarArrive(&c.prefixed[s]);
          __nanosleep(1000);
          c.prefix[s] = exclusive;
        } else {
          c.prefix[s] = exclusive;
          mbarArrive(&c.prefixed[s]);
        }
      }
    }
  } else {
    // ---- scan warps: warp 3 + w owns items [w * kChunk, (w + 1) * kChunk) of each tile. Lane l
    // holds the kVec consecutive items of vector l of each slice; a slice is scanned with one warp
    // scan of the lanes' sums, and a running sum carries from slice to slice.
    const int w = warp - 3;
    for (int k = 0;; ++k) {
      const int s = k % STAGES;
      mbarWait(&c.prefixed[s], (k / STAGES) & 1);
      const long long tile = c.tile[s];
      if (tile >= numTiles) break;
      T running = c.prefix[s];
      for (int i = 0; i < w; ++i) running += c.chunkSum[s][i];
      const V* buf = reinterpret_cast<const V*>(stages + static_cast<int64_t>(s) * S::kItems + w * S::kChunk);
      const int64_t chunkStart = tile * S::kItems + static_cast<int64_t>(w) * S::kChunk;
#pragma unroll 1
      for (int g = 0; g < S::kChunkSlices; g += S::kUnroll) {
        T e[S::kUnroll][S::kVec], sum[S::kUnroll];
#pragma unroll
        for (int u = 0; u < S::kUnroll; ++u) {
          splitVec(buf[(g + u) * 32 + lane], e[u]);
          sum[u] = e[u][0];
#pragma unroll
          for (int i = 1; i < S::kVec; ++i) sum[u] += e[u][i];
        }
        T inc[S::kUnroll];
#pragma unroll
        for (int u = 0; u < S::kUnroll; ++u) inc[u] = sum[u];
        warpInclusiveScanN<T, S::kUnroll>(inc, lane);
#pragma unroll
        for (int u = 0; u < S::kUnroll; ++u) {
          // The lane's exclusive prefix by shifting the inclusive scan one lane (no subtraction, so
          // float results carry no cancellation error), then the slice's items from the running sum.
          const T up = __shfl_up_sync(kFullMask, inc[u], 1);
          T r = running + (lane == 0 ? T(0) : up);
          running += __shfl_sync(kFullMask, inc[u], 31);
          if (inclusive) {
#pragma unroll
            for (int i = 0; i < S::kVec; ++i) e[u][i] = r += e[u][i];
          } else {
#pragma unroll
            for (int i = 0; i < S::kVec; ++i) {
              const T v = e[u][i];
              e[u][i] = r;
              r += v;
            }
          }
          const int64_t p = chunkStart + static_cast<int64_t>(g + u) * S::kSlice + lane * S::kVec;
          if (vecOut && p >= pre && p + S::kVec <= end) {
            __stcs(reinterpret_cast<V*>(out + (p - pre)), joinVec(e[u]));
          } else {
#pragma unroll
            for (int i = 0; i < S::kVec; ++i)
              if (p + i >= pre && p + i < end) out[p + i - pre] = e[u][i];
          }
        }
      }
      mbarArrive(&c.empty[s]);  // this lane's reads of the stage are done (its stores need no stage)
    }
  }
#else
  __trap();  // launched only on sm_90 and newer (persistentScan checks)
#endif
}

// Launcher: returns cudaErrorNotSupported where the kernel cannot run (before sm_90, or a pointer not
// aligned to its element size, or the stages do not fit in shared memory), so that the caller can fall
// back to the one-tile-per-block kernel.
template <class T, int TILE_BYTES, int STAGES, int SCAN_WARPS, int FLAGS = 0>
cudaError_t persistentScan(const T* in, T* out, size_t n, bool inclusive, cudaStream_t stream) {
  using S = PersistShape<T, TILE_BYTES, STAGES, SCAN_WARPS>;
  if (n == 0) return cudaSuccess;
  const uintptr_t a = reinterpret_cast<uintptr_t>(in), b = reinterpret_cast<uintptr_t>(out);
  if (a % sizeof(T) != 0 || b % sizeof(T) != 0) return cudaErrorNotSupported;
  // Tiles are laid on positions counted from the 16-byte boundary at or below `in`, so every bulk
  // copy starts on a 16-byte boundary; stores are 16-byte vectors where `out` shares that offset.
  const int64_t pre = static_cast<int64_t>((a % 16) / sizeof(T));
  const bool vecOut = a % 16 == b % 16;
  const int64_t numTiles = ceilDiv(static_cast<int64_t>(n) + pre, static_cast<int64_t>(S::kItems));

  auto kernel = scan_persistent_kernel<T, TILE_BYTES, STAGES, SCAN_WARPS, FLAGS>;
  constexpr size_t smem = persistSmemBytes<T, TILE_BYTES, STAGES, SCAN_WARPS>();
  int device = 0, major = 0, sms = 0, perSm = 0, smemOptin = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&smemOptin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err != cudaSuccess) return err;
  if (major < 9 || static_cast<size_t>(smemOptin) < smem) return cudaErrorNotSupported;
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (err == cudaSuccess)
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, S::kThreads, smem);
  if (err != cudaSuccess) return err;
  if (perSm < 1) return cudaErrorNotSupported;
  int64_t blocks = static_cast<int64_t>(sms) * perSm;
  if (numTiles < blocks) blocks = numTiles;

  return withLookbackState<T>(numTiles, stream, [&](TileStatus<T> status, unsigned long long* counter) {
    kernel<<<static_cast<unsigned>(blocks), S::kThreads, smem, stream>>>(
        in, out, static_cast<int64_t>(n), pre, vecOut, inclusive, numTiles, status, counter);
    return cudaGetLastError();
  });
}

}  // namespace detail
}  // namespace scan
}  // namespace ck
