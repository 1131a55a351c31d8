// deviceCount, deviceProperties, memoryInfo, synchronize, runtimeInfo.
#include <napi.h>

#include <string>

#include "args.h"
#include "device.h"
#include "errors.h"
#include "pool.h"

namespace ck {

namespace {

Napi::Value runtimeInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const RuntimeStatus& s = runtimeStatus();
  auto o = Napi::Object::New(env);
  o.Set("runtimeVersion", s.runtimeVersion);
  o.Set("driverVersion", s.driverVersion);
  o.Set("deviceCount", s.deviceCount);
  o.Set("noDeviceCode", s.deviceCount == 0 ? Napi::Value(Napi::String::New(env, s.code)) : env.Null());
  o.Set("noDeviceReason", s.deviceCount == 0 ? Napi::Value(Napi::String::New(env, s.reason)) : env.Null());
  // How this binary was built (CMakeLists.txt), so a user can tell a release build from a local one.
  auto b = Napi::Object::New(env);
  b.Set("cudaArchitectures", CK_CUDA_ARCHS);
  b.Set("lineinfo", static_cast<bool>(CK_PROFILE_BUILD));
  b.Set("staticCxxRuntime", static_cast<bool>(CK_PORTABLE_BUILD));
#if defined(__GLIBC__)
  // The glibc whose headers it was compiled against: no symbol it needs is newer than this.
  b.Set("glibc", std::to_string(__GLIBC__) + "." + std::to_string(__GLIBC_MINOR__));
#else
  b.Set("glibc", env.Null());
#endif
  o.Set("build", b);
  return o;
}

Napi::Value deviceCount(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), runtimeStatus().deviceCount);
}

Napi::Array dims(Napi::Env env, const int* v) {
  auto a = Napi::Array::New(env, 3);
  for (uint32_t i = 0; i < 3; ++i) a.Set(i, v[i]);
  return a;
}

int attribute(cudaDeviceAttr attr, int device, const char* name) {
  int v = 0;
  check(cudaDeviceGetAttribute(&v, attr, device), name);
  return v;
}

Napi::Value deviceProperties(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int device = intArg(info, 0, "device");
  return guard(env, [&] {
    useDevice(device);
    cudaDeviceProp p{};
    CK_CUDA(cudaGetDeviceProperties(&p, device));
    auto o = Napi::Object::New(env);
    o.Set("index", device);
    o.Set("name", p.name);
    o.Set("computeCapability", std::to_string(p.major) + "." + std::to_string(p.minor));
    o.Set("major", p.major);
    o.Set("minor", p.minor);
    o.Set("smCount", p.multiProcessorCount);
    o.Set("totalGlobalMem", static_cast<double>(p.totalGlobalMem));
    o.Set("totalConstMem", static_cast<double>(p.totalConstMem));
    o.Set("sharedMemPerBlock", static_cast<double>(p.sharedMemPerBlock));
    o.Set("sharedMemPerBlockOptin", static_cast<double>(p.sharedMemPerBlockOptin));
    o.Set("sharedMemPerMultiprocessor", static_cast<double>(p.sharedMemPerMultiprocessor));
    o.Set("regsPerBlock", p.regsPerBlock);
    o.Set("regsPerMultiprocessor", p.regsPerMultiprocessor);
    o.Set("warpSize", p.warpSize);
    o.Set("maxThreadsPerBlock", p.maxThreadsPerBlock);
    o.Set("maxThreadsPerMultiProcessor", p.maxThreadsPerMultiProcessor);
    o.Set("maxBlocksPerMultiProcessor", p.maxBlocksPerMultiProcessor);
    o.Set("maxBlockDim", dims(env, p.maxThreadsDim));
    o.Set("maxGridDim", dims(env, p.maxGridSize));
    o.Set("clockRateKHz", attribute(cudaDevAttrClockRate, device, "cudaDeviceGetAttribute(ClockRate)"));
    o.Set("memoryClockRateKHz",
          attribute(cudaDevAttrMemoryClockRate, device, "cudaDeviceGetAttribute(MemoryClockRate)"));
    o.Set("memoryBusWidth", p.memoryBusWidth);
    o.Set("l2CacheSize", p.l2CacheSize);
    o.Set("asyncEngineCount", p.asyncEngineCount);
    o.Set("concurrentKernels", p.concurrentKernels != 0);
    o.Set("eccEnabled", p.ECCEnabled != 0);
    o.Set("unifiedAddressing", p.unifiedAddressing != 0);
    o.Set("pciBusId", p.pciBusID);
    auto peers = Napi::Array::New(env);
    uint32_t n = 0;
    for (int other = 0; other < runtimeStatus().deviceCount; ++other) {
      if (other == device) continue;
      int can = 0;
      CK_CUDA(cudaDeviceCanAccessPeer(&can, device, other));
      if (can) peers.Set(n++, other);
    }
    o.Set("peers", peers);
    return o;
  });
}

Napi::Value memoryInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int device = intArg(info, 0, "device");
  return guard(env, [&] {
    useDevice(device);
    size_t freeBytes = 0, total = 0;
    CK_CUDA(cudaMemGetInfo(&freeBytes, &total));
    // What the library can still allocate: the driver's free memory plus what our pool holds
    // unused (freed arrays and workspaces, kept for reuse). A leak lowers it; the pool's cache does not.
    const PoolStats pool = poolStats(device);
    const size_t cached = pool.reserved > pool.used ? pool.reserved - pool.used : 0;
    auto o = Napi::Object::New(env);
    o.Set("free", static_cast<double>(freeBytes + cached));
    o.Set("total", static_cast<double>(total));
    o.Set("driverFree", static_cast<double>(freeBytes));
    return o;
  });
}

// Waits for everything the library queued on the device (and anything else on it), collectives
// deferred on its library stream included: libraryStream() first waits until they are queued.
Napi::Value synchronize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int device = intArg(info, 0, "device");
  guard(env, [&] {
    libraryStream(device);  // checks the device and makes it current
    CK_CUDA(cudaDeviceSynchronize());
  });
  return env.Undefined();
}

}  // namespace

void registerDevices(Napi::Env env, Napi::Object exports) {
  exports.Set("runtimeInfo", Napi::Function::New(env, runtimeInfo, "runtimeInfo"));
  exports.Set("deviceCount", Napi::Function::New(env, deviceCount, "deviceCount"));
  exports.Set("deviceProperties", Napi::Function::New(env, deviceProperties, "deviceProperties"));
  exports.Set("memoryInfo", Napi::Function::New(env, memoryInfo, "memoryInfo"));
  exports.Set("synchronize", Napi::Function::New(env, synchronize, "synchronize"));
}

}  // namespace ck
