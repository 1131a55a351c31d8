// N-API glue for AᵀA: unwrap, re-check, call the method's runner, nothing else.
#include <napi.h>

#include "ata/methods.h"
#include "core/args.h"
#include "core/buffer.h"
#include "core/device.h"
#include "core/errors.h"
#include "core/method_names.h"

namespace ck {

namespace {

// ataRun(A, C, rows, cols, methodIndex)
Napi::Value ataRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& a = unwrapBuffer(info[0], "dA");
  DeviceBuffer& c = unwrapOutput(info[1], "out");
  const int64_t rows = countArg(info, 2, "rows");
  const int64_t cols = countArg(info, 3, "cols");
  const int method = intArg(info, 4, "method");
  if (method < 0 || method >= ata::kMethodCount)
    throw Napi::RangeError::New(env, "method index out of range");
  if (a.dtype != Dtype::Float64 || c.dtype != Dtype::Float64)
    throw Napi::TypeError::New(env, "dA and out must be float64");
  if (rows < 1 || cols < 1) throw Napi::RangeError::New(env, "rows and cols must be at least 1");
  if (sizeProduct(env, {rows, cols}, "rows·cols") != a.length) {
    throw Napi::RangeError::New(env, "dA must hold rows·cols elements");
  }
  if (sizeProduct(env, {cols, cols}, "cols·cols") != c.length) {
    throw Napi::RangeError::New(env, "out must hold cols·cols elements");
  }
  if (a.device != c.device) throw Napi::RangeError::New(env, "dA and out must be on the same device");
  if (&a == &c) throw Napi::RangeError::New(env, "out must not be dA");
  guard(env, [&] {
    cudaStream_t stream = libraryStream(a.device);
    ata::kMethods[method].run(a.as<const double>(), c.as<double>(), rows, cols, a.device, stream);
  });
  return env.Undefined();
}

Napi::Value ataMethods(const Napi::CallbackInfo& info) {
  return methodNames(info.Env(), ata::kMethods, ata::kMethodCount);
}

}  // namespace

void registerAta(Napi::Env env, Napi::Object exports) {
  exports.Set("ataRun", Napi::Function::New(env, ataRun, "ataRun"));
  exports.Set("ataMethods", Napi::Function::New(env, ataMethods, "ataMethods"));
}

}  // namespace ck
