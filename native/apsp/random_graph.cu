// The random-graph generator of apspRandomGraph (and of each device's band in the multi-GPU
// schemes): a counter-based hash per entry, so any band of rows can be made on its own.
#include <cstdint>

#include "apsp/apsp.h"
#include "apsp/random_graph.cuh"
#include "core/launch.h"

namespace ck {
namespace apsp {
namespace {

constexpr int kThreads = 256;

// Rows row0 … row0 + rows − 1 of the graph into `out` (rows × n); a band made alone equals the same
// rows of the whole matrix (randomGraphWeight).
__global__ void apsp_random_graph_kernel(int32_t* __restrict__ out, int64_t row0, int64_t rows,
                                         RandomGraphParams g) {
  const int64_t n = g.n, total = rows * n;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = e / n, j = e - r * n;
    out[e] = randomGraphWeight(g, row0 + r, j);
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

bool randomGraphParams(int64_t n, double density, int32_t minWeight, int32_t maxWeight, uint64_t seed,
                       RandomGraphParams* g) {
  if (n < 1 || n > kMaxDistN || !(density >= 0 && density <= 1) || minWeight < 0 || maxWeight < minWeight ||
      maxWeight >= kInf)
    return false;
  g->n = n;
  // P(edge) = threshold / 2^32; density 1 gives 2^32, which every 32-bit draw is below.
  g->threshold = static_cast<uint64_t>(density * 4294967296.0);
  g->minWeight = minWeight;
  g->span = static_cast<uint32_t>(maxWeight - minWeight) + 1u;
  g->seed = seed;
  return true;
}

cudaError_t launchRandomGraphRows(int32_t* out, int64_t n, int64_t row0, int64_t rows, double density,
                                  int32_t minWeight, int32_t maxWeight, uint64_t seed, cudaStream_t stream) {
  RandomGraphParams g;
  if (!randomGraphParams(n, density, minWeight, maxWeight, seed, &g) || row0 < 0 || rows < 0 ||
      row0 + rows > n)
    return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  unsigned blocks = 0;
  const cudaError_t err = gridFor(rows * n, &blocks);
  if (err != cudaSuccess) return err;
  apsp_random_graph_kernel<<<blocks, kThreads, 0, stream>>>(out, row0, rows, g);
  return cudaGetLastError();
}

}  // namespace apsp
}  // namespace ck
