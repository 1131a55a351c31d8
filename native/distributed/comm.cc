#include "distributed/comm.h"

#include <algorithm>
#include <system_error>

#if defined(__linux__)
#include <pthread.h>
#include <sys/prctl.h>
#endif

#include "core/device.h"
#include "core/device_restore.h"
#include "core/errors.h"

namespace ck {
namespace dist {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;

// Polls back off from 10 µs (a small collective completes in tens of µs) to 1 ms (a long one costs
// the host nothing).
constexpr microseconds kFirstPoll{10};
constexpr microseconds kLastPoll{1000};

microseconds nextPoll(microseconds p) {
  return std::min(p * 2, kLastPoll);
}

// How long a caller spins for ncclMutex_ before it blocks on it. The holders are the watchdog's
// ncclCommGetAsyncError (a µs), another thread's launch (µs), or an abort or finalize, which only
// begin once the communicator has failed or closed, and the spin notices that first.
constexpr microseconds kLockSpin{1000};

// The thread's short sleeps are meant to be short: 1 µs of timer slack instead of the default
// 50 µs, so that it notices a finished collective within ~10 µs.
void tightTimerSlack() {
#if defined(__linux__)
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
  pthread_setname_np(pthread_self(), "ck-nccl-comm");
#endif
}

std::string withDetail(const std::string& message, const std::string& detail) {
  if (detail.empty()) return message;
  return message + " (NCCL: " + detail + ")";
}

// NCCL's last error text is per thread: read it in the thread whose call failed.
std::string lastError(nccl::Comm raw) {
  const char* e = nccl::api().getLastError(raw);
  return e ? std::string(e) : std::string();
}

}  // namespace

Comm::Comm(int size, int rank, int device, int64_t timeoutMs, Settle settle)
    : size_(size), rank_(rank), device_(device), timeoutMs_(timeoutMs), settle_(std::move(settle)) {}

std::shared_ptr<Comm> Comm::create(const nccl::UniqueId& id, int size, int rank, int device,
                                   int64_t timeoutMs, Settle settle) {
  nccl::api();        // throws "ncclLibraryNotFound" before a thread starts
  useDevice(device);  // throws when the device cannot be used
  std::shared_ptr<Comm> c(new Comm(size, rank, device, timeoutMs, std::move(settle)));
  Op init;
  init.id = 0;
  init.what = "initialisation";
  init.notify = true;
  c->ops_.push_back(std::move(init));
  try {
    // The thread holds the Comm until it ends; it is never joined, because it may be inside an NCCL
    // call that nothing can interrupt (an initialisation whose peer hangs).
    std::thread([c, id] { c->run(id); }).detach();
  } catch (const std::system_error& e) {
    throw CudaFailure("ncclSystemError", "std::thread",
                      std::string("could not start the communicator's thread: ") + e.what());
  }
  return c;
}

Comm::~Comm() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

void Comm::run(const nccl::UniqueId& id) {
  cudaSetDevice(device_);  // NCCL binds the communicator to the current device
  tightTimerSlack();
  try {
    if (initialise(id)) watch();
  } catch (const std::exception& e) {
    // Nothing may escape a thread (that would end the process): the communicator fails instead.
    fail("ncclInternalError", std::string("the communicator's thread failed: ") + e.what());
  }
  abortNccl();  // after a failure; nothing left after a clean destroy
  // Failed, so nothing is deferred any more and only this thread launched deferred operations: a hold
  // still here was left by a launch an exception cut short, and would stop the device for good.
  releaseLibraryStream(device_, this, -1);
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    threadDone_ = true;
  }
  finished_.notify_all();
  if (settle_) settle_(Outcome{Outcome::kClosed, true, "", ""});
}

// A communicator that reports ncclInProgress is non-blocking after all (NCCL_COMM_BLOCKING=0 in the
// environment overrides the config; the binding refuses that, this is the safety net): poll until
// the call has finished, the communicator failed or `deadline` passed (then ncclInProgress).
static nccl::Result waitInProgress(nccl::Comm raw, Clock::time_point deadline,
                                   const std::function<bool()>& failed) {
  const nccl::Api& a = nccl::api();
  for (microseconds p = kFirstPoll;; p = nextPoll(p)) {
    nccl::Result state = nccl::kSuccess;
    const nccl::Result q = a.commGetAsyncError(raw, &state);
    const nccl::Result r = q != nccl::kSuccess ? q : state;
    if (r != nccl::kInProgress || failed() || Clock::now() > deadline) return r;
    std::this_thread::sleep_for(p);
  }
}

bool Comm::failedNow() {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return failed_;
}

bool Comm::initialise(const nccl::UniqueId& id) {
  const nccl::Api& a = nccl::api();
  const std::string who = "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " on device " +
                          std::to_string(device_);
  nccl::Config config;
  config.blocking = 1;
  nccl::Comm raw = nullptr;
  nccl::Result r = a.commInitRankConfig(&raw, size_, id, rank_, &config);
  if (r == nccl::kInProgress && raw)
    r = waitInProgress(raw, Clock::now() + timeout(), [this] { return failedNow(); });
  if (r != nccl::kSuccess) {
    const std::string detail = lastError(raw);
    if (raw) a.commAbort(raw);
    fail(nccl::resultName(r),
         withDetail("NCCL could not initialise " + who + ": " + a.getErrorString(r), detail));
    return false;
  }
  if (!connectPeers(raw)) return false;  // it failed the communicator and aborted raw
  Op init;
  {
    std::lock_guard<std::mutex> nl(ncclMutex_);
    std::unique_lock<std::mutex> sl(stateMutex_);
    if (failed_) {
      // Failed meanwhile (Communicator.init's timeout, abort()): op 0 has been told.
      sl.unlock();
      a.commAbort(raw);
      return false;
    }
    comm_ = raw;
    initDone_ = true;
    auto it = std::find_if(ops_.begin(), ops_.end(), [](const Op& o) { return o.id == 0; });
    if (it != ops_.end()) {
      init = std::move(*it);
      ops_.erase(it);
    }
  }
  settle(init, true, "", "");
  return true;
}

// One int32 to and from every peer in one group: NCCL connects point-to-point to each of them now,
// so that no later send/recv has to wait in the caller's thread for a peer to connect.
bool Comm::connectPeers(nccl::Comm raw) {
  if (size_ < 2 || size_ > kWarmPeers) return true;
  const nccl::Api& a = nccl::api();
  cudaStream_t s = nullptr;
  cudaEvent_t done = nullptr;
  int32_t* buf = nullptr;
  std::string code, message;
  auto cuda = [&](cudaError_t e, const char* call) {
    if (e != cudaSuccess && code.empty()) {
      code = cudaGetErrorName(e);
      message = std::string("connecting to the peers: ") + call + ": " + cudaGetErrorString(e);
    }
    return e == cudaSuccess;
  };
  const size_t bytes = 2 * static_cast<size_t>(size_) * sizeof(int32_t);
  if (cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate") &&
      cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate") &&
      cuda(cudaMallocAsync(reinterpret_cast<void**>(&buf), bytes, s), "cudaMallocAsync") &&
      cuda(cudaMemsetAsync(buf, 0, bytes, s), "cudaMemsetAsync")) {
    nccl::Result r = a.groupStart();
    for (int p = 0; p < size_ && r == nccl::kSuccess; ++p) {
      if (p == rank_) continue;
      r = a.send(buf + p, 1, nccl::kInt32, p, raw, s);
      if (r == nccl::kSuccess) r = a.recv(buf + size_ + p, 1, nccl::kInt32, p, raw, s);
    }
    const nccl::Result g = a.groupEnd();  // always closed, also after a failure inside
    if (r == nccl::kSuccess) r = g;
    if (r == nccl::kInProgress)
      r = waitInProgress(raw, Clock::now() + timeout(), [this] { return failedNow(); });
    if (r != nccl::kSuccess) {
      code = nccl::resultName(r);
      message =
          withDetail(std::string("connecting to the peers failed: ") + a.getErrorString(r), lastError(raw));
    } else if (cuda(cudaEventRecord(done, s), "cudaEventRecord")) {
      // The exchange itself, on the GPU: poll, so that a failure (the timeout of Communicator.init,
      // abort()) or a peer that never sends ends the wait.
      const auto deadline = Clock::now() + timeout();
      for (microseconds p = kFirstPoll;; p = nextPoll(p)) {
        const cudaError_t q = cudaEventQuery(done);
        if (q == cudaSuccess) break;
        if (q != cudaErrorNotReady) {
          cuda(q, "the exchange with the peers");
          break;
        }
        nccl::Result async = nccl::kSuccess;
        if (a.commGetAsyncError(raw, &async) == nccl::kSuccess && async != nccl::kSuccess &&
            async != nccl::kInProgress) {
          code = nccl::resultName(async);
          message = std::string("connecting to the peers failed: ") + a.getErrorString(async);
          break;
        }
        if (failedNow()) {
          code = "ncclAborted";
          break;
        }
        if (Clock::now() > deadline) {
          code = "ncclTimeout";
          message = "connecting to the peers did not complete within " + std::to_string(timeoutMs_) + " ms";
          break;
        }
        std::this_thread::sleep_for(p);
      }
      cudaGetLastError();  // cudaErrorNotReady must not linger in this thread's error slot
    }
  }
  const bool ok = code.empty();
  // Aborting makes NCCL's kernels return, so the stream can drain before its buffer goes.
  if (!ok) a.commAbort(raw);
  if (buf) cudaFreeAsync(buf, s);
  if (s) {
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  }
  if (done) cudaEventDestroy(done);
  cudaGetLastError();
  if (!ok && code != "ncclAborted") fail(code, message);
  return ok;
}

void Comm::settle(const Op& op, bool ok, const std::string& code, const std::string& message) {
  if (ok) {
    // Completed: both events can be recorded again.
    giveEvent(op.start);
    giveEvent(op.end);
  } else {
    // Possibly still pending on the stream: destroying them is fine, reusing them is not.
    if (op.start) cudaEventDestroy(op.start);
    if (op.end) cudaEventDestroy(op.end);
  }
  if (op.notify && settle_) settle_(Outcome{op.id, ok, code, message});
}

cudaEvent_t Comm::takeEvent() {
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    if (!events_.empty()) {
      cudaEvent_t e = events_.back();
      events_.pop_back();
      return e;
    }
  }
  // Events belong to the device that is current when they are made.
  int current = -1;
  cudaGetDevice(&current);
  DeviceRestore restore;
  if (current != device_) CK_CUDA(cudaSetDevice(device_));
  cudaEvent_t e = nullptr;
  CK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

void Comm::giveEvent(cudaEvent_t e) {
  if (e == nullptr) return;
  std::lock_guard<std::mutex> lock(stateMutex_);
  events_.push_back(e);
}

void Comm::watch() {
  const nccl::Api& a = nccl::api();
  microseconds poll = kFirstPoll;
  for (;;) {
    bool closing = false;
    {
      std::unique_lock<std::mutex> lock(stateMutex_);
      if (!failed_ && !closing_ && ops_.empty() && deferred_.empty()) {
        wake_.wait(lock, [&] { return failed_ || closing_ || !ops_.empty() || !deferred_.empty(); });
        poll = kFirstPoll;
      }
      if (failed_) return;
      closing = closing_;
    }
    // The async error first: a peer's death shows there before any event could complete. Skipped
    // while another thread is inside a call (it will be polled again in a moment).
    nccl::Result async = nccl::kSuccess;
    bool polled = false;
    if (ncclMutex_.try_lock()) {
      if (comm_) {
        const nccl::Result r = a.commGetAsyncError(comm_, &async);
        if (r != nccl::kSuccess) async = r;
        polled = true;
      }
      ncclMutex_.unlock();
    }
    if (polled && async != nccl::kSuccess && async != nccl::kInProgress) {
      fail(nccl::resultName(async),
           std::string("NCCL reported an error while operations were running (a peer process died or its "
                       "connection broke): ") +
               a.getErrorString(async));
      return;
    }
    const auto now = Clock::now();
    std::vector<Op> done;
    std::string failCode, failMessage;
    {
      std::lock_guard<std::mutex> lock(stateMutex_);
      if (failed_) return;
      for (auto it = ops_.begin(); it != ops_.end();) {
        const cudaError_t q = cudaEventQuery(it->end);
        if (q == cudaSuccess) {
          done.push_back(std::move(*it));
          it = ops_.erase(it);
          --counted_;
          continue;
        }
        if (q != cudaErrorNotReady) {
          failCode = cudaGetErrorName(q);
          failMessage = it->what + ": " + cudaGetErrorString(q);
          break;
        }
        // The clock of an operation starts when the GPU reaches it, so that work queued before it
        // on the stream never counts against the timeout.
        if (!it->started) {
          if (cudaEventQuery(it->start) == cudaSuccess) {
            it->started = true;
            it->startedAt = now;
          }
        } else if (now - it->startedAt > timeout()) {
          failCode = "ncclTimeout";
          failMessage = it->what + " did not complete within " + std::to_string(timeoutMs_) +
                        " ms of starting on the GPU: a peer process is dead or hung, or did not make the "
                        "matching call (collectives, counts, dtypes and roots must agree on every rank)";
          break;
        }
        ++it;
      }
      cudaGetLastError();  // cudaErrorNotReady must not linger in this thread's error slot
    }
    for (const Op& op : done) settle(op, true, "", "");
    if (!failCode.empty()) {
      fail(failCode, failMessage);
      return;
    }
    // Slots freed: deferred operations go now (destroy() waits for them like the others).
    launchDeferred();
    bool drained = false;
    {
      std::lock_guard<std::mutex> lock(stateMutex_);
      if (failed_) return;
      drained = ops_.empty() && deferred_.empty();
    }
    if (closing) {
      if (drained) {
        const bool clean = finalizeNccl();
        fail("ncclCommDestroyed",
             clean ? "the communicator was destroyed"
                   : "the communicator was destroyed (finalizing failed, so it was aborted)");
        return;
      }
      if (Clock::now() > closeDeadline_) {
        fail("ncclTimeout", "destroy(): the pending operations did not complete within " +
                                std::to_string(timeoutMs_) +
                                " ms, so the communicator was aborted instead of finalized");
        return;
      }
    }
    poll = done.empty() ? nextPoll(poll) : kFirstPoll;
    std::unique_lock<std::mutex> lock(stateMutex_);
    wake_.wait_for(lock, poll, [&] { return failed_; });
  }
}

void Comm::abortNccl() {
  std::lock_guard<std::mutex> lock(ncclMutex_);
  if (comm_) nccl::api().commAbort(comm_);
  comm_ = nullptr;
}

bool Comm::finalizeNccl() {
  const nccl::Api& a = nccl::api();
  std::lock_guard<std::mutex> lock(ncclMutex_);
  if (comm_ == nullptr) return false;
  // Finalize flushes NCCL's own streams (ours are drained) and stops its proxy; then destroy.
  nccl::Result r = a.commFinalize(comm_);
  if (r == nccl::kInProgress) r = waitInProgress(comm_, closeDeadline_, [] { return false; });
  if (r == nccl::kSuccess) r = a.commDestroy(comm_);
  // ncclInProgress from destroy: the release goes on inside NCCL; the handle is gone either way.
  const bool clean = r == nccl::kSuccess || r == nccl::kInProgress;
  if (!clean) a.commAbort(comm_);
  comm_ = nullptr;
  return clean;
}

void Comm::fail(const std::string& code, const std::string& message) {
  std::deque<Op> pending;
  std::deque<Deferred> deferred;
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    if (failed_) return;
    failed_ = true;
    failCode_ = code;
    failMessage_ = message;
    if (code != "ncclCommDestroyed")
      failMessage_ += "; the communicator was aborted: create a new one to go on";
    reason = failMessage_;
    pending.swap(ops_);
    counted_ = 0;
    deferred.swap(deferred_);
  }
  wake_.notify_all();
  // Never queued now: work held behind them may go on. Not the one being queued this moment
  // (launching_): launchDeferred releases it once its NCCL call has returned, so that nothing called
  // after abort() (a free() of its arrays) reaches the stream before the kernels it may still queue.
  releaseLibraryStream(device_, this, static_cast<int>(deferred.size()));
  for (const Op& op : pending) settle(op, false, code, reason);
  for (const Deferred& d : deferred)
    if (d.notify && settle_) settle_(Outcome{d.id, false, code, reason});
}

void Comm::throwIfFailed() {
  std::lock_guard<std::mutex> lock(stateMutex_);
  if (failed_) throw CudaFailure(failCode_, "communicator", failMessage_);
}

bool Comm::ready() {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return initDone_ && !failed_ && !closing_;
}

size_t Comm::pending() {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return counted_ + deferred_.size() + (launching_ != 0 ? 1 : 0);
}

bool Comm::reserve() {
  std::lock_guard<std::mutex> lock(stateMutex_);
  if (reserved_) return false;
  reserved_ = true;
  owner_ = std::thread::id();
  return true;
}

void Comm::claim() {
  std::lock_guard<std::mutex> lock(stateMutex_);
  owner_ = std::this_thread::get_id();
}

void Comm::release() {
  std::lock_guard<std::mutex> lock(stateMutex_);
  owner_ = std::thread::id();
  reserved_ = false;
}

void Comm::checkUsable(const char* what) {
  if (failed_) throw CudaFailure(failCode_, what, failMessage_);
  if (closing_) throw CudaFailure("ncclCommDestroyed", what, "the communicator has been destroyed");
  if (!initDone_)
    throw CudaFailure("ncclInvalidUsage", what,
                      "the communicator is not initialised yet: await Communicator.init()");
  if (reserved_ && owner_ != std::this_thread::get_id()) {
    throw CudaFailure("ncclInvalidUsage", what,
                      "the communicator is busy with a distributed run (apspDistributed); await it first");
  }
}

Comm::Queued Comm::queueNow(Op& op, cudaStream_t stream,
                            const std::function<nccl::Result(nccl::Comm)>& call) {
  Queued q;
  try {
    op.start = takeEvent();
    op.end = takeEvent();
  } catch (const CudaFailure& f) {
    q.code = f.code();
    q.message = f.what();
    return q;
  }
  std::unique_lock<std::mutex> nl(ncclMutex_, std::defer_lock);
  if (!nl.try_lock()) {
    const auto until = Clock::now() + kLockSpin;
    while (!nl.try_lock()) {
      if (failedNow()) {
        q.code = "ncclAborted";  // the failure's own reason is what the caller reports
        return q;
      }
      if (Clock::now() > until) {
        nl.lock();
        break;
      }
      std::this_thread::yield();
    }
  }
  if (comm_ == nullptr) {
    q.code = "ncclInvalidUsage";
    q.message = "the communicator is not initialised";
    return q;
  }
  // Failed meanwhile (abort()): nothing more for NCCL to launch on this communicator.
  if (failedNow()) {
    q.code = "ncclAborted";
    return q;
  }
  cudaError_t e = cudaEventRecord(op.start, stream);
  if (e != cudaSuccess) {
    q.code = cudaGetErrorName(e);
    q.message = std::string("cudaEventRecord: ") + cudaGetErrorString(e);
    return q;
  }
  nccl::Result r = call(comm_);
  if (r == nccl::kInProgress)
    r = waitInProgress(comm_, Clock::now() + timeout(), [this] { return failedNow(); });
  if (r != nccl::kSuccess) {
    q.code = nccl::resultName(r);
    q.message = std::string("was refused by NCCL: ") + nccl::api().getErrorString(r);
    q.detail = lastError(comm_);
    return q;
  }
  e = cudaEventRecord(op.end, stream);
  if (e != cudaSuccess) {
    // Queued in NCCL but not tracked: nothing could tell when it ends, so the communicator stops here.
    q.code = cudaGetErrorName(e);
    q.message = std::string("was queued but cannot be tracked: cudaEventRecord: ") + cudaGetErrorString(e);
  }
  return q;
}

uint64_t Comm::enqueue(const char* what, cudaStream_t stream, bool notify, size_t maxInFlight,
                       const std::function<nccl::Result(nccl::Comm)>& call) {
  // Bounded look-ahead: a thread that queued far ahead of a hung GPU would block inside a launch
  // while holding ncclMutex_, where the watchdog could no longer abort. Deferred operations were
  // called first, so they reach NCCL first.
  for (microseconds p = kFirstPoll;; p = nextPoll(p)) {
    {
      std::lock_guard<std::mutex> lock(stateMutex_);
      checkUsable(what);
      if (counted_ < maxInFlight && deferred_.empty() && launching_ == 0) break;
    }
    std::this_thread::sleep_for(p);
  }
  Op op;
  op.what = what;
  op.notify = notify;
  const Queued q = queueNow(op, stream, call);
  if (!q.code.empty()) {
    // Possibly still pending on the stream: destroying the events is fine, reusing them is not.
    for (cudaEvent_t e : {op.start, op.end})
      if (e) cudaEventDestroy(e);
    throwIfFailed();  // failed meanwhile: that reason
    fail(q.code, withDetail(std::string(what) + " " + q.message, q.detail));
    throwIfFailed();
  }
  uint64_t id = 0;
  bool idle = false;
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    if (failed_) {
      for (cudaEvent_t e : {op.start, op.end}) cudaEventDestroy(e);
      throw CudaFailure(failCode_, what, failMessage_);
    }
    id = op.id = nextId_++;
    idle = ops_.empty();
    ops_.push_back(std::move(op));
    ++counted_;
  }
  // The watchdog sleeps on wake_ only while nothing is pending; otherwise it is polling already.
  if (idle) wake_.notify_all();
  return id;
}

uint64_t Comm::enqueueOrDefer(const char* what, cudaStream_t stream, bool notify, size_t maxInFlight,
                              Launch call) {
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    checkUsable(what);
    // Only the caller's thread adds operations, and the communicator's thread queues only deferred
    // ones: with none deferred and a slot free, this call is the next to reach NCCL, and enqueue
    // finds the slot still free.
    if (!(deferred_.empty() && launching_ == 0 && counted_ < maxInFlight)) {
      Deferred d;
      d.id = nextId_++;
      d.what = what;
      d.notify = notify;
      d.maxInFlight = maxInFlight;
      d.stream = stream;
      d.call = std::move(call);
      const uint64_t id = d.id;
      deferred_.push_back(std::move(d));
      holdLibraryStream(device_, this);
      wake_.notify_all();
      return id;
    }
  }
  return enqueue(what, stream, notify, maxInFlight, [&](nccl::Comm raw) { return call(raw, stream); });
}

void Comm::launchDeferred() {
  for (;;) {
    Deferred d;
    {
      std::lock_guard<std::mutex> lock(stateMutex_);
      if (failed_ || deferred_.empty() || counted_ >= deferred_.front().maxInFlight) return;
      // Out of the queue while it is queued on the stream; launching_ keeps enqueue from going
      // ahead of it, and wait() and pending() counting it.
      d = std::move(deferred_.front());
      deferred_.pop_front();
      launching_ = d.id;
    }
    // On the stream the caller was given (held for this communicator, so no wait; work of other
    // holders cannot be held now: the caller's thread waited for them in libraryStreamFor before it
    // deferred anything). Nothing may escape: the operation is out of every list and holds the
    // stream, so it is settled and released below whatever happens.
    Op op;
    Queued q;
    try {
      op.what = d.what;
      op.notify = d.notify;
      const cudaStream_t stream = d.stream;
      q = queueNow(op, stream, [&](nccl::Comm raw) { return d.call(raw, stream); });
    } catch (const std::exception& e) {
      q.code = "ncclInternalError";
      q.message = std::string("could not be queued: ") + e.what();
    }
    bool failedMeanwhile = false;
    {
      std::lock_guard<std::mutex> lock(stateMutex_);
      // From launching_ to ops_ in one step: wait() and pending() always find it in one of them, and
      // a failure from any thread settles it exactly once.
      launching_ = 0;
      op.id = d.id;
      if (failed_) {
        failedMeanwhile = true;
      } else if (q.code.empty()) {
        ops_.push_back(std::move(op));
        ++counted_;
      }
    }
    // Queued (or failed): work called after it may go on the stream now. fail() releases the rest.
    releaseLibraryStream(device_, this, 1);
    if (failedMeanwhile || !q.code.empty()) {
      for (cudaEvent_t e : {op.start, op.end})
        if (e) cudaEventDestroy(e);
      if (!failedMeanwhile)
        fail(q.code, withDetail(d.what + " (deferred: " + std::to_string(d.maxInFlight) +
                                    " operations were in flight) " + q.message,
                                q.detail));
      // It was out of every list when the communicator failed: settled here, with that reason.
      std::string code, message;
      {
        std::lock_guard<std::mutex> lock(stateMutex_);
        code = failCode_;
        message = failMessage_;
      }
      if (d.notify && settle_) settle_(Outcome{d.id, false, code, message});
      return;
    }
  }
}

void Comm::wait(uint64_t id) {
  for (microseconds p = kFirstPoll;; p = nextPoll(p)) {
    {
      std::lock_guard<std::mutex> lock(stateMutex_);
      if (failed_) throw CudaFailure(failCode_, "communicator", failMessage_);
      if (launching_ != id &&
          std::none_of(ops_.begin(), ops_.end(), [&](const Op& o) { return o.id == id; }) &&
          std::none_of(deferred_.begin(), deferred_.end(), [&](const Deferred& d) { return d.id == id; }))
        return;
    }
    std::this_thread::sleep_for(p);
  }
}

void Comm::waitAll() {
  for (microseconds p = kFirstPoll; pending() > 0; p = nextPoll(p)) {
    throwIfFailed();
    std::this_thread::sleep_for(p);
  }
  throwIfFailed();
}

void Comm::destroy() {
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    if (closing_ || failed_) return;
    closing_ = true;
    closeDeadline_ = Clock::now() + timeout();
  }
  wake_.notify_all();
}

void Comm::abort() {
  fail("ncclAborted", "comm.abort() was called");
}

void Comm::shutdown(std::chrono::milliseconds wait) {
  fail("ncclAborted", "the JavaScript environment is shutting down");
  std::unique_lock<std::mutex> lock(stateMutex_);
  finished_.wait_for(lock, wait, [&] { return threadDone_; });
}

}  // namespace dist
}  // namespace ck
