// N-API glue for scan and reduce: unwrap, re-check, launch, nothing else.
#include <napi.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/args.h"
#include "core/async_work.h"
#include "core/buffer.h"
#include "core/device.h"
#include "core/errors.h"
#include "core/method_names.h"
#include "core/pool.h"
#include "core/transfer.h"
#include "scan/methods.h"
#include "scan/queued_reduce.h"
#include "scan/scan.h"

namespace ck {

namespace {

// scanRun(in, out, methodIndex, inclusive)
Napi::Value scanRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& in = unwrapBuffer(info[0], "arr");
  DeviceBuffer& out = unwrapOutput(info[1], "out");
  const int method = intArg(info, 2, "method");
  if (method < 0 || method >= scan::kMethodCount)
    throw Napi::RangeError::New(env, "method index out of range");
  if (info.Length() < 4 || !info[3].IsBoolean())
    throw Napi::TypeError::New(env, "inclusive must be a boolean");
  const bool inclusive = info[3].As<Napi::Boolean>().Value();
  if (in.dtype != out.dtype) throw Napi::TypeError::New(env, "arr and out must have the same dtype");
  if (in.length != out.length) throw Napi::RangeError::New(env, "arr and out must have the same length");
  if (in.device != out.device) throw Napi::RangeError::New(env, "arr and out must be on the same device");
  if (scan::kMethods[method].launch == scan::launchCub && in.length > scan::cubMaxItems())
    throw Napi::RangeError::New(env, "method 'cub' takes at most " + std::to_string(scan::cubMaxItems()) +
                                         " elements with the CUB this addon was built against");
  guard(env, [&] {
    cudaStream_t stream = libraryStream(in.device);
    check(scan::kMethods[method].launch(in.ptr, out.ptr, in.dtype, in.length, inclusive, stream),
          (std::string("scan ") + scan::kMethods[method].name).c_str());
  });
  return env.Undefined();
}

Napi::Value scanMethods(const Napi::CallbackInfo& info) {
  return methodNames(info.Env(), scan::kMethods, scan::kMethodCount);
}

// scanCubInfo() -> { version: CUB_VERSION of the build (2.3.2 is 200302), maxItems: the longest array
// the `cub` method takes (2^31 - 1 before CUB 2.7, else 2^53 - 1: any array) }.
Napi::Value scanCubInfo(const Napi::CallbackInfo& info) {
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("version", scan::cubVersion());
  const uint64_t max = scan::cubMaxItems();
  o.Set("maxItems", static_cast<double>(max < (uint64_t{1} << 53) ? max : (uint64_t{1} << 53) - 1));
  return o;
}

// The reduction of `length` elements at `ptr` on `stream`, waited for on the JS thread (spinning: the
// shortest wait). Throws CudaFailure.
double reduceNow(const void* ptr, Dtype dtype, size_t length, int op, cudaStream_t stream) {
  double* result = nullptr;
  CK_CUDA(poolMalloc(&result, sizeof(double), stream));
  Staging* host = stagingAcquire(sizeof(double));  // pinned: the 8 bytes come back by DMA
  cudaError_t err = scan::launchReduce(ptr, dtype, length, static_cast<scan::ReduceOp>(op), result, stream);
  if (err == cudaSuccess)
    err = cudaMemcpyAsync(host->ptr, result, sizeof(double), cudaMemcpyDeviceToHost, stream);
  const cudaError_t freed = poolFree(result, stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  double value = 0;
  std::memcpy(&value, host->ptr, sizeof value);
  stagingRelease(host);
  check(err, "reduce");
  check(freed, "cudaFreeAsync");
  return value;
}

int reduceOpArg(const Napi::CallbackInfo& info) {
  const int op = intArg(info, 1, "op");
  if (op < 0 || op > 2) throw Napi::RangeError::New(info.Env(), "op must be 0 (sum), 1 (min) or 2 (max)");
  return op;
}

// reduceRun(in, op) -> number; waits for the result.
Napi::Value reduceRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& in = unwrapBuffer(info[0], "arr");
  const int op = reduceOpArg(info);
  return guard(env, [&] {
    return Napi::Number::New(env, reduceNow(in.ptr, in.dtype, in.length, op, libraryStream(in.device)));
  });
}

// reduceRunAsync(in, op) -> Promise<number>: the same, queued here on the JS thread, so that it reduces
// the array as it is at the call (work queued after the call, a fill of the array included, runs after
// it on the stream); a pool thread only sleeps until the result is in.
Napi::Value reduceRunAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& in = unwrapBuffer(info[0], "arr");
  const int op = reduceOpArg(info);
  return guard(env, [&]() -> Napi::Value {
    cudaStream_t stream = libraryStream(in.device);
    const std::vector<scan::ReduceOp> ops{static_cast<scan::ReduceOp>(op)};
    auto queued = std::make_shared<scan::QueuedReductions>(in.ptr, in.dtype, in.length, ops, stream);
    auto value = std::make_shared<double>(0);
    // No array to hold: the reduction is queued, and a free() of `in` is ordered after it.
    return GpuTask::start(
        env, "reduceAsync", in.device, {},
        [queued, value](const GpuTask::Report&) { *value = queued->wait()[0]; },
        [value](Napi::Env e) -> Napi::Value { return Napi::Number::New(e, *value); });
  });
}

}  // namespace

void registerScan(Napi::Env env, Napi::Object exports) {
  exports.Set("scanRun", Napi::Function::New(env, scanRun, "scanRun"));
  exports.Set("scanMethods", Napi::Function::New(env, scanMethods, "scanMethods"));
  exports.Set("scanCubInfo", Napi::Function::New(env, scanCubInfo, "scanCubInfo"));
  exports.Set("reduceRun", Napi::Function::New(env, reduceRun, "reduceRun"));
  exports.Set("reduceRunAsync", Napi::Function::New(env, reduceRunAsync, "reduceRunAsync"));
}

}  // namespace ck
