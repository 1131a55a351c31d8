// Step 3, ours: 128×128 block tiles of 256 threads, each thread an 8×8 register tile of C, so one
// pair of LDS.128 feeds 64 FFMAs; the pipeline written out by hand (fragments double-buffered in
// registers, operands staged global → registers → two shared buffers, one barrier per k-slab). The
// kernel template is in register_pipeline.cuh; this file picks the shipped shape.
// H100 (bench/results, 4096³): 2.79 ms, 49.3 TFLOP/s (74% of the FFMA peak; step 2: 16.4 ms). Its
// rate against cuBLAS (TF32 off), from the pair protocol, is in bench/results/README.md;
// bench/dev/gemm/NOTES.md has each version between.
// Bench method: fast
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>

#include "core/launch.h"
#include "core/math.h"
#include "core/pool.h"
#include "gemm/common.cuh"
#include "gemm/gemm.h"
#include "gemm/register_pipeline.cuh"

namespace ck {
namespace gemm {
namespace detail {

//                           BM   BN  BK  WM  WN RM RN MinBlocks
using Pipe128x128k16 = PipeConfig<128, 128, 16, 32, 64, 2, 2, 2>;

// Split-K. A C of few tiles (a long, thin product such as a Gram matrix of a few hundred features)
// would run on a few blocks, each walking all of k alone: 2 × (2^31 − 1) × 2 took 213 s on one block
// of an H200. Where C has at most one tile per two SMs, k is cut into up to resident / tiles pieces
// of kMinSplitSlabs slabs or more (the last piece may be shorter); each piece writes its partial C to a
// workspace (at most 2 blocks per SM of 128×128 floats, 17 MB on 132 SMs) and a second kernel sums the pieces
// in order, so on one device a product gives the same bits every time (another SM count, or a full
// device, which runs one piece, sums in another order). Bigger C's are left as they are: one block
// per SM comes close to the SM's FFMA rate, so splitting a C of 121 or 132 tiles on 132 SMs into two
// pieces made it take 15–16% longer on an H100 (1408×1024×1408), the second block per SM adding
// little beside the workspace's traffic and the second kernel (67 to 120 tiles: not measured).
constexpr int64_t kMinSplitSlabs = 32;

std::atomic<int> forcedSplits{0}, lastSplits{0};

__global__ void sum_pieces_kernel(const float* __restrict__ work, float* __restrict__ C, int64_t count,
                                  int pieces) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    float sum = work[i];
    for (int p = 1; p < pieces; ++p) sum += work[p * count + i];
    C[i] = sum;
  }
}

// Pieces of k for C = A·B with Cfg's tiles on the current device (1: no split).
template <class Cfg>
cudaError_t planSplits(int64_t m, int64_t k, int64_t n, int& splits) {
  splits = 1;
  int device = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return err;
  const int64_t tiles = ceilDiv(m, Cfg::BM) * ceilDiv(n, Cfg::BN);
  const int64_t slabs = ceilDiv(k, Cfg::BK);
  int64_t want = 1;
  if (tiles * 2 <= sms) {
    // Blocks per SM: 2 where the register file holds two (sm_80 and newer), 1 on sm_75 (64 KB of
    // shared memory). Every instantiation has the same registers and shared memory.
    int perSm = 0;
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, sgemm_pipe_kernel<Cfg, true, true, true>,
                                                        Cfg::Threads, Cfg::Smem);
    if (err != cudaSuccess) return err;
    const int64_t resident = static_cast<int64_t>(sms) * std::max(1, perSm);
    want = std::min(resident / tiles, slabs / kMinSplitSlabs);
  }
  if (const int forced = forcedSplits.load(std::memory_order_relaxed); forced > 0) want = forced;
  splits = static_cast<int>(std::max<int64_t>(1, std::min(want, kMaxGridY)));
  return cudaSuccess;
}

}  // namespace detail

void setForcedSplits(int splits) {
  detail::forcedSplits.store(splits, std::memory_order_relaxed);
}

int takeLastSplits() {
  return detail::lastSplits.exchange(0, std::memory_order_relaxed);
}

cudaError_t launchFast(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n,
                       cudaStream_t stream) {
  using Cfg = detail::Pipe128x128k16;
  cudaError_t err;
  if (detail::trivialShape(C, m, k, n, stream, err)) return err;
  int splits = 1;
  err = detail::planSplits<Cfg>(m, k, n, splits);
  if (err != cudaSuccess) return err;
  // Whole slabs per piece, and no empty piece: the piece count follows from the slabs per piece.
  const int64_t slabs = ceilDiv(k, Cfg::BK);
  const int64_t perPiece = ceilDiv(slabs, static_cast<int64_t>(splits));
  splits = static_cast<int>(ceilDiv(slabs, perPiece));
  float* work = nullptr;
  if (splits > 1) {
    err = poolMalloc(&work, static_cast<size_t>(splits) * static_cast<size_t>(m * n) * sizeof(float), stream);
    if (err == cudaErrorMemoryAllocation) {  // the device is full: the unsplit kernel needs no workspace
      splits = 1;
    } else if (err != cudaSuccess) {
      return err;
    }
  }
  detail::lastSplits.store(splits, std::memory_order_relaxed);
  if (splits == 1) return detail::launchPipeWith<Cfg>(A, B, C, m, k, n, stream);
  err = detail::launchPipeSplit<Cfg>(A, B, work, m, k, n, splits, perPiece * Cfg::BK, stream);
  if (err == cudaSuccess) {
    unsigned blocks = 0;
    err = gridStrideBlocks(static_cast<size_t>(m * n), 256, &blocks);
    if (err == cudaSuccess) {
      detail::sum_pieces_kernel<<<blocks, 256, 0, stream>>>(work, C, m * n, splits);
      err = cudaGetLastError();
    }
  }
  const cudaError_t freeErr = poolFree(work, stream);
  return err != cudaSuccess ? err : freeErr;
}

}  // namespace gemm
}  // namespace ck
