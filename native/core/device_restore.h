// Leaves the calling thread's current device as it found it.
//
// The library switches devices with cudaSetDevice (each array lives on its own device). A user's
// own CUDA code in the same process, or another addon on a libuv pool thread, expects its current
// device to stay put, so every entry point (guard() in errors.h, finalizers, pool-thread work) puts
// it back on the way out.
#pragma once

#include <cuda_runtime_api.h>

namespace ck {

class DeviceRestore {
 public:
  DeviceRestore() { saved_ = cudaGetDevice(&device_) == cudaSuccess; }
  ~DeviceRestore() {
    int now = -1;
    // Only when it changed: cudaSetDevice creates the device's context, which a thread that never
    // left its device should not pay for.
    if (saved_ && cudaGetDevice(&now) == cudaSuccess && now != device_) cudaSetDevice(device_);
  }
  DeviceRestore(const DeviceRestore&) = delete;
  DeviceRestore& operator=(const DeviceRestore&) = delete;

 private:
  int device_ = 0;
  bool saved_ = false;
};

}  // namespace ck
