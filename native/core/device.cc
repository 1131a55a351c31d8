#include "device.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <utility>
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

namespace {

// One non-blocking stream per device and purpose, created on first use, never destroyed (a stream
// destroyed at exit would race the driver's teardown).
cudaStream_t streamOf(int device, int which) {
  static std::mutex mutex;
  static std::vector<cudaStream_t> streams[2];
  useDevice(device);
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<cudaStream_t>& all = streams[which];
  if (all.empty()) all.assign(static_cast<size_t>(runtimeStatus().deviceCount), nullptr);
  cudaStream_t& stream = all[static_cast<size_t>(device)];
  if (stream == nullptr) CK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

}  // namespace

namespace {

// The holds of holdLibraryStream: a count per (device, holder). `anyHeld` lets libraryStream skip
// the lock while nothing is held, which is nearly always.
struct Holds {
  std::mutex mutex;
  std::condition_variable released;
  std::map<std::pair<int, const void*>, int> count;
  std::atomic<int> anyHeld{0};
};

Holds& holds() {
  static Holds* h = new Holds();  // never destroyed: threads may still wait at exit
  return *h;
}

// Whether holders other than `self` hold operations for `device`'s library stream. Under h.mutex.
bool heldByOthers(const Holds& h, int device, const void* self) {
  for (const auto& [key, n] : h.count)
    if (key.first == device && key.second != self && n > 0) return true;
  return false;
}

// Waits while holders other than `self` hold operations for `device`'s library stream.
void waitForHolds(int device, const void* self) {
  Holds& h = holds();
  if (h.anyHeld.load(std::memory_order_acquire) == 0) return;
  std::unique_lock<std::mutex> lock(h.mutex);
  h.released.wait(lock, [&] { return !heldByOthers(h, device, self); });
}

}  // namespace

void holdLibraryStream(int device, const void* holder) {
  Holds& h = holds();
  std::lock_guard<std::mutex> lock(h.mutex);
  ++h.count[{device, holder}];
  h.anyHeld.fetch_add(1, std::memory_order_release);
}

void releaseLibraryStream(int device, const void* holder, int n) {
  Holds& h = holds();
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    auto it = h.count.find({device, holder});
    if (it == h.count.end()) return;
    const int drop = n < 0 ? it->second : std::min(n, it->second);
    it->second -= drop;
    h.anyHeld.fetch_sub(drop, std::memory_order_release);
    if (it->second == 0) h.count.erase(it);
  }
  h.released.notify_all();
}

cudaStream_t libraryStream(int device) {
  return libraryStreamFor(device, nullptr);
}

cudaStream_t libraryStreamFor(int device, const void* holder) {
  cudaStream_t s = streamOf(device, 0);
  waitForHolds(device, holder);
  return s;
}

bool libraryStreamHeld(int device) {
  Holds& h = holds();
  if (h.anyHeld.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard<std::mutex> lock(h.mutex);
  return heldByOthers(h, device, nullptr);
}

cudaStream_t libraryStreamUnheld(int device) {
  return streamOf(device, 0);
}

cudaStream_t transferStream(int device) {
  return streamOf(device, 1);
}

}  // namespace ck
