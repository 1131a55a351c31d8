// Loading compiled user code and launching its kernels, through the runtime's library API
// (cudaLibraryLoadData, cudaLibraryGetKernel, cudaLaunchKernel): no driver API and no libcuda at
// build time, as everywhere else in the addon. Plain C++, no N-API.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

namespace ck {
namespace nvrtc {

// cudaLibrary_t and cudaKernel_t, kept opaque here: the runtime's library API exists from CUDA 12.5 on,
// and the binary built with an older toolkit reports user kernels as unsupported (module.cc).
using Library = void*;
using Kernel = void*;

// Empty where this binary can load and launch user code; otherwise why not (a binary built with CUDA
// before 12.5, such as the CUDA 12 fallback built with 12.4), for nvrtcInfo() to report.
std::string libraryApiMissing();

// A cubin, or NUL-terminated PTX (the driver JIT-compiles it), loaded as a library. Libraries are
// context-independent: one serves every device that can run its code. Throws CudaFailure.
Library loadLibrary(int device, const void* code, size_t size, bool ptx);

struct KernelAttributes {
  Kernel kernel = nullptr;
  cudaFuncAttributes attributes{};  // on the device it was looked up for
  bool paramsKnown = false;         // the runtime told us the parameters' sizes
  std::vector<size_t> paramSizes;
};

// The kernel `name` (an extern "C" name or a lowered C++ name) of `library`, with its attributes on
// `device`. Throws CudaFailure (code cudaErrorSymbolNotFound when there is no such kernel).
KernelAttributes getKernel(Library library, int device, const std::string& name);

// Lets `kernel` use up to `bytes` of dynamic shared memory on `device` (beyond its default, 48 KiB
// less its static shared memory); a limit already higher, set through another handle, is kept.
void allowSharedMemory(Kernel kernel, int device, int bytes);

// Queues `kernel` on `stream` (the device's library stream) with `args[i]` pointing at parameter i.
void launch(Kernel kernel, dim3 grid, dim3 block, void** args, size_t sharedMem, cudaStream_t stream);

}  // namespace nvrtc
}  // namespace ck
