// The error check every standalone program under bench/dev uses: a failed CUDA call ends it (exit 2),
// naming the call and where it was. A harness or probe is a test, so it never goes on past a failure.
#pragma once

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime_api.h>

#define CHECK_CUDA(expr)                                                                           \
  do {                                                                                             \
    const cudaError_t e_ = (expr);                                                                 \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,                    \
                   cudaGetErrorString(e_));                                                        \
      std::exit(2);                                                                                \
    }                                                                                              \
  } while (0)
