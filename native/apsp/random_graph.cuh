// The weight of edge (i, j) of the random graph, shared by its generator (random_graph.cu) and the
// Bellman check (bellman_check.cu), which recomputes the rows it needs instead of storing them.
#pragma once

#include <cstdint>

#include "apsp/apsp.h"
#include "core/math.h"

namespace ck {
namespace apsp {

// Entry (i, j) depends only on the seed and i·n + j (splitmix64, a counter-based hash), so any band of
// rows, or any single entry, can be made on its own. The top 32 bits decide the edge, the bottom 32
// its weight; the diagonal is 0.
__host__ __device__ inline int32_t randomGraphWeight(const RandomGraphParams& g, int64_t i, int64_t j) {
  if (i == j) return 0;
  const uint64_t h = splitmix64(g.seed ^ splitmix64(static_cast<uint64_t>(i * g.n + j)));
  if ((h >> 32) >= g.threshold) return kInf;
  return g.minWeight + static_cast<int32_t>((h & 0xffffffffull) % g.span);
}

}  // namespace apsp
}  // namespace ck
