// CUDA-event timers: a start and a stop event recorded on the library stream of one device.
#include <napi.h>

#include "args.h"
#include "device.h"
#include "errors.h"

namespace ck {

namespace {

struct EventTimer {
  int device = 0;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  bool started = false;
  bool stopped = false;

  ~EventTimer() { release(); }

  // Destroys the events now (free(), or the finalizer); idempotent.
  void release() {
    if (start == nullptr && stop == nullptr) return;
    DeviceRestore restore;
    if (cudaSetDevice(device) == cudaSuccess) {
      if (start) cudaEventDestroy(start);
      if (stop) cudaEventDestroy(stop);
    }
    start = stop = nullptr;
    started = stopped = false;
    cudaGetLastError();
  }
};

const napi_type_tag kTimerTag = {0x6375646b65726e6cULL, 0x2e74696d65723031ULL};

EventTimer& unwrapAnyTimer(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsExternal() ||
      !info[0].As<Napi::External<EventTimer>>().CheckTypeTag(&kTimerTag)) {
    throw Napi::TypeError::New(info.Env(), "timer must be an event timer handle");
  }
  return *info[0].As<Napi::External<EventTimer>>().Data();
}

EventTimer& unwrapTimer(const Napi::CallbackInfo& info) {
  EventTimer& t = unwrapAnyTimer(info);
  if (t.start == nullptr) throw Napi::TypeError::New(info.Env(), "timer has been freed");
  return t;
}

// timerCreate(device) -> handle
Napi::Value timerCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int device = intArg(info, 0, "device");
  return guard(env, [&] {
    auto* t = new EventTimer();
    t->device = device;
    try {
      useDevice(device);
      CK_CUDA(cudaEventCreate(&t->start));
      CK_CUDA(cudaEventCreate(&t->stop));
    } catch (...) {
      delete t;
      throw;
    }
    auto h = Napi::External<EventTimer>::New(env, t, [](Napi::Env, EventTimer* p) { delete p; });
    h.TypeTag(&kTimerTag);
    return Napi::Value(h);
  });
}

// timerRecord(handle, which): which 0 = start, 1 = stop, on the device's library stream.
Napi::Value timerRecord(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  EventTimer& t = unwrapTimer(info);
  int which = intArg(info, 1, "which");
  guard(env, [&] {
    cudaStream_t s = libraryStream(t.device);
    if (which == 0) {
      CK_CUDA(cudaEventRecord(t.start, s));
      t.started = true;
      t.stopped = false;
    } else {
      if (!t.started)
        throw CudaFailure("cudaErrorInvalidResourceHandle", "cudaEventRecord",
                          "timer stopped before it was started");
      CK_CUDA(cudaEventRecord(t.stop, s));
      t.stopped = true;
    }
  });
  return env.Undefined();
}

// timerElapsed(handle) -> milliseconds between start and stop; waits for the stop event.
Napi::Value timerElapsed(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  EventTimer& t = unwrapTimer(info);
  return guard(env, [&] {
    if (!t.stopped)
      throw CudaFailure("cudaErrorNotReady", "cudaEventElapsedTime",
                        "timer has not been started and stopped");
    useDevice(t.device);
    CK_CUDA(cudaEventSynchronize(t.stop));
    float ms = 0;
    CK_CUDA(cudaEventElapsedTime(&ms, t.start, t.stop));
    return Napi::Number::New(env, ms);
  });
}

// timerFree(handle): destroys the events now; idempotent.
Napi::Value timerFree(const Napi::CallbackInfo& info) {
  unwrapAnyTimer(info).release();
  return info.Env().Undefined();
}

}  // namespace

void registerEvents(Napi::Env env, Napi::Object exports) {
  exports.Set("timerCreate", Napi::Function::New(env, timerCreate, "timerCreate"));
  exports.Set("timerRecord", Napi::Function::New(env, timerRecord, "timerRecord"));
  exports.Set("timerElapsed", Napi::Function::New(env, timerElapsed, "timerElapsed"));
  exports.Set("timerFree", Napi::Function::New(env, timerFree, "timerFree"));
}

}  // namespace ck
