// The one table of AᵀA variants (name -> runner, in the order lib/ops/ata.ts lists them): cuBLAS
// (cublas.cc) and the kernels of 1_basic.cu, 2_tiled_symmetric.cu and 3_tensor_core.cu.
#include "methods.h"

#include "ata/ata.h"
#include "core/errors.h"

namespace ck {
namespace ata {

namespace {

void runBasic(const double* A, double* C, int64_t rows, int64_t cols, int, cudaStream_t stream) {
  check(launchBasic(A, C, rows, cols, stream), "ata basic");
}

void runTiled(const double* A, double* C, int64_t rows, int64_t cols, int, cudaStream_t stream) {
  check(launchTiled(A, C, rows, cols, stream), "ata tiled");
}

void runFast(const double* A, double* C, int64_t rows, int64_t cols, int, cudaStream_t stream) {
  check(launchFast(A, C, rows, cols, stream), "ata fast");
}

}  // namespace

const Method kMethods[] = {
    {"cublas", runCublasGemm}, {"cublas-syrk", runCublasSyrk}, {"basic", runBasic}, {"tiled", runTiled},
    {"fast", runFast},
};
const int kMethodCount = sizeof(kMethods) / sizeof(kMethods[0]);

}  // namespace ata
}  // namespace ck
