// N-API glue for NCCL communicators: unwrap, check, call, wrap. Operations are launched in the calling
// thread and return promises that the communicator's thread settles (through a thread-safe function)
// when their events complete or the communicator fails.
#include "distributed/binding.h"

#include <napi.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>

#include "apsp/apsp.h"
#include "core/args.h"
#include "core/buffer.h"
#include "core/device.h"
#include "core/device_restore.h"
#include "core/errors.h"
#include "core/js_relay.h"
#include "distributed/apsp.h"
#include "distributed/nccl.h"

namespace ck {
namespace dist {

namespace {

// Tells our communicator handles from any other External.
const napi_type_tag kCommTag = {0x6375646b6e63636cULL, 0x2e636f6d6d303031ULL};

// The promises of one communicator's operations, by operation id (JS thread only). Owned by the
// thread-safe function, deleted by its finalizer once every queued outcome has been delivered.
struct JsState;
void deliver(Napi::Env env, Napi::Function, JsState* state, Outcome* outcome);
using Tsfn = Napi::TypedThreadSafeFunction<JsState, Outcome, deliver>;
// Posts outcomes from any thread until closed.
using Notifier = JsRelay<Tsfn, Outcome>;

struct JsState {
  Tsfn tsfn;
  std::shared_ptr<Notifier> notifier;
  std::unordered_map<uint64_t, Napi::Promise::Deferred> deferred;
  // Pending promises keep the event loop alive; none, and the process may exit with the
  // communicator idle.
  PendingRef<Tsfn> ref;
  // The close: requested by JS (destroy, abort), and the thread's kClosed outcome. The promise
  // ncclCommClose returned settles once both happened; then nothing more comes, and the
  // thread-safe function is released.
  bool closeRequested = false;
  bool threadDone = false;
  std::unique_ptr<Napi::Promise::Deferred> closed;

  void updateRef(Napi::Env env) { ref.update(env, tsfn, !deferred.empty()); }
  void finishClose(Napi::Env env) {
    if (!closeRequested || !threadDone) return;
    if (closed) {
      try {
        closed->Resolve(env.Undefined());
      } catch (const Napi::Error&) {
      }
      closed.reset();
    }
    notifier->close();
  }
};

void deliver(Napi::Env env, Napi::Function, JsState* state, Outcome* outcome) {
  std::unique_ptr<Outcome> o(outcome);
  if (env == nullptr || state == nullptr) return;  // torn down with outcomes still queued
  if (o->id == Outcome::kClosed) {
    state->threadDone = true;
    state->finishClose(env);
    return;
  }
  auto it = state->deferred.find(o->id);
  if (it == state->deferred.end()) return;
  Napi::Promise::Deferred d = it->second;
  state->deferred.erase(it);
  try {
    if (o->ok)
      d.Resolve(env.Undefined());
    else
      d.Reject(makeJsError(env, CudaFailure(o->code, "nccl", o->message)).Value());
  } catch (const Napi::Error&) {
    // The environment is going away: nobody is left to tell.
  }
  state->updateRef(env);
}

struct JsComm {
  std::shared_ptr<Comm> comm;
  std::shared_ptr<Notifier> notifier;
  JsState* state = nullptr;
  napi_env env = nullptr;
  bool closed = false;
  bool hooked = false;
};

// Asks the communicator's thread to destroy (gracefully) or abort the communicator, and returns the
// promise of its end. Never waits: the thread does the waiting.
Napi::Value closeComm(Napi::Env env, JsComm& j, bool graceful) {
  auto d = Napi::Promise::Deferred::New(env);
  if (j.closed) {
    d.Resolve(env.Undefined());
    return d.Promise();
  }
  j.closed = true;
  if (graceful)
    j.comm->destroy();
  else
    j.comm->abort();
  j.state->closeRequested = true;
  j.state->closed = std::make_unique<Napi::Promise::Deferred>(d);
  j.state->finishClose(env);
  return d.Promise();
}

// The environment is going away (process exit, a worker's end): abort, give the thread a moment to
// finish its NCCL teardown, and stop every delivery.
void cleanupHook(void* arg) {
  auto* j = static_cast<JsComm*>(arg);
  j->hooked = false;
  j->closed = true;
  j->comm->shutdown(std::chrono::milliseconds(2000));
  {
    // Once released, the thread-safe function may have deleted the state already.
    std::lock_guard<std::mutex> lock(j->notifier->mutex);
    if (j->notifier->open) j->state->ref.open = false;
  }
  j->notifier->close();
}

JsComm& unwrapJs(Napi::Value value, const char* name) {
  Napi::Env env = value.Env();
  if (!value.IsExternal() || !value.As<Napi::External<JsComm>>().CheckTypeTag(&kCommTag))
    throw Napi::TypeError::New(env, std::string(name) + " must be a communicator handle");
  return *value.As<Napi::External<JsComm>>().Data();
}

JsComm& liveComm(Napi::Value value, const char* name) {
  JsComm& j = unwrapJs(value, name);
  if (j.closed) throw Napi::Error::New(value.Env(), std::string(name) + " has been destroyed");
  return j;
}

// ncclInfo() -> { available, path?, version?, code?, reason? } without throwing.
Napi::Value ncclInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto o = Napi::Object::New(env);
  try {
    const nccl::Api& a = nccl::api();
    o.Set("available", true);
    o.Set("path", a.path);
    o.Set("version", nccl::versionString(a.version));
  } catch (const CudaFailure& f) {
    o.Set("available", false);
    o.Set("code", f.code());
    o.Set("reason", f.what());
  }
  return o;
}

// ncclUniqueId() -> Buffer (128 bytes): what rank 0's bootstrap store hands to the other ranks.
Napi::Value ncclUniqueId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    const nccl::Api& a = nccl::api();
    nccl::prepareEnvironment();
    nccl::UniqueId id{};
    const nccl::Result r = a.getUniqueId(&id);
    if (r != nccl::kSuccess)
      throw CudaFailure(nccl::resultName(r), "ncclGetUniqueId",
                        std::string("NCCL could not make the bootstrap id: ") + a.getErrorString(r));
    return Napi::Buffer<char>::Copy(env, id.internal, nccl::kUniqueIdBytes);
  });
}

// ncclCommInit(id, size, rank, device, timeoutMs) -> { comm, ready: Promise<void>, runtimeConnect }.
// `id` is the 128 bytes rank 0's ncclUniqueId() made. The communicator's thread initialises and
// connects it; `ready` settles when it has (or failed). `runtimeConnect`: the user set
// NCCL_RUNTIME_CONNECT, so collectives may still connect (and wait) in the calling thread.
Napi::Value ncclCommInit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsBuffer() || info[0].As<Napi::Buffer<char>>().Length() != nccl::kUniqueIdBytes)
    throw Napi::TypeError::New(env,
                               "id must be a Buffer of " + std::to_string(nccl::kUniqueIdBytes) + " bytes");
  const int size = intArg(info, 1, "size");
  const int rank = intArg(info, 2, "rank");
  const int device = intArg(info, 3, "device");
  const int64_t timeoutMs = countArg(info, 4, "timeoutMs");
  if (size < 1) throw Napi::RangeError::New(env, "size must be at least 1");
  if (rank < 0 || rank >= size) throw Napi::RangeError::New(env, "rank must be in [0, size)");
  if (timeoutMs < 1) throw Napi::RangeError::New(env, "timeoutMs must be at least 1");
  nccl::UniqueId id{};
  std::memcpy(id.internal, info[0].As<Napi::Buffer<char>>().Data(), nccl::kUniqueIdBytes);
  return guard(env, [&]() -> Napi::Value {
    nccl::api();
    const bool runtimeConnect = nccl::prepareEnvironment();
    auto* state = new JsState();
    state->tsfn =
        Tsfn::New(env, "cuda-kernels.nccl", 0, 1, state, [](Napi::Env, void*, JsState* s) { delete s; });
    state->tsfn.Unref(env);
    auto notifier = std::make_shared<Notifier>();
    notifier->tsfn = state->tsfn;
    state->notifier = notifier;
    std::shared_ptr<Comm> comm;
    try {
      comm = Comm::create(id, size, rank, device, timeoutMs,
                          [notifier](const Outcome& o) { notifier->post(std::make_unique<Outcome>(o)); });
    } catch (...) {
      notifier->close();
      throw;
    }
    auto* j = new JsComm{comm, notifier, state, env, false, false};
    auto handle = Napi::External<JsComm>::New(env, j, [](Napi::Env e, JsComm* p) {
      if (p->hooked) napi_remove_env_cleanup_hook(e, cleanupHook, p);
      // The safety net for a communicator never destroyed: abort, and let the thread finish alone.
      if (!p->closed) {
        p->closed = true;
        p->comm->abort();
        p->notifier->close();
      }
      delete p;
    });
    handle.TypeTag(&kCommTag);
    if (napi_add_env_cleanup_hook(env, cleanupHook, j) == napi_ok) j->hooked = true;
    auto ready = Napi::Promise::Deferred::New(env);
    state->deferred.emplace(0, ready);
    state->updateRef(env);
    auto out = Napi::Object::New(env);
    out.Set("comm", handle);
    out.Set("ready", ready.Promise());
    out.Set("runtimeConnect", runtimeConnect);
    return out;
  });
}

nccl::DataType ncclType(Dtype d) {
  switch (d) {
    case Dtype::Float32: return nccl::kFloat32;
    case Dtype::Float64: return nccl::kFloat64;
    case Dtype::Int32: return nccl::kInt32;
    case Dtype::Uint32: return nccl::kUint32;
  }
  return nccl::kFloat32;
}

enum Kind : int {
  kAllReduce = 0,
  kBroadcast = 1,
  kAllGather = 2,
  kReduceScatter = 3,
  kSend = 4,
  kRecv = 5,
  kSendRecv = 6,
};
constexpr const char* kKindNames[] = {"allReduce", "broadcast", "allGather", "reduceScatter",
                                      "send",      "recv",      "sendRecv"};
// Operations one communicator keeps queued on the GPU at most; a call beyond is deferred (queued by the
// communicator's thread when one completes, Comm::enqueueOrDefer), never waited for in the caller.
constexpr size_t kMaxInFlight = 64;

// Elements [offset, offset + count) of `b`, after checking they lie inside it (overflow-safe).
char* range(Napi::Env env, const DeviceBuffer& b, int64_t offset, uint64_t count, const char* name) {
  const uint64_t len = b.length, off = static_cast<uint64_t>(offset);
  if (off > len || count > len - off)
    throw Napi::RangeError::New(env, std::string(name) + ": offset + count exceeds its length");
  return static_cast<char*>(b.ptr) + off * dtypeSize(b.dtype);
}

// ncclCollective(comm, kind, send | null, sendOffset, recv | null, recvOffset, count, op, peer, peer2)
//   -> Promise<void>. count is per rank: allGather receives count·size, reduceScatter sends count·size.
//   sendRecv sends to `peer` and receives from `peer2` in one NCCL group (both progress together, so a
//   ring of them cannot deadlock).
Napi::Value ncclCollective(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  JsComm& j = liveComm(info[0], "comm");
  const int kind = intArg(info, 1, "kind");
  if (kind < kAllReduce || kind > kSendRecv) throw Napi::RangeError::New(env, "kind out of range");
  const bool needSend = kind != kRecv, needRecv = kind != kSend;
  DeviceBuffer* send = needSend ? &unwrapBuffer(info[2], "send") : nullptr;
  const int64_t sendOffset = countArg(info, 3, "sendOffset");
  // What the collective writes must not be another running call's output (docs/async.md).
  DeviceBuffer* recv = needRecv ? &unwrapOutput(info[4], "the output array") : nullptr;
  const int64_t recvOffset = countArg(info, 5, "recvOffset");
  const uint64_t count = static_cast<uint64_t>(countArg(info, 6, "count"));
  const int op = intArg(info, 7, "op");
  const int peer = intArg(info, 8, "peer");
  const int peer2 = kind == kSendRecv ? intArg(info, 9, "peer2") : peer;
  Comm& c = *j.comm;
  if (op < nccl::kSum || op > nccl::kAvg) throw Napi::RangeError::New(env, "op out of range");
  const bool p2p = kind == kSend || kind == kRecv || kind == kSendRecv;
  if ((kind == kBroadcast || p2p) && (peer < 0 || peer >= c.size() || peer2 < 0 || peer2 >= c.size()))
    throw Napi::RangeError::New(env, "peer (or root) must be a rank of the communicator");
  if (p2p && (peer == c.rank() || peer2 == c.rank()))
    throw Napi::RangeError::New(env, "peer must be another rank (a rank cannot send to itself)");
  if (send && recv && send->dtype != recv->dtype)
    throw Napi::TypeError::New(env, "send and receive arrays must have the same dtype");
  for (DeviceBuffer* b : {send, recv})
    if (b && b->device != c.device())
      throw Napi::RangeError::New(
          env, "arrays must be on the communicator's device " + std::to_string(c.device()));
  const uint64_t size = static_cast<uint64_t>(c.size());
  if (count > (uint64_t{1} << 62) / size) throw Napi::RangeError::New(env, "count is too large");
  const void* sp =
      send ? range(env, *send, sendOffset, kind == kReduceScatter ? count * size : count, "send") : nullptr;
  void* rp =
      recv ? range(env, *recv, recvOffset, kind == kAllGather ? count * size : count, "recv") : nullptr;
  const nccl::DataType type = ncclType((send ? send : recv)->dtype);
  const nccl::RedOp redOp = static_cast<nccl::RedOp>(op);
  return guard(env, [&]() -> Napi::Value {
    const nccl::Api* a = &nccl::api();
    // Waits only while another communicator holds the stream (its own deferred operations go first).
    cudaStream_t stream = libraryStreamFor(c.device(), &c);
    // By value: beyond kMaxInFlight pending operations the call is deferred, and the communicator's
    // thread makes it later on the library stream (`on`), in its place there.
    const uint64_t id =
        c.enqueueOrDefer(kKindNames[kind], stream, true, kMaxInFlight, [=](nccl::Comm raw, cudaStream_t on) {
          switch (kind) {
            case kAllReduce: return a->allReduce(sp, rp, count, type, redOp, raw, on);
            case kBroadcast: return a->broadcast(sp, rp, count, type, peer, raw, on);
            case kAllGather: return a->allGather(sp, rp, count, type, raw, on);
            case kReduceScatter: return a->reduceScatter(sp, rp, count, type, redOp, raw, on);
            case kSend: return a->send(sp, count, type, peer, raw, on);
            case kRecv: return a->recv(rp, count, type, peer, raw, on);
            default: {
              nccl::Result r = a->groupStart();
              if (r != nccl::kSuccess) return r;
              const nccl::Result rs = a->send(sp, count, type, peer, raw, on);
              const nccl::Result rr = rs == nccl::kSuccess ? a->recv(rp, count, type, peer2, raw, on) : rs;
              r = a->groupEnd();  // always closed, also after a failure inside
              return rr != nccl::kSuccess ? rr : r;
            }
          }
        });
    auto d = Napi::Promise::Deferred::New(env);
    j.state->deferred.emplace(id, d);
    j.state->updateRef(env);
    return d.Promise();
  });
}

// ncclCommWait(comm): blocks until every queued operation is done; throws if the communicator failed.
Napi::Value ncclCommWait(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  JsComm& j = liveComm(info[0], "comm");
  guard(env, [&] { j.comm->waitAll(); });
  return env.Undefined();
}

// ncclCommState(comm) -> { ready, pending, closed, code?, reason? }
Napi::Value ncclCommState(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  JsComm& j = unwrapJs(info[0], "comm");
  auto o = Napi::Object::New(env);
  o.Set("ready", j.comm->ready());
  o.Set("pending", static_cast<double>(j.comm->pending()));
  o.Set("closed", j.closed);
  try {
    j.comm->throwIfFailed();
  } catch (const CudaFailure& f) {
    o.Set("code", f.code());
    o.Set("reason", f.what());
  }
  return o;
}

// ncclCommClose(comm, graceful) -> Promise<void>: destroy (the thread waits for the pending
// operations, then finalizes) or abort; returns at once, and the promise settles when the
// communicator's thread has finished. Idempotent.
Napi::Value ncclCommClose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  JsComm& j = unwrapJs(info[0], "comm");
  const bool graceful = info.Length() > 1 && info[1].ToBoolean().Value();
  return closeComm(env, j, graceful);
}

// The distributed APSP on a libuv worker thread, which holds the communicator meanwhile, and its
// arrays: a free() of either while it runs takes effect when it is done (the pad kernel reads `in`
// after the call has returned to JS), and `out` is refused as another call's output meanwhile.
class ApspWorker : public Napi::AsyncProgressQueueWorker<int> {
 public:
  ApspWorker(Napi::Env env, JsComm& j, Napi::Value commHandle, DeviceBuffer* in, DeviceBuffer* out,
             Napi::Value inHandle, Napi::Value outHandle, int64_t n, Napi::Function progress)
      : Napi::AsyncProgressQueueWorker<int>(env, "cuda-kernels.apspDistributed"),
        deferred_(Napi::Promise::Deferred::New(env)),
        comm_(j.comm),
        in_(in ? in->as<const int32_t>() : nullptr),
        out_(out ? out->as<int32_t>() : nullptr),
        n_(n) {
    keep_ = Napi::Persistent(Napi::Array::New(env, 3));
    keep_.Value().Set(0u, commHandle);
    if (!inHandle.IsEmpty()) keep_.Value().Set(1u, inHandle);
    if (!outHandle.IsEmpty()) keep_.Value().Set(2u, outHandle);
    if (!progress.IsEmpty()) progress_ = Napi::Persistent(progress);
    // Last, as nothing may throw after a lock is taken (the destructor would not run).
    if (out == in)
      lock_ = std::make_unique<CallLock>(env, "apspDistributed", std::initializer_list<DeviceBuffer*>{},
                                         std::initializer_list<DeviceBuffer*>{out});
    else
      lock_ = std::make_unique<CallLock>(env, "apspDistributed", std::initializer_list<DeviceBuffer*>{in},
                                         std::initializer_list<DeviceBuffer*>{out});
  }

  // On the JS thread once the promise has settled: deferred frees happen now, while keep_ still
  // holds the handles (members go after this body).
  ~ApspWorker() override { lock_.reset(); }

  Napi::Promise promise() const { return deferred_.Promise(); }

  void Execute(const ExecutionProgress& progress) override {
    DeviceRestore restore;  // a libuv pool thread, shared with other addons
    comm_->claim();
    try {
      apspDistributed(*comm_, in_, out_, n_, [&](int done, int rounds) {
        const int pair[2] = {done, rounds};
        progress.Send(pair, 2);
      });
    } catch (const CudaFailure& f) {
      failed_ = true;
      code_ = f.code();
      call_ = f.call();
      message_ = f.what();
    } catch (const std::exception& e) {
      failed_ = true;
      code_ = "cudaErrorUnknown";
      call_ = "apspDistributed";
      message_ = e.what();
    }
    comm_->release();
  }

  void OnProgress(const int* data, size_t count) override {
    if (progress_.IsEmpty() || count < 2) return;
    try {
      progress_.Call({Napi::Number::New(Env(), data[0]), Napi::Number::New(Env(), data[1])});
    } catch (const Napi::Error&) {
      // A throwing progress callback does not stop the run (the ranks must stay in step).
    }
  }

  void OnOK() override {
    try {
      if (failed_)
        deferred_.Reject(makeJsError(Env(), CudaFailure(code_, call_, message_)).Value());
      else
        deferred_.Resolve(Env().Undefined());
    } catch (const Napi::Error&) {
    }
  }

  void OnError(const Napi::Error& e) override {
    try {
      deferred_.Reject(e.Value());
    } catch (const Napi::Error&) {
    }
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::shared_ptr<Comm> comm_;
  const int32_t* in_;
  int32_t* out_;
  int64_t n_;
  Napi::Reference<Napi::Array> keep_;  // the communicator and arrays stay alive until the end
  std::unique_ptr<CallLock> lock_;     // released before keep_ (the destructor's body)
  Napi::FunctionReference progress_;
  bool failed_ = false;
  std::string code_, call_, message_;
};

// apspDistRun(comm, in | null, out | null, n, progress?) -> Promise<void>: `in` and `out` hold this
// rank's rows (apspDistBand) × n, int32, on the communicator's device; out may be in.
Napi::Value apspDistRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  JsComm& j = liveComm(info[0], "comm");
  const int64_t n = countArg(info, 3, "n");
  if (n < 1 || n > apsp::kMaxDistN) throw Napi::RangeError::New(env, "n must be in [1, 262144]");
  Comm& c = *j.comm;
  int64_t row0 = 0, rows = 0;
  apspBandRows(n, c.size(), c.rank(), &row0, &rows);
  DeviceBuffer* bufs[2] = {nullptr, nullptr};
  const char* names[2] = {"in", "out"};
  for (int i = 0; i < 2; ++i) {
    Napi::Value v = info[1 + i];
    if (v.IsNull() || v.IsUndefined()) {
      if (rows > 0)
        throw Napi::TypeError::New(env, std::string(names[i]) + " must be a device buffer handle");
      continue;
    }
    // `out` must not be another running call's output (unwrapOutput).
    DeviceBuffer& b = i == 0 ? unwrapBuffer(v, names[i]) : unwrapOutput(v, names[i]);
    if (b.dtype != Dtype::Int32) throw Napi::TypeError::New(env, std::string(names[i]) + " must be int32");
    if (b.length != static_cast<uint64_t>(rows) * static_cast<uint64_t>(n))
      throw Napi::RangeError::New(env, std::string(names[i]) + " must hold this rank's rows × n elements");
    if (b.device != c.device())
      throw Napi::RangeError::New(env, std::string(names[i]) + " must be on the communicator's device");
    bufs[i] = &b;
  }
  Napi::Function progress;
  if (info.Length() > 4 && info[4].IsFunction()) progress = info[4].As<Napi::Function>();
  return guard(env, [&]() -> Napi::Value {
    c.throwIfFailed();
    if (!c.ready())
      throw CudaFailure("ncclInvalidUsage", "apspDistributed",
                        "the communicator is not initialised yet: await Communicator.init()");
    if (!c.reserve())
      throw CudaFailure("ncclInvalidUsage", "apspDistributed",
                        "the communicator is busy with another apspDistributed");
    ApspWorker* w = nullptr;
    try {
      w = new ApspWorker(env, j, info[0], bufs[0], bufs[1], bufs[0] ? info[1] : Napi::Value(),
                         bufs[1] ? info[2] : Napi::Value(), n, progress);
    } catch (...) {
      c.release();
      throw;
    }
    Napi::Promise p = w->promise();
    w->Queue();
    return p;
  });
}

// apspDistBand(n, size, rank) -> [row0, rows]
Napi::Value apspDistBand(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int64_t n = countArg(info, 0, "n");
  const int size = intArg(info, 1, "size"), rank = intArg(info, 2, "rank");
  if (size < 1 || rank < 0 || rank >= size) throw Napi::RangeError::New(env, "rank must be in [0, size)");
  int64_t row0 = 0, rows = 0;
  apspBandRows(n, size, rank, &row0, &rows);
  auto a = Napi::Array::New(env, 2);
  a.Set(0u, static_cast<double>(row0));
  a.Set(1u, static_cast<double>(rows));
  return a;
}

// apspRandomGraphRows(out, n, row0, rows, density, minWeight, maxWeight, seed): rows row0 … of the
// graph randomGraph(n, …) makes, into out (rows × n).
Napi::Value apspRandomGraphRows(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& out = unwrapBuffer(info[0], "out");
  const int64_t n = countArg(info, 1, "n"), row0 = countArg(info, 2, "row0"),
                rows = countArg(info, 3, "rows");
  const double density = numberArg(info, 4, "density");
  const int minWeight = intArg(info, 5, "minWeight"), maxWeight = intArg(info, 6, "maxWeight");
  const int64_t seed = countArg(info, 7, "seed");
  if (n < 1 || n > apsp::kMaxDistN) throw Napi::RangeError::New(env, "n must be in [1, 262144]");
  if (row0 > n || rows > n - row0) throw Napi::RangeError::New(env, "rows must lie inside the matrix");
  if (out.dtype != Dtype::Int32 || out.length != static_cast<uint64_t>(rows) * static_cast<uint64_t>(n))
    throw Napi::RangeError::New(env, "out must be int32 with rows × n elements");
  if (!(density >= 0 && density <= 1)) throw Napi::RangeError::New(env, "density must be in [0, 1]");
  if (minWeight < 0 || maxWeight < minWeight || maxWeight >= apsp::kInf)
    throw Napi::RangeError::New(env, "weights must satisfy 0 <= minWeight <= maxWeight < INF");
  guard(env, [&] {
    check(apsp::launchRandomGraphRows(out.as<int32_t>(), n, row0, rows, density, minWeight, maxWeight,
                                      static_cast<uint64_t>(seed), libraryStream(out.device)),
          "apsp random graph rows");
  });
  return env.Undefined();
}

// apspBellmanPartial(band | null, n, row0, rows, pairs, partial, own, density, minWeight, maxWeight, seed):
// this rank's part of the Bellman check of its band (rows × n, int32) against the random graph of
// those parameters, for the pairs in `pairs` (int32, i then j); see apsp::launchBellmanPartial.
Napi::Value apspBellmanPartial(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int64_t n = countArg(info, 1, "n"), row0 = countArg(info, 2, "row0"),
                rows = countArg(info, 3, "rows");
  if (n < 1 || n > apsp::kMaxDistN) throw Napi::RangeError::New(env, "n must be in [1, 262144]");
  if (row0 > n || rows > n - row0) throw Napi::RangeError::New(env, "rows must lie inside the matrix");
  const DeviceBuffer* band = nullptr;
  if (rows > 0) {
    band = &unwrapBuffer(info[0], "band");
    if (band->dtype != Dtype::Int32 || band->length != static_cast<uint64_t>(rows) * static_cast<uint64_t>(n))
      throw Napi::RangeError::New(env, "band must be int32 with rows × n elements");
  }
  const DeviceBuffer& pairs = unwrapBuffer(info[4], "pairs");
  DeviceBuffer& partial = unwrapOutput(info[5], "partial");
  DeviceBuffer& own = unwrapOutput(info[6], "own");
  if (pairs.dtype != Dtype::Int32 || pairs.length % 2 != 0 ||
      pairs.length / 2 > static_cast<uint64_t>(INT_MAX))
    throw Napi::RangeError::New(env, "pairs must be int32 (i, j) pairs");
  const uint64_t count = pairs.length / 2;
  for (const DeviceBuffer* b : {&partial, &own})
    if (b->dtype != Dtype::Int32 || b->length != count)
      throw Napi::RangeError::New(env, "partial and own must be int32 with one element per pair");
  for (const DeviceBuffer* b :
       {band, &pairs, static_cast<const DeviceBuffer*>(&partial), static_cast<const DeviceBuffer*>(&own)})
    if (b && b->device != pairs.device)
      throw Napi::RangeError::New(env, "band, pairs, partial and own must be on one device");
  apsp::RandomGraphParams g;
  if (!apsp::randomGraphParams(n, numberArg(info, 7, "density"), intArg(info, 8, "minWeight"),
                               intArg(info, 9, "maxWeight"),
                               static_cast<uint64_t>(countArg(info, 10, "seed")), &g))
    throw Napi::RangeError::New(env, "density must be in [0, 1] and 0 <= minWeight <= maxWeight < INF");
  guard(env, [&] {
    check(apsp::launchBellmanPartial(band ? band->as<int32_t>() : nullptr, row0, rows, g, pairs.as<int32_t>(),
                                     static_cast<int>(count), partial.as<int32_t>(), own.as<int32_t>(),
                                     libraryStream(pairs.device)),
          "apsp Bellman check");
  });
  return env.Undefined();
}

}  // namespace

std::shared_ptr<Comm> unwrapComm(Napi::Value value, const char* name, int device) {
  JsComm& j = liveComm(value, name);
  if (j.comm->device() != device)
    throw Napi::RangeError::New(value.Env(), std::string(name) + " is on device " +
                                                 std::to_string(j.comm->device()) +
                                                 ", the arrays on device " + std::to_string(device));
  return j.comm;
}

void allReduceSum(Comm& comm, void* data, size_t count, Dtype dtype, cudaStream_t stream, const char* what,
                  size_t maxInFlight) {
  const nccl::Api& a = nccl::api();
  const nccl::DataType type = ncclType(dtype);
  comm.enqueue(what, stream, false, maxInFlight,
               [&](nccl::Comm raw) { return a.allReduce(data, data, count, type, nccl::kSum, raw, stream); });
}

}  // namespace dist

void registerDist(Napi::Env env, Napi::Object exports) {
  exports.Set("ncclInfo", Napi::Function::New(env, dist::ncclInfo, "ncclInfo"));
  exports.Set("ncclUniqueId", Napi::Function::New(env, dist::ncclUniqueId, "ncclUniqueId"));
  exports.Set("ncclCommInit", Napi::Function::New(env, dist::ncclCommInit, "ncclCommInit"));
  exports.Set("ncclCollective", Napi::Function::New(env, dist::ncclCollective, "ncclCollective"));
  exports.Set("ncclCommWait", Napi::Function::New(env, dist::ncclCommWait, "ncclCommWait"));
  exports.Set("ncclCommState", Napi::Function::New(env, dist::ncclCommState, "ncclCommState"));
  exports.Set("ncclCommClose", Napi::Function::New(env, dist::ncclCommClose, "ncclCommClose"));
  exports.Set("apspDistRun", Napi::Function::New(env, dist::apspDistRun, "apspDistRun"));
  exports.Set("apspDistBand", Napi::Function::New(env, dist::apspDistBand, "apspDistBand"));
  exports.Set("apspRandomGraphRows",
              Napi::Function::New(env, dist::apspRandomGraphRows, "apspRandomGraphRows"));
  exports.Set("apspBellmanPartial", Napi::Function::New(env, dist::apspBellmanPartial, "apspBellmanPartial"));
}

}  // namespace ck
