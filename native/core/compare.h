// Device-side comparison of two arrays, so benchmarks can check multi-GB results without copying
// them to the host.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "dtype.h"

namespace ck {

// Accumulates sums[0] += Σ (a_i − b_i)², sums[1] += Σ b_i² in float64 over `length` elements of
// `dtype` (integers are converted to double, so equal integer arrays give exactly 0). `sums` is device memory
// for two doubles, zeroed by the caller. A NaN anywhere in `a` makes sums[0] NaN.
cudaError_t launchDiffNorms(const void* a, const void* b, Dtype dtype, size_t length, double* sums,
                            cudaStream_t stream);

}  // namespace ck
