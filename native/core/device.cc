#include "device.h"

#include <mutex>
#include <vector>

#include "errors.h"

namespace ck {

std::string versionString(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

static RuntimeStatus probe() {
  RuntimeStatus s;
  s.runtimeVersion = CUDART_VERSION;
  if (cudaDriverGetVersion(&s.driverVersion) != cudaSuccess) s.driverVersion = 0;
  cudaError_t err = cudaGetDeviceCount(&s.deviceCount);
  if (err == cudaSuccess && s.deviceCount > 0) return s;
  s.deviceCount = 0;
  s.code = err == cudaSuccess ? "cudaErrorNoDevice" : cudaGetErrorName(err);
  const std::string built = versionString(s.runtimeVersion);
  if (s.driverVersion == 0) {
    s.code = "cudaErrorNoDevice";
    s.reason = "no CUDA device was found: no NVIDIA driver is installed (libcuda.so.1 could not be loaded)";
  } else if (err == cudaErrorInsufficientDriver || s.driverVersion / 1000 < s.runtimeVersion / 1000) {
    s.code = "cudaErrorInsufficientDriver";
    s.reason = "the NVIDIA driver is too old: it supports CUDA " + versionString(s.driverVersion) +
               " but this binary was built with CUDA " + built + "; install a driver for CUDA " + built +
               " or newer, or rebuild from source (npm run build) with a toolkit the driver supports";
  } else if (err == cudaSuccess || err == cudaErrorNoDevice) {
    s.reason = "no CUDA device was found (driver supports CUDA " + versionString(s.driverVersion) + ")";
  } else {
    s.reason = std::string("no CUDA device was found: ") + cudaGetErrorString(err) + " (" +
               cudaGetErrorName(err) + ")";
  }
  cudaGetLastError();
  return s;
}

const RuntimeStatus& runtimeStatus() {
  static const RuntimeStatus status = probe();
  return status;
}

void useDevice(int device) {
  const RuntimeStatus& s = runtimeStatus();
  if (s.deviceCount == 0) throw CudaFailure(s.code, "cudaGetDeviceCount", s.reason);
  if (device < 0 || device >= s.deviceCount) {
    throw CudaFailure("cudaErrorInvalidDevice", "cudaSetDevice",
                      "device " + std::to_string(device) + " does not exist (" +
                          std::to_string(s.deviceCount) + " device(s) present)");
  }
  CK_CUDA(cudaSetDevice(device));
}

cudaStream_t libraryStream(int device) {
  static std::mutex mutex;
  static std::vector<cudaStream_t> streams;
  useDevice(device);
  std::lock_guard<std::mutex> lock(mutex);
  if (streams.empty()) streams.assign(static_cast<size_t>(runtimeStatus().deviceCount), nullptr);
  cudaStream_t& stream = streams[static_cast<size_t>(device)];
  if (stream == nullptr) CK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

}  // namespace ck
