#include "async_work.h"

#include <cuda_runtime_api.h>

#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>

#include "args.h"
#include "device.h"
#include "errors.h"

namespace ck {

namespace {

const napi_type_tag kCancelTag = {0x6375646b65726e6cULL, 0x2e63616e63656c31ULL};
const napi_type_tag kHoldTag = {0x6375646b65726e6cULL, 0x2e686f6c64303031ULL};

// A buffer's lockedBy keeps pointing at the name of the call that locked it first, possibly after that
// call's hold is gone: the names live as long as the process (a handful of distinct ones).
const char* internName(const std::string& name) {
  static std::mutex mutex;
  static auto* names = new std::unordered_set<std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  return names->insert(name).first->c_str();
}

// A CUDA event made for a host thread to sleep on (cudaEventBlockingSync: no spinning core while a
// pool thread waits seconds for the GPU), destroyed on its own device.
struct SleepEvent {
  int device = 0;
  cudaEvent_t event = nullptr;
  ~SleepEvent() {
    if (event == nullptr) return;
    DeviceRestore restore;
    if (cudaSetDevice(device) == cudaSuccess) cudaEventDestroy(event);
    cudaGetLastError();
  }
};

struct Hold {
  std::vector<CallLock*> locks;
  Napi::Reference<Napi::Array> keep;  // the handles: not collected while held
  bool released = false;
};

Hold& unwrapHold(Napi::Value value) {
  if (!value.IsExternal() || !value.As<Napi::External<Hold>>().CheckTypeTag(&kHoldTag))
    throw Napi::TypeError::New(value.Env(), "hold must be a hold handle");
  return *value.As<Napi::External<Hold>>().Data();
}

Napi::Array arrayArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsArray())
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be an array");
  return info[i].As<Napi::Array>();
}

// asyncHold(owner, read: handle[], written: handle[], writtenNames: string[]) -> hold. Every handle is
// checked (written ones must not be written by a running call) before anything is locked.
Napi::Value asyncHold(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "owner must be a string");
  const char* owner = internName(info[0].As<Napi::String>().Utf8Value());
  Napi::Array read = arrayArg(info, 1, "read"), written = arrayArg(info, 2, "written");
  Napi::Array names = arrayArg(info, 3, "writtenNames");
  if (names.Length() != written.Length())
    throw Napi::RangeError::New(env, "writtenNames must name each written array");
  std::vector<DeviceBuffer*> r, w;
  for (uint32_t i = 0; i < read.Length(); ++i) r.push_back(&unwrapBuffer(read.Get(i), "a read array"));
  for (uint32_t i = 0; i < written.Length(); ++i) {
    Napi::Value name = names.Get(i);
    if (!name.IsString()) throw Napi::TypeError::New(env, "writtenNames must hold strings");
    w.push_back(&unwrapOutput(written.Get(i), name.As<Napi::String>().Utf8Value().c_str()));
  }
  Napi::Array keep = Napi::Array::New(env);
  uint32_t k = 0;
  for (uint32_t i = 0; i < read.Length(); ++i) keep.Set(k++, read.Get(i));
  for (uint32_t i = 0; i < written.Length(); ++i) keep.Set(k++, written.Get(i));
  auto* h = new Hold();
  h->keep = Napi::Persistent(keep);
  for (DeviceBuffer* b : r) h->locks.push_back(new CallLock(env, owner, {b}, {}));
  for (DeviceBuffer* b : w) h->locks.push_back(new CallLock(env, owner, {}, {b}));
  auto handle = Napi::External<Hold>::New(env, h, [](Napi::Env, Hold* dead) {
    // Collected without asyncRelease (lib/async.ts always releases; or the environment is going
    // away): the buffers may have been finalized first, so the locks are left as they are rather
    // than released through them. Nothing uses those buffers again.
    delete dead;
  });
  handle.TypeTag(&kHoldTag);
  return handle;
}

// asyncRelease(hold): the locks go, and frees deferred meanwhile take effect. Idempotent.
Napi::Value asyncRelease(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1) throw Napi::TypeError::New(env, "hold must be a hold handle");
  Hold& h = unwrapHold(info[0]);
  if (!h.released) {
    h.released = true;
    guard(env, [&] {
      for (CallLock* l : h.locks) delete l;
    });
    h.locks.clear();
    h.keep.Reset();
  }
  return env.Undefined();
}

// asyncToken() -> token: a cancel flag for one asynchronous call.
Napi::Value asyncToken(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* flag = new CancelFlag(std::make_shared<CancelState>());
  auto handle = Napi::External<CancelFlag>::New(env, flag, [](Napi::Env, CancelFlag* f) { delete f; });
  handle.TypeTag(&kCancelTag);
  return handle;
}

// asyncCancel(token) -> steps: the call stops at its next step; returns the steps (APSP rounds) it
// had finished when the flag was set. The flag is stored before the count is read, and the body
// stores its count before reading the flag, so the body stops at most one step after that count.
Napi::Value asyncCancel(const Napi::CallbackInfo& info) {
  CancelFlag flag = unwrapCancel(info.Length() > 0 ? info[0] : info.Env().Undefined(), "token");
  if (!flag) throw Napi::TypeError::New(info.Env(), "token must be a cancel token");
  flag->cancelled.store(true);
  return Napi::Number::New(info.Env(), static_cast<double>(flag->steps.load()));
}

// streamWaitAsync(device) -> Promise<void>: resolved once the work queued on the device's library
// stream before the call has finished.
Napi::Value streamWaitAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = intArg(info, 0, "device");
  return guard(env, [&]() -> Napi::Value {
    cudaStream_t stream = libraryStreamUnheld(device);  // checks the device and makes it current
    auto e = std::make_shared<SleepEvent>();
    e->device = device;
    CK_CUDA(cudaEventCreateWithFlags(&e->event, cudaEventBlockingSync | cudaEventDisableTiming));
    // Collectives deferred on the stream (core/device.h) were called before this and are not queued
    // yet: the pool thread waits until they are and records the event then (a little later than the
    // call, which only waits longer), so that this thread never waits for a late peer.
    const bool held = libraryStreamHeld(device);
    if (!held) CK_CUDA(cudaEventRecord(e->event, stream));
    return GpuTask::start(env, "synchronizeAsync", device, {}, [e, held, device](const GpuTask::Report&) {
      if (held) CK_CUDA(cudaEventRecord(e->event, libraryStream(device)));
      CK_CUDA(cudaEventSynchronize(e->event));
    });
  });
}

}  // namespace

CancelFlag unwrapCancel(Napi::Value value, const char* name) {
  if (value.IsUndefined() || value.IsNull()) return nullptr;
  if (!value.IsExternal() || !value.As<Napi::External<CancelFlag>>().CheckTypeTag(&kCancelTag))
    throw Napi::TypeError::New(value.Env(), std::string(name) + " must be a cancel token");
  return *value.As<Napi::External<CancelFlag>>().Data();
}

DeviceBuffer& unwrapHeld(Napi::Value value, const char* name) {
  DeviceBuffer& b = unwrapBuffer(value, name);
  if (b.writeLocks == 0)
    throw Napi::Error::New(value.Env(),
                           std::string(name) + " must be held for writing (asyncHold) by the call");
  return b;
}

cudaError_t sleepOnStream(cudaStream_t stream) {
  cudaEvent_t e = nullptr;
  cudaError_t err = cudaEventCreateWithFlags(&e, cudaEventBlockingSync | cudaEventDisableTiming);
  if (err != cudaSuccess) return err;
  err = cudaEventRecord(e, stream);
  if (err == cudaSuccess) err = cudaEventSynchronize(e);
  cudaEventDestroy(e);
  return err;
}

GpuTask::GpuTask(Napi::Env env, const char* name, int device, Body body, Settle settle)
    : Napi::AsyncProgressQueueWorker<double>(env, name),
      name_(name),
      device_(device),
      body_(std::move(body)),
      settle_(std::move(settle)),
      deferred_(Napi::Promise::Deferred::New(env)) {}

GpuTask::~GpuTask() {
  // On the JS thread, after the promise settled: frees deferred by the locks happen now, while the
  // handles are still referenced (keep_ goes after this body).
  for (CallLock* l : locks_) delete l;
}

Napi::Promise GpuTask::start(Napi::Env env, const char* name, int device, const std::vector<Array>& arrays,
                             Body body, Settle settle, Napi::Value progress) {
  // Everything that can throw comes before the task exists: a task that is never queued must not be
  // deleted either (its thread-safe function would report to it later).
  Napi::Array keep = Napi::Array::New(env, arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) keep.Set(static_cast<uint32_t>(i), arrays[i].handle);
  Napi::Reference<Napi::Array> keepRef = Napi::Persistent(keep);
  Napi::FunctionReference progressRef;
  if (!progress.IsEmpty() && progress.IsFunction())
    progressRef = Napi::Persistent(progress.As<Napi::Function>());

  auto* task = new GpuTask(env, name, device, std::move(body), std::move(settle));
  task->keep_ = std::move(keepRef);
  task->progress_ = std::move(progressRef);
  for (const Array& a : arrays)
    task->locks_.push_back(a.written ? new CallLock(env, name, {}, {a.buffer})
                                     : new CallLock(env, name, {a.buffer}, {}));
  Napi::Promise promise = task->deferred_.Promise();
  task->Queue();
  return promise;
}

void GpuTask::Execute(const ExecutionProgress& progress) {
  DeviceRestore restore;  // a libuv pool thread, shared with other addons
  const bool report = !progress_.IsEmpty();
  try {
    useDevice(device_);
    body_([&progress, report](double done, double total) {
      if (!report) return;
      const double pair[2] = {done, total};
      progress.Send(pair, 2);
    });
  } catch (const Cancelled&) {
    cancelled_ = true;
  } catch (const CudaFailure& f) {
    failure_ = std::make_unique<CudaFailure>(f);
  } catch (const std::exception& e) {
    failure_ = std::make_unique<CudaFailure>("cudaErrorUnknown", name_, e.what());
  }
}

void GpuTask::OnProgress(const double* data, size_t count) {
  if (progress_.IsEmpty() || count < 2) return;
  try {
    progress_.Call({Napi::Number::New(Env(), data[0]), Napi::Number::New(Env(), data[1])});
  } catch (const Napi::Error&) {
    // lib/ catches what the user's callback throws; nothing is left to report it to here.
  }
}

// Settling fails (node-addon-api throws) only when the environment is going away, a worker terminated
// with this task in flight: there is no one left to tell, so that is ignored.
void GpuTask::OnOK() {
  Napi::Env env = Env();
  try {
    if (failure_) {
      deferred_.Reject(makeJsError(env, *failure_).Value());
    } else if (cancelled_) {
      Napi::Error e = Napi::Error::New(env, std::string(name_) + " was aborted");
      e.Set("code", Napi::String::New(env, "ABORT_ERR"));
      deferred_.Reject(e.Value());
    } else {
      deferred_.Resolve(settle_ ? settle_(env) : env.Undefined());
    }
  } catch (const Napi::Error& e) {
    try {
      deferred_.Reject(e.Value());
    } catch (const Napi::Error&) {
    }
  }
}

void GpuTask::OnError(const Napi::Error& e) {
  try {
    deferred_.Reject(e.Value());
  } catch (const Napi::Error&) {
  }
}

void registerAsync(Napi::Env env, Napi::Object exports) {
  exports.Set("asyncToken", Napi::Function::New(env, asyncToken, "asyncToken"));
  exports.Set("asyncCancel", Napi::Function::New(env, asyncCancel, "asyncCancel"));
  exports.Set("asyncHold", Napi::Function::New(env, asyncHold, "asyncHold"));
  exports.Set("asyncRelease", Napi::Function::New(env, asyncRelease, "asyncRelease"));
  exports.Set("streamWaitAsync", Napi::Function::New(env, streamWaitAsync, "streamWaitAsync"));
}

}  // namespace ck
