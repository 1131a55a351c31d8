// The AᵀA variants: name -> runner, in the order lib/ops/ata.ts lists them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ck {
namespace ata {

struct Method {
  const char* name;
  // Enqueues C = AᵀA (A rows×cols row-major, C cols×cols row-major, full) on `stream`, which is the
  // library stream of `device` (current). Throws CudaFailure.
  void (*run)(const double* A, double* C, int64_t rows, int64_t cols, int device, cudaStream_t stream);
};

// cublas.cc: cuBLAS DGEMM, and DSYRK + mirror, with the signature of Method::run.
void runCublasGemm(const double* A, double* C, int64_t rows, int64_t cols, int device, cudaStream_t stream);
void runCublasSyrk(const double* A, double* C, int64_t rows, int64_t cols, int device, cudaStream_t stream);

extern const Method kMethods[];
extern const int kMethodCount;

}  // namespace ata
}  // namespace ck
