// The hand-pipelined register-tiled SGEMM kernel (step 3, 3_register_pipelined.cu, picks its shape
// and launches it; bench/dev/gemm/fast_variants.cu times other shapes of the same template).
#pragma once

#include <climits>
#include <cstdint>
#include <type_traits>

#include "core/math.h"
#include "gemm/common.cuh"

namespace ck {
namespace gemm {
namespace detail {

// v2 (bench/dev/gemm/fast_variants.cu) leaves the scheduling of its shared-memory reads to ptxas
// and its B copies to a 3-stage cp.async ring. This kernel writes the pipeline out by hand (faster
// than v2 at 4096³ and 8192³; bench/dev/gemm/NOTES.md has the numbers):
//  - fragments are double-buffered in registers: k + 1's A and B fragments are read from shared
//    memory while the FFMAs of k run, so an FFMA never waits on an LDS it just issued;
//  - both operands are staged global → registers → shared, in two shared buffers: slab t + 1 is
//    loaded (LDG) when slab t starts and stored (STS) when slab t's last k starts, which needs one
//    barrier per slab and keeps each LDG a whole slab of FFMAs away from its use;
//  - A goes to shared memory transposed with pitch BM + 4, which keeps every row 16-byte aligned
//    for the LDS.128 reads and spreads the staging stores over the banks (see storeShared).
// Vec / VecA pick float4 or scalar global loads (n % 4, k % 4 and pointer alignment), so the same
// pipeline serves every shape; edge tiles are zero-filled when staged, as in v2.
template <int BM_, int BN_, int BK_, int WM_, int WN_, int RM_, int RN_, int MinBlocks_>
struct PipeConfig {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, RM = RM_, RN = RN_;
  static constexpr int MinBlocks = MinBlocks_;
  static constexpr int WarpsM = BM / WM, WarpsN = BN / WN;
  static constexpr int Threads = 32 * WarpsM * WarpsN;
  static constexpr int TM = 4 * RM, TN = 4 * RN;
  static constexpr int LaneM = WM / TM, LaneN = WN / TN;
  static constexpr int APitch = BM + 4;  // 4·APitch ≡ 16 (mod 32) words: see the staging store
  static constexpr int BPitch = BN;
  static constexpr int AStage = BK * APitch, BStage = BK * BPitch;
  static constexpr size_t Smem = 2 * static_cast<size_t>(AStage + BStage) * sizeof(float);
  // Staging: each thread holds AVec float4 of A (4 consecutive k of one row) and BVec float4 of B
  // (4 consecutive columns of one k-row) per slab.
  static constexpr int AVec = BM * BK / 4 / Threads, BVec = BK * BN / 4 / Threads;
  static constexpr int ARowsPerPass = Threads / (BK / 4), BRowsPerPass = Threads / (BN / 4);
  static_assert(LaneM * LaneN == 32, "a warp is 32 lanes");
  static_assert(WM % TM == 0 && WN % TN == 0 && BM % WM == 0 && BN % WN == 0, "tile shape");
  static_assert(AVec >= 1 && AVec * 4 * Threads == BM * BK && BVec >= 1 && BVec * 4 * Threads == BK * BN,
                "staging");
  static_assert(BM % 32 == 0 && (4 * APitch) % 32 == 16, "A staging store bank pattern");
};

// Split-K (Split): block row blockIdx.y sums k in [y·kSplit, (y + 1)·kSplit) ∩ [0, k) (kSplit a
// multiple of BK, so A's and B's 16-byte alignment holds) into its own m×n slice C + y·m·n. Its own
// instantiation: the offsets cost the scalar-load kernels 40–84 bytes of spill stores, which the unsplit
// kernel (gridDim.y = 1, the whole product into C) is spared.
template <class Cfg, bool Vec, bool VecA, bool Split>
__global__ void __launch_bounds__(Cfg::Threads, Cfg::MinBlocks)
    sgemm_pipe_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                      int64_t m, int64_t k, int64_t n, int tilesM, int tilesN, int64_t kSplit) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, TM = Cfg::TM, TN = Cfg::TN;
  constexpr int RM = Cfg::RM, RN = Cfg::RN;
  // k stays A's row stride; kLen is this block row's share of it.
  int64_t kLen = k;
  if constexpr (Split) {
    const int64_t kBegin = static_cast<int64_t>(blockIdx.y) * kSplit;
    kLen = min(kSplit, k - kBegin);
    A += kBegin;
    B += kBegin * n;
    C += static_cast<int64_t>(blockIdx.y) * m * n;
  }
  // Dynamic shared memory: the 1-block-per-SM tiles at BK = 16 need more than the 48 KB of a static array.
  extern __shared__ __align__(16) float smem[];
  auto sA = reinterpret_cast<float(*)[BK][Cfg::APitch]>(smem);  // [2][BK][APitch]
  auto sB = reinterpret_cast<float(*)[BK][Cfg::BPitch]>(smem + 2 * Cfg::AStage);

  const int tid = threadIdx.x;
  const int lane = tid % 32, warp = tid / 32;

  int64_t m0, n0;
  tileOrigin<BM, BN>(tilesM, tilesN, m0, n0);

  // A staging: lane → (row tid / (BK/4), k-group tid % (BK/4)); pass p adds ARowsPerPass rows.
  // Rows past m are clamped (a valid address) and zero-filled; k past the end likewise. The loader
  // state is two pointers that step one slab at a time and a few ints: at two blocks per SM the
  // kernel has 128 registers, 96 of them taken by the accumulators and the two fragment buffers.
  const int aKq = tid % (BK / 4), aRow = tid / (BK / 4);
  const float* aSrc = A + min(m0 + aRow, m - 1) * k + aKq * 4;
  const int aRowsLeft = static_cast<int>(min(m - m0 - aRow, static_cast<int64_t>(BM)));
  // B staging: lane → (k-row tid / (BN/4), column group tid % (BN/4)); pass p adds BRowsPerPass rows.
  const int bCol = (tid % (BN / 4)) * 4, bRow = tid / (BN / 4);
  const int bColsLeft = static_cast<int>(min(n - n0 - bCol, static_cast<int64_t>(4)));  // may be ≤ 0
  const float* bSrc = B + min(n0 + bCol, n - 1) + static_cast<int64_t>(bRow) * n;
  const int kTiles = static_cast<int>(ceilDiv(kLen, BK));
  const int kLast =
      static_cast<int>(kLen - static_cast<int64_t>(kTiles - 1) * BK);  // 1..BK: the last slab's k

  float4 aReg[Cfg::AVec], bReg[Cfg::BVec];
  // Loads slab t into the staging registers and steps the source pointers to slab t + 1. Only the
  // last slab can be partial in k; t == kTiles (past the end) loads nothing and stages zeros.
  // Vector paths: whether this thread's float4s are in range, in a full slab and in the last one.
  const bool aFull = aRowsLeft > 0, aLastOk = aFull && aKq * 4 < kLast;
  auto loadGlobal = [&](int t) {
    const bool last = t == kTiles - 1;
    const int kLeft = t >= kTiles ? 0 : last ? kLast : BK;  // k indices < this are in range
#pragma unroll
    for (int p = 0; p < Cfg::AVec; ++p) {
      const bool rowOk = p * Cfg::ARowsPerPass < aRowsLeft;
      const float* src = aSrc + static_cast<int64_t>(p) * Cfg::ARowsPerPass * k;
      if constexpr (VecA) {  // k % 4 == 0: a float4 of A is wholly inside or wholly outside
        const bool ok = Cfg::AVec == 1 ? t < kTiles && (last ? aLastOk : aFull) : rowOk && aKq * 4 < kLeft;
        aReg[p] = ok ? *reinterpret_cast<const float4*>(src) : make_float4(0.f, 0.f, 0.f, 0.f);
      } else {
        const int kk = aKq * 4;
        aReg[p].x = rowOk && kk + 0 < kLeft ? src[0] : 0.f;
        aReg[p].y = rowOk && kk + 1 < kLeft ? src[1] : 0.f;
        aReg[p].z = rowOk && kk + 2 < kLeft ? src[2] : 0.f;
        aReg[p].w = rowOk && kk + 3 < kLeft ? src[3] : 0.f;
      }
    }
#pragma unroll
    for (int p = 0; p < Cfg::BVec; ++p) {
      const bool rowOk = bRow + p * Cfg::BRowsPerPass < kLeft;
      const float* src = bSrc + static_cast<int64_t>(p) * Cfg::BRowsPerPass * n;
      if constexpr (Vec) {  // n % 4 == 0: a float4 of B is wholly inside or wholly outside
        bReg[p] =
            rowOk && bColsLeft > 0 ? *reinterpret_cast<const float4*>(src) : make_float4(0.f, 0.f, 0.f, 0.f);
      } else {
        bReg[p].x = rowOk && bColsLeft > 0 ? src[0] : 0.f;
        bReg[p].y = rowOk && bColsLeft > 1 ? src[1] : 0.f;
        bReg[p].z = rowOk && bColsLeft > 2 ? src[2] : 0.f;
        bReg[p].w = rowOk && bColsLeft > 3 ? src[3] : 0.f;
      }
    }
    aSrc += BK;
    bSrc += BK * n;
  };
  // A transposed: a warp's stores of one component cover 32 / (BK/4) rows × BK/4 k-groups, the
  // k-groups 4 rows of sA apart, 4·APitch ≡ 16 (mod 32) banks. At BK = 8 (16 rows × 2 groups) the
  // 32 lanes hit 32 different banks; at BK = 16 (8 rows × 4 groups) groups 0 and 2 share banks, a
  // 2-way conflict on 4 of the 5 stores per slab (17 M conflict wavefronts on 4096³, against 400 M
  // for the fragment reads), left as is: a swizzle costs a register the 128×128 tile does not have.
  auto storeShared = [&](int buf) {
#pragma unroll
    for (int p = 0; p < Cfg::AVec; ++p) {
      float* d = &sA[buf][aKq * 4][aRow + p * Cfg::ARowsPerPass];
      d[0 * Cfg::APitch] = aReg[p].x;
      d[1 * Cfg::APitch] = aReg[p].y;
      d[2 * Cfg::APitch] = aReg[p].z;
      d[3 * Cfg::APitch] = aReg[p].w;
    }
#pragma unroll
    for (int p = 0; p < Cfg::BVec; ++p)
      *reinterpret_cast<float4*>(&sB[buf][bRow + p * Cfg::BRowsPerPass][bCol]) = bReg[p];
  };

  // Thread tile: RM×RN pieces of 4×4, spaced WM/RM rows and WN/RN columns apart (as in v2).
  const int wm0 = (warp / Cfg::WarpsN) * Cfg::WM, wn0 = (warp % Cfg::WarpsN) * Cfg::WN;
  const int lm = lane / Cfg::LaneN, ln = lane % Cfg::LaneN;
  const int aOff = wm0 + lm * 4, bOff = wn0 + ln * 4;

  float4 fa[2][RM], fb[2][RN];
  auto loadFrag = [&](int slot, int buf, int kk) {
#pragma unroll
    for (int i = 0; i < RM; ++i)
      fa[slot][i] = *reinterpret_cast<const float4*>(&sA[buf][kk][aOff + i * (Cfg::WM / RM)]);
#pragma unroll
    for (int j = 0; j < RN; ++j)
      fb[slot][j] = *reinterpret_cast<const float4*>(&sB[buf][kk][bOff + j * (Cfg::WN / RN)]);
  };

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  loadGlobal(0);
  storeShared(0);
  __syncthreads();
  loadFrag(0, 0, 0);
  int buf = 0;
  for (int kt = 0; kt < kTiles; ++kt) {
    // Unconditional on purpose (past the end it stages zeros): with `if (more)` here and around the
    // store below, the compiler merged the two and sank these loads to just before the store, so
    // every slab waited out a global-memory latency.
    loadGlobal(kt + 1);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const int cur = kk % 2;
      if (kk == BK - 1) {
        // Every warp finished reading buffer buf ^ 1 (slab kt - 1) before the previous barrier.
        storeShared(buf ^ 1);
        __syncthreads();
        loadFrag(cur ^ 1, buf ^ 1, 0);  // slab kt + 1's first fragments (unused after the last)
      } else {
        loadFrag(cur ^ 1, buf, kk + 1);
      }
      float av[TM], bv[TN];
#pragma unroll
      for (int i = 0; i < RM; ++i) {
        av[4 * i + 0] = fa[cur][i].x;
        av[4 * i + 1] = fa[cur][i].y;
        av[4 * i + 2] = fa[cur][i].z;
        av[4 * i + 3] = fa[cur][i].w;
      }
#pragma unroll
      for (int j = 0; j < RN; ++j) {
        bv[4 * j + 0] = fb[cur][j].x;
        bv[4 * j + 1] = fb[cur][j].y;
        bv[4 * j + 2] = fb[cur][j].z;
        bv[4 * j + 3] = fb[cur][j].w;
      }
      // Rows in order, columns back and forth: consecutive FFMAs share an operand (a along a row,
      // b at the turn), which the operand reuse cache can serve instead of the register banks.
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int jj = 0; jj < TN; ++jj) {
          const int j = i % 2 ? TN - 1 - jj : jj;
          acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
    }
    buf ^= 1;
  }

  // Recomputed rather than kept live through the main loop, where every register counts.
  tileOrigin<BM, BN>(tilesM, tilesN, m0, n0);
  storeCTile<Cfg, Vec>(C, m, n, m0 + aOff, n0 + bOff, acc);
}

// Launches the kernel over C's tiles and `splits` pieces of k, kSplit each (a multiple of BK, with
// (splits - 1)·kSplit < k): piece s writes its part of A·B to out + s·m·n.
template <class Cfg>
cudaError_t launchPipeSplit(const float* A, const float* B, float* out, int64_t m, int64_t k, int64_t n,
                            int splits, int64_t kSplit, cudaStream_t stream) {
  const int64_t tilesM = ceilDiv(m, Cfg::BM), tilesN = ceilDiv(n, Cfg::BN);
  if (tilesM * tilesN > INT_MAX || ceilDiv(k, Cfg::BK) > INT_MAX || splits < 1 || splits > kMaxGridY)
    return cudaErrorInvalidValue;
  const bool vec = n % 4 == 0 && aligned16(B) && aligned16(out);
  const bool vecA = k % 4 == 0 && aligned16(A);
  auto pick = [&](auto split) {
    constexpr bool S = decltype(split)::value;
    return vec ? (vecA ? sgemm_pipe_kernel<Cfg, true, true, S> : sgemm_pipe_kernel<Cfg, true, false, S>)
               : (vecA ? sgemm_pipe_kernel<Cfg, false, true, S> : sgemm_pipe_kernel<Cfg, false, false, S>);
  };
  auto kernel = splits > 1 ? pick(std::true_type{}) : pick(std::false_type{});
  if constexpr (Cfg::Smem > 48 * 1024) {  // over the default limit: opt in (the 128×128 tiles need not)
    const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(Cfg::Smem));
    if (err != cudaSuccess) return err;
  }
  const dim3 grid(static_cast<unsigned>(tilesM * tilesN), static_cast<unsigned>(splits));
  kernel<<<grid, Cfg::Threads, Cfg::Smem, stream>>>(A, B, out, m, k, n, static_cast<int>(tilesM),
                                                    static_cast<int>(tilesN), kSplit);
  return cudaGetLastError();
}

// The whole product in one piece, into C.
template <class Cfg>
cudaError_t launchPipeWith(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n,
                           cudaStream_t stream) {
  return launchPipeSplit<Cfg>(A, B, C, m, k, n, 1, k, stream);
}

}  // namespace detail
}  // namespace gemm
}  // namespace ck
