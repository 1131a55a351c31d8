// N-API glue for SGEMM: unwrap, re-check, call the method's runner, nothing else.
#include <napi.h>

#include "core/args.h"
#include "core/buffer.h"
#include "core/device.h"
#include "core/errors.h"
#include "core/method_names.h"
#include "gemm/methods.h"

namespace ck {

namespace {

// gemmRun(A, B, C, m, k, n, methodIndex, tile)
Napi::Value gemmRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& a = unwrapBuffer(info[0], "dA");
  DeviceBuffer& b = unwrapBuffer(info[1], "dB");
  DeviceBuffer& c = unwrapOutput(info[2], "out");
  const int64_t m = countArg(info, 3, "m"), k = countArg(info, 4, "k"), n = countArg(info, 5, "n");
  const int method = intArg(info, 6, "method");
  const int tile = intArg(info, 7, "tile");
  if (method < 0 || method >= gemm::kMethodCount)
    throw Napi::RangeError::New(env, "method index out of range");
  if (tile != 8 && tile != 16 && tile != 32) throw Napi::RangeError::New(env, "tile must be 8, 16 or 32");
  if (a.dtype != Dtype::Float32 || b.dtype != Dtype::Float32 || c.dtype != Dtype::Float32) {
    throw Napi::TypeError::New(env, "dA, dB and out must be float32");
  }
  if (m < 1 || k < 1 || n < 1) throw Napi::RangeError::New(env, "m, k and n must be at least 1");
  if (sizeProduct(env, {m, k}, "m·k") != a.length || sizeProduct(env, {k, n}, "k·n") != b.length ||
      sizeProduct(env, {m, n}, "m·n") != c.length) {
    throw Napi::RangeError::New(env, "dA, dB and out must hold m·k, k·n and m·n elements");
  }
  if (a.device != b.device || a.device != c.device)
    throw Napi::RangeError::New(env, "all arrays must be on one device");
  if (&c == &a || &c == &b) throw Napi::RangeError::New(env, "out must not be dA or dB");
  guard(env, [&] {
    cudaStream_t stream = libraryStream(a.device);
    gemm::kMethods[method].run(a.as<const float>(), b.as<const float>(), c.as<float>(), m, k, n, tile,
                               a.device, stream);
  });
  return env.Undefined();
}

Napi::Value gemmMethods(const Napi::CallbackInfo& info) {
  return methodNames(info.Env(), gemm::kMethods, gemm::kMethodCount);
}

}  // namespace

void registerGemm(Napi::Env env, Napi::Object exports) {
  exports.Set("gemmRun", Napi::Function::New(env, gemmRun, "gemmRun"));
  exports.Set("gemmMethods", Napi::Function::New(env, gemmMethods, "gemmMethods"));
}

}  // namespace ck
