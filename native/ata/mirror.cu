// Copies the upper triangle of C into the lower one, coalesced on both sides through a shared-memory
// transpose: cuBLAS DSYRK writes one triangle, and the package returns the full symmetric matrix.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "ata/ata.h"
#include "ata/common.cuh"
#include "core/math.h"

namespace ck {
namespace ata {
namespace detail {

// ---------------------------------------------------------------------------------------------
// mirror

// Block (bi <= bj) reads upper block (bi, bj) row-wise and writes lower block (bj, bi) row-wise,
// transposing through shared memory so both global sides are coalesced.
__global__ void __launch_bounds__(kTile* kTileRowsStep)
    ata_mirror_upper_kernel(double* __restrict__ C, int64_t n) {
  __shared__ double t[kTile][kTile + 1];  // +1: the transposed read is conflict-free
  int bi, bj;
  upperTileFromLinear(blockIdx.x, bi, bj);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t r0 = static_cast<int64_t>(bi) * kTile, c0 = static_cast<int64_t>(bj) * kTile;
#pragma unroll
  for (int r = ty; r < kTile; r += kTileRowsStep) {
    const int64_t row = r0 + r, col = c0 + tx;
    if (row <= col && col < n) t[r][tx] = C[row * n + col];
  }
  __syncthreads();
#pragma unroll
  for (int r = ty; r < kTile; r += kTileRowsStep) {
    const int64_t row = c0 + r, col = r0 + tx;  // lower element (row, col) = upper (col, row)
    if (col < row && row < n) C[row * n + col] = t[tx][r];
  }
}

}  // namespace detail

cudaError_t launchMirrorUpper(double* C, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n <= 1) return cudaSuccess;
  const int64_t tiles = detail::upperTiles(n, detail::kTile);
  if (tiles > INT_MAX) return cudaErrorInvalidValue;
  detail::ata_mirror_upper_kernel<<<static_cast<unsigned>(tiles), dim3(detail::kTile, detail::kTileRowsStep),
                                    0, stream>>>(C, n);
  return cudaGetLastError();
}

}  // namespace ata
}  // namespace ck
