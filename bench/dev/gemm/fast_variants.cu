// The SGEMM kernels and tile shapes the tuning runs timed beside the shipped one (bench/dev/gemm/NOTES.md),
// for gemm_harness.cu only: v2, the cp.async-pipelined register-tiled kernel that was launchFast
// before the hand-pipelined one (native/gemm/3_register_pipelined.cu), and other PipeConfig shapes.
// Built with the addon's gemm files by the line at the top of gemm_harness.cu.
#include <climits>
#include <cstdint>

#include "core/cp_async.h"
#include "core/math.h"
#include "gemm/common.cuh"
#include "gemm/gemm.h"

#include "gemm/register_pipeline.cuh"

namespace ck {
namespace gemm {
namespace detail {

__device__ __forceinline__ uint32_t smemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Copies Bytes from global to shared when `valid`, else writes zeros: out-of-range rows, columns and
// k of an edge tile become zeros, so the product loop needs no bounds checks. Below sm_80 there is
// no cp.async and the copy is an ordinary load and store (the pipeline then just has no overlap).
template <int Bytes>
__device__ __forceinline__ void copyAsync(uint32_t dst, const float* src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (Bytes == 16) {
    // .cg (L2 only): B rows are shared with other blocks through L2, never re-read by this SM's L1.
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
  } else {
    // .ca: eight lanes read the 32 bytes of one sector of an A row; .cg has no 4-byte form anyway.
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 4 : 0)
                 : "memory");
  }
#else
  if constexpr (Bytes == 16) {
    const float4 v = valid ? *reinterpret_cast<const float4*>(src) : make_float4(0.f, 0.f, 0.f, 0.f);
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "f"(v.x), "f"(v.y), "f"(v.z),
                 "f"(v.w)
                 : "memory");
  } else {
    asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(dst), "f"(valid ? *src : 0.0f) : "memory");
  }
#endif
}

// Block tile BM×BN, k-slab BK, warp tile WM×WN, thread tile (4·RM)×(4·RN) made of RM×RN 4×4 pieces
// spaced WM/RM rows and WN/RN columns apart. The spacing is what makes shared-memory reads cheap: at
// one k a warp's lanes read 4-float runs that are contiguous across lanes (LaneM runs of A, LaneN
// runs of B), so each LDS.128 touches at most 128 distinct bytes, one wavefront.
template <int BM_, int BN_, int BK_, int WM_, int WN_, int RM_, int RN_, int Stages_, int MinBlocks_,
          bool ARegs_ = false>
struct FastConfig {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, RM = RM_, RN = RN_;
  static constexpr int Stages = Stages_, MinBlocks = MinBlocks_;
  static constexpr int WarpsM = BM / WM, WarpsN = BN / WN;
  static constexpr int Threads = 32 * WarpsM * WarpsN;
  static constexpr int TM = 4 * RM, TN = 4 * RN;
  static constexpr int LaneM = WM / TM, LaneN = WN / TN;
  // ARegs: when A's rows allow float4 loads, stage A through registers (LDG.128, then four scalar
  // transposed stores after the slab's products) instead of one 4-byte cp.async per element.
  static constexpr bool ARegs = ARegs_;
  static constexpr int AVecPerThread = BM * BK / 4 / Threads;
  static constexpr int ARowsPerPassVec = Threads / (BK / 4);
  // The staging stores (lanes: 4 k-groups × 8 rows) hit a 2-way bank conflict with APitch ≡ 4: k-groups
  // 0 and 2 share banks. Measured on 4096³: 18M conflict wavefronts against 400M for the LDS.128 reads
  // (4%), so it is left alone: an XOR swizzle needs one more register than the 128 that two blocks
  // per SM allow (ptxas spilled), and a 16-row × 2-group mapping without conflicts ran 16% slower.
  // A is stored transposed, sA[k][m]. Pitch ≡ 4 (mod 32) words: the cp.async loader's lanes write
  // (k = lane % 8, m = base + lane / 8), i.e. bank 4·(lane % 8) + lane / 8 + const: all 32 banks once.
  // It also keeps every row 16-byte aligned for the float4 reads.
  static constexpr int APitch = BM + 4;
  static constexpr int BPitch = BN;  // float4 writes and reads run along rows: conflict-free as is
  static constexpr int AStage = BK * APitch, BStage = BK * BPitch;
  static constexpr size_t Smem = static_cast<size_t>(Stages) * (AStage + BStage) * sizeof(float);
  // A loader: 8 lanes along k × (Threads / 8) rows per pass.
  static constexpr int ARowsPerPass = Threads / 8;
  // B loader: vector lanes cover a row in float4s, scalar lanes in floats.
  static constexpr int BRowsPerPassVec = Threads / (BN / 4);
  static constexpr int BRowsPerPassScalar = Threads / BN;
  static_assert(LaneM * LaneN == 32, "a warp is 32 lanes");
  static_assert(WM % TM == 0 && WN % TN == 0 && BM % WM == 0 && BN % WN == 0, "tile shape");
  static_assert(BM % 32 == 0 && BK % 8 == 0 && BM % ARowsPerPass == 0, "A loader");
  static_assert(BRowsPerPassScalar >= 1 && BK % BRowsPerPassVec == 0 && BK % BRowsPerPassScalar == 0,
                "B loader");
  static_assert(Stages >= 2, "pipeline");
  static_assert(!ARegs || ((BM * BK / 4) % Threads == 0 && BK <= 16), "A register staging");
};

// Vec: n % 4 == 0 and B, C 16-byte aligned, so every 4-column group of B and C is one aligned float4
// that is either wholly inside the matrix or wholly outside. VecA: the same for A's rows (k % 4 == 0).
template <class Cfg, bool Vec, bool VecA>
__global__ void __launch_bounds__(Cfg::Threads, Cfg::MinBlocks)
    sgemm_fast_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                      int64_t m, int64_t k, int64_t n, int tilesM, int tilesN) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, Stages = Cfg::Stages;
  constexpr int RM = Cfg::RM, RN = Cfg::RN;
  extern __shared__ __align__(16) float smem[];
  float* const sA = smem;
  float* const sB = smem + Stages * Cfg::AStage;

  const int tid = threadIdx.x;
  const int lane = tid % 32, warp = tid / 32;

  int tm, tn;
  {
    const int bandSize = kBandTiles * tilesN;
    const int band = blockIdx.x / bandSize;
    const int first = band * kBandTiles;
    const int rowsInBand = min(tilesM - first, kBandTiles);
    const int inBand = blockIdx.x - band * bandSize;
    tm = first + inBand % rowsInBand;
    tn = inBand / rowsInBand;
  }
  const int64_t m0 = static_cast<int64_t>(tm) * BM, n0 = static_cast<int64_t>(tn) * BN;

  // Loader state, fixed for the whole block: one source pointer per operand (row clamped into the
  // matrix so it stays a valid address), the stride between passes, and how many passes are in range.
  // Keeping this to a few registers matters: the 8×8 accumulators already take 64 of the 128.
  const int aK = tid % 8, aRow = tid / 8;
  const float* const aSrc = A + min(m0 + aRow, m - 1) * k + aK;
  const int64_t aPassStride = static_cast<int64_t>(Cfg::ARowsPerPass) * k;
  const int aRowsLeft =
      static_cast<int>(min(m - m0 - aRow, static_cast<int64_t>(BM)));  // rows r < this are in A
  constexpr int BLanesPerRow = Vec ? BN / 4 : BN;
  constexpr int BRowsPerPass = Vec ? Cfg::BRowsPerPassVec : Cfg::BRowsPerPassScalar;
  const int bCol = (tid % BLanesPerRow) * (Vec ? 4 : 1), bRow = tid / BLanesPerRow;
  const bool bColOk = n0 + bCol < n;
  const float* const bSrc = B + (bColOk ? n0 + bCol : 0) + static_cast<int64_t>(bRow) * n;
  const int64_t bPassStride = static_cast<int64_t>(BRowsPerPass) * n;
  const uint32_t sABase = smemAddr(sA) + (aK * Cfg::APitch + aRow) * 4;
  const uint32_t sBBase = smemAddr(sB) + (bRow * Cfg::BPitch + bCol) * 4;

  // Register-staged A (Cfg::ARegs and float4-able rows): each thread loads BM·BK/4/Threads float4
  // of A right after the barrier and stores them transposed after the slab's products, so the load
  // latency hides behind 1024 FFMAs. Against one 4-byte cp.async per element (8 per thread per slab
  // with their address and predicate arithmetic) this measured 5% faster on 4096³.
  constexpr bool ARegs = Cfg::ARegs && VecA;
  const int aK4 = tid % (BK / 4), aRowV = tid / (BK / 4);
  const float* const aSrcV = A + min(m0 + aRowV, m - 1) * k + aK4 * 4;
  const int64_t aPassStrideV = static_cast<int64_t>(Cfg::ARowsPerPassVec) * k;
  const int aRowsLeftV = static_cast<int>(min(m - m0 - aRowV, static_cast<int64_t>(BM)));
  float4 aReg[ARegs ? Cfg::AVecPerThread : 1];
  auto loadARegs = [&](int64_t k0) {
    const int kLeft = static_cast<int>(min(k - k0, static_cast<int64_t>(BK)));
#pragma unroll
    for (int p = 0; p < Cfg::AVecPerThread; ++p) {
      // k % 4 == 0 here, so a float4 of A is wholly inside or wholly outside.
      const bool ok = p * Cfg::ARowsPerPassVec < aRowsLeftV && aK4 * 4 < kLeft;
      aReg[p] = ok ? *reinterpret_cast<const float4*>(aSrcV + k0 + p * aPassStrideV)
                   : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  };
  auto storeARegs = [&](int stage) {
    float* d = sA + stage * Cfg::AStage + aK4 * 4 * Cfg::APitch + aRowV;
#pragma unroll
    for (int p = 0; p < Cfg::AVecPerThread; ++p) {
      d[0 * Cfg::APitch + p * Cfg::ARowsPerPassVec] = aReg[p].x;
      d[1 * Cfg::APitch + p * Cfg::ARowsPerPassVec] = aReg[p].y;
      d[2 * Cfg::APitch + p * Cfg::ARowsPerPassVec] = aReg[p].z;
      d[3 * Cfg::APitch + p * Cfg::ARowsPerPassVec] = aReg[p].w;
    }
  };

  auto loadTile = [&](int stage, int64_t k0) {
    const int kLeft =
        static_cast<int>(min(k - k0, static_cast<int64_t>(BK)));  // k indices < this are in range
    if constexpr (!ARegs) {
      const uint32_t dA = sABase + stage * Cfg::AStage * 4;
      const float* srcA = aSrc + k0;
#pragma unroll
      for (int p = 0; p < BM / Cfg::ARowsPerPass; ++p) {
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
          const bool ok = p * Cfg::ARowsPerPass < aRowsLeft && aK + kk < kLeft;
          // An out-of-range source is never read (src-size 0) but must still be a valid address.
          copyAsync<4>(dA + (kk * Cfg::APitch + p * Cfg::ARowsPerPass) * 4,
                       ok ? srcA + p * aPassStride + kk : A, ok);
        }
      }
    }
    const uint32_t dB = sBBase + stage * Cfg::BStage * 4;
    const float* srcB = bSrc + k0 * n;
#pragma unroll
    for (int p = 0; p < BK / BRowsPerPass; ++p) {
      const bool ok = bColOk && bRow + p * BRowsPerPass < kLeft;
      copyAsync<Vec ? 16 : 4>(dB + p * BRowsPerPass * Cfg::BPitch * 4, ok ? srcB + p * bPassStride : B, ok);
    }
  };

  const int wm0 = (warp / Cfg::WarpsN) * Cfg::WM, wn0 = (warp % Cfg::WarpsN) * Cfg::WN;
  const int lm = lane / Cfg::LaneN, ln = lane % Cfg::LaneN;
  const int aOff = wm0 + lm * 4, bOff = wn0 + ln * 4;

  float acc[Cfg::TM][Cfg::TN];
#pragma unroll
  for (int i = 0; i < Cfg::TM; ++i)
#pragma unroll
    for (int j = 0; j < Cfg::TN; ++j) acc[i][j] = 0.0f;

  const int kTiles = static_cast<int>(ceilDiv(k, BK));
#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < kTiles) {
      if constexpr (ARegs) {
        loadARegs(static_cast<int64_t>(s) * BK);
        storeARegs(s);
      }
      loadTile(s, static_cast<int64_t>(s) * BK);
    }
    copyCommit();  // empty groups too: wait_group counts groups, not tiles
  }

  int stage = 0;
  for (int kt = 0; kt < kTiles; ++kt) {
    copyWait<Stages - 2>();
    // One barrier per slab: it publishes slab kt to every warp and also proves every warp is done
    // with slab kt - 1, whose stage the load below overwrites.
    __syncthreads();
    const int next = kt + Stages - 1;
    int nextStage = stage + Stages - 1;
    if (nextStage >= Stages) nextStage -= Stages;
    if (next < kTiles) {
      if constexpr (ARegs) loadARegs(static_cast<int64_t>(next) * BK);
      loadTile(nextStage, static_cast<int64_t>(next) * BK);
    }
    copyCommit();

    const float* a = sA + stage * Cfg::AStage + aOff;
    const float* b = sB + stage * Cfg::BStage + bOff;
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float4 fa[RM], fb[RN];
#pragma unroll
      for (int i = 0; i < RM; ++i)
        fa[i] = *reinterpret_cast<const float4*>(a + kk * Cfg::APitch + i * (Cfg::WM / RM));
#pragma unroll
      for (int j = 0; j < RN; ++j)
        fb[j] = *reinterpret_cast<const float4*>(b + kk * Cfg::BPitch + j * (Cfg::WN / RN));
#pragma unroll
      for (int i = 0; i < RM; ++i) {
        const float av[4] = {fa[i].x, fa[i].y, fa[i].z, fa[i].w};
#pragma unroll
        for (int j = 0; j < RN; ++j) {
          const float bv[4] = {fb[j].x, fb[j].y, fb[j].z, fb[j].w};
#pragma unroll
          for (int ii = 0; ii < 4; ++ii)
#pragma unroll
            for (int jj = 0; jj < 4; ++jj)
              acc[i * 4 + ii][j * 4 + jj] = fmaf(av[ii], bv[jj], acc[i * 4 + ii][j * 4 + jj]);
        }
      }
    }
    // nextStage held slab kt - 1, which every warp finished before this iteration's barrier.
    if constexpr (ARegs)
      if (next < kTiles) storeARegs(nextStage);
    if (++stage == Stages) stage = 0;
  }
  copyWait<0>();  // only empty groups can be pending here; leave none behind at exit

  storeCTile<Cfg, Vec>(C, m, n, m0 + aOff, n0 + bOff, acc);
}

template <class Cfg>
cudaError_t launchFastWith(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n,
                           cudaStream_t stream) {
  const int64_t tilesM = ceilDiv(m, Cfg::BM), tilesN = ceilDiv(n, Cfg::BN);
  // Tile and slab indices are int; 2^31 of either would be an operand of over 2^34 floats.
  if (tilesM * tilesN > INT_MAX || ceilDiv(k, Cfg::BK) > INT_MAX) return cudaErrorInvalidValue;
  const bool vec = n % 4 == 0 && aligned16(B) && aligned16(C);
  auto kernel = vec ? sgemm_fast_kernel<Cfg, true, false> : sgemm_fast_kernel<Cfg, false, false>;
  if constexpr (Cfg::ARegs) {
    if (k % 4 == 0 && aligned16(A))
      kernel = vec ? sgemm_fast_kernel<Cfg, true, true> : sgemm_fast_kernel<Cfg, false, true>;
  }
  cudaError_t err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Cfg::Smem));
  if (err != cudaSuccess) return err;
  kernel<<<static_cast<unsigned>(tilesM * tilesN), Cfg::Threads, Cfg::Smem, stream>>>(
      A, B, C, m, k, n, static_cast<int>(tilesM), static_cast<int>(tilesN));
  return cudaGetLastError();
}

//                                    BM   BN  BK  WM  WN RM RN St MinBlocks ARegs
using Fast128x128k16r = FastConfig<128, 128, 16, 32, 64, 2, 2, 3, 2, true>;

//                           BM   BN  BK  WM  WN RM RN MinBlocks
using Pipe128x128k16 = PipeConfig<128, 128, 16, 32, 64, 2, 2, 2>;  // the shipped shape
using Pipe128x128k8 = PipeConfig<128, 128, 8, 32, 64, 2, 2, 2>;
using Pipe256x128k16 = PipeConfig<256, 128, 16, 64, 64, 4, 2, 1>;
using Pipe128x256k16 = PipeConfig<128, 256, 16, 64, 64, 2, 4, 1>;
using Pipe256x128k8 = PipeConfig<256, 128, 8, 64, 64, 4, 2, 1>;

struct Variant {
  const char* name;
  cudaError_t (*launch)(const float*, const float*, float*, int64_t, int64_t, int64_t, cudaStream_t);
};

// Entry 0 is the shipped shape (launchFast), timed beside the others in the same run.
const Variant kVariants[] = {
    {"pipe 128x128x16 w32x64", launchPipeWith<Pipe128x128k16>},
    {"v2 128x128x16 w32x64 3st regA", launchFastWith<Fast128x128k16r>},
    {"pipe 128x128x8 w32x64", launchPipeWith<Pipe128x128k8>},
    {"pipe 256x128x16 w64x64 16x8", launchPipeWith<Pipe256x128k16>},
    {"pipe 128x256x16 w64x64 8x16", launchPipeWith<Pipe128x256k16>},
    {"pipe 256x128x8 w64x64 16x8", launchPipeWith<Pipe256x128k8>},
};
constexpr int kVariantCount = sizeof(kVariants) / sizeof(kVariants[0]);

int fastVariantCount() {
  return kVariantCount;
}

const char* fastVariantName(int variant) {
  return variant >= 0 && variant < kVariantCount ? kVariants[variant].name : "invalid";
}

cudaError_t launchFastVariant(int variant, const float* A, const float* B, float* C, int64_t m, int64_t k,
                              int64_t n, cudaStream_t stream) {
  if (variant < 0 || variant >= kVariantCount) return cudaErrorInvalidValue;
  cudaError_t err;
  if (trivialShape(C, m, k, n, stream, err)) return err;
  return kVariants[variant].launch(A, B, C, m, k, n, stream);
}

}  // namespace detail
}  // namespace gemm
}  // namespace ck
