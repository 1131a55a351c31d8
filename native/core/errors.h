// Turning CUDA failures into JavaScript exceptions.
//
// Plain C++/CUDA code (launchers, loaders) reports failures by returning cudaError_t or by throwing
// ck::CudaFailure; N-API glue converts either into a JS `CudaError` (the class registered by
// lib/errors.ts through setErrorClass) so that no failure ever aborts the process.
#pragma once

#include <cuda_runtime_api.h>
#include <napi.h>

#include <stdexcept>
#include <string>

#include "device_restore.h"

namespace ck {

// A failure with a symbolic code ("cudaErrorMemoryAllocation", "cublasLibraryNotFound", ...), the
// API call that failed and a readable message.
class CudaFailure : public std::runtime_error {
 public:
  CudaFailure(std::string code, std::string call, const std::string& message)
      : std::runtime_error(message), code_(std::move(code)), call_(std::move(call)) {}
  CudaFailure(cudaError_t err, const std::string& call);
  const std::string& code() const { return code_; }
  const std::string& call() const { return call_; }

 private:
  std::string code_;
  std::string call_;
};

// Throws CudaFailure when `err` is not cudaSuccess. Also clears the runtime's last-error slot so a
// non-sticky failure (an allocation that did not fit) does not resurface in a later, unrelated call.
void check(cudaError_t err, const char* call);

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

// Checks a CUDA runtime call and names it in the error.
#define CK_CUDA(expr) ::ck::check((expr), #expr)
