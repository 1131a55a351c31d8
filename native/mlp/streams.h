// Streams and cuBLAS handles beside the library stream, and the events of one call's fork and joins:
// what a method needs to spread a batch over several streams.
#pragma once

#include <cuda_runtime_api.h>

#include <mutex>
#include <vector>

#include "core/cublas.h"
#include "core/failure.h"
#include "mlp/mlp.h"

namespace ck {
namespace mlp {

struct SideResources {
  cudaStream_t streams[kMaxStreams] = {};
  cublas::Handle sideHandle = nullptr;  // bound to streams[0]
  std::mutex handleMutex;               // held while a call uses sideHandle (one host thread at a time)
};

// The side streams of `device`: created on first use, kept.
SideResources& side(int device);

// Events for one call's fork and joins, destroyed when the call has enqueued everything (CUDA
// releases an event still in use once its work completes).
class Events {
 public:
  explicit Events(int count) : events_(static_cast<size_t>(count), nullptr) {
    for (auto& e : events_) CK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  ~Events() {
    for (auto e : events_)
      if (e) cudaEventDestroy(e);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  cudaEvent_t operator[](int i) const { return events_[static_cast<size_t>(i)]; }

 private:
  std::vector<cudaEvent_t> events_;
};

}  // namespace mlp
}  // namespace ck
