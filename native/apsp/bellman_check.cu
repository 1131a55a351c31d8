// A spot check of a distance matrix too large to compare with anything: the Bellman equation
//   d[i][j] = min over k ≠ i of (w[i][k] + d[k][j])   (i ≠ j),   d[i][i] = 0,
// which only the shortest distances satisfy when every weight is positive. It is checked on sampled
// pairs (i, j); each rank holds only rows of d, so it returns the minimum over its own rows k and
// the caller takes the minimum over the ranks (apspBellmanCheck in lib/distributed/apsp.ts). The weights
// w[i][k] are recomputed from the random graph's hash, never stored.
#include <climits>
#include <cstdint>

#include "apsp/apsp.h"
#include "apsp/random_graph.cuh"

namespace ck {
namespace apsp {
namespace {

constexpr int kThreads = 256;

// One block per pair: its threads stride over the band's rows k, then reduce in shared memory.
__global__ void apsp_bellman_partial_kernel(const int32_t* __restrict__ band, int64_t row0, int64_t rows,
                                            RandomGraphParams g, const int32_t* __restrict__ pairs,
                                            int32_t* __restrict__ partial, int32_t* __restrict__ own) {
  __shared__ int32_t best[kThreads];
  const int64_t i = pairs[2 * blockIdx.x], j = pairs[2 * blockIdx.x + 1], n = g.n;
  // Both terms are ≤ kInf (the band's entries clamped, so that a corrupt one cannot overflow), so their
  // sum stays below 2^31; a sum ≥ kInf means "no path". The pairs come from apspBellmanCheck, which
  // draws them inside [0, n).
  int32_t m = kInf;
  for (int64_t r = threadIdx.x; r < rows; r += kThreads) {
    const int64_t k = row0 + r;
    if (k == i) continue;
    const int32_t w = randomGraphWeight(g, i, k);
    if (w >= kInf) continue;
    m = min(m, w + min(band[r * n + j], kInf));
  }
  best[threadIdx.x] = m;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) best[threadIdx.x] = min(best[threadIdx.x], best[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = min(best[0], kInf);
    own[blockIdx.x] = i >= row0 && i < row0 + rows ? band[(i - row0) * n + j] : INT_MAX;
  }
}

}  // namespace

cudaError_t launchBellmanPartial(const int32_t* band, int64_t row0, int64_t rows, const RandomGraphParams& g,
                                 const int32_t* pairs, int count, int32_t* partial, int32_t* own,
                                 cudaStream_t stream) {
  if (count < 0 || row0 < 0 || rows < 0 || row0 + rows > g.n || (rows > 0 && band == nullptr))
    return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  apsp_bellman_partial_kernel<<<static_cast<unsigned>(count), kThreads, 0, stream>>>(band, row0, rows, g,
                                                                                     pairs, partial, own);
  return cudaGetLastError();
}

}  // namespace apsp
}  // namespace ck
