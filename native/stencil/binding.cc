// N-API glue for the stencil: unwrap, re-check, run, wrap the counts.
#include <napi.h>

#include <cmath>
#include <memory>
#include <string>

#include "core/args.h"
#include "core/async_work.h"
#include "core/buffer.h"
#include "core/device.h"
#include "core/errors.h"
#include "core/method_names.h"
#include "core/transfer.h"
#include "stencil/methods.h"

namespace ck {

namespace {

// The arguments of stencilRun / stencilRunAsync: (in, a, b, rows, cols, weights: Float64Array(9),
// tolerance, maxIterations, checkEvery, methodIndex), checked. `held`: a and b are written by a call
// made of several steps that holds them (asyncHold) rather than by this one.
struct Args {
  DeviceBuffer* in = nullptr;
  DeviceBuffer* a = nullptr;
  DeviceBuffer* b = nullptr;
  stencil::Problem pb;
  int method = 0;
};

Args parseArgs(const Napi::CallbackInfo& info, bool held) {
  Napi::Env env = info.Env();
  Args r;
  DeviceBuffer& in = unwrapBuffer(info[0], "grid");
  DeviceBuffer& a = held ? unwrapHeld(info[1], "a") : unwrapOutput(info[1], "a");
  DeviceBuffer& b = held ? unwrapHeld(info[2], "b") : unwrapOutput(info[2], "b");
  stencil::Problem& pb = r.pb;
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
  r.method = intArg(info, 9, "method");
  if (r.method < 0 || r.method >= stencil::kMethodCount)
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
  r.in = &in;
  r.a = &a;
  r.b = &b;
  return r;
}

Napi::Object resultObject(Napi::Env env, const stencil::Result& r) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("iterations", Napi::Number::New(env, static_cast<double>(r.iterations)));
  out.Set("residual", Napi::Number::New(env, r.residual));
  out.Set("finalBuffer", Napi::Number::New(env, r.finalBuffer));
  return out;
}

// stencilRun(in, a, b, rows, cols, weights, tolerance, maxIterations, checkEvery, methodIndex)
// -> { iterations, residual, finalBuffer }; waits for the GPU.
Napi::Value stencilRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Args args = parseArgs(info, false);
  return guard(env, [&] {
    stencil::Result r;
    check(stencil::run(stencil::kMethods[args.method].method, args.in->dtype, args.in->ptr, args.a->ptr,
                       args.b->ptr, args.pb, libraryStream(args.in->device), &r),
          (std::string("stencil ") + stencil::kMethods[args.method].name).c_str());
    return resultObject(env, r);
  });
}

// A pinned block and a cudaEventBlockingSync event for stencil::run to sleep on (see HostWait); the
// block comes from the staging cache, as a cudaHostAlloc per step would cost about a millisecond.
struct SleepingWait {
  Staging* block = nullptr;
  stencil::HostWait wait;
  SleepingWait() {
    block = stagingAcquire(stencil::kHostWaitBytes);
    const cudaError_t err =
        cudaEventCreateWithFlags(&wait.event, cudaEventBlockingSync | cudaEventDisableTiming);
    if (err != cudaSuccess) {
      stagingRelease(block);
      check(err, "cudaEventCreateWithFlags");
    }
    wait.pinned = block->ptr;
  }
  ~SleepingWait() {
    cudaEventDestroy(wait.event);
    stagingRelease(block);
  }
  SleepingWait(const SleepingWait&) = delete;
  SleepingWait& operator=(const SleepingWait&) = delete;
};

// stencilRunAsync(same arguments) -> Promise<{ iterations, residual, finalBuffer }>: one run (a step of
// stencilAsync's sweeps) on a pool thread, which sleeps through its residual checks. The caller holds a
// and b for writing (asyncHold) across its steps, and `grid` is its own copy of the user's grid (taken
// at the call) or an earlier step's result, which nothing else writes.
Napi::Value stencilRunAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Args args = parseArgs(info, true);
  return guard(env, [&]() -> Napi::Value {
    cudaStream_t stream = libraryStream(args.in->device);
    auto result = std::make_shared<stencil::Result>();
    const stencil::MethodEntry* m = &stencil::kMethods[args.method];
    const Dtype dtype = args.in->dtype;
    const void* in = args.in->ptr;
    void* a = args.a->ptr;
    void* b = args.b->ptr;
    const stencil::Problem pb = args.pb;
    return GpuTask::start(
        env, "stencilAsync", args.in->device,
        {{info[0], args.in, false}, {info[1], args.a, false}, {info[2], args.b, false}},
        [=](const GpuTask::Report&) {
          SleepingWait sleeping;
          const cudaError_t err =
              stencil::run(m->method, dtype, in, a, b, pb, stream, result.get(), sleeping.wait);
          // A failed run may have left a copy into the block queued: the block goes back only after it.
          if (err != cudaSuccess) cudaStreamSynchronize(stream);
          check(err, (std::string("stencil ") + m->name).c_str());
        },
        [result](Napi::Env e) -> Napi::Value { return resultObject(e, *result); });
  });
}

Napi::Value stencilMethods(const Napi::CallbackInfo& info) {
  return methodNames(info.Env(), stencil::kMethods, stencil::kMethodCount);
}

}  // namespace

void registerStencil(Napi::Env env, Napi::Object exports) {
  exports.Set("stencilRun", Napi::Function::New(env, stencilRun, "stencilRun"));
  exports.Set("stencilRunAsync", Napi::Function::New(env, stencilRunAsync, "stencilRunAsync"));
  exports.Set("stencilMethods", Napi::Function::New(env, stencilMethods, "stencilMethods"));
}

}  // namespace ck
