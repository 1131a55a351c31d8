// What the AᵀA kernel files share: the upper-triangle tile order, the symmetric store, the tile
// edge of the tiled and mirror kernels, and the shapes with nothing to launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/math.h"

namespace ck {
namespace ata {
namespace detail {

// Upper-triangle tile t (column-major over the triangle: column bj holds tiles bi = 0..bj) to
// (bi, bj). The sqrt guess is corrected both ways because a double sqrt can be off by one for
// large t.
__device__ __forceinline__ void upperTileFromLinear(int64_t t, int& bi, int& bj) {
  int64_t c = static_cast<int64_t>((sqrt(8.0 * static_cast<double>(t) + 1.0) - 1.0) * 0.5);
  while (c > 0 && c * (c + 1) / 2 > t) --c;
  while ((c + 1) * (c + 2) / 2 <= t) ++c;
  bj = static_cast<int>(c);
  bi = static_cast<int>(t - c * (c + 1) / 2);
}

// Writes v at (r, c) and its mirror, for r <= c inside the matrix. Writing only from the upper
// element makes C bitwise symmetric even where the two triangles were computed separately.
__device__ __forceinline__ void storeSym(double* C, int64_t n, int64_t r, int64_t c, double v) {
  if (r <= c && c < n) {
    C[r * n + c] = v;
    if (r != c) C[c * n + r] = v;
  }
}

constexpr int kTile = 32;         // tile edge of the tiled and mirror kernels
constexpr int kTileRowsStep = 8;  // blockDim.y: each thread owns kTile / 8 = 4 outputs

// Shapes with nothing to compute. Returns true when the call is fully handled (err set).
inline bool trivialShape(double* C, int64_t rows, int64_t cols, cudaStream_t stream, cudaError_t& err) {
  err = cudaSuccess;
  if (rows < 0 || cols < 0) {
    err = cudaErrorInvalidValue;
    return true;
  }
  if (cols == 0) return true;
  if (rows == 0) {
    err = cudaMemsetAsync(C, 0, static_cast<size_t>(cols) * cols * sizeof(double), stream);
    return true;
  }
  return false;
}

inline int64_t upperTiles(int64_t n, int tile) {
  const int64_t T = ceilDiv(n, tile);
  return T * (T + 1) / 2;
}

}  // namespace detail
}  // namespace ata
}  // namespace ck
