// One rank's NCCL communicator, and the watchdog that turns a dead or hung peer into an error.
//
// The communicator is created non-blocking (NCCL config blocking = 0), so neither its initialisation
// nor any later call can block a thread for longer than we allow. Every operation is queued on a
// stream between two CUDA events; a watchdog thread polls the events and ncclCommGetAsyncError and
// aborts the communicator (ncclCommAbort, which makes NCCL's kernels return) when NCCL reports an
// error or an operation has run on the GPU for longer than the timeout. Every pending operation then
// fails with that reason, and the stream drains, so no thread waits forever.
//
// Plain C++ (no N-API): binding.cc reports outcomes to JS, apsp.cc and the MLP use it directly.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "distributed/nccl.h"

namespace ck {
namespace dist {

// How an operation ended. Op 0 is the initialisation.
struct Outcome {
  uint64_t id = 0;
  bool ok = true;
  std::string code, message;
};

class Comm {
 public:
  // Called once for each operation queued with `notify` (and for op 0), from the watchdog thread or
  // from the thread that fails the communicator. Must not call back into this Comm.
  using Settle = std::function<void(const Outcome&)>;

  // Starts the initialisation of rank `rank` of `size` on `device` from `id` and returns at once;
  // op 0 settles when every rank has joined, NCCL fails, or `timeoutMs` passes. Throws CudaFailure
  // when NCCL refuses at once (a bad id, the bootstrap port taken).
  static std::shared_ptr<Comm> create(const nccl::UniqueId& id, int size, int rank, int device,
                                      int64_t timeoutMs, Settle settle);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }
  int64_t timeoutMs() const { return timeoutMs_; }

  // Queues `call` (given the raw communicator; one NCCL call or a group) on `stream` as an operation
  // named `what`, and returns its id. With `notify` its outcome goes to the Settle callback. At most
  // `maxInFlight` operations are pending: beyond that this waits for the oldest first. Throws
  // CudaFailure when the communicator is not ready, failed, closed or busy with another thread, or
  // NCCL refuses the call (the communicator is then aborted).
  uint64_t enqueue(const char* what, cudaStream_t stream, bool notify, size_t maxInFlight,
                   const std::function<nccl::Result(nccl::Comm)>& call);
  // Blocks until operation `id` has completed, or throws CudaFailure if the communicator failed.
  void wait(uint64_t id);
  // Blocks until every pending operation has completed (or throws as wait does).
  void waitAll();
  // Throws CudaFailure if the communicator failed, was aborted or destroyed.
  void throwIfFailed();
  bool ready();
  size_t pending();

  // Reserves the communicator for a long run on a worker thread, which claim()s it: enqueue from any
  // other thread throws until release(). False if it is already reserved.
  bool reserve();
  void claim();
  void release();

  // Aborts the communicator (ncclCommAbort) and fails every pending operation with `code` and
  // `message`. Idempotent: the first failure is the one reported.
  void fail(const std::string& code, const std::string& message);
  // Waits for the pending operations (the timeout applies), then finalizes and destroys the
  // communicator; aborts it instead when that fails. Stops the watchdog. Idempotent.
  void destroy();
  // ncclCommAbort now; pending operations fail with "ncclAborted". Stops the watchdog.
  void abort();

 private:
  struct Op {
    uint64_t id = 0;
    std::string what;
    cudaEvent_t start = nullptr, end = nullptr;
    bool notify = false;
    bool started = false;
    std::chrono::steady_clock::time_point startedAt;
  };

  Comm(int size, int rank, int device, int64_t timeoutMs, Settle settle);
  void watch();
  void stopWatchdog();
  void settle(const Op& op, bool ok, const std::string& code, const std::string& message);
  std::chrono::milliseconds timeout() const { return std::chrono::milliseconds(timeoutMs_); }

  const int size_, rank_, device_;
  const int64_t timeoutMs_;
  Settle settle_;

  // Held around every NCCL call on comm_ (NCCL communicators are not thread-safe), and by the
  // watchdog for ncclCommGetAsyncError and ncclCommAbort.
  std::mutex ncclMutex_;
  nccl::Comm comm_ = nullptr;

  std::mutex stateMutex_;  // everything below
  std::condition_variable wake_;
  std::vector<Op> ops_;  // pending, in queue order
  uint64_t nextId_ = 1;
  bool initDone_ = false;
  std::chrono::steady_clock::time_point initDeadline_;
  bool failed_ = false;
  std::string failCode_, failMessage_;
  bool stop_ = false;
  std::thread watchdog_;
  bool reserved_ = false;
  std::thread::id owner_;
};

}  // namespace dist
}  // namespace ck
