// APSP step 1, `basic`: the report's first design. One thread per matrix element reading global
// memory only; phases 1 and 2 take one launch per pivot k of the round (bf launches each), phase 3
// one launch whose threads loop over the round's bf values of k. The block factor is the caller's
// (1 … 256); with paths the same kernels carry the hop counts and next hops (paths.cuh).
//
// H100 (random graphs of density 0.05, block factor 256, bench/results): 2713 ms at n = 16384
// (1.62e12 relaxations/s), 1212 ms at 12288, 20.00 ms at 2048 (0.43e12/s).
// Bench method: basic
#include <cstdint>

#include "apsp/apsp.h"
#include "apsp/paths.cuh"
#include "core/math.h"

namespace ck {
namespace apsp {
namespace {

constexpr int kBasicThreads = 256;

// One k of phase 1 (the pivot block) or phase 2 (both panels): d_ij = min(d_ij, d_ik + d_kj). In one
// launch, row k and column k are read but never written, so the launch has no race.
template <bool Paths>
__global__ void __launch_bounds__(kBasicThreads)
    apsp_basic_step_kernel(int32_t* d, PathState ps, int64_t np, int64_t p0, int64_t bf, int64_t k,
                           bool panels) {
  const int64_t rest = np - bf;
  const int64_t total = panels ? 2 * rest * bf : bf * bf;
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= total) return;
  int64_t i, j;
  if (!panels) {
    i = p0 + e / bf;
    j = p0 + e % bf;
  } else if (e < rest * bf) {  // pivot row panel: bf rows × (np − bf) columns, columns fastest
    i = p0 + e / rest;
    j = e % rest;
    j += j >= p0 ? bf : 0;
  } else {  // pivot column panel: (np − bf) rows × bf columns
    const int64_t f = e - rest * bf;
    i = f / bf;
    i += i >= p0 ? bf : 0;
    j = p0 + f % bf;
  }
  const int64_t ij = i * np + j, ik = i * np + k, kj = k * np + j;
  const int32_t t = d[ik] + d[kj];
  if constexpr (Paths) {
    const int32_t th = ps.hops[ik] + ps.hops[kj];
    if (better(t, th, d[ij], ps.hops[ij])) {
      d[ij] = t;
      ps.hops[ij] = th;
      ps.next[ij] = ps.next[ik];
    }
  } else {
    if (t < d[ij]) d[ij] = t;
  }
}

// Phase 3: every element outside the panels loops over the round's k, reading the panels (final for
// this round) from global memory.
template <bool Paths>
__global__ void __launch_bounds__(kBasicThreads)
    apsp_basic_rest_kernel(int32_t* d, PathState ps, int64_t np, int64_t p0, int bf) {
  const int64_t rest = np - bf;
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= rest * rest) return;
  int64_t i = e / rest, j = e % rest;
  i += i >= p0 ? bf : 0;
  j += j >= p0 ? bf : 0;
  const int64_t ij = i * np + j, ik0 = i * np + p0, k0j = p0 * np + j;
  int32_t v = d[ij];
  if constexpr (Paths) {
    int32_t vh = ps.hops[ij];
    int best = -1;
    for (int k = 0; k < bf; ++k) {
      const int32_t t = d[ik0 + k] + d[k0j + k * np];
      const int32_t th = ps.hops[ik0 + k] + ps.hops[k0j + k * np];
      if (better(t, th, v, vh)) {
        v = t;
        vh = th;
        best = k;
      }
    }
    if (best >= 0) {
      d[ij] = v;
      ps.hops[ij] = vh;
      ps.next[ij] = ps.next[ik0 + best];
    }
  } else {
    for (int k = 0; k < bf; ++k) v = min(v, d[ik0 + k] + d[k0j + k * np]);
    d[ij] = v;
  }
}

template <bool Paths>
cudaError_t roundBasicWith(int32_t* d, PathState ps, int64_t np, int bf, int64_t round, cudaStream_t stream) {
  const int64_t p0 = round * bf;
  const unsigned pivotBlocks = static_cast<unsigned>(ceilDiv(static_cast<int64_t>(bf) * bf, kBasicThreads));
  for (int64_t k = p0; k < p0 + bf; ++k) {
    apsp_basic_step_kernel<Paths><<<pivotBlocks, kBasicThreads, 0, stream>>>(d, ps, np, p0, bf, k, false);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  if (np == bf) return cudaSuccess;
  const int64_t rest = np - bf;
  const unsigned panelBlocks = static_cast<unsigned>(ceilDiv(2 * rest * bf, kBasicThreads));
  for (int64_t k = p0; k < p0 + bf; ++k) {
    apsp_basic_step_kernel<Paths><<<panelBlocks, kBasicThreads, 0, stream>>>(d, ps, np, p0, bf, k, true);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  const unsigned restBlocks = static_cast<unsigned>(ceilDiv(rest * rest, kBasicThreads));
  apsp_basic_rest_kernel<Paths><<<restBlocks, kBasicThreads, 0, stream>>>(d, ps, np, p0, bf);
  return cudaGetLastError();
}

}  // namespace

cudaError_t roundBasic(int32_t* d, int32_t* next, int32_t* hops, int64_t np, int factor, int64_t round,
                       cudaStream_t stream) {
  const PathState ps{next, hops};
  return next ? roundBasicWith<true>(d, ps, np, factor, round, stream)
              : roundBasicWith<false>(d, ps, np, factor, round, stream);
}

}  // namespace apsp
}  // namespace ck
