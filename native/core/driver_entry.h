// A driver API function by name, through the CUDA runtime, so that nothing links libcuda (the staged
// upload's stream memory operations, AᵀA's tensor maps). The ABI asked for is CUDA 12.0's, the one the
// callers' function types (cudaTypedefs.h, *_v12000) describe. cudaGetDriverEntryPointByVersion is CUDA
// 12.5's; the 12.4 fallback build asks cudaGetDriverEntryPoint, which gives its runtime's version of the
// symbol (12000 for these), as native/nvrtc/module.cc guards its own 12.5 calls.
#pragma once

#include <cuda_runtime_api.h>

namespace ck {

// The driver's function `name`, or nullptr when the driver has none; then `*err` (when given) is the
// runtime's error, or cudaSuccess when the lookup ran but found nothing. The runtime's last error is
// cleared either way.
inline void* driverEntryPoint(const char* name, cudaError_t* err = nullptr) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  const cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found);
#else
  const cudaError_t e = cudaGetDriverEntryPoint(name, &p, cudaEnableDefault, &found);
#endif
  if (err != nullptr) *err = e;
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || p == nullptr) {
    cudaGetLastError();
    return nullptr;
  }
  return p;
}

}  // namespace ck
