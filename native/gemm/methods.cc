// The one table of SGEMM variants (name -> runner, in the order lib/ops/gemm.ts lists them): the
// kernels of 1_naive.cu, 2_shared_tiles.cu and 3_register_pipelined.cu, and cuBLAS (cublas.cc).
#include "methods.h"

#include "core/errors.h"
#include "gemm/gemm.h"

namespace ck {
namespace gemm {

namespace {

void runNaive(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n, int, int,
              cudaStream_t stream) {
  check(launchNaive(A, B, C, m, k, n, stream), "gemm naive");
}

void runShared(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n, int tile, int,
               cudaStream_t stream) {
  check(launchShared(A, B, C, m, k, n, tile, stream), "gemm shared");
}

void runFast(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n, int, int,
             cudaStream_t stream) {
  check(launchFast(A, B, C, m, k, n, stream), "gemm fast");
}

}  // namespace

const Method kMethods[] = {
    {"naive", runNaive},
    {"shared", runShared},
    {"cublas", runCublas},
    {"fast", runFast},
};
const int kMethodCount = sizeof(kMethods) / sizeof(kMethods[0]);

}  // namespace gemm
}  // namespace ck
