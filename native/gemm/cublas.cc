// The library: cuBLAS SGEMM with TF32 off, the reference every SGEMM step is measured against.
// H100 (bench/results, 4096³): 2.71 ms, 50.8 TFLOP/s.
// Bench method: cublas
#include "core/cublas.h"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "core/errors.h"
#include "gemm/methods.h"

namespace ck {
namespace gemm {

// Row-major C = A·B is, read column-major, Cᵀ = Bᵀ·Aᵀ with the same buffers: so cuBLAS gets
// (n×k)·(k×m) with leading dimensions n, k and n, and no transposes. Default math mode: TF32 off.
// cuBLAS's SGEMM went wrong below its int range: with m = n = 2 or 4 and k = INT_MAX it returned
// success and a C off by 17408 (H100, cuBLAS 13.0; k = 2.1·10^9 and below were exact:
// bench/dev/ata/cublas_k_probe.cu and its log). So K goes in chunks of at most 2^30, accumulating
// into C (beta = 1 after the first); any k up to 2^30 is one call, as before.
void runCublas(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n, int, int device,
               cudaStream_t) {
  if (m > INT_MAX || k > INT_MAX || n > INT_MAX) {
    throw CudaFailure("cudaErrorInvalidValue", "cublasSgemm", "a dimension exceeds cuBLAS's int range");
  }
  const cublas::Api& api = cublas::api();
  const cublas::Session session(device);
  const cublas::Handle h = session.handle();
  CK_CUBLAS(api.setMathMode(h, cublas::Math::Default));
  constexpr int64_t kMaxChunk = int64_t{1} << 30;
  const float one = 1.0f, zero = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += kMaxChunk) {
    const int kc = static_cast<int>(std::min(kMaxChunk, k - k0));
    // Columns k0.. of A (row-major, lda = k) and rows k0.. of B (row-major, ldb = n).
    CK_CUBLAS(api.sgemm(h, cublas::Operation::N, cublas::Operation::N, static_cast<int>(n),
                        static_cast<int>(m), kc, &one, B + k0 * n, static_cast<int>(n), A + k0,
                        static_cast<int>(k), k0 == 0 ? &zero : &one, C, static_cast<int>(n)));
  }
}

}  // namespace gemm
}  // namespace ck
