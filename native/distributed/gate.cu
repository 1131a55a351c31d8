// The gate kernels of gate.h. Both flags live in mapped host memory and are accessed at system scope:
// the opening is written by a kernel on the communicator's side stream, the release by the host.
//
// libcu++ promises atomics that the CPU and the GPU access concurrently only where the device reports
// hostNativeAtomicSupported, which a PCIe H100 does not. What crosses here is only plain loads and
// stores of aligned 8-byte words (no read-modify-write), the pattern NCCL's own abort flag relies on
// (mapped host memory the host writes and kernels poll): it works over PCIe, outside that promise.
#include <cuda/atomic>

#include "distributed/gate.h"

namespace ck {
namespace dist {

namespace {

using SystemFlag = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

__global__ void gateWait(GateFlags* flags, unsigned long long k) {
  SystemFlag opened(flags->opened);
  SystemFlag released(flags->released);
  // One thread, mostly asleep: it holds a few registers of one SM while the collective runs.
  while (opened.load(cuda::memory_order_acquire) < k && released.load(cuda::memory_order_acquire) == 0)
    __nanosleep(2000);
}

__global__ void gateOpen(GateFlags* flags, unsigned long long k) {
  // A plain store, not an atomic maximum (system-scope read-modify-write on host memory is not
  // available over PCIe): gates are opened in increasing k, in order on one stream.
  SystemFlag opened(flags->opened);
  opened.store(k, cuda::memory_order_release);
}

}  // namespace

// The launch's own status, from cudaLaunchKernel: cudaGetLastError after a <<<>>> launch would also
// return an error an earlier call of this thread left in its error slot (a cudaErrorNotReady from an
// event query nobody cleared), and a gate counted as not launched fails the communicator.
static cudaError_t launchGate(const void* kernel, cudaStream_t stream, GateFlags* flags, uint64_t k) {
  unsigned long long number = k;
  void* args[] = {&flags, &number};
  return cudaLaunchKernel(kernel, dim3(1), dim3(1), args, 0, stream);
}

cudaError_t launchGateWait(cudaStream_t stream, GateFlags* flags, uint64_t k) {
  return launchGate(reinterpret_cast<const void*>(&gateWait), stream, flags, k);
}

cudaError_t launchGateOpen(cudaStream_t stream, GateFlags* flags, uint64_t k) {
  return launchGate(reinterpret_cast<const void*>(&gateOpen), stream, flags, k);
}

void releaseGates(GateFlags* flags) {
  SystemFlag released(flags->released);
  released.store(1, cuda::memory_order_release);
}

}  // namespace dist
}  // namespace ck
