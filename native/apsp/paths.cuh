// Path tracking, shared by the variants that record next hops (1_basic.cu, 2_shared.cu; 3_minplus.cu
// has no room for it and methods.cc sends its runs with paths to 2_shared.cu).
#pragma once

#include <cstdint>

#include "apsp/apsp.h"

namespace ck {
namespace apsp {

// With paths, every method keeps a hop-count matrix h beside d and next and orders candidates
// lexicographically by (distance, hops): a candidate replaces d_ij when it is shorter, or as short
// (and finite) with fewer edges. Every edge then weighs at least (0, 1) > (0, 0), so no cycle is free;
// at the end each next hop x of i towards j satisfies (d_ij, h_ij) = (w_ix + d_xj, 1 + h_xj), the hop
// count strictly falls along the way, and following next always reaches j. With distances alone,
// zero-weight cycles let the blocked order leave next hops that point at each other (seen on random
// graphs with zero weights). Row k and column k still never change at step k (d_kk = h_kk = 0).

struct PathState {
  int32_t* next = nullptr;
  int32_t* hops = nullptr;
};

__device__ __forceinline__ bool better(int32_t t, int32_t th, int32_t v, int32_t vh) {
  return t < v || (t == v && t < kInf && th < vh);
}

}  // namespace apsp
}  // namespace ck
