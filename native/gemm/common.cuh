// What every SGEMM kernel file shares: the shapes with nothing to launch, the grid's y limit, and the
// banded tile order of the register-tiled kernels.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

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

// Tiles run in bands of kBandTiles tile-rows, column by column inside a band, so the blocks resident
// at one time share a few A row-slabs and B column-slabs through L2 instead of sweeping all of B.
constexpr int kBandTiles = 8;

// Block → tile origin in that order.
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

// Writes a thread's RM×RN blocks of 4×4 results of a register-tiled kernel: block (i, j) starts at
// row r0 + i·(WM / RM), column c0 + j·(WN / RN). Vec: each 4-column group is one aligned float4,
// wholly inside C or wholly outside; otherwise element by element.
template <class Cfg, bool Vec>
__device__ __forceinline__ void storeCTile(float* __restrict__ C, int64_t m, int64_t n, int64_t r0,
                                           int64_t c0, const float (&acc)[4 * Cfg::RM][4 * Cfg::RN]) {
#pragma unroll
  for (int i = 0; i < Cfg::RM; ++i) {
#pragma unroll
    for (int ii = 0; ii < 4; ++ii) {
      const int64_t gm = r0 + i * (Cfg::WM / Cfg::RM) + ii;
      if (gm >= m) continue;
      float* crow = C + gm * n;
#pragma unroll
      for (int j = 0; j < Cfg::RN; ++j) {
        const int64_t gn = c0 + j * (Cfg::WN / Cfg::RN);
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

}  // namespace detail
}  // namespace gemm
}  // namespace ck
