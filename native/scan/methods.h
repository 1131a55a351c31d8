// The scan variants: name -> launcher, in the order lib/ops/scan.ts lists them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/dtype.h"

namespace ck {
namespace scan {

struct Method {
  const char* name;
  cudaError_t (*launch)(const void* in, void* out, Dtype dtype, size_t n, bool inclusive,
                        cudaStream_t stream);
};

extern const Method kMethods[];
extern const int kMethodCount;

}  // namespace scan
}  // namespace ck
