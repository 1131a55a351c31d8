// Test-only kernels (debug_kernels.cu): holding a stream busy, and the two faults of debugFault.
#pragma once

#include <cuda_runtime_api.h>

namespace ck {

// Enqueues one thread that spins until *release != 0 (mapped host memory) or timeoutNs pass.
cudaError_t launchHoldStream(const volatile int* release, unsigned long long timeoutNs, cudaStream_t stream);

// Launches a kernel that stores through a null pointer with `threads` threads per block and returns
// cudaGetLastError(): 4096 threads is an invalid launch the runtime rejects, 32 an illegal address
// the device reports at the next synchronize.
cudaError_t launchNullStore(unsigned threads, cudaStream_t stream);

}  // namespace ck
