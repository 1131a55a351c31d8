// Step 1, the report's basic kernel: one thread per element (i, j) of C walks columns i and j of A
// down all rows, so each thread reads 2·rows doubles from L2/DRAM with a stride of `cols`, and both
// triangles are computed. The reference for correctness only.
// H100 (bench/results, 8000²): 423 ms (cuBLAS DSYRK + mirror: about 10.5 ms).
// Bench method: basic
#include <algorithm>
#include <climits>
#include <cstdint>

#include "ata/ata.h"
#include "ata/common.cuh"
#include "core/math.h"

namespace ck {
namespace ata {
namespace detail {

__global__ void ata_basic_kernel(const double* __restrict__ A, double* __restrict__ C, int64_t rows,
                                 int64_t n) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  // gridDim.y is capped at 65535, so rows of C are grid-strided.
  for (int64_t i = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; i < n;
       i += static_cast<int64_t>(gridDim.y) * blockDim.y) {
    const double* pi = A + i;
    const double* pj = A + j;
    double s = 0.0;
    // fma(a_i, a_j, s) == fma(a_j, a_i, s) exactly, so (i, j) and (j, i) come out bitwise equal.
    for (int64_t k = 0; k < rows; ++k, pi += n, pj += n) s = fma(*pi, *pj, s);
    C[i * n + j] = s;
  }
}

}  // namespace detail

cudaError_t launchBasic(const double* A, double* C, int64_t rows, int64_t cols, cudaStream_t stream) {
  cudaError_t err;
  if (detail::trivialShape(C, rows, cols, stream, err)) return err;
  const dim3 block(32, 8);
  const int64_t gx = ceilDiv(cols, block.x), gy = std::min<int64_t>(ceilDiv(cols, block.y), 65535);
  if (gx > INT_MAX) return cudaErrorInvalidValue;
  detail::ata_basic_kernel<<<dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy)), block, 0, stream>>>(
      A, C, rows, cols);
  return cudaGetLastError();
}

}  // namespace ata
}  // namespace ck
