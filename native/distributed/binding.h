// What other families' bindings need from the communicator handles (the MLP's data-parallel training).
#pragma once

#include <napi.h>

#include <cstddef>
#include <memory>

#include "core/dtype.h"
#include "distributed/comm.h"

namespace ck {
namespace dist {

// The communicator behind a handle from ncclCommInit: a TypeError naming `name` for anything else, a
// RangeError when it is not on `device`; a CudaFailure when it failed or is not initialised.
std::shared_ptr<Comm> unwrapComm(Napi::Value value, const char* name, int device);

// Sums `count` float32 or float64 elements at `data` over the ranks, in place, queued on `stream`
// after what is already there; at most `maxInFlight` such operations pending (see Comm::enqueue).
void allReduceSum(Comm& comm, void* data, size_t count, Dtype dtype, cudaStream_t stream, const char* what,
                  size_t maxInFlight);

}  // namespace dist
}  // namespace ck
