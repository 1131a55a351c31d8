#include <climits>
#include <cstdint>

#include "core/cp_async.h"
#include "core/math.h"
#include "gemm.h"

namespace ck {
namespace gemm {
namespace detail {

inline bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Shapes every launcher handles the same way. Returns true when nothing is left to launch.
inline bool trivialShape(float* C, int64_t m, int64_t k, int64_t n, cudaStream_t stream, cudaError_t& err) {
  err = cudaSuccess;
  if (m < 0 || k < 0 || n < 0) {
    err = cudaErrorInvalidValue;
    return true;
  }
  if (m == 0 || n == 0) return true;
  if (k == 0) {  // an empty sum: the kernels would never read A or B, which may then be null
    err = cudaMemsetAsync(C, 0, static_cast<size_t>(m) * static_cast<size_t>(n) * sizeof(float), stream);
    return true;
  }
  return false;
}

// gridDim.y (and z) is capped at 65535, so kernels with rows on y walk them grid-strided.
constexpr int64_t kMaxGridY = 65535;

// ---------------------------------------------------------------------------------------------
// naive

constexpr int kNaiveBlockX = 32;  // a warp spans 32 consecutive columns: B and C accesses coalesce
constexpr int kNaiveBlockY = 8;

__global__ void __launch_bounds__(kNaiveBlockX* kNaiveBlockY)
    sgemm_naive_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                       int64_t m, int64_t k, int64_t n) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= n) return;
  for (int64_t row = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; row < m;
       row += static_cast<int64_t>(gridDim.y) * blockDim.y) {
    const float* a = A + row * k;
    const float* b = B + col;
    float s = 0.0f;
    for (int64_t i = 0; i < k; ++i, b += n) s = fmaf(a[i], *b, s);
    C[row * n + col] = s;
  }
}

// ---------------------------------------------------------------------------------------------
// shared

// The report's layout needs no padding: in the product loop a warp reads sA[ty][i] (one address per
// row of threads, a broadcast) and sB[i][tx] (consecutive words).
template <int T>
__global__ void __launch_bounds__(T* T)
    sgemm_shared_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                        int64_t m, int64_t k, int64_t n) {
  __shared__ float sA[T][T];
  __shared__ float sB[T][T];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * T + tx;
  const bool colIn = col < n;
  // Threads outside C stay in the loop: they still load tile elements and reach every barrier.
  for (int64_t row0 = static_cast<int64_t>(blockIdx.y) * T; row0 < m;
       row0 += static_cast<int64_t>(gridDim.y) * T) {
    const int64_t row = row0 + ty;
    const bool rowIn = row < m;
    float s = 0.0f;
    for (int64_t k0 = 0; k0 < k; k0 += T) {
      sA[ty][tx] = rowIn && k0 + tx < k ? A[row * k + k0 + tx] : 0.0f;
      sB[ty][tx] = colIn && k0 + ty < k ? B[(k0 + ty) * n + col] : 0.0f;
      __syncthreads();
#pragma unroll
      for (int i = 0; i < T; ++i) s = fmaf(sA[ty][i], sB[i][tx], s);
      __syncthreads();
    }
    if (rowIn && colIn) C[row * n + col] = s;
  }
}

template <int T>
cudaError_t launchSharedWith(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n,
                             cudaStream_t stream) {
  const int64_t gx = ceilDiv(n, T);
  if (gx > INT_MAX) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(gx),
                  static_cast<unsigned>(ceilDiv(m, T) < kMaxGridY ? ceilDiv(m, T) : kMaxGridY));
  sgemm_shared_kernel<T><<<grid, dim3(T, T), 0, stream>>>(A, B, C, m, k, n);
  return cudaGetLastError();
}

// ---------------------------------------------------------------------------------------------
// fast

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

// Tiles run in bands of kBandTiles tile-rows, column by column inside a band, so the blocks resident
// at one time share a few A row-slabs and B column-slabs through L2 instead of sweeping all of B.
constexpr int kBandTiles = 8;

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

#pragma unroll
  for (int i = 0; i < RM; ++i) {
#pragma unroll
    for (int ii = 0; ii < 4; ++ii) {
      const int64_t gm = m0 + aOff + i * (Cfg::WM / RM) + ii;
      if (gm >= m) continue;
      float* crow = C + gm * n;
#pragma unroll
      for (int j = 0; j < RN; ++j) {
        const int64_t gn = n0 + bOff + j * (Cfg::WN / RN);
        const float* v = &acc[i * 4 + ii][j * 4];
        if constexpr (Vec) {
          if (gn < n) *reinterpret_cast<float4*>(crow + gn) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
          for (int jj = 0; jj < 4; ++jj)
            if (gn + jj < n) crow[gn + jj] = v[jj];
        }
      }
    }
  }
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

// ---------------------------------------------------------------------------------------------
// fast, register-pipelined (v4: launchFast)
//
// v2 above leaves the scheduling of its shared-memory reads to ptxas and its B copies to a 3-stage
// cp.async ring. This kernel writes the pipeline out by hand (measured 0.97× cuBLAS on 4096³ and
// 8192³ against v2's 0.93×; bench/dev/gemm/NOTES.md has the numbers):
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

// Block → tile: bands of kBandTiles tile-rows, column by column inside a band (see sgemm_fast_kernel).
template <int BM, int BN>
__device__ __forceinline__ void tileOrigin(int tilesM, int tilesN, int64_t& m0, int64_t& n0) {
  const int bandSize = kBandTiles * tilesN;
  const int band = blockIdx.x / bandSize;
  const int first = band * kBandTiles;
  const int rowsInBand = min(tilesM - first, kBandTiles);
  const int inBand = blockIdx.x - band * bandSize;
  m0 = static_cast<int64_t>(first + inBand % rowsInBand) * BM;
  n0 = static_cast<int64_t>(inBand / rowsInBand) * BN;
}

template <class Cfg, bool Vec, bool VecA>
__global__ void __launch_bounds__(Cfg::Threads, Cfg::MinBlocks)
    sgemm_pipe_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                      int64_t m, int64_t k, int64_t n, int tilesM, int tilesN) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, TM = Cfg::TM, TN = Cfg::TN;
  constexpr int RM = Cfg::RM, RN = Cfg::RN;
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
  const int kTiles = static_cast<int>(ceilDiv(k, BK));
  const int kLast = static_cast<int>(k - static_cast<int64_t>(kTiles - 1) * BK);  // 1..BK: the last slab's k

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
#pragma unroll
  for (int i = 0; i < RM; ++i) {
#pragma unroll
    for (int ii = 0; ii < 4; ++ii) {
      const int64_t gm = m0 + aOff + i * (Cfg::WM / RM) + ii;
      if (gm >= m) continue;
      float* crow = C + gm * n;
#pragma unroll
      for (int j = 0; j < RN; ++j) {
        const int64_t gn = n0 + bOff + j * (Cfg::WN / RN);
        const float* v = &acc[i * 4 + ii][j * 4];
        if constexpr (Vec) {
          if (gn < n) *reinterpret_cast<float4*>(crow + gn) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
          for (int jj = 0; jj < 4; ++jj)
            if (gn + jj < n) crow[gn + jj] = v[jj];
        }
      }
    }
  }
}

template <class Cfg>
cudaError_t launchPipeWith(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n,
                           cudaStream_t stream) {
  const int64_t tilesM = ceilDiv(m, Cfg::BM), tilesN = ceilDiv(n, Cfg::BN);
  if (tilesM * tilesN > INT_MAX || ceilDiv(k, Cfg::BK) > INT_MAX) return cudaErrorInvalidValue;
  const bool vec = n % 4 == 0 && aligned16(B) && aligned16(C);
  const bool vecA = k % 4 == 0 && aligned16(A);
  auto kernel = vec ? (vecA ? sgemm_pipe_kernel<Cfg, true, true> : sgemm_pipe_kernel<Cfg, true, false>)
                    : (vecA ? sgemm_pipe_kernel<Cfg, false, true> : sgemm_pipe_kernel<Cfg, false, false>);
  if constexpr (Cfg::Smem > 48 * 1024) {  // over the default limit: opt in (the 128×128 tiles need not)
    const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(Cfg::Smem));
    if (err != cudaSuccess) return err;
  }
  kernel<<<static_cast<unsigned>(tilesM * tilesN), Cfg::Threads, Cfg::Smem, stream>>>(
      A, B, C, m, k, n, static_cast<int>(tilesM), static_cast<int>(tilesN));
  return cudaGetLastError();
}

//                                    BM   BN  BK  WM  WN RM RN St MinBlocks ARegs
using Fast128x128k16r = FastConfig<128, 128, 16, 32, 64, 2, 2, 3, 2, true>;

//                           BM   BN  BK  WM  WN RM RN MinBlocks
using Pipe128x128k16 = PipeConfig<128, 128, 16, 32, 64, 2, 2, 2>;
using Pipe128x128k8 = PipeConfig<128, 128, 8, 32, 64, 2, 2, 2>;
using Pipe256x128k16 = PipeConfig<256, 128, 16, 64, 64, 4, 2, 1>;
using Pipe128x256k16 = PipeConfig<128, 256, 16, 64, 64, 2, 4, 1>;
using Pipe256x128k8 = PipeConfig<256, 128, 8, 64, 64, 4, 2, 1>;

struct Variant {
  const char* name;
  cudaError_t (*launch)(const float*, const float*, float*, int64_t, int64_t, int64_t, cudaStream_t);
};

// Entry 0 is launchFast. The others are the tuning sweep of bench/dev/gemm/gemm_harness.cu, which
// compiles this file with -DCK_TUNING_VARIANTS; the addon carries only the shipped one.
const Variant kVariants[] = {
    {"pipe 128x128x16 w32x64", launchPipeWith<Pipe128x128k16>},
#ifdef CK_TUNING_VARIANTS
    {"v2 128x128x16 w32x64 3st regA", launchFastWith<Fast128x128k16r>},
    {"pipe 128x128x8 w32x64", launchPipeWith<Pipe128x128k8>},
    {"pipe 256x128x16 w64x64 16x8", launchPipeWith<Pipe256x128k16>},
    {"pipe 128x256x16 w64x64 8x16", launchPipeWith<Pipe128x256k16>},
    {"pipe 256x128x8 w64x64 16x8", launchPipeWith<Pipe256x128k8>},
#endif
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

cudaError_t launchNaive(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n,
                        cudaStream_t stream) {
  cudaError_t err;
  if (detail::trivialShape(C, m, k, n, stream, err)) return err;
  const int64_t gx = ceilDiv(n, detail::kNaiveBlockX);
  if (gx > INT_MAX) return cudaErrorInvalidValue;
  const int64_t gy = ceilDiv(m, detail::kNaiveBlockY);
  const dim3 grid(static_cast<unsigned>(gx),
                  static_cast<unsigned>(gy < detail::kMaxGridY ? gy : detail::kMaxGridY));
  detail::sgemm_naive_kernel<<<grid, dim3(detail::kNaiveBlockX, detail::kNaiveBlockY), 0, stream>>>(A, B, C,
                                                                                                    m, k, n);
  return cudaGetLastError();
}

cudaError_t launchShared(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n, int tile,
                         cudaStream_t stream) {
  if (tile != 8 && tile != 16 && tile != 32) return cudaErrorInvalidValue;
  cudaError_t err;
  if (detail::trivialShape(C, m, k, n, stream, err)) return err;
  switch (tile) {
    case 8: return detail::launchSharedWith<8>(A, B, C, m, k, n, stream);
    case 16: return detail::launchSharedWith<16>(A, B, C, m, k, n, stream);
    default: return detail::launchSharedWith<32>(A, B, C, m, k, n, stream);
  }
}

cudaError_t launchFast(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n,
                       cudaStream_t stream) {
  return detail::launchFastVariant(0, A, B, C, m, k, n, stream);
}

}  // namespace gemm
}  // namespace ck
