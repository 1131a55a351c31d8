// Test-only: holding a stream busy (see debug_stream.cu).
#pragma once

#include <cuda_runtime_api.h>

namespace ck {

// Enqueues one thread that spins until *release != 0 (mapped host memory) or timeoutNs pass.
cudaError_t launchHoldStream(const volatile int* release, unsigned long long timeoutNs, cudaStream_t stream);

}  // namespace ck
