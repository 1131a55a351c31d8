// APSP step 3, `fast` (ours): min-plus tile products. Over 2_shared.cu the pivot block is 128 deep
// and closed by one block in shared memory, and phases 2 and 3 become one min-plus product kernel:
// 128×128 output tiles, 8×8 outputs per thread in registers, the k dimension streamed through
// shared memory with cp.async. Distances only (methods.cc runs 2_shared.cu's kernels with paths);
// the multi-GPU schemes (multi.cc) call launchFastPivot and launchFastMinPlus on row bands.
//
// H100 (density 0.05, bench/results): 309.2 ms at n = 16384 (14.22e12 relaxations/s, 97% of min-plus
// in registers with every SM busy), 135.7 ms at 12288, 2.01 ms at 2048; its rate against `shared`,
// from the pair protocol, is in bench/results/README.md.
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
// Bench method: fast
#include <climits>
#include <cstdint>
#include <utility>

#include "apsp/add_min.cuh"
#include "apsp/apsp.h"
#include "core/cp_async.h"

namespace ck {
namespace apsp {
namespace {

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
  if ((second && second->ld != job.ld) || job.ld > kMaxDistN) return cudaErrorInvalidValue;
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

cudaError_t roundFast(int32_t* d, int32_t* next, int32_t* hops, int64_t np, int factor, int64_t round,
                      cudaStream_t stream) {
  // Distances only: methods.cc sends runs with paths to the 32×32 path-tracking kernels.
  if (factor != kFastTile || next || hops) return cudaErrorInvalidValue;
  return roundFastDistances(d, np, round, stream);
}

}  // namespace apsp
}  // namespace ck
