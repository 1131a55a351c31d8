// The asynchronous forms of the calls that wait for the GPU (lib/async.ts and the *Async functions of
// lib/ops): their waiting, and any launcher that waits inside (stencil's residual checks, APSP's
// rounds with progress), runs on a libuv pool thread, and a Promise settles on the JS thread.
//
// Three pieces:
// - GpuTask: a body run on a pool thread with the device current, its outcome a Promise. It keeps the
//   arrays it was given alive and holds a CallLock on each (a free() meanwhile is deferred until the
//   task is done, as for apsp's onRound), and forwards progress reports to a JS function.
// - cancel tokens (asyncToken / asyncCancel): a flag the JS side sets when an AbortSignal fires and a
//   body reads between its steps; a body that stops throws Cancelled, and the promise is rejected
//   with an Error whose code is ABORT_ERR (lib/async.ts makes it an AbortError).
// - holds (asyncHold / asyncRelease): CallLocks held by JS across the steps of a call made of several
//   tasks (a stencil's chunks of sweeps, an MLP's epochs), so that other calls cannot write its arrays
//   between two steps and a free() waits for the end of the whole call.
#pragma once

#include <napi.h>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "buffer.h"
#include "errors.h"

namespace ck {

// Thrown by a task's body that saw its cancel token set.
struct Cancelled {};

// A token's shared state: the flag JS sets, and the steps the body had finished, which the body
// records before it reads the flag, so that asyncCancel can say where the call was when it came (the
// body then stops after at most one more step; the progress JS sees lags behind both).
struct CancelState {
  std::atomic<bool> cancelled{false};
  std::atomic<long long> steps{0};
  bool load() const { return cancelled.load(); }
};
using CancelFlag = std::shared_ptr<CancelState>;

// The flag behind a token from asyncToken(); null for undefined or null.
CancelFlag unwrapCancel(Napi::Value value, const char* name);

// The buffer behind a handle that the caller holds for writing (asyncHold): a step of a call made of
// several tasks, whose arrays JS locked for the whole call. Refuses a buffer nobody holds.
DeviceBuffer& unwrapHeld(Napi::Value value, const char* name);

// Waits on the calling thread for the work queued on `stream` so far, asleep rather than spinning (a
// pool thread may wait seconds behind other work). Returns the first CUDA error.
cudaError_t sleepOnStream(cudaStream_t stream);

class GpuTask : public Napi::AsyncProgressQueueWorker<double> {
 public:
  // Reports (done, total) to the JS progress function, if any, in order; never blocks.
  using Report = std::function<void(double done, double total)>;
  // Runs on the pool thread: no N-API. Throws CudaFailure, Cancelled, or returns.
  using Body = std::function<void(const Report&)>;
  // Runs on the JS thread after the body returned: what the promise resolves to.
  using Settle = std::function<Napi::Value(Napi::Env)>;

  // An array the task uses: its handle (kept alive), its buffer, and whether the task writes it (a
  // write lock, so that other calls refuse it as an output until the task is done).
  struct Array {
    Napi::Value handle;
    DeviceBuffer* buffer;
    bool written;
  };

  // Queues `body` with `device` current on a pool thread and returns the Promise. `name` (a string
  // literal) names the call in errors; `progress` is a JS function or undefined.
  static Napi::Promise start(Napi::Env env, const char* name, int device, const std::vector<Array>& arrays,
                             Body body, Settle settle = nullptr, Napi::Value progress = Napi::Value());

  ~GpuTask() override;

 protected:
  void Execute(const ExecutionProgress& progress) override;
  void OnProgress(const double* data, size_t count) override;
  void OnOK() override;
  void OnError(const Napi::Error& e) override;

 private:
  GpuTask(Napi::Env env, const char* name, int device, Body body, Settle settle);

  const char* name_;
  int device_;
  Body body_;
  Settle settle_;
  Napi::Promise::Deferred deferred_;
  Napi::Reference<Napi::Array> keep_;  // the array handles: not collected while the task runs
  std::vector<CallLock*> locks_;       // released before keep_ (the destructor's first step)
  Napi::FunctionReference progress_;
  std::unique_ptr<CudaFailure> failure_;
  bool cancelled_ = false;
};

void registerAsync(Napi::Env env, Napi::Object exports);

}  // namespace ck
