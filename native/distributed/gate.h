// Stream gates: how a collective that cannot be launched yet keeps its place on the library stream.
//
// A communicator keeps at most a few dozen operations in flight (comm.h). A call beyond that used to
// wait in the caller's thread, the JavaScript thread, for the oldest to finish, and with a late peer
// that could last seconds. Now the call is deferred: at the call, the library stream gets an event
// (everything queued before the call) and a gate, a one-thread kernel that waits until the deferred
// operation has completed; the communicator's thread launches the operation later on a side stream,
// after that event, and opens the gate behind it. Work queued after the call still runs after the
// collective, as if it had been launched at once. When the communicator fails, the host releases
// every gate so the library stream drains.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ck {
namespace dist {

// Two counters in page-locked host memory that the GPU reads and writes directly (mapped): `opened`
// is written by the GPU only, in order (gate k opens when opened ≥ k), `released` by the host only
// (non-zero: every gate is open, the communicator failed).
struct GateFlags {
  unsigned long long opened;
  unsigned long long released;
};

// Queues on `stream` a wait until flags->opened ≥ k or flags->released ≠ 0.
cudaError_t launchGateWait(cudaStream_t stream, GateFlags* flags, uint64_t k);
// Queues on `stream` the opening of gate k (flags->opened = k; gates open in increasing k).
cudaError_t launchGateOpen(cudaStream_t stream, GateFlags* flags, uint64_t k);
// Releases every gate from the host (the communicator failed). Any thread.
void releaseGates(GateFlags* flags);

}  // namespace dist
}  // namespace ck
