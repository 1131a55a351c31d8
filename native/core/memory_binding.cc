// N-API glue for the memory pool and pinned host memory: poolStats, poolTrim, pinnedAlloc,
// pinnedFree, isPinned; and the test-only stream hold (debugHoldStream, debugReleaseStream,
// debugStreamBusy).
#include <napi.h>

#include <string>

#include "args.h"
#include "debug_kernels.h"
#include "device.h"
#include "errors.h"
#include "pool.h"
#include "transfer.h"

namespace ck {

namespace {

// poolStats(device) -> { used, reserved, highWater, oomRetries, hostStaging: { reserved, used, highWater } }
Napi::Value poolStatsBinding(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = intArg(info, 0, "device");
  return guard(env, [&] {
    const PoolStats s = poolStats(device);
    auto o = Napi::Object::New(env);
    o.Set("used", static_cast<double>(s.used));
    o.Set("reserved", static_cast<double>(s.reserved));
    o.Set("highWater", static_cast<double>(s.highWater));
    o.Set("oomRetries", static_cast<double>(s.oomRetries));
    const HostStagingStats h = hostStagingStats();
    auto host = Napi::Object::New(env);
    host.Set("reserved", static_cast<double>(h.reserved));
    host.Set("used", static_cast<double>(h.used));
    host.Set("highWater", static_cast<double>(h.highWater));
    o.Set("hostStaging", host);
    return o;
  });
}

// poolTrim(device, keepBytes)
Napi::Value poolTrimBinding(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = intArg(info, 0, "device");
  const int64_t keep = countArg(info, 1, "keepBytes");
  guard(env, [&] {
    poolTrim(device, static_cast<size_t>(keep));
    // The pinned staging memory is the process's, not the device's: every trim gives back what is idle.
    trimHostStaging();
  });
  return env.Undefined();
}

// pinnedAlloc(bytes) -> ArrayBuffer over page-locked memory; its finalizer frees the memory.
Napi::Value pinnedAlloc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int64_t bytes = countArg(info, 0, "bytes");
  return guard(env, [&] {
    useDevice(0);  // a clear CudaError without a GPU; the memory itself is portable
    // Nothing to lock for an empty array (and an empty buffer has no address to find it by).
    if (bytes == 0) return Napi::ArrayBuffer::New(env, 0);
    PinnedBlock* b = pinnedAllocate(static_cast<size_t>(bytes));
    // Gone before JS can see it only if the ArrayBuffer cannot be made; the finalizer owns it after.
    try {
      return Napi::ArrayBuffer::New(
          env, b->ptr, static_cast<size_t>(bytes),
          [](Napi::Env, void*, PinnedBlock* hint) { pinnedDestroy(hint); }, b);
    } catch (...) {
      pinnedDestroy(b);
      throw;
    }
  });
}

// The live pinned block behind an ArrayBuffer, or null.
PinnedBlock* blockOf(Napi::ArrayBuffer ab) {
  return ab.ByteLength() == 0 ? nullptr : findPinned(ab.Data(), ab.ByteLength());
}

// pinnedFree(arrayBuffer): detaches the buffer (every view of it becomes empty) and returns the
// memory, at once or when the transfers still using it finish. Idempotent.
Napi::Value pinnedFree(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArrayBuffer())
    throw Napi::TypeError::New(env, "buffer must be an ArrayBuffer");
  auto ab = info[0].As<Napi::ArrayBuffer>();
  bool detached = false;
  if (napi_is_detached_arraybuffer(env, ab, &detached) != napi_ok || detached) return env.Undefined();
  if (ab.ByteLength() == 0) return env.Undefined();  // pinned(dtype, 0) holds no memory
  PinnedBlock* b = blockOf(ab);
  if (b == nullptr) throw Napi::TypeError::New(env, "buffer is not pinned memory from pinned()");
  // Detach first: once JS cannot reach the memory it is safe to give back.
  if (napi_detach_arraybuffer(env, ab) != napi_ok)
    throw Napi::Error::New(env, "pinned memory could not be detached from its ArrayBuffer");
  pinnedMarkFreed(b);
  return env.Undefined();
}

// isPinned(typedArray) -> whether its memory lies in a live pinned() block.
Napi::Value isPinned(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray()) return Napi::Boolean::New(env, false);
  // napi_get_typedarray_info, not the ArrayBuffer calls: those fail for a SharedArrayBuffer's views.
  napi_typedarray_type type = napi_int8_array;
  size_t length = 0, offset = 0;
  void* data = nullptr;
  napi_value buffer = nullptr;
  if (napi_get_typedarray_info(env, info[0], &type, &length, &data, &buffer, &offset) != napi_ok)
    return Napi::Boolean::New(env, false);
  bool isArrayBuffer = false, detached = false;
  if (napi_is_arraybuffer(env, buffer, &isArrayBuffer) != napi_ok || !isArrayBuffer)
    return Napi::Boolean::New(env, false);  // shared memory is never ours
  const size_t bytes = info[0].As<Napi::TypedArray>().ByteLength();
  if (napi_is_detached_arraybuffer(env, buffer, &detached) != napi_ok || detached || bytes == 0)
    return Napi::Boolean::New(env, false);
  return Napi::Boolean::New(env, findPinned(data, bytes) != nullptr);
}

// ---- Test-only: hold the library stream busy (never exported by lib/; development builds only) --
#ifdef CK_TEST_HOOKS

// Mapped, page-locked: the kernel sees the host's write while it runs.
int* releaseFlag() {
  static int* flag = [] {
    int* f = nullptr;
    CK_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&f), sizeof(int),
                          cudaHostAllocMapped | cudaHostAllocPortable));
    return f;
  }();
  return flag;
}

// debugHoldStream(device, timeoutMs): the library stream stays busy until debugReleaseStream().
Napi::Value debugHoldStream(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = intArg(info, 0, "device");
  const double timeoutMs = numberArg(info, 1, "timeoutMs");
  if (!(timeoutMs > 0 && timeoutMs <= 60000))
    throw Napi::RangeError::New(env, "timeoutMs must be in (0, 60000]");
  guard(env, [&] {
    cudaStream_t s = libraryStream(device);
    volatile int* flag = releaseFlag();
    *flag = 0;
    check(launchHoldStream(flag, static_cast<unsigned long long>(timeoutMs * 1e6), s),
          "debug_hold_stream_kernel");
  });
  return env.Undefined();
}

Napi::Value debugReleaseStream(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  guard(env, [&] {
    useDevice(0);
    *static_cast<volatile int*>(releaseFlag()) = 1;
  });
  return env.Undefined();
}

// debugStreamBusy(device) -> whether the library stream still has unfinished work.
Napi::Value debugStreamBusy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = intArg(info, 0, "device");
  return guard(env, [&] {
    const cudaError_t q = cudaStreamQuery(libraryStream(device));
    if (q == cudaErrorNotReady) {
      cudaGetLastError();
      return Napi::Boolean::New(env, true);
    }
    check(q, "cudaStreamQuery");
    return Napi::Boolean::New(env, false);
  });
}
#endif  // CK_TEST_HOOKS

}  // namespace

void registerMemory(Napi::Env env, Napi::Object exports) {
  exports.Set("poolStats", Napi::Function::New(env, poolStatsBinding, "poolStats"));
  exports.Set("poolTrim", Napi::Function::New(env, poolTrimBinding, "poolTrim"));
  exports.Set("pinnedAlloc", Napi::Function::New(env, pinnedAlloc, "pinnedAlloc"));
  exports.Set("pinnedFree", Napi::Function::New(env, pinnedFree, "pinnedFree"));
  exports.Set("isPinned", Napi::Function::New(env, isPinned, "isPinned"));
#ifdef CK_TEST_HOOKS
  exports.Set("debugHoldStream", Napi::Function::New(env, debugHoldStream, "debugHoldStream"));
  exports.Set("debugReleaseStream", Napi::Function::New(env, debugReleaseStream, "debugReleaseStream"));
  exports.Set("debugStreamBusy", Napi::Function::New(env, debugStreamBusy, "debugStreamBusy"));
#endif
}

}  // namespace ck
