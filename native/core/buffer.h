// Device memory owned by JS: a DeviceBuffer behind a type-tagged External. The memory comes from
// the device's library pool (pool.h) and goes back to it, in the library stream's order, on free()
// or when the handle is garbage-collected.
#pragma once

#include <cuda_runtime_api.h>
#include <napi.h>

#include <cstddef>
#include <initializer_list>
#include <vector>

#include "dtype.h"

namespace ck {

struct DeviceBuffer {
  void* ptr = nullptr;  // null for length 0
  size_t length = 0;
  size_t bytes = 0;
  Dtype dtype = Dtype::Float32;
  int device = 0;
  bool freed = false;     // freed by the user: no further use
  bool released = false;  // device memory returned to the pool
  // Host-side users still holding the raw pointer across a return to JS (apsp's onRound: free() then
  // defers the release until the call returns). Transfers need none: they are enqueued in stream
  // order at call time.
  int pending = 0;
  int writeLocks = 0;              // running calls that write it while JS runs (a progress callback)
  const char* lockedBy = nullptr;  // the first such call's name, for the error message

  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

// Allocates `length` elements of `dtype` on `device` from the pool and returns its handle; throws
// CudaFailure (cudaErrorMemoryAllocation when it does not fit even after trimming the pool).
Napi::Value newBuffer(Napi::Env env, int device, Dtype dtype, size_t length);

// The buffer behind a handle, after checking the handle's type tag and that it was not freed.
// `name` is the argument's name for the error message.
DeviceBuffer& unwrapBuffer(Napi::Value value, const char* name);

// unwrapBuffer for an argument the call writes: also refuses a buffer that a running call (one that is
// calling back into JS, such as apsp's onRound) is still writing.
DeviceBuffer& unwrapOutput(Napi::Value value, const char* name);

// Holds buffers for a native call that runs JS (a progress callback) while the GPU still uses them:
// free() of any of them is deferred until the call returns, and the `written` ones are refused as
// outputs of other calls (unwrapOutput) in the meantime.
class CallLock {
 public:
  CallLock(Napi::Env env, const char* owner, std::initializer_list<DeviceBuffer*> read,
           std::initializer_list<DeviceBuffer*> written);
  ~CallLock();
  CallLock(const CallLock&) = delete;
  CallLock& operator=(const CallLock&) = delete;

 private:
  Napi::Env env_;
  std::vector<DeviceBuffer*> read_, written_;
};

void registerBuffers(Napi::Env env, Napi::Object exports);

}  // namespace ck
