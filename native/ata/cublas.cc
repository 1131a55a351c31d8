// The library: C = AᵀA through cuBLAS, as DGEMM (both triangles) or DSYRK (one triangle, mirrored by
// mirror.cu), the references every AᵀA step is measured against.
// H100 (bench/results, 8000²): DSYRK + mirror 10.4 ms, DGEMM 17.5 ms.
// Bench method: cublas-syrk, cublas
#include "core/cublas.h"

#include <algorithm>
#include <climits>

#include "ata/ata.h"
#include "ata/methods.h"
#include "core/errors.h"

namespace ck {
namespace ata {

namespace {

// cuBLAS takes int dimensions, and long K goes wrong before INT_MAX: on an H100 and an H200 with
// cuBLAS 13.0, DGEMM with n = 2 and k = INT_MAX returned success and left C wrong (relative error
// 3e-6) or untouched, and DSYRK with n ≤ 4 slows past n·k = 2^31 (n = 2: 7.6 s at k = 2^30, 69 s at
// 1.5·2^30) and read out of bounds at k = INT_MAX (bench/dev/ata/cublas_k_probe.cu and its log). So K
// goes in chunks of at most 2^30 rows and 2^31 elements of A, which every case probed computed
// exactly, accumulating into C: calls f(first row, rows in the chunk, beta), beta = 1 after the
// first. An A of at most 2^30 elements (8.6 GB) is always one call, as before.
template <class F>
void forEachKChunk(int64_t rows, int64_t cols, F&& f) {
  const int64_t maxChunk =
      std::max<int64_t>(1, std::min<int64_t>(int64_t{1} << 30, (int64_t{1} << 31) / cols));
  for (int64_t k0 = 0; k0 < rows; k0 += maxChunk)
    f(k0, static_cast<int>(std::min(maxChunk, rows - k0)), k0 == 0 ? 0.0 : 1.0);
}

void checkCols(int64_t cols) {
  if (cols > INT_MAX) throw CudaFailure("cudaErrorInvalidValue", "ata", "cols exceeds cuBLAS's int range");
}

}  // namespace

// The row-major rows×cols A is, read column-major, X = Aᵀ (cols×rows, ld = cols); C = X·Xᵀ is
// symmetric, so its column-major and row-major layouts coincide (the report's trick).
void runCublasGemm(const double* A, double* C, int64_t rows, int64_t cols, int device, cudaStream_t) {
  checkCols(cols);
  const cublas::Api& api = cublas::api();
  const cublas::Session session(device);
  const cublas::Handle h = session.handle();
  const int n = static_cast<int>(cols);
  const double one = 1.0;
  forEachKChunk(rows, cols, [&](int64_t k0, int k, double beta) {
    const double* X = A + k0 * cols;
    CK_CUBLAS(
        api.dgemm(h, cublas::Operation::N, cublas::Operation::T, n, n, k, &one, X, n, X, n, &beta, C, n));
  });
}

// DSYRK writes one triangle; the column-major lower triangle is the row-major upper one (row ≤ col),
// which launchMirrorUpper then copies below the diagonal.
void runCublasSyrk(const double* A, double* C, int64_t rows, int64_t cols, int device, cudaStream_t stream) {
  checkCols(cols);
  const cublas::Api& api = cublas::api();
  const cublas::Session session(device);
  const cublas::Handle h = session.handle();
  const int n = static_cast<int>(cols);
  const double one = 1.0;
  forEachKChunk(rows, cols, [&](int64_t k0, int k, double beta) {
    CK_CUBLAS(api.dsyrk(h, cublas::FillMode::Lower, cublas::Operation::N, n, k, &one, A + k0 * cols, n, &beta,
                        C, n));
  });
  check(launchMirrorUpper(C, cols, stream), "ata_mirror_upper");
}

}  // namespace ata
}  // namespace ck
