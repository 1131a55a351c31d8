// Step 1, the report's scan: ONE block of 1024 threads walks the whole array, 1024 elements a step;
// each warp runs an up-sweep/down-sweep (Blelloch) scan with shuffles, the warp totals are scanned
// across the block, and a running carry joins the steps. It uses one SM of 132, so it is the
// reference for correctness, not for speed.
// H100 (bench/results, 2^28 int32): 233 ms, 9.2 GB/s (CUB: 0.9 ms).
// Bench method: warp
#include <cstdint>

#include "scan/scan.h"
#include "scan/tile.cuh"

namespace ck {
namespace scan {
namespace detail {

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

template <class T>
struct WarpRunner {
  static cudaError_t run(const T* i, T* o, size_t n, bool inc, cudaStream_t s) {
    return warpScan(i, o, n, inc, s);
  }
};

}  // namespace detail

cudaError_t launchWarp(const void* in, void* out, Dtype dtype, size_t n, bool inclusive,
                       cudaStream_t stream) {
  return detail::dispatchScan<detail::WarpRunner>(dtype, in, out, n, inclusive, stream);
}

}  // namespace scan
}  // namespace ck
