#include "cublas.h"

#include <dlfcn.h>
#include <napi.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "device.h"
#include "dynlib.h"
#include "errors.h"
#include "pool.h"

namespace ck {
namespace cublas {

namespace {

std::atomic<int64_t> gForcedKChunk{0};
std::atomic<int64_t> gKChunkCalls{0};

std::string cudaMajor() {
  return std::to_string(CUDART_VERSION / 1000);
}

std::vector<std::string> candidates() {
  std::vector<std::string> dirs;
  if (const char* p = std::getenv("CUDA_PATH")) dirs.push_back(std::string(p) + "/lib64");
  dirs.push_back("/usr/local/cuda/lib64");
  std::vector<std::string> out;
  // The cuBLAS of the CUDA major this binary was built with (13, or 12 for the fallback build).
  for (const std::string& name : {"libcublas.so." + cudaMajor(), std::string("libcublas.so")}) {
    for (const auto& d : dirs) out.push_back(d + "/" + name);
    out.push_back(name);  // the dynamic loader's own search path
  }
  return out;
}

struct Loaded {
  Api api;
  bool ok = false;
  std::string code, message;
};

Loaded load() {
  Loaded r;
  std::string tried;
  // cuBLAS needs cuBLASLt from its own folder; load that first so an absolute path resolves it.
  void* lib = openFirst(candidates(), &r.api.path, &tried, [](const std::string& path) {
    if (path.find('/') == std::string::npos) return;
    const std::string lt = path.substr(0, path.rfind('/')) + "/libcublasLt.so." + cudaMajor();
    dlopen(lt.c_str(), RTLD_NOW | RTLD_GLOBAL);
  });
  if (lib == nullptr) {
    r.code = "cublasLibraryNotFound";
    r.message =
        "cuBLAS could not be loaded, so the cuBLAS methods are unavailable (the other methods work). "
        "Install the CUDA toolkit's cuBLAS (libcublas.so." +
        cudaMajor() + ") or set CUDA_PATH. Tried:" + tried;
    return r;
  }
  try {
    Api& a = r.api;
    const auto bind = [&](auto& fn, const char* symbol) {
      bindSymbol(lib, fn, symbol, "cublasSymbolNotFound", "cuBLAS at " + a.path);
    };
    bind(a.create, "cublasCreate_v2");
    bind(a.destroy, "cublasDestroy_v2");
    bind(a.setStream, "cublasSetStream_v2");
    bind(a.setMathMode, "cublasSetMathMode");
    bind(a.getProperty, "cublasGetProperty");
    bind(a.getStatusName, "cublasGetStatusName");
    bind(a.getStatusString, "cublasGetStatusString");
    bind(a.dgemm, "cublasDgemm_v2");
    bind(a.sgemm, "cublasSgemm_v2");
    bind(a.dsyrk, "cublasDsyrk_v2");
    for (int i = 0; i < 3; ++i) a.getProperty(static_cast<LibraryProperty>(i), &a.version[i]);
    r.ok = true;
  } catch (const CudaFailure& f) {
    r.code = f.code();
    r.message = f.what();
  }
  return r;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const Api& api() {
  const Loaded& l = loaded();
  if (!l.ok) throw CudaFailure(l.code, "dlopen(libcublas)", l.message);
  return l.api;
}

// cuBLAS loads its kernels and allocates as calls first need them, and where the device has no memory
// left for that it answers CUBLAS_STATUS_INTERNAL_ERROR (the faults suite's full-device SGEMM, H100,
// cuBLAS 13.0, with at most ~120 MiB of the device free), which says nothing of the cause. So
// ALLOC_FAILED, and INTERNAL_ERROR with under kLowMemory free (a margin above that, not a measured
// bound), are reported as out of memory, cuBLAS's own status in the message, so that callers that
// handle out-of-memory (free, retry smaller) handle them too. The library's pool gives back what it
// holds unused first, as an allocation that finds the device full does, so that a retry can find it.
constexpr size_t kLowMemory = size_t{256} << 20;

void check(Status s, const char* call) {
  if (s == kSuccess) return;
  const Api& a = api();
  const std::string name = a.getStatusName(s);
  const std::string said = std::string(a.getStatusString(s)) + " (" + name + " in " + call + ")";
  bool oom = name == "CUBLAS_STATUS_ALLOC_FAILED", known = false;
  size_t free = 0, total = 0;
  if (oom || name == "CUBLAS_STATUS_INTERNAL_ERROR") {
    known = cudaMemGetInfo(&free, &total) == cudaSuccess;
    if (!known) cudaGetLastError();  // cudaMemGetInfo's own failure is not this call's error
    oom = oom || (known && free < kLowMemory);
  }
  if (!oom) throw CudaFailure(name, call, said);
  int device = 0;
  if (cudaGetDevice(&device) == cudaSuccess) {
    try {
      poolTrim(device, 0);
    } catch (const CudaFailure&) {
      // The trim is a courtesy to a retry; this call's error is the one to report.
    }
  }
  const std::string left =
      known ? std::to_string(free >> 20) + " MiB of the device free" : "free memory unknown";
  throw CudaFailure("cudaErrorMemoryAllocation", call,
                    "out of memory: cuBLAS failed with " + left + ": " + said);
}

namespace {

struct PerDevice {
  std::mutex use;  // held by a Session
  Handle handle = nullptr;
};

PerDevice& perDevice(int device) {
  static std::mutex mutex;
  static std::vector<PerDevice> devices;
  std::lock_guard<std::mutex> lock(mutex);
  // Sized once, never resized: Sessions keep references to the elements.
  if (devices.empty()) devices = std::vector<PerDevice>(static_cast<size_t>(runtimeStatus().deviceCount));
  return devices[static_cast<size_t>(device)];
}

}  // namespace

Session::Session(int device) {
  const Api& a = api();
  cudaStream_t stream = libraryStream(device);
  PerDevice& d = perDevice(device);
  lock_ = std::unique_lock<std::mutex>(d.use);
  if (d.handle == nullptr) {
    Handle h = nullptr;
    CK_CUBLAS(a.create(&h));
    const Status s = a.setStream(h, stream);
    if (s != kSuccess) {
      a.destroy(h);
      CK_CUBLAS(s);
    }
    d.handle = h;
  }
  handle_ = d.handle;
}

int64_t forcedKChunk() {
  return gForcedKChunk.load(std::memory_order_relaxed);
}

void setForcedKChunk(int64_t rows) {
  gForcedKChunk.store(rows, std::memory_order_relaxed);
}

void countKChunk() {
  gKChunkCalls.fetch_add(1, std::memory_order_relaxed);
}

int64_t takeKChunkCount() {
  return gKChunkCalls.exchange(0, std::memory_order_relaxed);
}

}  // namespace cublas

// cublasInfo() -> { available, path?, version?, code?, reason? } without throwing;
// cublasLoad() -> version string, or throws the CudaError the cuBLAS methods would throw.
static Napi::Value cublasInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto o = Napi::Object::New(env);
  try {
    const cublas::Api& a = cublas::api();
    o.Set("available", true);
    o.Set("path", a.path);
    o.Set("version", std::to_string(a.version[0]) + "." + std::to_string(a.version[1]) + "." +
                         std::to_string(a.version[2]));
  } catch (const CudaFailure& f) {
    o.Set("available", false);
    o.Set("code", f.code());
    o.Set("reason", f.what());
  }
  return o;
}

static Napi::Value cublasLoad(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&] {
    const cublas::Api& a = cublas::api();
    return Napi::String::New(env, std::to_string(a.version[0]) + "." + std::to_string(a.version[1]) + "." +
                                      std::to_string(a.version[2]));
  });
}

void registerCublas(Napi::Env env, Napi::Object exports) {
  exports.Set("cublasInfo", Napi::Function::New(env, cublasInfo, "cublasInfo"));
  exports.Set("cublasLoad", Napi::Function::New(env, cublasLoad, "cublasLoad"));
}

}  // namespace ck
