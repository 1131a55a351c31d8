// One rank's NCCL communicator: its own thread, and the watchdog that turns a dead or hung peer into
// an error.
//
// The communicator is a blocking one (NCCL config blocking = 1): a call launches its kernels in the
// calling thread, which is what makes a small collective cost ~10 µs of host time. A non-blocking
// communicator starts a thread of NCCL's for every call and returns ncclInProgress until that
// thread has launched, ~60 µs more per call; it is what we used before, and why small collectives
// were at half torch.distributed's speed. A blocking call can wait, though: while NCCL connects to a
// peer (the first collective of an algorithm, the first send/recv to a peer) it waits until the peer
// makes the matching call. So every connection is made before Communicator.init resolves, on the
// communicator's thread, never on the caller's: NCCL is asked to connect the collectives' rings and
// trees during ncclCommInitRank (NCCL_RUNTIME_CONNECT=0, set for the process unless the user set it),
// and the thread exchanges one element with every peer (up to kWarmPeers) to connect point-to-point.
// After that a call only launches: it never waits on a peer, and the JavaScript thread may make it.
//
// The thread: initialises the communicator and connects it, then watches: it polls the operations'
// CUDA events and ncclCommGetAsyncError, and when NCCL reports an error or an operation has run on
// the GPU for longer than the timeout it fails the communicator (every pending operation fails with
// the reason) and aborts it (ncclCommAbort, which makes NCCL's kernels return, so the stream
// drains). abort() and destroy() only ask it: the JavaScript thread never waits on NCCL's teardown.
// destroy() has the thread wait for the pending operations, then finalize and destroy (abort instead
// when that fails or the timeout passes), all within one timeout.
//
// Plain C++ (no N-API): binding.cc reports outcomes to JS, apsp.cc and the MLP use it directly.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "distributed/nccl.h"

namespace ck {
namespace dist {

// How an operation ended. Op 0 is the initialisation; kClosed says the communicator's thread has
// finished (after destroy(), abort() or a failure): nothing more will be reported.
struct Outcome {
  static constexpr uint64_t kClosed = ~uint64_t{0};
  uint64_t id = 0;
  bool ok = true;
  std::string code, message;
};

// Peers connected point-to-point during initialisation. Each connection holds buffers on the GPU, so
// beyond this many ranks the first send/recv with a peer connects then (and may wait for that peer).
constexpr int kWarmPeers = 16;

class Comm : public std::enable_shared_from_this<Comm> {
 public:
  // Called once for each operation queued with `notify`, for op 0 and for kClosed, from any thread.
  // Must not call back into this Comm.
  using Settle = std::function<void(const Outcome&)>;

  // Starts rank `rank` of `size` on `device` from `id` on the communicator's own thread and returns
  // at once; op 0 settles when the communicator is initialised and connected, or failed.
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
  // named `what`, in the calling thread, and returns its id. With `notify` its outcome goes to the
  // Settle callback. At most `maxInFlight` operations are pending: beyond that this waits for the
  // oldest to complete (or the communicator to fail). Throws CudaFailure when the communicator is
  // not ready, failed, closed or reserved by another thread, or NCCL refuses the call (the
  // communicator then fails).
  uint64_t enqueue(const char* what, cudaStream_t stream, bool notify, size_t maxInFlight,
                   const std::function<nccl::Result(nccl::Comm)>& call);
  // An operation for enqueueOrDefer: the NCCL call (or group) on the stream it is given.
  using Launch = std::function<nccl::Result(nccl::Comm, cudaStream_t)>;
  // enqueue for the JavaScript thread, which must never wait for a peer: with fewer than
  // `maxInFlight` operations pending and none deferred, the operation is queued now on `stream` (the
  // device's library stream, from libraryStreamFor(device(), this)); otherwise it is deferred: the
  // communicator's thread queues it on the library stream when a slot frees, in call order, and until
  // then the stream is held (core/device.h), so that work called after it is queued after it.
  // `call` must hold copies of what it uses. Returns the operation's id; throws as enqueue does.
  uint64_t enqueueOrDefer(const char* what, cudaStream_t stream, bool notify, size_t maxInFlight,
                          Launch call);
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

  // Fails the communicator: every pending operation fails with `code` and `message`, later calls
  // throw it, and the thread aborts the NCCL communicator. Any thread; never waits on NCCL.
  // Idempotent: the first failure is the one reported.
  void fail(const std::string& code, const std::string& message);
  // Asks the thread to wait for the pending operations, then finalize and destroy the communicator,
  // all within the timeout (aborting it instead when that fails or the time is up). Returns at once;
  // later calls throw "ncclCommDestroyed". Idempotent.
  void destroy();
  // Fails the communicator with "ncclAborted" now; the thread aborts it. Returns at once.
  void abort();
  // For the end of the JavaScript environment: abort(), then wait up to `wait` for the thread to
  // finish (it may be inside an NCCL call that cannot be interrupted; then it is left to finish alone).
  void shutdown(std::chrono::milliseconds wait);

 private:
  struct Op {
    uint64_t id = 0;
    std::string what;
    cudaEvent_t start = nullptr, end = nullptr;
    bool notify = false;
    bool started = false;
    std::chrono::steady_clock::time_point startedAt;
  };

  // An operation waiting for a slot (enqueueOrDefer).
  struct Deferred {
    uint64_t id = 0;
    std::string what;
    bool notify = false;
    size_t maxInFlight = 0;
    cudaStream_t stream = nullptr;  // the library stream the caller was given
    Launch call;
  };

  Comm(int size, int rank, int device, int64_t timeoutMs, Settle settle);
  // Throws CudaFailure when `what` cannot be queued now (failed, closed, not initialised, reserved by
  // another thread). Under stateMutex_.
  void checkUsable(const char* what);
  // Queues `call` on `stream` as `op` (its events taken, its id set), under ncclMutex_. Returns an
  // empty code, or the failure's code, message and NCCL's detail.
  struct Queued {
    std::string code, message, detail;
  };
  Queued queueNow(Op& op, cudaStream_t stream, const std::function<nccl::Result(nccl::Comm)>& call);
  // The communicator's thread: queues deferred operations, oldest first, while slots are free.
  void launchDeferred();
  void run(const nccl::UniqueId& id);
  bool initialise(const nccl::UniqueId& id);
  bool connectPeers(nccl::Comm raw);
  void watch();
  void abortNccl();
  bool finalizeNccl();
  void settle(const Op& op, bool ok, const std::string& code, const std::string& message);
  cudaEvent_t takeEvent();
  void giveEvent(cudaEvent_t e);
  bool failedNow();
  std::chrono::milliseconds timeout() const { return std::chrono::milliseconds(timeoutMs_); }

  const int size_, rank_, device_;
  const int64_t timeoutMs_;
  Settle settle_;

  // Held around every NCCL call on comm_ (NCCL communicators are not thread-safe). Taken before
  // stateMutex_ where both are held.
  std::mutex ncclMutex_;
  nccl::Comm comm_ = nullptr;  // set by the thread once initialised and connected

  std::mutex stateMutex_;  // everything below
  std::condition_variable wake_, finished_;
  std::deque<Op> ops_;  // pending, in queue order (op 0 while initialising)
  size_t counted_ = 0;  // ops_ but op 0
  uint64_t nextId_ = 1;
  bool initDone_ = false;
  bool failed_ = false;
  std::string failCode_, failMessage_;
  bool closing_ = false;  // destroy() was called
  std::chrono::steady_clock::time_point closeDeadline_;
  bool threadDone_ = false;
  bool reserved_ = false;
  std::thread::id owner_;
  std::vector<cudaEvent_t> events_;  // completed operations' events, for reuse
  std::deque<Deferred> deferred_;    // waiting for a slot, in call order; each holds the library stream
  uint64_t launching_ = 0;           // the deferred operation being queued now, or 0
};

}  // namespace dist
}  // namespace ck
