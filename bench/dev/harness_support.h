// What every standalone harness under bench/dev needs and the addon provides otherwise: stand-ins for
// the stream-ordered pool (core/pool.cc needs the rest of the addon; here the device's default pool
// through cudaMallocAsync does the same job) and the error checks, which stop the harness with the
// failing call's text. Include it in the harness's main file only: the pool functions are defined
// here, once, for the kernel files of the family that call them.
#pragma once

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "core/pool.h"
#include "cuda_check.h"

namespace ck {
cudaError_t poolMalloc(void** ptr, size_t bytes, cudaStream_t stream) {
  return cudaMallocAsync(ptr, bytes, stream);
}
cudaError_t poolFree(void* ptr, cudaStream_t stream) {
  return ptr ? cudaFreeAsync(ptr, stream) : cudaSuccess;
}
}  // namespace ck

// The same for cuBLAS calls (the harnesses that time it include cublas_v2.h first).
#define CHECK_CUBLAS(expr)                                                                         \
  do {                                                                                             \
    const cublasStatus_t s_ = (expr);                                                              \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                             \
      std::fprintf(stderr, "%s:%d: %s failed: cuBLAS status %d\n", __FILE__, __LINE__, #expr,      \
                   static_cast<int>(s_));                                                          \
      std::exit(2);                                                                                \
    }                                                                                              \
  } while (0)
