// Reductions queued on one thread and read back on another: the Promise forms queue them on the JS
// thread at the call, so they read the array as it is then (a write queued after the call runs after
// them on the same stream), and a libuv pool thread sleeps until the results are in (reduceAsync,
// apspAsync's weight check).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "core/dtype.h"
#include "scan/scan.h"

namespace ck {

struct Staging;

namespace scan {

class QueuedReductions {
 public:
  // Queues one reduction per op over the `length` elements at `in`, and their copy to pinned host
  // memory, on `stream` of the current device. Throws CudaFailure (nothing is left queued that
  // outlives the object).
  QueuedReductions(const void* in, Dtype dtype, size_t length, const std::vector<ReduceOp>& ops,
                   cudaStream_t stream);
  ~QueuedReductions();
  QueuedReductions(const QueuedReductions&) = delete;
  QueuedReductions& operator=(const QueuedReductions&) = delete;

  // Any thread: sleeps (cudaEventBlockingSync) until the results are on the host and returns them, in
  // the order of `ops`. Throws CudaFailure. The wait covers only the work queued up to the
  // constructor, not what other calls queued after it.
  std::vector<double> wait();

 private:
  int device_ = 0;
  size_t count_ = 0;
  Staging* host_ = nullptr;
  cudaEvent_t done_ = nullptr;
  bool waited_ = false;
};

}  // namespace scan
}  // namespace ck
