// Test-only hooks on the raw binding (never exported by lib/, left out of release builds):
// `debugFault(kind)`, so the reliability tests can show how a kernel fault is reported, and
// `debugCurrentDevice()`, so they can show that every call leaves the current device as it was.
//
//   0 (invalid launch): a launch with more threads per block than any GPU allows. The runtime
//     rejects it before it reaches the device (cudaErrorInvalidConfiguration), a recoverable
//     error: the context and every live array stay usable.
//   1 (illegal address): a kernel that writes through a null pointer. cudaErrorIllegalAddress is
//     sticky: the context is lost for the rest of the process, so tests call it only in a child
//     process.
#include <napi.h>

#include "args.h"
#include "debug_kernels.h"
#include "device.h"
#include "errors.h"

namespace ck {

namespace {

Napi::Value debugFault(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int kind = intArg(info, 0, "kind");
  const int device = info.Length() > 1 ? intArg(info, 1, "device") : 0;
  if (kind < 0 || kind > 1)
    throw Napi::RangeError::New(env, "kind must be 0 (invalid launch) or 1 (illegal address)");
  guard(env, [&] {
    cudaStream_t stream = libraryStream(device);
    if (kind == 0) {
      CK_CUDA(launchNullStore(4096, stream));
      throw CudaFailure("ckFaultNotRaised", "debug_null_store_kernel", "the invalid launch was not rejected");
    }
    CK_CUDA(launchNullStore(32, stream));
    CK_CUDA(cudaStreamSynchronize(stream));
  });
  return env.Undefined();
}

// debugCurrentDevice() -> the calling thread's current device (cudaGetDevice), for the tests that
// show the library puts it back (DeviceRestore).
Napi::Value debugCurrentDevice(const Napi::CallbackInfo& info) {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return info.Env().Null();
  }
  return Napi::Number::New(info.Env(), device);
}

}  // namespace

void registerDebug(Napi::Env env, Napi::Object exports) {
  exports.Set("debugFault", Napi::Function::New(env, debugFault, "debugFault"));
  exports.Set("debugCurrentDevice", Napi::Function::New(env, debugCurrentDevice, "debugCurrentDevice"));
}

}  // namespace ck
