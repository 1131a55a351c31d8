// Step 2, the report's tiled kernel, symmetric: 32×32 tiles of C from K-slabs of A staged in shared
// memory, only the upper-triangle tiles launched, each writing its tile and its mirror, so half the
// work of a full product and coalesced loads along A's rows.
// H100 (bench/results, 8000²): 58.4 ms (step 1: 423 ms; cuBLAS DSYRK + mirror: about 10.5 ms).
// Bench method: tiled
#include <algorithm>
#include <climits>
#include <cstdint>

#include "ata/ata.h"
#include "ata/common.cuh"
#include "core/math.h"

namespace ck {
namespace ata {
namespace detail {

// Both operands are K-slabs of A stored [k][column], exactly as they lie in the row-major A: loads
// are coalesced along columns, and in the product loop sI[k][i] is one broadcast address per warp
// while sJ[k][tx] is 32 consecutive doubles, so no padding is needed there. The report's layout
// (sT[ty][tx] = A[(k + tx) * cols + row]) read A with a stride of `cols` instead.
__global__ void __launch_bounds__(kTile* kTileRowsStep)
    ata_tiled_sym_kernel(const double* __restrict__ A, double* __restrict__ C, int64_t rows, int64_t n) {
  __shared__ double sI[kTile][kTile];
  __shared__ double sJ[kTile][kTile];
  // +1 column: the transposed read for the mirror walks a column, which would be a 16-way bank
  // conflict (for 8-byte words) with a pitch of 32.
  __shared__ double sOut[kTile][kTile + 1];

  int bi, bj;
  upperTileFromLinear(blockIdx.x, bi, bj);
  const bool diag = bi == bj;  // uniform per block: a diagonal tile reads one slab for both sides
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t i0 = static_cast<int64_t>(bi) * kTile, j0 = static_cast<int64_t>(bj) * kTile;
  const bool iIn = i0 + tx < n, jIn = j0 + tx < n;

  double acc[kTile / kTileRowsStep] = {};
  for (int64_t k0 = 0; k0 < rows; k0 += kTile) {
#pragma unroll
    for (int r = ty; r < kTile; r += kTileRowsStep) {
      const int64_t k = k0 + r;
      const double* row = A + k * n;
      sI[r][tx] = (k < rows && iIn) ? row[i0 + tx] : 0.0;
      if (!diag) sJ[r][tx] = (k < rows && jIn) ? row[j0 + tx] : 0.0;
    }
    __syncthreads();
    const double(*sj)[kTile] = diag ? sI : sJ;
#pragma unroll
    for (int kk = 0; kk < kTile; ++kk) {
      const double b = sj[kk][tx];
#pragma unroll
      for (int q = 0; q < kTile / kTileRowsStep; ++q) acc[q] = fma(sI[kk][ty + q * kTileRowsStep], b, acc[q]);
    }
    __syncthreads();
  }

  // Upper element (i, j) = (i0 + ty + 8q, j0 + tx): a coalesced row segment.
#pragma unroll
  for (int q = 0; q < kTile / kTileRowsStep; ++q) {
    const int li = ty + q * kTileRowsStep;
    const int64_t i = i0 + li, j = j0 + tx;
    if (i <= j && j < n) C[i * n + j] = acc[q];
    sOut[li][tx] = acc[q];
  }
  __syncthreads();
  // Mirror element (j, i) = (j0 + r, i0 + tx), also a coalesced row segment, read transposed.
#pragma unroll
  for (int r = ty; r < kTile; r += kTileRowsStep) {
    const int64_t j = j0 + r, i = i0 + tx;
    if (i < j && j < n) C[j * n + i] = sOut[tx][r];
  }
}

}  // namespace detail

cudaError_t launchTiled(const double* A, double* C, int64_t rows, int64_t cols, cudaStream_t stream) {
  cudaError_t err;
  if (detail::trivialShape(C, rows, cols, stream, err)) return err;
  const int64_t tiles = detail::upperTiles(cols, detail::kTile);
  if (tiles > INT_MAX) return cudaErrorInvalidValue;
  detail::ata_tiled_sym_kernel<<<static_cast<unsigned>(tiles), dim3(detail::kTile, detail::kTileRowsStep), 0,
                                 stream>>>(A, C, rows, cols);
  return cudaGetLastError();
}

}  // namespace ata
}  // namespace ck
