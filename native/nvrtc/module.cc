#include "nvrtc/module.h"

#include <cstring>

#include "core/device.h"
#include "core/errors.h"

namespace ck {
namespace nvrtc {

#if CUDART_VERSION >= 12050

std::string libraryApiMissing() {
  return {};
}

namespace {

cudaLibrary_t asLibrary(Library l) {
  return static_cast<cudaLibrary_t>(l);
}
cudaKernel_t asKernel(Kernel k) {
  return static_cast<cudaKernel_t>(k);
}

}  // namespace

Library loadLibrary(int device, const void* code, size_t size, bool ptx) {
  // The driver reads as much as the image says it holds: refuse what is plainly not an image.
  const auto* bytes = static_cast<const unsigned char*>(code);
  if (ptx ? (size == 0 || bytes[size - 1] != '\0')
          : (size < 64 || std::memcmp(bytes,
                                      "\x7f"
                                      "ELF",
                                      4) != 0))
    throw CudaFailure("cudaErrorInvalidKernelImage", "cudaLibraryLoadData",
                      ptx ? "the PTX is not NUL-terminated" : "the code is not a cubin (no ELF header)");
  useDevice(device);
  cudaLibrary_t lib = nullptr;
  const cudaError_t err = cudaLibraryLoadData(&lib, code, nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (err == cudaErrorUnsupportedPtxVersion) {
    cudaGetLastError();
    throw CudaFailure(
        cudaGetErrorName(err), "cudaLibraryLoadData",
        std::string(cudaGetErrorString(err)) +
            " (cudaErrorUnsupportedPtxVersion in cudaLibraryLoadData): NVRTC made PTX that is newer "
            "than this NVIDIA driver accepts; update the driver, or use an NVRTC no newer than the "
            "driver's CUDA version (CUDA_KERNELS_NVRTC)");
  }
  CK_CUDA(err);
  return lib;
}

KernelAttributes getKernel(Library library, int device, const std::string& name) {
  useDevice(device);
  KernelAttributes k;
  cudaKernel_t kernel = nullptr;
  const cudaError_t err = cudaLibraryGetKernel(&kernel, asLibrary(library), name.c_str());
  if (err == cudaErrorSymbolNotFound || err == cudaErrorInvalidDeviceFunction) {
    cudaGetLastError();
    throw CudaFailure("cudaErrorSymbolNotFound", "cudaLibraryGetKernel",
                      "the compiled code has no kernel named " + name);
  }
  CK_CUDA(err);
  k.kernel = kernel;
  CK_CUDA(cudaFuncGetAttributes(&k.attributes, reinterpret_cast<const void*>(kernel)));
#if CUDART_VERSION >= 13000
  // The parameters as compiled, to check the layout the caller will pack against: asking past the
  // last one is how their count is found (cudaErrorInvalidValue, not sticky). Any other answer, or
  // none at all, leaves the layout unchecked rather than refusing a kernel for the runtime's sake.
  for (size_t i = 0; i < 4096; ++i) {
    size_t offset = 0, size = 0;
    const cudaError_t e = cudaFuncGetParamInfo(reinterpret_cast<const void*>(kernel), i, &offset, &size);
    if (e != cudaSuccess) {
      cudaGetLastError();
      k.paramsKnown = e == cudaErrorInvalidValue && i > 0;
      break;
    }
    k.paramSizes.push_back(size);
  }
#endif
  return k;
}

void allowSharedMemory(Kernel kernel, int device, int bytes) {
  // Raised, never lowered: the attribute is the kernel's on the device, shared by every handle to it,
  // and another may have raised it further for its own launches.
  useDevice(device);
  cudaFuncAttributes now{};
  CK_CUDA(cudaFuncGetAttributes(&now, reinterpret_cast<const void*>(asKernel(kernel))));
  if (bytes <= now.maxDynamicSharedSizeBytes) return;
  CK_CUDA(cudaKernelSetAttributeForDevice(asKernel(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          bytes, device));
}

void launch(Kernel kernel, dim3 grid, dim3 block, void** args, size_t sharedMem, cudaStream_t stream) {
  CK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(asKernel(kernel)), grid, block, args, sharedMem,
                           stream));
}

#else  // CUDA before 12.5: no library API in the runtime

std::string libraryApiMissing() {
  return "user kernels need the runtime's library API (CUDA 12.5 or newer); this binary was built with "
         "CUDA " +
         versionString(CUDART_VERSION) + ": rebuild it with a newer toolkit (npm run build)";
}

namespace {

[[noreturn]] void unsupported(const char* call) {
  throw CudaFailure("cudaErrorNotSupported", call, libraryApiMissing());
}

}  // namespace

Library loadLibrary(int, const void*, size_t, bool) {
  unsupported("cudaLibraryLoadData");
}
KernelAttributes getKernel(Library, int, const std::string&) {
  unsupported("cudaLibraryGetKernel");
}
void allowSharedMemory(Kernel, int, int) {
  unsupported("cudaKernelSetAttributeForDevice");
}
void launch(Kernel, dim3, dim3, void**, size_t, cudaStream_t) {
  unsupported("cudaLaunchKernel");
}

#endif

}  // namespace nvrtc
}  // namespace ck
