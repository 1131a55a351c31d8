// Turning CUDA failures into JavaScript exceptions.
//
// Plain C++/CUDA code (launchers, loaders) reports failures by returning cudaError_t or by throwing
// ck::CudaFailure; N-API glue converts either into a JS `CudaError` (the class registered by
// lib/errors.ts through setErrorClass) so that no failure ever aborts the process.
#pragma once

#include <cuda_runtime_api.h>
#include <napi.h>

#include <string>

#include "device_restore.h"
#include "failure.h"

namespace ck {

// Builds the JS error object (an instance of the registered CudaError class when there is one).
Napi::Error makeJsError(Napi::Env env, const CudaFailure& failure);

// Runs `body`, converting CudaFailure into a thrown JS CudaError, and puts the thread's current
// device back as it was. Every binding goes through it.
template <typename F>
auto guard(Napi::Env env, F&& body) -> decltype(body()) {
  DeviceRestore restore;
  try {
    return body();
  } catch (const CudaFailure& f) {
    throw makeJsError(env, f);
  }
}

void registerErrors(Napi::Env env, Napi::Object exports);

}  // namespace ck
