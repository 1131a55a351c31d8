// CUDA failures as C++ exceptions, for code with no N-API in it (kernel files, launchers, loaders).
// errors.h turns them into JavaScript `CudaError`s at the binding boundary.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

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

}  // namespace ck

// Checks a CUDA runtime call and names it in the error.
#define CK_CUDA(expr) ::ck::check((expr), #expr)
