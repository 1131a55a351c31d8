// The random-graph generator of apspRandomGraph (and of each device's band in the multi-GPU
// schemes): a counter-based hash per entry, so any band of rows can be made on its own.
#include <cstdint>

#include "apsp/apsp.h"
#include "core/launch.h"
#include "core/math.h"

namespace ck {
namespace apsp {
namespace {

constexpr int kThreads = 256;

// Rows row0 … row0 + rows − 1 of the graph into `out` (rows × n): entry (i, j) depends only on the seed
// and i·n + j (splitmix64, a counter-based hash), so a band made alone equals the same rows of the
// whole matrix.
__global__ void apsp_random_graph_kernel(int32_t* __restrict__ out, int64_t n, int64_t row0, int64_t rows,
                                         uint64_t threshold, int32_t minWeight, uint32_t span,
                                         uint64_t seed) {
  const int64_t total = rows * n;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = e / n, j = e - r * n, i = row0 + r;
    const uint64_t h = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(i * n + j)));
    // The top 32 bits decide the edge, the bottom 32 its weight.
    int32_t v = kInf;
    if ((h >> 32) < threshold) v = minWeight + static_cast<int32_t>((h & 0xffffffffull) % span);
    out[e] = i == j ? 0 : v;
  }
}

cudaError_t gridFor(int64_t length, unsigned* blocks) {
  return gridStrideBlocks(static_cast<size_t>(length), kThreads, blocks);
}

}  // namespace

cudaError_t launchRandomGraph(int32_t* out, int64_t n, double density, int32_t minWeight, int32_t maxWeight,
                              uint64_t seed, cudaStream_t stream) {
  return launchRandomGraphRows(out, n, 0, n, density, minWeight, maxWeight, seed, stream);
}

cudaError_t launchRandomGraphRows(int32_t* out, int64_t n, int64_t row0, int64_t rows, double density,
                                  int32_t minWeight, int32_t maxWeight, uint64_t seed, cudaStream_t stream) {
  if (n < 1 || n > kMaxN || row0 < 0 || rows < 0 || row0 + rows > n || !(density >= 0 && density <= 1) ||
      minWeight < 0 || maxWeight < minWeight || maxWeight >= kInf)
    return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  // P(edge) = threshold / 2^32; density 1 gives 2^32, which every 32-bit draw is below.
  const uint64_t threshold = static_cast<uint64_t>(density * 4294967296.0);
  const uint32_t span = static_cast<uint32_t>(maxWeight - minWeight) + 1u;
  unsigned blocks = 0;
  const cudaError_t err = gridFor(rows * n, &blocks);
  if (err != cudaSuccess) return err;
  apsp_random_graph_kernel<<<blocks, kThreads, 0, stream>>>(out, n, row0, rows, threshold, minWeight, span,
                                                            seed);
  return cudaGetLastError();
}

}  // namespace apsp
}  // namespace ck
