// N-API glue for the stencil: unwrap, re-check, run, wrap the counts.
#include <napi.h>

#include <cmath>
#include <string>

#include "core/args.h"
#include "core/buffer.h"
#include "core/device.h"
#include "core/errors.h"
#include "core/method_names.h"
#include "stencil/methods.h"

namespace ck {

namespace {

// stencilRun(in, a, b, rows, cols, weights: Float64Array(9), tolerance, maxIterations, checkEvery,
// methodIndex) -> { iterations, residual, finalBuffer }; waits for the GPU.
Napi::Value stencilRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& in = unwrapBuffer(info[0], "grid");
  DeviceBuffer& a = unwrapOutput(info[1], "a");
  DeviceBuffer& b = unwrapOutput(info[2], "b");
  stencil::Problem pb;
  pb.rows = countArg(info, 3, "rows");
  pb.cols = countArg(info, 4, "cols");
  if (info.Length() <= 5 || !info[5].IsTypedArray() ||
      info[5].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[5].As<Napi::TypedArray>().ElementLength() != 9)
    throw Napi::TypeError::New(env, "weights must be a Float64Array of 9 elements");
  Napi::Float64Array w = info[5].As<Napi::Float64Array>();
  for (size_t i = 0; i < 9; ++i) {
    pb.weights[i] = w[i];
    if (!std::isfinite(pb.weights[i])) throw Napi::RangeError::New(env, "weights must be finite");
  }
  pb.tolerance = numberArg(info, 6, "tolerance");
  if (!(pb.tolerance >= 0)) throw Napi::RangeError::New(env, "tolerance must be >= 0");
  pb.maxIterations = countArg(info, 7, "maxIterations");
  pb.checkEvery = countArg(info, 8, "checkEvery");
  const int method = intArg(info, 9, "method");
  if (method < 0 || method >= stencil::kMethodCount)
    throw Napi::RangeError::New(env, "method index out of range");
  if (pb.rows < 1 || pb.cols < 1) throw Napi::RangeError::New(env, "rows and cols must be >= 1");
  if (pb.maxIterations < 1 || pb.checkEvery < 1)
    throw Napi::RangeError::New(env, "maxIterations and checkEvery must be >= 1");
  if (in.dtype != Dtype::Float32 && in.dtype != Dtype::Float64)
    throw Napi::TypeError::New(env, "grid must be float32 or float64");
  const uint64_t n = sizeProduct(env, {pb.rows, pb.cols}, "rows·cols");
  for (const DeviceBuffer* buf : {&in, &a, &b}) {
    if (buf->dtype != in.dtype || buf->length != n || buf->device != in.device)
      throw Napi::RangeError::New(env, "grid, a and b must be rows*cols elements of one dtype on one device");
  }
  if (&in == &a || &in == &b || &a == &b) throw Napi::RangeError::New(env, "grid, a and b must be distinct");
  return guard(env, [&] {
    stencil::Result r;
    check(stencil::run(stencil::kMethods[method].method, in.dtype, in.ptr, a.ptr, b.ptr, pb,
                       libraryStream(in.device), &r),
          (std::string("stencil ") + stencil::kMethods[method].name).c_str());
    Napi::Object out = Napi::Object::New(env);
    out.Set("iterations", Napi::Number::New(env, static_cast<double>(r.iterations)));
    out.Set("residual", Napi::Number::New(env, r.residual));
    out.Set("finalBuffer", Napi::Number::New(env, r.finalBuffer));
    return out;
  });
}

Napi::Value stencilMethods(const Napi::CallbackInfo& info) {
  return methodNames(info.Env(), stencil::kMethods, stencil::kMethodCount);
}

}  // namespace

void registerStencil(Napi::Env env, Napi::Object exports) {
  exports.Set("stencilRun", Napi::Function::New(env, stencilRun, "stencilRun"));
  exports.Set("stencilMethods", Napi::Function::New(env, stencilMethods, "stencilMethods"));
}

}  // namespace ck
