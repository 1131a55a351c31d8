// Step 1, one thread per element of C: each thread walks a row of A and a column of B in global
// memory, so every operand is loaded k times from L2 or DRAM. The reference for correctness only.
// H100 (bench/results, 4096³): 63.7 ms, 2.16 TFLOP/s (cuBLAS: 2.7 ms).
// Bench method: naive
#include <climits>
#include <cstdint>

#include "core/math.h"
#include "gemm/common.cuh"
#include "gemm/gemm.h"

namespace ck {
namespace gemm {
namespace detail {

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

}  // namespace gemm
}  // namespace ck
