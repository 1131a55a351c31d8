// Blocked Floyd–Warshall: the report's thread-per-element and 32×32 shared-memory designs, and our
// min-plus tile-product design. See apsp.h for the contract.
//
// Every method runs rounds K = 0 … np/B − 1 over a matrix padded to np, a multiple of the block factor
// B. A round has three phases: (1) close the pivot block (K, K) under paths through its own vertices;
// (2) relax the pivot row and column panels through the pivot block; (3) relax every other block
// (I, J) through the panels: d_ij = min(d_ij, d_ik + d_kj) for the B values of k. Entries of pivot
// row k and column k never change while k is the intermediate (d_kk = 0), and only strictly better
// values are stored, so threads of one step that read row k or column k never race with a write.
#include <climits>
#include <cstdint>
#include <utility>

#include "apsp/apsp.h"
#include "core/cp_async.h"
#include "core/launch.h"
#include "core/math.h"
#include "core/pool.h"

namespace ck {
namespace apsp {
namespace {

// min(a + b, c) — one VIADDMNMX on sm_90 (DPX). nvcc 13 emits the same instruction for the plain
// expression there; the intrinsic documents the intent. Elsewhere an IADD and an IMNMX.
__device__ __forceinline__ int addMin(int a, int b, int c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return __viaddmin_s32(a, b, c);
#else
  return min(a + b, c);
#endif
}

// ---------------------------------------------------------------------------------------------
// Padding and setup

__global__ void apsp_pad_kernel(const int32_t* __restrict__ in, int32_t* __restrict__ d,
                                int32_t* __restrict__ next, int32_t* __restrict__ hops, int64_t n,
                                int64_t np) {
  const int64_t total = np * np;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / np, j = e - i * np;
    const int32_t v = i == j ? 0 : (i < n && j < n ? in[i * n + j] : kInf);
    d[e] = v;
    if (next) {
      next[e] = v < kInf ? static_cast<int32_t>(j) : -1;
      hops[e] = i == j ? 0 : 1;
    }
  }
}

__global__ void apsp_unpad_kernel(const int32_t* __restrict__ src, int32_t* __restrict__ dst, int64_t n,
                                  int64_t np) {
  const int64_t total = n * n;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / n, j = e - i * n;
    dst[e] = src[i * np + j];
  }
}

// A band of the padded matrix: rows row0 … row0 + rows − 1 of np columns, from `in` (its row row0,
// leading dimension n; rows at or past n read nothing).
__global__ void apsp_pad_rows_kernel(const int32_t* __restrict__ in, int32_t* __restrict__ d, int64_t n,
                                     int64_t np, int64_t row0, int64_t rows) {
  const int64_t total = rows * np;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = e / np, j = e - r * np, i = row0 + r;
    d[e] = i == j ? 0 : (i < n && j < n ? in[r * n + j] : kInf);
  }
}

__global__ void apsp_unpad_rows_kernel(const int32_t* __restrict__ src, int32_t* __restrict__ dst, int64_t n,
                                       int64_t np, int64_t rows) {
  const int64_t total = rows * n;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / n, j = e - i * n;
    dst[e] = src[i * np + j];
  }
}

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

// ---------------------------------------------------------------------------------------------
// Path tracking
//
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

// ---------------------------------------------------------------------------------------------
// basic: thread per element, global memory (the report's first design)

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

// ---------------------------------------------------------------------------------------------
// shared: 32×32 tiles in shared memory (the report's optimised design)
//
// Thread (ty, tx) owns element (ty, tx) of its tile: threadIdx.x runs along the columns, so at step k
// a warp (one row) reads A[ty][k] — one address, a broadcast — and B[k][0..31], 32 consecutive words
// in 32 banks. The report found the opposite mapping (threadIdx.x along the rows) hitting one bank
// 32 times for A and for the element itself. With paths the hop counts ride along in shared memory
// the same way and next hops are read from global memory (column k of next never changes at step k;
// the barriers publish earlier steps' writes to the block).

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

// ---------------------------------------------------------------------------------------------
// fast: pivot depth 128, phases 2 and 3 as min-plus tile products
//
// Phase 1 closes the 128×128 pivot block in one block of 1024 threads from shared memory. Phase 2
// needs no k-by-k sweep: once the pivot block P holds the closure of its own vertices, the row panel
// becomes P ⊗ R and the column panel C ⊗ P (⊗ the min-plus product), since a path from the pivot
// vertices leaves them for the last time at some pivot vertex. So phases 2 and 3 are one kernel: a
// 128×128 output tile per block, C = min(C, A ⊗ B) over the 128 pivot k, with A's rows and B's
// columns those of the tile. The k dimension streams through shared memory in slabs of kFastBK with
// cp.async, kFastStages deep; each of the 256 threads keeps an 8×8 piece of C in registers.
//
// Thread layout: warps tile C as 4 (rows) × 2 (columns) of 32×64; a lane owns rows
// wm0 + lm + 4r (r < 8) and columns wn0 + 4ln + 32c + q (c < 2, q < 4), lm = lane / 8, ln = lane % 8.
// A is kept row-major ([row][k], pitch kFastBK + 4 words) as it lies in global memory, so no
// transposed copy is needed: at one k a warp reads four rows (lm = 0..3), 20 words apart, which land
// in banks 0, 20, 8 and 28 (+k) — one wavefront, the other lanes broadcast. B ([k][col], pitch 128)
// is read as 16-byte vectors, 8 distinct per warp and contiguous: no bank conflict. One k at a time (rather
// than 8-byte A loads of two k) keeps the kernel within the 128 registers that two blocks per SM allow: the
// k-pair version spilled.

constexpr int kFastTile = kFastFactor;
constexpr int kFastBK = 16;
constexpr int kFastStages = 3;
constexpr int kFastThreads = 256;
constexpr int kFastAPitch = kFastBK + 4;
constexpr int kFastBPitch = kFastTile;
constexpr int kFastAStage = kFastTile * kFastAPitch;
constexpr int kFastBStage = kFastBK * kFastBPitch;
constexpr size_t kFastSmem = static_cast<size_t>(kFastStages) * (kFastAStage + kFastBStage) * sizeof(int32_t);
constexpr int kFastSlabs = kFastTile / kFastBK;
constexpr int kPivotThreads = 1024;
constexpr size_t kPivotSmem = static_cast<size_t>(kFastTile) * kFastTile * sizeof(int32_t);
static_assert(kFastTile * kFastBK / 4 == 2 * kFastThreads, "A slab: two 16-byte copies per thread");
static_assert(kFastBK * kFastTile / 4 == 2 * kFastThreads, "B slab: two 16-byte copies per thread");

// 16 bytes global -> shared; .cg: the panels are shared between blocks through L2, not reused in L1.
// Below sm_80 there is no cp.async: an ordinary load and store (the pipeline then has no overlap).
__device__ __forceinline__ void copy16(int32_t* dst, const int32_t* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t to = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(src) : "memory");
#else
  *reinterpret_cast<int4*>(dst) = *reinterpret_cast<const int4*>(src);
#endif
}

// Phase 1: thread (ty, tx) of 32×32 owns rows ty + 32r and columns tx + 32c (r, c < 4) and keeps them
// in registers; the block's copy in shared memory is what the other threads read at step k (row k:
// 32 consecutive words per warp; column k: one word per warp, a broadcast). `blk` is the pivot block's
// first element, `ld` the leading dimension of the matrix it lies in (a whole matrix or a row band).
__global__ void __launch_bounds__(kPivotThreads) apsp_fast_pivot_kernel(int32_t* blk, int64_t ld) {
  extern __shared__ __align__(16) int32_t sp[];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  int32_t v[4][4];
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      v[r][c] = blk[(ty + 32 * r) * ld + tx + 32 * c];
      sp[(ty + 32 * r) * kFastTile + tx + 32 * c] = v[r][c];
    }
  __syncthreads();
  for (int k = 0; k < kFastTile; ++k) {
    int32_t ik[4], kj[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) ik[r] = sp[(ty + 32 * r) * kFastTile + k];
#pragma unroll
    for (int c = 0; c < 4; ++c) kj[c] = sp[k * kFastTile + tx + 32 * c];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int32_t t = ik[r] + kj[c];
        if (t < v[r][c]) {
          v[r][c] = t;
          sp[(ty + 32 * r) * kFastTile + tx + 32 * c] = t;
        }
      }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int c = 0; c < 4; ++c) blk[(ty + 32 * r) * ld + tx + 32 * c] = v[r][c];
}

struct TileJobPair {
  TileJob j[2];
};

// blockIdx.x through a volatile read, so that the compiler recomputes what depends on it instead of
// keeping it in registers.
__device__ __forceinline__ unsigned blockIndex() {
  unsigned b;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(b));
  return b;
}

// The output tile (row i0, column j0 of its job's matrices) of block `bx`, and whether it is job1's.
// The jobs are a __grid_constant__ parameter: indexed in place in the constant bank, never copied.
__device__ __forceinline__ void tileOf(const TileJobPair& jobs, unsigned first, unsigned bx, int64_t* i0,
                                       int64_t* j0, bool* second) {
  const bool s = bx >= first;
  const int idx = static_cast<int>(s ? bx - first : bx);
  const TileJob& job = jobs.j[s];
  const int cols = job.cols, colSkip = job.colSkip, rowSkip0 = job.rowSkip0, rowSkip1 = job.rowSkip1;
  const int colTiles = cols - (colSkip < cols ? 1 : 0);
  int ti = idx / colTiles, tj = idx % colTiles;
  // Skipped rows: rowSkip0 < rowSkip1 (kNoSkip when unused), so two bumps in order land past both.
  ti += ti >= rowSkip0 ? 1 : 0;
  ti += ti >= rowSkip1 ? 1 : 0;
  tj += tj >= colSkip ? 1 : 0;
  *i0 = static_cast<int64_t>(ti) * kFastTile;
  *j0 = static_cast<int64_t>(tj) * kFastTile;
  *second = s;
}

// Phases 2 and 3 as C = min(C, A ⊗ B) over 128×128 output tiles, for up to two TileJobs in one launch
// (blocks 0 … first − 1 run jobs[0], the rest jobs[1]): the single-GPU round passes the pivot row and
// column panels as two jobs of one launch, then phase 3 as one; the multi-GPU schemes pass pieces of a
// row band. In phase 2 the output tile is also A (column panel) or B (row panel); every read of A and
// B has completed at the last slab's barrier, before the first store, so C may alias A or B.
__global__ void __launch_bounds__(kFastThreads, 2)
    apsp_fast_minplus_kernel(const __grid_constant__ TileJobPair jobs, unsigned first, int ld) {
  extern __shared__ __align__(16) int32_t smem[];
  int32_t* const sA = smem;
  int32_t* const sB = smem + kFastStages * kFastAStage;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;

  // The tile's A (its rows, the pivot columns), B (the pivot rows, its columns) and C wait in shared
  // memory: the main loop has no registers to spare for three 64-bit pointers.
  __shared__ int32_t* tileABC[3];
  int64_t i0, j0;
  bool second;
  tileOf(jobs, first, blockIndex(), &i0, &j0, &second);
  if (tid == 0) {
    // A and B are only read; the cast keeps the three in one array.
    tileABC[0] = const_cast<int32_t*>(jobs.j[second].a) + i0 * static_cast<int64_t>(ld);
    tileABC[1] = const_cast<int32_t*>(jobs.j[second].b) + j0;
    tileABC[2] = jobs.j[second].c + i0 * static_cast<int64_t>(ld) + j0;
  }
  __syncthreads();
  // Loader lanes: A slab 128 rows × 4 vectors, B slab kFastBK rows × 32 vectors; two copies each.
  const int aRow = tid / 4, aVec = tid % 4;
  const int bRow = tid / 32, bVec = tid % 32;
  const int32_t* const A = tileABC[0];
  const int32_t* const B = tileABC[1];
  auto loadSlab = [&](int stage, int k0) {
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const int row = aRow + 64 * p;
      copy16(sA + stage * kFastAStage + row * kFastAPitch + aVec * 4, A + row * ld + k0 + aVec * 4);
    }
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const int row = bRow + 8 * p;
      copy16(sB + stage * kFastBStage + row * kFastBPitch + bVec * 4, B + (k0 + row) * ld + bVec * 4);
    }
  };

#pragma unroll
  for (int s = 0; s < kFastStages - 1; ++s) {
    loadSlab(s, s * kFastBK);
    copyCommit();
  }

  const int wm0 = (warp / 2) * 32, wn0 = (warp % 2) * 64;
  const int lm = lane / 8, ln = lane % 8;
  const int rowOff = wm0 + lm, colOff = wn0 + ln * 4;

  int32_t acc[8][8];
  const int32_t* const C0 = tileABC[2];
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int4 x = *reinterpret_cast<const int4*>(C0 + (rowOff + 4 * r) * ld + colOff + 32 * c);
      acc[r][4 * c + 0] = x.x;
      acc[r][4 * c + 1] = x.y;
      acc[r][4 * c + 2] = x.z;
      acc[r][4 * c + 3] = x.w;
    }

  int stage = 0;
  for (int kt = 0; kt < kFastSlabs; ++kt) {
    copyWait<kFastStages - 2>();
    // Publishes slab kt to every warp, and proves every warp is done with slab kt − 1, whose stage
    // the load below refills.
    __syncthreads();
    const int ahead = kt + kFastStages - 1;
    int aheadStage = stage + kFastStages - 1;
    if (aheadStage >= kFastStages) aheadStage -= kFastStages;
    if (ahead < kFastSlabs) loadSlab(aheadStage, ahead * kFastBK);
    copyCommit();  // empty groups too: wait_group counts groups

    const int32_t* a = sA + stage * kFastAStage + rowOff * kFastAPitch;
    const int32_t* b = sB + stage * kFastBStage + colOff;
#pragma unroll
    for (int kk = 0; kk < kFastBK; ++kk) {
      int32_t av[8];
#pragma unroll
      for (int r = 0; r < 8; ++r) av[r] = a[4 * r * kFastAPitch + kk];
      const int4 b0 = *reinterpret_cast<const int4*>(b + kk * kFastBPitch);
      const int4 b1 = *reinterpret_cast<const int4*>(b + kk * kFastBPitch + 32);
      const int32_t bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int r = 0; r < 8; ++r) {
#pragma unroll
        for (int q = 0; q < 8; ++q) acc[r][q] = addMin(av[r], bv[q], acc[r][q]);
      }
    }
    if (++stage == kFastStages) stage = 0;
  }
  copyWait<0>();  // only empty groups can be pending; leave none behind

  int32_t* const C = tileABC[2];
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int c = 0; c < 2; ++c)
      *reinterpret_cast<int4*>(C + (rowOff + 4 * r) * ld + colOff + 32 * c) =
          make_int4(acc[r][4 * c + 0], acc[r][4 * c + 1], acc[r][4 * c + 2], acc[r][4 * c + 3]);
}

// Output tiles of a job: rows minus its skipped rows, times columns minus its skipped column.
int64_t jobTiles(const TileJob& j) {
  const int64_t rows = j.rows - (j.rowSkip0 < j.rows ? 1 : 0) - (j.rowSkip1 < j.rows ? 1 : 0);
  const int64_t cols = j.cols - (j.colSkip < j.cols ? 1 : 0);
  return rows > 0 && cols > 0 ? rows * cols : 0;
}

cudaError_t roundFastDistances(int32_t* d, int64_t np, int64_t round, cudaStream_t stream) {
  const int64_t tiles = np / kFastTile;
  const int64_t p0 = round * kFastTile;
  cudaError_t err = launchFastPivot(d + p0 * np + p0, np, stream);
  if (err != cudaSuccess || tiles == 1) return err;
  const int t = static_cast<int>(tiles), k = static_cast<int>(round);
  // Row panel: the one tile row at p0, every tile column but K, through the pivot block.
  const TileJob rowPanel{d + p0 * np + p0, d + p0 * np, d + p0 * np, np, 1, kNoSkip, kNoSkip, t, k};
  // Column panel: every tile row but K, the one tile column at p0.
  const TileJob colPanel{d + p0, d + p0 * np + p0, d + p0, np, t, k, kNoSkip, 1, kNoSkip};
  err = launchFastMinPlus(rowPanel, &colPanel, stream);
  if (err != cudaSuccess) return err;
  const TileJob rest{d + p0, d + p0 * np, d, np, t, k, kNoSkip, t, k};
  return launchFastMinPlus(rest, nullptr, stream);
}

// Frees the padded workspace and the progress events on every exit, exceptions from the progress
// callback included. Frees are stream-ordered, after the work already queued.
struct RunResources {
  cudaStream_t stream = nullptr;
  int32_t* d = nullptr;
  int32_t* next = nullptr;
  int32_t* hops = nullptr;
  bool ownsD = false, ownsNext = false;
  cudaEvent_t events[2] = {nullptr, nullptr};
  ~RunResources() {
    if (ownsD && d) poolFree(d, stream);
    if (ownsNext && next) poolFree(next, stream);
    if (hops) poolFree(hops, stream);
    for (cudaEvent_t e : events)
      if (e) cudaEventDestroy(e);
  }
};

cudaError_t gridFor(int64_t length, unsigned* blocks) {
  return gridStrideBlocks(static_cast<size_t>(length), kBasicThreads, blocks);
}

}  // namespace

cudaError_t launchFastPivot(int32_t* block, int64_t ld, cudaStream_t stream) {
  // Raising the dynamic shared-memory limit is per kernel and cheap; doing it on every launch keeps
  // the launcher free of static state (and right on whichever device is current).
  cudaError_t err = cudaFuncSetAttribute(apsp_fast_pivot_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(kPivotSmem));
  if (err != cudaSuccess) return err;
  apsp_fast_pivot_kernel<<<1, kPivotThreads, kPivotSmem, stream>>>(block, ld);
  return cudaGetLastError();
}

cudaError_t launchFastMinPlus(const TileJob& job, const TileJob* second, cudaStream_t stream) {
  const int64_t first = jobTiles(job), more = second ? jobTiles(*second) : 0;
  if (first + more == 0) return cudaSuccess;
  // One leading dimension for both jobs: a kernel parameter, read from the constant bank, costs no register.
  // Offsets within a tile (at most 128 rows times ld) are then 32-bit.
  if ((second && second->ld != job.ld) || job.ld > kMaxN) return cudaErrorInvalidValue;
  if (first + more > INT_MAX) return cudaErrorInvalidValue;
  const cudaError_t err = cudaFuncSetAttribute(
      apsp_fast_minplus_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kFastSmem));
  if (err != cudaSuccess) return err;
  // An empty first job hands every block to the second; skipped rows go in increasing order.
  TileJob j0 = first ? job : *second;
  TileJob j1 = first && second ? *second : j0;
  for (TileJob* j : {&j0, &j1})
    if (j->rowSkip1 < j->rowSkip0) std::swap(j->rowSkip0, j->rowSkip1);
  apsp_fast_minplus_kernel<<<static_cast<unsigned>(first + more), kFastThreads, kFastSmem, stream>>>(
      TileJobPair{{j0, j1}}, static_cast<unsigned>(first ? first : first + more), static_cast<int>(job.ld));
  return cudaGetLastError();
}

cudaError_t roundBasic(int32_t* d, int32_t* next, int32_t* hops, int64_t np, int factor, int64_t round,
                       cudaStream_t stream) {
  const PathState ps{next, hops};
  return next ? roundBasicWith<true>(d, ps, np, factor, round, stream)
              : roundBasicWith<false>(d, ps, np, factor, round, stream);
}

cudaError_t roundShared(int32_t* d, int32_t* next, int32_t* hops, int64_t np, int factor, int64_t round,
                        cudaStream_t stream) {
  if (factor != kTile32) return cudaErrorInvalidValue;
  const PathState ps{next, hops};
  return next ? roundSharedWith<true>(d, ps, np, round, stream)
              : roundSharedWith<false>(d, ps, np, round, stream);
}

cudaError_t roundFast(int32_t* d, int32_t* next, int32_t* hops, int64_t np, int factor, int64_t round,
                      cudaStream_t stream) {
  // Distances only: methods.cc sends runs with paths to the 32×32 path-tracking kernels.
  if (factor != kFastTile || next || hops) return cudaErrorInvalidValue;
  return roundFastDistances(d, np, round, stream);
}

cudaError_t run(RoundFn round, int factor, const int32_t* in, int32_t* out, int32_t* nextOut, int64_t n,
                cudaStream_t stream, const Progress& progress) {
  if (n < 1 || n > kMaxN || factor < 1) return cudaErrorInvalidValue;
  const int64_t np = ceilDiv(n, factor) * factor;
  const int64_t rounds = np / factor;
  RunResources res;
  res.stream = stream;
  res.d = out;
  res.next = nextOut;
  const size_t bytes = static_cast<size_t>(np) * np * sizeof(int32_t);
  if (np != n) {
    cudaError_t err = poolMalloc(&res.d, bytes, stream);
    if (err != cudaSuccess) return err;
    res.ownsD = true;
    if (nextOut) {
      err = poolMalloc(&res.next, bytes, stream);
      if (err != cudaSuccess) return err;
      res.ownsNext = true;
    }
  }
  if (nextOut) {
    const cudaError_t err = poolMalloc(&res.hops, bytes, stream);
    if (err != cudaSuccess) return err;
  }
  unsigned blocks = 0;
  cudaError_t err = gridFor(np * np, &blocks);
  if (err != cudaSuccess) return err;
  apsp_pad_kernel<<<blocks, kBasicThreads, 0, stream>>>(in, res.d, res.next, res.hops, n, np);
  err = cudaGetLastError();
  if (err != cudaSuccess) return err;

  if (progress) {
    for (cudaEvent_t& e : res.events) {
      err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
      if (err != cudaSuccess) return err;
    }
  }
  for (int64_t r = 0; r < rounds; ++r) {
    err = round(res.d, res.next, res.hops, np, factor, r, stream);
    if (err != cudaSuccess) return err;
    if (progress) {
      // Round r is queued behind round r − 1: wait for r − 1 only, so the GPU never runs dry.
      err = cudaEventRecord(res.events[r % 2], stream);
      if (err != cudaSuccess) return err;
      if (r > 0) {
        err = cudaEventSynchronize(res.events[(r - 1) % 2]);
        if (err != cudaSuccess) return err;
        progress(static_cast<int>(r), static_cast<int>(rounds));
      }
    }
  }
  if (np != n) {
    err = gridFor(n * n, &blocks);
    if (err != cudaSuccess) return err;
    apsp_unpad_kernel<<<blocks, kBasicThreads, 0, stream>>>(res.d, out, n, np);
    err = cudaGetLastError();
    if (err != cudaSuccess) return err;
    if (nextOut) {
      apsp_unpad_kernel<<<blocks, kBasicThreads, 0, stream>>>(res.next, nextOut, n, np);
      err = cudaGetLastError();
      if (err != cudaSuccess) return err;
    }
  }
  if (progress) {
    err = cudaEventSynchronize(res.events[(rounds - 1) % 2]);
    if (err != cudaSuccess) return err;
    progress(static_cast<int>(rounds), static_cast<int>(rounds));
  }
  return cudaSuccess;
}

cudaError_t launchPadRows(const int32_t* in, int32_t* band, int64_t n, int64_t np, int64_t row0, int64_t rows,
                          cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  unsigned blocks = 0;
  cudaError_t err = gridFor(rows * np, &blocks);
  if (err != cudaSuccess) return err;
  apsp_pad_rows_kernel<<<blocks, kBasicThreads, 0, stream>>>(in, band, n, np, row0, rows);
  return cudaGetLastError();
}

cudaError_t launchUnpadRows(const int32_t* band, int32_t* out, int64_t n, int64_t np, int64_t rows,
                            cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  unsigned blocks = 0;
  cudaError_t err = gridFor(rows * n, &blocks);
  if (err != cudaSuccess) return err;
  apsp_unpad_rows_kernel<<<blocks, kBasicThreads, 0, stream>>>(band, out, n, np, rows);
  return cudaGetLastError();
}

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
  apsp_random_graph_kernel<<<blocks, kBasicThreads, 0, stream>>>(out, n, row0, rows, threshold, minWeight,
                                                                 span, seed);
  return cudaGetLastError();
}

}  // namespace apsp
}  // namespace ck
