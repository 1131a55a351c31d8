// Device memory owned by JS: a DeviceBuffer behind a type-tagged External. The memory comes from
// the device's library pool (pool.h) and goes back to it, in the library stream's order, on free()
// or when the handle is garbage-collected.
#pragma once

#include <cuda_runtime_api.h>
#include <napi.h>

#include <cstddef>

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
  // Host-side users still holding the raw pointer across a return to JS (free() then defers the
  // release until they finish). Transfers need none: they are enqueued in stream order at call time.
  int pending = 0;

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

void registerBuffers(Napi::Env env, Napi::Object exports);

}  // namespace ck
