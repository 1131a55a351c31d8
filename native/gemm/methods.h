// The SGEMM variants: name -> runner, in the order lib/ops/gemm.ts lists them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ck {
namespace gemm {

struct Method {
  const char* name;
  // Enqueues C = A·B (row-major A m×k, B k×n, C m×n, float32) on `stream`, the library stream of
  // `device` (current). `tile` is used by `shared` only. Throws CudaFailure.
  void (*run)(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n, int tile, int device,
              cudaStream_t stream);
};

// cublas.cc: cuBLAS SGEMM (TF32 off) with the signature of Method::run.
void runCublas(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n, int tile,
               int device, cudaStream_t stream);

extern const Method kMethods[];
extern const int kMethodCount;

}  // namespace gemm
}  // namespace ck
