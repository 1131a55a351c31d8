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

// K in chunks (core/cublas.h) of at most 2^30 rows and 2^31 elements of A, rounded down to 16 rows so
// that every chunk's A starts 128-byte aligned: one call for any A of up to 2^30 elements.
// Within that DSYRK stayed linear for n = 2 (7.6 s at k = 2^30) and 16 … 1000; for n = 1 it took over
// 45 s at k = 2^30 (not probed further): only an explicit cublas-syrk meets that, since auto picks
// DGEMM up to 128 columns.
int64_t kChunkLimit(int64_t cols) {
  const int64_t limit = (int64_t{1} << 31) / std::max<int64_t>(1, cols);
  return limit >= 16 ? limit & ~int64_t{15} : std::max<int64_t>(1, limit);
}

void checkCols(int64_t cols) {
  if (cols < 1) throw CudaFailure("cudaErrorInvalidValue", "ata", "cols must be at least 1");
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
  cublas::forEachKChunk(rows, kChunkLimit(cols), [&](int64_t k0, int k, double beta) {
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
  cublas::forEachKChunk(rows, kChunkLimit(cols), [&](int64_t k0, int k, double beta) {
    CK_CUBLAS(api.dsyrk(h, cublas::FillMode::Lower, cublas::Operation::N, n, k, &one, A + k0 * cols, n, &beta,
                        C, n));
  });
  check(launchMirrorUpper(C, cols, stream), "ata_mirror_upper");
}

}  // namespace ata
}  // namespace ck
