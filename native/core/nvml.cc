// The GPU's energy counter, read through NVML (the library nvidia-smi uses), for the benchmarks'
// energy per operation: nvmlDeviceGetTotalEnergyConsumption, millijoules since the driver loaded
// (Volta and newer). NVML comes with the driver, not the toolkit, so the build machines have none:
// it is opened at run time like cuBLAS, and where it is missing the bench says so and goes on.
//
// gpuEnergy(device) -> { available: true, millijoules } or { available: false, code, reason };
// never throws for a missing NVML or a GPU without the counter.
#include <cuda_runtime.h>
#include <napi.h>

#include <string>

#include "args.h"
#include "device.h"
#include "dynlib.h"
#include "errors.h"

namespace ck {

namespace {

// The few NVML declarations used (nvml.h is not on the build machines): results are an enum whose
// success is 0, devices an opaque pointer.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;

struct Nvml {
  NvmlReturn (*init)() = nullptr;
  const char* (*errorString)(NvmlReturn) = nullptr;
  NvmlReturn (*handleByPciBusId)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*totalEnergy)(NvmlDevice, unsigned long long*) = nullptr;
  bool ok = false;
  std::string code, reason;
};

const Nvml& nvml() {
  static const Nvml n = [] {
    Nvml r;
    std::string opened, tried;
    void* lib = openFirst({"libnvidia-ml.so.1", "libnvidia-ml.so"}, &opened, &tried);
    if (lib == nullptr) {
      r.code = "nvmlLibraryNotFound";
      r.reason = "NVML (libnvidia-ml.so.1, part of the NVIDIA driver) could not be loaded; tried:" + tried;
      return r;
    }
    try {
      const auto bind = [&](auto& fn, const char* symbol) {
        bindSymbol(lib, fn, symbol, "nvmlSymbolNotFound", "NVML at " + opened);
      };
      bind(r.init, "nvmlInit_v2");
      bind(r.errorString, "nvmlErrorString");
      bind(r.handleByPciBusId, "nvmlDeviceGetHandleByPciBusId_v2");
      bind(r.totalEnergy, "nvmlDeviceGetTotalEnergyConsumption");
    } catch (const CudaFailure& f) {
      r.code = f.code();
      r.reason = f.what();
      return r;
    }
    const NvmlReturn s = r.init();
    if (s != kNvmlSuccess) {
      r.code = "nvmlInitFailed";
      r.reason = std::string("nvmlInit_v2 failed: ") + r.errorString(s);
      return r;
    }
    r.ok = true;
    return r;
  }();
  return n;
}

Napi::Value gpuEnergy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = intArg(info, 0, "device");
  auto o = Napi::Object::New(env);
  const auto unavailable = [&](const std::string& code, const std::string& reason) {
    o.Set("available", false);
    o.Set("code", code);
    o.Set("reason", reason);
    return o;
  };
  // An index CUDA does not know is refused here, not by cudaDeviceGetPCIBusId: the runtime keeps a
  // failed call's error as the thread's last error, which the next kernel launch's check would then
  // report as its own.
  const RuntimeStatus& rt = runtimeStatus();
  if (rt.deviceCount == 0) return unavailable(rt.code, rt.reason);
  if (device < 0 || device >= rt.deviceCount)
    return unavailable("cudaErrorInvalidDevice", "device " + std::to_string(device) + " does not exist (" +
                                                     std::to_string(rt.deviceCount) + " device(s) present)");
  const Nvml& n = nvml();
  if (!n.ok) return unavailable(n.code, n.reason);
  // The CUDA device's PCI address names the same board for NVML, whatever CUDA_VISIBLE_DEVICES says.
  char bus[32] = {};
  const cudaError_t err = cudaDeviceGetPCIBusId(bus, sizeof bus, device);
  if (err != cudaSuccess)
    return unavailable(cudaGetErrorName(err),
                       std::string("cudaDeviceGetPCIBusId: ") + cudaGetErrorString(err));
  NvmlDevice handle = nullptr;
  NvmlReturn s = n.handleByPciBusId(bus, &handle);
  if (s != kNvmlSuccess)
    return unavailable("nvmlDeviceNotFound",
                       std::string("nvmlDeviceGetHandleByPciBusId_v2(") + bus + "): " + n.errorString(s));
  unsigned long long mj = 0;
  s = n.totalEnergy(handle, &mj);
  if (s != kNvmlSuccess)
    return unavailable("nvmlEnergyUnavailable",
                       std::string("nvmlDeviceGetTotalEnergyConsumption: ") + n.errorString(s));
  o.Set("available", true);
  o.Set("millijoules", static_cast<double>(mj));
  o.Set("pciBusId", std::string(bus));
  return o;
}

}  // namespace

void registerNvml(Napi::Env env, Napi::Object exports) {
  exports.Set("gpuEnergy", Napi::Function::New(env, gpuEnergy, "gpuEnergy"));
}

}  // namespace ck
