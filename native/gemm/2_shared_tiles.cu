// Step 2, the report's kernel: tile×tile thread blocks stage tile×tile squares of A and B in shared
// memory, so each operand comes from DRAM once per tile instead of once per product.
// H100 (bench/results, 4096³): 16.4 ms at tile 32 (8.40 TFLOP/s), 16.7 at 16, 26.6 at 8 (step 1:
// 63.7 ms; cuBLAS: 2.7 ms).
// Bench method: shared8, shared16, shared32
#include <climits>
#include <cstdint>

#include "core/math.h"
#include "gemm/common.cuh"
#include "gemm/gemm.h"

namespace ck {
namespace gemm {
namespace detail {

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

}  // namespace detail

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

}  // namespace gemm
}  // namespace ck
