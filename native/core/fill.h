// Device-side fill of a typed buffer (zeros, NaN poisoning in tests, sentinels).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "dtype.h"

namespace ck {

// Sets every element of the `length`-element buffer at `ptr` to `value` converted to `dtype`
// (for the integer types, `value` must already be an integer in range). Enqueued on `stream`.
cudaError_t launchFill(void* ptr, Dtype dtype, size_t length, double value, cudaStream_t stream);

}  // namespace ck

namespace ck {

// Fills the buffer with pseudo-random values from a counter-based hash of (seed, index), so the
// result depends only on the seed: floats uniform in [-1, 1), integers uniform over the type.
cudaError_t launchFillRandom(void* ptr, Dtype dtype, size_t length, uint64_t seed, cudaStream_t stream);

}  // namespace ck
