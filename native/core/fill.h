// Device-side fill of a typed buffer (zeros, NaN poisoning in tests, sentinels).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "dtype.h"

namespace ck {

// Sets every element of the `length`-element buffer at `ptr` to `value` converted to `dtype`
// (for the integer types, `value` must already be an integer in range). Enqueued on `stream`.
cudaError_t launchFill(void* ptr, Dtype dtype, size_t length, double value, cudaStream_t stream);

}  // namespace ck
