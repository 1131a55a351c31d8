// Test-only kernels, left out of release builds with the bindings that call them:
// - a kernel that keeps a stream busy until the host says so (or a timeout passes, so a test that
//   fails can never hang). The tests use it to show that free() and the pool never wait for the
//   device (debugHoldStream in memory_binding.cc);
// - a store through a null pointer, the faults behind debugFault (debug.cc).
#include "debug_kernels.h"

namespace ck {

__global__ void debug_hold_stream_kernel(const volatile int* release, unsigned long long timeoutNs) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(10000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (*release == 0 && now - start < timeoutNs);
}

cudaError_t launchHoldStream(const volatile int* release, unsigned long long timeoutNs, cudaStream_t stream) {
  debug_hold_stream_kernel<<<1, 1, 0, stream>>>(release, timeoutNs);
  return cudaGetLastError();
}

__global__ void debug_null_store_kernel(int* target) {
  if (threadIdx.x == 0) *target = 1;
}

cudaError_t launchNullStore(unsigned threads, cudaStream_t stream) {
  debug_null_store_kernel<<<1, threads, 0, stream>>>(nullptr);
  return cudaGetLastError();
}

}  // namespace ck
