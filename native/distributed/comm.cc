#include "distributed/comm.h"

#include <algorithm>
#include <cstdlib>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "core/device.h"
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

// A call on a non-blocking communicator returns ncclInProgress while a thread NCCL starts for it
// launches the kernels, which takes tens of µs. Sleeping there cost every collective ~0.1 ms (a
// sleep_for(10 µs) lasts 60 µs or more with Linux's default 50 µs timer slack), so the caller spins,
// yielding its core, for up to 2 ms before it backs off to sleeps. CUDA_KERNELS_NCCL_SPIN_US sets
// that time (0: sleep at once, as before), for comparisons and for hosts short of cores.
microseconds spinTime() {
  static const microseconds spin = [] {
    const char* v = std::getenv("CUDA_KERNELS_NCCL_SPIN_US");
    if (v == nullptr || *v == '\0') return microseconds{2000};
    char* end = nullptr;
    const long long us = std::strtoll(v, &end, 10);
    return *end == '\0' && us >= 0 ? microseconds{std::min<long long>(us, 1000000)} : microseconds{2000};
  }();
  return spin;
}

// The watchdog's short sleeps are meant to be short: 1 µs of timer slack for its thread instead of
// the default 50 µs, so that it notices a finished collective within ~10 µs.
void tightTimerSlack() {
#if defined(__linux__)
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#endif
}

std::string withDetail(const std::string& message, const char* detail) {
  if (detail == nullptr || detail[0] == '\0') return message;
  return message + " (NCCL: " + detail + ")";
}

}  // namespace

Comm::Comm(int size, int rank, int device, int64_t timeoutMs, Settle settle)
    : size_(size), rank_(rank), device_(device), timeoutMs_(timeoutMs), settle_(std::move(settle)) {}

std::shared_ptr<Comm> Comm::create(const nccl::UniqueId& id, int size, int rank, int device,
                                   int64_t timeoutMs, Settle settle) {
  const nccl::Api& a = nccl::api();
  useDevice(device);  // NCCL binds the communicator to the current device
  std::shared_ptr<Comm> c(new Comm(size, rank, device, timeoutMs, std::move(settle)));
  nccl::Config config;
  config.blocking = 0;
  nccl::Comm raw = nullptr;
  const nccl::Result r = a.commInitRankConfig(&raw, size, id, rank, &config);
  if (r != nccl::kSuccess && r != nccl::kInProgress) {
    const std::string message =
        withDetail("NCCL could not start rank " + std::to_string(rank) + " of " + std::to_string(size) +
                       " on device " + std::to_string(device) + ": " + a.getErrorString(r),
                   a.getLastError(raw));
    if (raw) a.commAbort(raw);
    throw CudaFailure(nccl::resultName(r), "ncclCommInitRankConfig", message);
  }
  c->comm_ = raw;
  c->initDeadline_ = Clock::now() + c->timeout();
  Op init;
  init.id = 0;
  init.what = "initialisation";
  init.notify = true;
  c->ops_.push_back(std::move(init));
  c->watchdog_ = std::thread([p = c.get()] { p->watch(); });
  return c;
}

Comm::~Comm() {
  fail("ncclCommDestroyed", "the communicator was released without destroy()");
  stopWatchdog();
}

void Comm::settle(const Op& op, bool ok, const std::string& code, const std::string& message) {
  if (op.start) cudaEventDestroy(op.start);
  if (op.end) cudaEventDestroy(op.end);
  if (op.notify && settle_) settle_(Outcome{op.id, ok, code, message});
}

void Comm::watch() {
  cudaSetDevice(device_);  // for the event queries; they work from any device, this only avoids a switch
  tightTimerSlack();
  const nccl::Api& a = nccl::api();
  microseconds poll = kFirstPoll;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(stateMutex_);
      if (ops_.empty()) {
        wake_.wait(lock, [&] { return stop_ || !ops_.empty(); });
        poll = kFirstPoll;
      }
      if (stop_) return;
    }
    // The async error first: a peer's death shows there before any event could complete.
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
    const auto now = Clock::now();
    std::vector<Op> done;
    std::string failCode, failMessage;
    {
      std::lock_guard<std::mutex> lock(stateMutex_);
      if (failed_ || stop_) continue;
      if (!initDone_) {
        if (polled && async == nccl::kSuccess) {
          initDone_ = true;
          auto it = std::find_if(ops_.begin(), ops_.end(), [](const Op& o) { return o.id == 0; });
          if (it != ops_.end()) {
            done.push_back(std::move(*it));
            ops_.erase(it);
          }
        } else if (polled && async != nccl::kInProgress) {
          failCode = nccl::resultName(async);
          failMessage = std::string("the initialisation failed: ") + a.getErrorString(async);
        } else if (now > initDeadline_) {
          failCode = "ncclTimeout";
          failMessage = "the initialisation did not complete within " + std::to_string(timeoutMs_) +
                        " ms: not every rank joined (a rank that never started or failed early, a wrong "
                        "address or port, a firewall, or ranks that disagree on the size)";
        }
      } else if (polled && async != nccl::kSuccess && async != nccl::kInProgress) {
        failCode = nccl::resultName(async);
        failMessage = std::string(
                          "NCCL reported an error while operations were running (a peer process died "
                          "or its connection broke): ") +
                      a.getErrorString(async);
      }
      if (failCode.empty()) {
        for (auto it = ops_.begin(); it != ops_.end();) {
          if (it->id == 0) {
            ++it;
            continue;
          }
          const cudaError_t q = cudaEventQuery(it->end);
          if (q == cudaSuccess) {
            done.push_back(std::move(*it));
            it = ops_.erase(it);
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
    }
    for (const Op& op : done) settle(op, true, "", "");
    if (!failCode.empty()) {
      fail(failCode, failMessage);
      continue;
    }
    poll = done.empty() ? nextPoll(poll) : kFirstPoll;
    std::unique_lock<std::mutex> lock(stateMutex_);
    wake_.wait_for(lock, poll, [&] { return stop_; });
  }
}

void Comm::stopWatchdog() {
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (watchdog_.joinable() && watchdog_.get_id() != std::this_thread::get_id()) watchdog_.join();
}

void Comm::fail(const std::string& code, const std::string& message) {
  const char* detail = nullptr;
  std::string detailCopy;
  {
    std::lock_guard<std::mutex> lock(ncclMutex_);
    if (comm_) {
      const nccl::Api& a = nccl::api();
      detail = a.getLastError(comm_);
      if (detail) detailCopy = detail;
      a.commAbort(comm_);
      comm_ = nullptr;
    }
  }
  std::vector<Op> pending;
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    if (failed_) return;
    failed_ = true;
    failCode_ = code;
    failMessage_ = withDetail(message, detailCopy.c_str());
    if (code != "ncclCommDestroyed")
      failMessage_ += "; the communicator was aborted: create a new one to go on";
    reason = failMessage_;
    pending.swap(ops_);
  }
  wake_.notify_all();
  for (const Op& op : pending) settle(op, false, code, reason);
}

void Comm::throwIfFailed() {
  std::lock_guard<std::mutex> lock(stateMutex_);
  if (failed_) throw CudaFailure(failCode_, "communicator", failMessage_);
}

bool Comm::ready() {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return initDone_ && !failed_;
}

size_t Comm::pending() {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return static_cast<size_t>(std::count_if(ops_.begin(), ops_.end(), [](const Op& o) { return o.id != 0; }));
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

uint64_t Comm::enqueue(const char* what, cudaStream_t stream, bool notify, size_t maxInFlight,
                       const std::function<nccl::Result(nccl::Comm)>& call) {
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    if (failed_) throw CudaFailure(failCode_, what, failMessage_);
    if (!initDone_)
      throw CudaFailure("ncclInvalidUsage", what,
                        "the communicator is not initialised yet: await Communicator.init()");
    if (reserved_ && owner_ != std::this_thread::get_id()) {
      throw CudaFailure("ncclInvalidUsage", what,
                        "the communicator is busy with a distributed run (apspDistributed); await it first");
    }
  }
  // Bounded look-ahead: a thread that queued far ahead of a hung GPU would block inside a launch.
  for (microseconds p = kFirstPoll; pending() >= maxInFlight; p = nextPoll(p)) {
    throwIfFailed();
    std::this_thread::sleep_for(p);
  }
  const nccl::Api& a = nccl::api();
  Op op;
  op.what = what;
  op.notify = notify;
  struct Events {
    cudaEvent_t* start;
    cudaEvent_t* end;
    bool keep = false;
    ~Events() {
      if (keep) return;
      if (*start) cudaEventDestroy(*start);
      if (*end) cudaEventDestroy(*end);
    }
  } events{&op.start, &op.end};
  CK_CUDA(cudaEventCreateWithFlags(&op.start, cudaEventDisableTiming));
  CK_CUDA(cudaEventCreateWithFlags(&op.end, cudaEventDisableTiming));
  CK_CUDA(cudaEventRecord(op.start, stream));
  nccl::Result r = nccl::kSuccess;
  bool timedOut = false;
  std::string detail;
  {
    std::lock_guard<std::mutex> lock(ncclMutex_);
    if (comm_ == nullptr) {
      r = nccl::kInvalidUsage;
    } else {
      r = call(comm_);
      // Non-blocking: the call may still be connecting to its peers; it is queued once the state
      // leaves ncclInProgress.
      const auto begun = Clock::now(), deadline = begun + timeout();
      const microseconds spin = spinTime();
      for (microseconds p = kFirstPoll; r == nccl::kInProgress;) {
        nccl::Result state = nccl::kSuccess;
        const nccl::Result q = a.commGetAsyncError(comm_, &state);
        r = q != nccl::kSuccess ? q : state;
        if (r != nccl::kInProgress) break;
        const auto now = Clock::now();
        if (now > deadline) {
          timedOut = true;
          break;
        }
        if (now - begun < spin) {
          std::this_thread::yield();
        } else {
          std::this_thread::sleep_for(p);
          p = nextPoll(p);
        }
      }
      if (r != nccl::kSuccess && !timedOut) {
        const char* e = a.getLastError(comm_);
        if (e) detail = e;
      }
    }
  }
  if (timedOut) {
    fail("ncclTimeout", std::string(what) + " could not be queued within " + std::to_string(timeoutMs_) +
                            " ms (NCCL was still connecting to its peers)");
    throwIfFailed();
  }
  if (r != nccl::kSuccess) {
    throwIfFailed();  // failed meanwhile: that reason
    fail(nccl::resultName(r),
         withDetail(std::string(what) + " was refused by NCCL: " + a.getErrorString(r), detail.c_str()));
    throwIfFailed();
  }
  CK_CUDA(cudaEventRecord(op.end, stream));
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    if (failed_) throw CudaFailure(failCode_, what, failMessage_);
    id = op.id = nextId_++;
    events.keep = true;
    ops_.push_back(std::move(op));
  }
  wake_.notify_all();
  return id;
}

void Comm::wait(uint64_t id) {
  for (microseconds p = kFirstPoll;; p = nextPoll(p)) {
    {
      std::lock_guard<std::mutex> lock(stateMutex_);
      if (failed_) throw CudaFailure(failCode_, "communicator", failMessage_);
      if (std::none_of(ops_.begin(), ops_.end(), [&](const Op& o) { return o.id == id; })) return;
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
  try {
    waitAll();
  } catch (const CudaFailure&) {
    // Already failed (and aborted): nothing left to flush.
  }
  stopWatchdog();
  {
    std::lock_guard<std::mutex> lock(ncclMutex_);
    if (comm_) {
      const nccl::Api& a = nccl::api();
      // Finalize flushes what is queued and quiesces with the peers; it may take the timeout when
      // a peer is gone, and the communicator is aborted instead.
      nccl::Result r = a.commFinalize(comm_);
      const auto deadline = Clock::now() + timeout();
      for (microseconds p = kFirstPoll; r == nccl::kInProgress && Clock::now() < deadline; p = nextPoll(p)) {
        std::this_thread::sleep_for(p);
        nccl::Result state = nccl::kSuccess;
        const nccl::Result q = a.commGetAsyncError(comm_, &state);
        r = q != nccl::kSuccess ? q : state;
      }
      if (r == nccl::kSuccess) r = a.commDestroy(comm_);
      // ncclInProgress from destroy: the release goes on inside NCCL; the handle is gone either way.
      if (r != nccl::kSuccess && r != nccl::kInProgress) a.commAbort(comm_);
      comm_ = nullptr;
    }
  }
  fail("ncclCommDestroyed", "the communicator was destroyed");
}

void Comm::abort() {
  fail("ncclAborted", "comm.abort() was called");
  stopWatchdog();
}

}  // namespace dist
}  // namespace ck
