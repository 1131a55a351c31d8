// APSP step 2, `shared`: the report's optimised design. Over 1_basic.cu it stages 32×32 tiles in
// shared memory, so each round is three launches (pivot block, both panels, the rest) instead of
// 2·bf + 1, and every phase reads its pivot rows and columns from shared memory; phase 3's step
// for distances only is one VIADDMNMX on sm_90 (add_min.cuh).
//
// H100 (density 0.05, bench/results): 1323 ms at n = 16384 (3.32e12 relaxations/s), 561.4 ms at
// 12288, 3.30 ms at 2048.
//
// Thread (ty, tx) owns element (ty, tx) of its tile: threadIdx.x runs along the columns, so at step k
// a warp (one row) reads A[ty][k] — one address, a broadcast — and B[k][0..31], 32 consecutive words
// in 32 banks. The report found the opposite mapping (threadIdx.x along the rows) hitting one bank
// 32 times for A and for the element itself. With paths the hop counts ride along in shared memory
// the same way and next hops are read from global memory (column k of next never changes at step k;
// the barriers publish earlier steps' writes to the block).
// Bench method: shared
#include <cstdint>

#include "apsp/add_min.cuh"
#include "apsp/apsp.h"
#include "apsp/paths.cuh"

namespace ck {
namespace apsp {
namespace {

constexpr int kTile32 = 32;

template <bool Paths>
__global__ void __launch_bounds__(kTile32* kTile32)
    apsp_shared_pivot_kernel(int32_t* d, PathState ps, int64_t np, int64_t p0) {
  __shared__ int32_t s[kTile32][kTile32];
  __shared__ int32_t sh[Paths ? kTile32 : 1][Paths ? kTile32 : 1];
  const int ty = threadIdx.y, tx = threadIdx.x;
  const int64_t at = (p0 + ty) * np + p0 + tx;
  int32_t v = d[at], vh = 0;
  s[ty][tx] = v;
  if constexpr (Paths) {
    vh = ps.hops[at];
    sh[ty][tx] = vh;
  }
  __syncthreads();
  for (int k = 0; k < kTile32; ++k) {
    const int32_t t = s[ty][k] + s[k][tx];
    if constexpr (Paths) {
      const int32_t th = sh[ty][k] + sh[k][tx];
      if (better(t, th, v, vh)) {
        v = t;
        vh = th;
        s[ty][tx] = t;
        sh[ty][tx] = th;
        ps.next[at] = ps.next[(p0 + ty) * np + p0 + k];
      }
    } else if (t < v) {
      v = t;
      s[ty][tx] = t;
    }
    __syncthreads();
  }
  d[at] = v;
  if constexpr (Paths) ps.hops[at] = vh;
}

// Phase 2: block b < tiles − 1 takes row-panel tile (K, t), the others column-panel tile (t, K).
template <bool Paths>
__global__ void __launch_bounds__(kTile32* kTile32)
    apsp_shared_panel_kernel(int32_t* d, PathState ps, int64_t np, int64_t pivot, int64_t tiles) {
  constexpr int H = Paths ? kTile32 : 1;
  __shared__ int32_t sp[kTile32][kTile32];
  __shared__ int32_t st[kTile32][kTile32];
  __shared__ int32_t sph[H][H];
  __shared__ int32_t sth[H][H];
  const int ty = threadIdx.y, tx = threadIdx.x;
  const bool rowPanel = blockIdx.x < tiles - 1;
  int64_t t = rowPanel ? blockIdx.x : blockIdx.x - (tiles - 1);
  t += t >= pivot ? 1 : 0;
  const int64_t p0 = pivot * kTile32;
  const int64_t i0 = rowPanel ? p0 : t * kTile32, j0 = rowPanel ? t * kTile32 : p0;
  const int64_t at = (i0 + ty) * np + j0 + tx, pat = (p0 + ty) * np + p0 + tx;
  sp[ty][tx] = d[pat];
  int32_t v = d[at], vh = 0;
  st[ty][tx] = v;
  if constexpr (Paths) {
    sph[ty][tx] = ps.hops[pat];
    vh = ps.hops[at];
    sth[ty][tx] = vh;
  }
  __syncthreads();
  for (int k = 0; k < kTile32; ++k) {
    // Row panel: through row k of this tile; column panel: through its column k. Either way that row
    // or column does not change at step k.
    const int32_t t2 = rowPanel ? sp[ty][k] + st[k][tx] : st[ty][k] + sp[k][tx];
    if constexpr (Paths) {
      const int32_t th = rowPanel ? sph[ty][k] + sth[k][tx] : sth[ty][k] + sph[k][tx];
      if (better(t2, th, v, vh)) {
        v = t2;
        vh = th;
        st[ty][tx] = t2;
        sth[ty][tx] = th;
        ps.next[at] = ps.next[(i0 + ty) * np + p0 + k];
      }
    } else if (t2 < v) {
      v = t2;
      st[ty][tx] = t2;
    }
    __syncthreads();
  }
  d[at] = v;
  if constexpr (Paths) ps.hops[at] = vh;
}

template <bool Paths>
__global__ void __launch_bounds__(kTile32* kTile32)
    apsp_shared_rest_kernel(int32_t* d, PathState ps, int64_t np, int64_t pivot, int64_t tiles) {
  constexpr int H = Paths ? kTile32 : 1;
  __shared__ int32_t sa[kTile32][kTile32];
  __shared__ int32_t sb[kTile32][kTile32];
  __shared__ int32_t sah[H][H];
  __shared__ int32_t sbh[H][H];
  const int ty = threadIdx.y, tx = threadIdx.x;
  int64_t ti = blockIdx.x / (tiles - 1), tj = blockIdx.x % (tiles - 1);
  ti += ti >= pivot ? 1 : 0;
  tj += tj >= pivot ? 1 : 0;
  const int64_t p0 = pivot * kTile32, i0 = ti * kTile32, j0 = tj * kTile32;
  const int64_t aat = (i0 + ty) * np + p0 + tx, bat = (p0 + ty) * np + j0 + tx;
  sa[ty][tx] = d[aat];
  sb[ty][tx] = d[bat];
  const int64_t at = (i0 + ty) * np + j0 + tx;
  int32_t v = d[at];
  if constexpr (Paths) {
    sah[ty][tx] = ps.hops[aat];
    sbh[ty][tx] = ps.hops[bat];
  }
  __syncthreads();
  if constexpr (Paths) {
    int32_t vh = ps.hops[at];
    int best = -1;
#pragma unroll
    for (int k = 0; k < kTile32; ++k) {
      const int32_t t = sa[ty][k] + sb[k][tx];
      const int32_t th = sah[ty][k] + sbh[k][tx];
      if (better(t, th, v, vh)) {
        v = t;
        vh = th;
        best = k;
      }
    }
    if (best >= 0) {
      d[at] = v;
      ps.hops[at] = vh;
      ps.next[at] = ps.next[(i0 + ty) * np + p0 + best];
    }
  } else {
#pragma unroll
    for (int k = 0; k < kTile32; ++k) v = addMin(sa[ty][k], sb[k][tx], v);
    d[at] = v;
  }
}

template <bool Paths>
cudaError_t roundSharedWith(int32_t* d, PathState ps, int64_t np, int64_t round, cudaStream_t stream) {
  const int64_t tiles = np / kTile32;
  const dim3 block(kTile32, kTile32);
  apsp_shared_pivot_kernel<Paths><<<1, block, 0, stream>>>(d, ps, np, round * kTile32);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess || tiles == 1) return err;
  apsp_shared_panel_kernel<Paths>
      <<<static_cast<unsigned>(2 * (tiles - 1)), block, 0, stream>>>(d, ps, np, round, tiles);
  err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  apsp_shared_rest_kernel<Paths>
      <<<static_cast<unsigned>((tiles - 1) * (tiles - 1)), block, 0, stream>>>(d, ps, np, round, tiles);
  return cudaGetLastError();
}

}  // namespace

cudaError_t roundShared(int32_t* d, int32_t* next, int32_t* hops, int64_t np, int factor, int64_t round,
                        cudaStream_t stream) {
  if (factor != kTile32) return cudaErrorInvalidValue;
  const PathState ps{next, hops};
  return next ? roundSharedWith<true>(d, ps, np, round, stream)
              : roundSharedWith<false>(d, ps, np, round, stream);
}

}  // namespace apsp
}  // namespace ck
