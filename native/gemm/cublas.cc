// The library: cuBLAS SGEMM with TF32 off, the reference every SGEMM step is measured against.
// H100 (bench/results, 4096³): 2.71 ms, 50.8 TFLOP/s.
// Bench method: cublas
#include "core/cublas.h"

#include <climits>
#include <cstdint>

#include "core/errors.h"
#include "gemm/methods.h"

namespace ck {
namespace gemm {

// Row-major C = A·B is, read column-major, Cᵀ = Bᵀ·Aᵀ with the same buffers: so cuBLAS gets
// (n×k)·(k×m) with leading dimensions n, k and n, and no transposes. Default math mode: TF32 off.
// K in chunks of at most 2^30 (core/cublas.h: SGEMM with m = n = 2 and k = INT_MAX returned a C off
// by 17408), accumulating into C; any k up to 2^30 is one call, as before.
void runCublas(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n, int, int device,
               cudaStream_t) {
  if (m > INT_MAX || k > INT_MAX || n > INT_MAX) {
    throw CudaFailure("cudaErrorInvalidValue", "cublasSgemm", "a dimension exceeds cuBLAS's int range");
  }
  const cublas::Api& api = cublas::api();
  const cublas::Session session(device);
  const cublas::Handle h = session.handle();
  CK_CUBLAS(api.setMathMode(h, cublas::Math::Default));
  const float one = 1.0f;
  cublas::forEachKChunk(k, cublas::kMaxKChunk, [&](int64_t k0, int kc, double beta) {
    const float b = static_cast<float>(beta);
    // Columns k0.. of A (row-major, lda = k) and rows k0.. of B (row-major, ldb = n).
    CK_CUBLAS(api.sgemm(h, cublas::Operation::N, cublas::Operation::N, static_cast<int>(n),
                        static_cast<int>(m), kc, &one, B + k0 * n, static_cast<int>(n), A + k0,
                        static_cast<int>(k), &b, C, static_cast<int>(n)));
  });
}

}  // namespace gemm
}  // namespace ck
