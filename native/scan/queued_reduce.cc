#include "scan/queued_reduce.h"

#include <cstring>

#include "core/device_restore.h"
#include "core/failure.h"
#include "core/pool.h"
#include "core/transfer.h"

namespace ck {
namespace scan {

QueuedReductions::QueuedReductions(const void* in, Dtype dtype, size_t length,
                                   const std::vector<ReduceOp>& ops, cudaStream_t stream)
    : count_(ops.size()) {
  const size_t bytes = count_ * sizeof(double);
  CK_CUDA(cudaGetDevice(&device_));
  double* results = nullptr;
  CK_CUDA(poolMalloc(&results, bytes, stream));
  try {
    size_t i = 0;
    for (ReduceOp op : ops) check(launchReduce(in, dtype, length, op, results + i++, stream), "reduce");
    // Pinned: the results come back by DMA. Held until the promise settles, and taken on the JS thread:
    // a small block of its own, never waiting for other calls' blocks behind queued GPU work.
    host_ = stagingAcquireNoWait(bytes);
    CK_CUDA(cudaMemcpyAsync(host_->ptr, results, bytes, cudaMemcpyDeviceToHost, stream));
    CK_CUDA(cudaEventCreateWithFlags(&done_, cudaEventBlockingSync | cudaEventDisableTiming));
    CK_CUDA(cudaEventRecord(done_, stream));
    check(poolFree(results, stream), "cudaFreeAsync");
  } catch (...) {
    // A failure path: waiting here is simpler than tracking which of the steps above were queued.
    cudaStreamSynchronize(stream);
    poolFree(results, stream);
    if (host_) stagingRelease(host_);
    if (done_) cudaEventDestroy(done_);
    cudaGetLastError();
    throw;
  }
}

std::vector<double> QueuedReductions::wait() {
  if (waited_)
    throw CudaFailure("cudaErrorInvalidValue", "QueuedReductions::wait", "the results were taken already");
  waited_ = true;
  const cudaError_t err = cudaEventSynchronize(done_);
  std::vector<double> out(count_);
  std::memcpy(out.data(), host_->ptr, count_ * sizeof(double));
  check(err, "cudaEventSynchronize(reduce)");
  return out;
}

QueuedReductions::~QueuedReductions() {
  // Never waited for (the task that owned it never ran): the DMA may still be writing the block.
  if (!waited_) cudaEventSynchronize(done_);
  stagingRelease(host_);
  DeviceRestore restore;
  if (cudaSetDevice(device_) == cudaSuccess) cudaEventDestroy(done_);
  cudaGetLastError();
}

}  // namespace scan
}  // namespace ck
