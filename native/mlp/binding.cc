// N-API glue for the multilayer network: unwrap, re-check, call the launcher, nothing else.
#include "distributed/binding.h"

#include <napi.h>

#include <cmath>
#include <cstdint>
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
#include "core/transfer.h"
#include "mlp/methods.h"
#include "mlp/mlp.h"

namespace ck {

namespace {

constexpr int64_t kMaxDim = 2147483647;  // cuBLAS and the launch grids take int dimensions

mlp::Net netArg(const Napi::CallbackInfo& info, size_t i, size_t hiddenAt, size_t outputAt) {
  Napi::Env env = info.Env();
  if (info.Length() <= i || !info[i].IsArray()) throw Napi::TypeError::New(env, "layers must be an array");
  Napi::Array a = info[i].As<Napi::Array>();
  if (a.Length() < 2) throw Napi::RangeError::New(env, "layers must have at least 2 entries");
  mlp::Net net;
  for (uint32_t k = 0; k < a.Length(); ++k) {
    Napi::Value v = a.Get(k);
    const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
    if (!(d >= 1 && d <= static_cast<double>(kMaxDim)) || std::floor(d) != d)
      throw Napi::RangeError::New(env, "layers must hold integers from 1 to 2^31 - 1");
    net.sizes.push_back(static_cast<int64_t>(d));
  }
  const int hidden = intArg(info, hiddenAt, "hidden"), output = intArg(info, outputAt, "output");
  if (hidden < mlp::kSigmoid || hidden > mlp::kRelu)
    throw Napi::RangeError::New(env, "hidden activation out of range");
  if (output != mlp::kSigmoid && output != mlp::kIdentity)
    throw Napi::RangeError::New(env, "output activation out of range");
  net.hidden = mlp::kActivations[hidden].code;
  net.output = mlp::kActivations[output].code;
  // Every size fits an int, but the parameter count of a long net of wide layers need not fit 64 bits.
  uint64_t params = 0;
  for (size_t k = 0; k + 1 < net.sizes.size(); ++k) {
    const uint64_t layer = sizeProduct(env, {net.sizes[k] + 1, net.sizes[k + 1]}, "the parameter count");
    if (__builtin_add_overflow(params, layer, &params) || params > (uint64_t{1} << 53))
      throw Napi::RangeError::New(env, "the parameter count is larger than any array");
  }
  return net;
}

// workspaceFloats, or a RangeError when the workspace could not be an array (over 2^53 floats).
int64_t checkedWorkspace(Napi::Env env, const mlp::Net& net, int64_t batch, int streams, bool train) {
  const int64_t floats = mlp::workspaceFloats(net, batch, streams, train);
  if (floats < 0 || floats > (int64_t{1} << 53))
    throw Napi::RangeError::New(env, "the workspace for this batch is larger than any array");
  return floats;
}

void checkFloat32(Napi::Env env, const DeviceBuffer& b, uint64_t length, int device, const char* name) {
  if (b.dtype != Dtype::Float32) throw Napi::TypeError::New(env, std::string(name) + " must be float32");
  if (b.length != length) throw Napi::RangeError::New(env, std::string(name) + " has the wrong length");
  if (b.device != device) throw Napi::RangeError::New(env, std::string(name) + " is on another device");
}

mlp::Method methodArg(const Napi::CallbackInfo& info, size_t i) {
  const int m = intArg(info, i, "method");
  if (m < 0 || m >= mlp::kMethodCount) throw Napi::RangeError::New(info.Env(), "method index out of range");
  return mlp::kMethods[m].method;
}

int streamsArg(const Napi::CallbackInfo& info, size_t i) {
  const int s = intArg(info, i, "streams");
  if (s < 1 || s > mlp::kMaxStreams) throw Napi::RangeError::New(info.Env(), "streams must be in [1, 8]");
  return s;
}

// mlpWorkspace(layers, hidden, output, batch, streams, train) -> floats
Napi::Value mlpWorkspace(const Napi::CallbackInfo& info) {
  const mlp::Net net = netArg(info, 0, 1, 2);
  const int64_t batch = countArg(info, 3, "batch");
  const int streams = streamsArg(info, 4);
  const bool train = info.Length() > 5 && info[5].ToBoolean().Value();
  return Napi::Number::New(info.Env(),
                           static_cast<double>(checkedWorkspace(info.Env(), net, batch, streams, train)));
}

// The arguments of mlpTrainEpoch / mlpTrainEpochAsync: (params, momentum, workspace, X, T, error, layers,
// hidden, output, patterns, batch, eta, alpha, method, streams, comm?), checked. `held`: the written
// arrays belong to a call of several epochs that holds them (asyncHold).
struct EpochArgs {
  DeviceBuffer *params, *momentum, *workspace, *X, *T, *error;
  mlp::Net net;
  int64_t patterns = 0, batch = 0;
  double eta = 0, alpha = 0;
  mlp::Method method = mlp::kCustom;
  int streams = 1;
  std::shared_ptr<dist::Comm> comm;

  mlp::Buffers buffers() const {
    return {params->as<float>(), momentum->as<float>(), workspace->as<float>(), error->as<double>()};
  }
};

EpochArgs parseEpoch(const Napi::CallbackInfo& info, bool held) {
  Napi::Env env = info.Env();
  auto written = [&](size_t i, const char* name) -> DeviceBuffer& {
    return held ? unwrapHeld(info[i], name) : unwrapOutput(info[i], name);
  };
  EpochArgs r;
  DeviceBuffer& params = written(0, "params");
  DeviceBuffer& momentum = written(1, "momentum");
  DeviceBuffer& workspace = written(2, "workspace");
  DeviceBuffer& X = unwrapBuffer(info[3], "X");
  DeviceBuffer& T = unwrapBuffer(info[4], "T");
  DeviceBuffer& error = written(5, "error");
  r.net = netArg(info, 6, 7, 8);
  const mlp::Net& net = r.net;
  const int64_t patterns = countArg(info, 9, "patterns"), batch = countArg(info, 10, "batch");
  const double eta = numberArg(info, 11, "eta"), alpha = numberArg(info, 12, "alpha");
  r.method = methodArg(info, 13);
  r.streams = streamsArg(info, 14);
  if (patterns < 1 || patterns > kMaxDim)
    throw Napi::RangeError::New(env, "patterns must be in [1, 2^31 - 1]");
  if (batch < 1 || batch > patterns) throw Napi::RangeError::New(env, "batch must be in [1, patterns]");
  if (!std::isfinite(eta) || !std::isfinite(alpha))
    throw Napi::RangeError::New(env, "eta and alpha must be finite");
  const int device = params.device;
  const uint64_t u = static_cast<uint64_t>(patterns);
  checkFloat32(env, params, static_cast<uint64_t>(net.parameterCount()), device, "params");
  checkFloat32(env, momentum, static_cast<uint64_t>(net.parameterCount()), device, "momentum");
  checkFloat32(env, X, u * static_cast<uint64_t>(net.sizes.front()), device, "X");
  checkFloat32(env, T, u * static_cast<uint64_t>(net.sizes.back()), device, "T");
  const int64_t need = checkedWorkspace(env, net, batch, r.streams, true);
  if (workspace.dtype != Dtype::Float32 || workspace.length < static_cast<uint64_t>(need) ||
      workspace.device != device)
    throw Napi::RangeError::New(env, "workspace is too small or not float32 on the device of params");
  if (error.dtype != Dtype::Float64 || error.length != 1 || error.device != device)
    throw Napi::RangeError::New(env, "error must be one float64 on the device of params");
  if (info.Length() > 15 && !info[15].IsUndefined() && !info[15].IsNull())
    r.comm = dist::unwrapComm(info[15], "comm", device);
  r.params = &params;
  r.momentum = &momentum;
  r.workspace = &workspace;
  r.X = &X;
  r.T = &T;
  r.error = &error;
  r.patterns = patterns;
  r.batch = batch;
  r.eta = eta;
  r.alpha = alpha;
  return r;
}

// One epoch as parsed, enqueued on `stream` (the library stream of the network's device).
void enqueueEpoch(const EpochArgs& a, cudaStream_t stream) {
  const mlp::Buffers buf = a.buffers();
  mlp::GradientSum sum;
  // A few batches in flight: enough to keep the GPU busy, few enough to stop soon after a failure.
  if (a.comm) {
    dist::Comm* comm = a.comm.get();
    sum = [comm](float* grads, int64_t count, cudaStream_t s) {
      dist::allReduceSum(*comm, grads, static_cast<size_t>(count), Dtype::Float32, s, "mlp gradient sum", 4);
    };
  }
  mlp::trainEpoch(a.net, buf, a.X->as<const float>(), a.T->as<const float>(), a.patterns, a.batch,
                  static_cast<float>(a.eta), static_cast<float>(a.alpha), a.method, a.streams, stream, sum);
  if (a.comm)
    dist::allReduceSum(*a.comm, a.error->as<double>(), 1, Dtype::Float64, stream, "mlp error sum", 4);
}

// mlpTrainEpoch(params, momentum, workspace, X, T, error, layers, hidden, output, patterns, batch,
//               eta, alpha, method, streams, comm?): with a communicator, each batch's gradient and
//               the epoch's error are summed over its ranks (data parallel).
Napi::Value mlpTrainEpoch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const EpochArgs a = parseEpoch(info, false);
  guard(env, [&] { enqueueEpoch(a, libraryStream(a.params->device)); });
  return env.Undefined();
}

// mlpTrainEpochAsync(same arguments) -> Promise<void>: `error` set to 0, one epoch, and the wait for it,
// on a pool thread (an epoch of many small batches would fill the launch queue and block whichever
// thread enqueues it). The caller holds params, momentum, workspace and error (asyncHold).
Napi::Value mlpTrainEpochAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const EpochArgs a = parseEpoch(info, true);
  return guard(env, [&]() -> Napi::Value {
    cudaStream_t stream = libraryStream(a.params->device);
    std::vector<GpuTask::Array> arrays;
    DeviceBuffer* bufs[] = {a.params, a.momentum, a.workspace, a.X, a.T, a.error};
    for (size_t i = 0; i < 6; ++i) arrays.push_back({info[i], bufs[i], false});
    return GpuTask::start(env, "Mlp.trainAsync", a.params->device, arrays,
                          [a, stream](const GpuTask::Report&) {
                            CK_CUDA(cudaMemsetAsync(a.error->ptr, 0, sizeof(double), stream));
                            enqueueEpoch(a, stream);
                            check(sleepOnStream(stream), "cudaEventSynchronize");
                          });
  });
}

// The arguments of mlpForward / mlpForwardAsync: (params, workspace, X, Y, T | null, error | null,
// layers, hidden, output, rows, method), checked.
struct ForwardArgs {
  DeviceBuffer *params, *workspace, *X, *Y, *T, *error;
  mlp::Net net;
  int64_t rows = 0;
  mlp::Method method = mlp::kCustom;
};

ForwardArgs parseForward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ForwardArgs r;
  DeviceBuffer& params = unwrapBuffer(info[0], "params");
  DeviceBuffer& workspace = unwrapOutput(info[1], "workspace");
  DeviceBuffer& X = unwrapBuffer(info[2], "X");
  DeviceBuffer& Y = unwrapOutput(info[3], "Y");
  const bool withTargets = info.Length() > 4 && !info[4].IsNull() && !info[4].IsUndefined();
  DeviceBuffer* T = withTargets ? &unwrapBuffer(info[4], "T") : nullptr;
  DeviceBuffer* error = withTargets ? &unwrapOutput(info[5], "error") : nullptr;
  r.net = netArg(info, 6, 7, 8);
  const mlp::Net& net = r.net;
  const int64_t rows = countArg(info, 9, "rows");
  r.method = methodArg(info, 10);
  if (rows < 1 || rows > kMaxDim) throw Napi::RangeError::New(env, "rows must be in [1, 2^31 - 1]");
  const int device = params.device;
  const uint64_t u = static_cast<uint64_t>(rows);
  checkFloat32(env, params, static_cast<uint64_t>(net.parameterCount()), device, "params");
  checkFloat32(env, X, u * static_cast<uint64_t>(net.sizes.front()), device, "X");
  checkFloat32(env, Y, u * static_cast<uint64_t>(net.sizes.back()), device, "Y");
  if (&Y == &X || &Y == &params) throw Napi::RangeError::New(env, "Y must not be X or params");
  if (T) checkFloat32(env, *T, u * static_cast<uint64_t>(net.sizes.back()), device, "T");
  if (error && (error->dtype != Dtype::Float64 || error->length != 1 || error->device != device))
    throw Napi::RangeError::New(env, "error must be one float64 on the device of params");
  const int64_t need = checkedWorkspace(env, net, rows, 1, false);
  if (workspace.dtype != Dtype::Float32 || workspace.length < static_cast<uint64_t>(need) ||
      workspace.device != device)
    throw Napi::RangeError::New(env, "workspace is too small or not float32 on the device of params");
  r.params = &params;
  r.workspace = &workspace;
  r.X = &X;
  r.Y = &Y;
  r.T = T;
  r.error = error;
  r.rows = rows;
  return r;
}

void enqueueForward(const ForwardArgs& a, cudaStream_t stream) {
  const mlp::Buffers buf{a.params->as<float>(), nullptr, a.workspace->as<float>(),
                         a.error ? a.error->as<double>() : nullptr};
  mlp::forward(a.net, buf, a.X->as<const float>(), a.Y->as<float>(), a.T ? a.T->as<const float>() : nullptr,
               a.rows, a.method, stream);
}

// mlpForward(params, workspace, X, Y, T | null, error | null, layers, hidden, output, rows, method)
Napi::Value mlpForward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ForwardArgs a = parseForward(info);
  guard(env, [&] { enqueueForward(a, libraryStream(a.params->device)); });
  return env.Undefined();
}

// A forward pass queued at the call (mlpForwardAsync): the event a pool thread sleeps on until it is
// done, and, with targets, its error copied back to pinned memory at the call too, so that nothing
// queued later (a training that resets the accumulator) can change the value the promise resolves to.
class QueuedForward {
 public:
  QueuedForward(cudaStream_t stream, const double* error) {
    CK_CUDA(cudaGetDevice(&device_));
    try {
      if (error) {
        host_ = stagingAcquireNoWait(sizeof(double));  // JS thread, held until settled: see transfer.h
        CK_CUDA(cudaMemcpyAsync(host_->ptr, error, sizeof(double), cudaMemcpyDeviceToHost, stream));
      }
      CK_CUDA(cudaEventCreateWithFlags(&done_, cudaEventBlockingSync | cudaEventDisableTiming));
      CK_CUDA(cudaEventRecord(done_, stream));
    } catch (...) {
      cudaStreamSynchronize(stream);  // a failure path: the copy into the block may be queued
      release();
      throw;
    }
  }
  ~QueuedForward() {
    if (!waited_ && done_) cudaEventSynchronize(done_);  // never waited for: the DMA may be in flight
    release();
  }
  QueuedForward(const QueuedForward&) = delete;
  QueuedForward& operator=(const QueuedForward&) = delete;

  // Pool thread: sleeps until the pass is done. Throws CudaFailure.
  void wait() {
    waited_ = true;
    check(cudaEventSynchronize(done_), "cudaEventSynchronize(forward)");
    if (host_) std::memcpy(&error_, host_->ptr, sizeof error_);
  }
  Napi::Value settle(Napi::Env env) const { return host_ ? Napi::Number::New(env, error_) : env.Undefined(); }

 private:
  void release() {
    if (host_) stagingRelease(host_);
    host_ = nullptr;
    if (done_) {
      DeviceRestore restore;
      if (cudaSetDevice(device_) == cudaSuccess) cudaEventDestroy(done_);
      done_ = nullptr;
    }
    cudaGetLastError();
  }

  int device_ = 0;
  Staging* host_ = nullptr;
  cudaEvent_t done_ = nullptr;
  double error_ = 0;
  bool waited_ = false;
};

// mlpForwardAsync(same arguments) -> Promise<number | undefined>: the forward pass (`error` set to 0
// first when given) queued here, on the JS thread, so that it reads the weights and X (and T) as they
// are at the call; a pool thread sleeps until it is done. Resolves to the error (½Σ(y − t)²) when
// targets are given.
Napi::Value mlpForwardAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ForwardArgs a = parseForward(info);
  return guard(env, [&]() -> Napi::Value {
    cudaStream_t stream = libraryStream(a.params->device);
    if (a.error) CK_CUDA(cudaMemsetAsync(a.error->ptr, 0, sizeof(double), stream));
    enqueueForward(a, stream);
    auto queued = std::make_shared<QueuedForward>(stream, a.error ? a.error->as<double>() : nullptr);
    // Only the written arrays are held (refused as outputs of other calls until it settles); what the
    // pass reads is queued already, and a free() of it is ordered after.
    std::vector<GpuTask::Array> arrays{{info[1], a.workspace, true}, {info[3], a.Y, true}};
    if (a.error) arrays.push_back({info[5], a.error, true});
    return GpuTask::start(
        env, "Mlp.predictAsync", a.params->device, arrays,
        [queued](const GpuTask::Report&) { queued->wait(); },
        [queued](Napi::Env e) { return queued->settle(e); });
  });
}

Napi::Value mlpMethods(const Napi::CallbackInfo& info) {
  return methodNames(info.Env(), mlp::kMethods, mlp::kMethodCount);
}

// The activation names in code order: lib/ops/mlp.ts's codes are checked against it.
Napi::Value mlpActivations(const Napi::CallbackInfo& info) {
  return methodNames(info.Env(), mlp::kActivations, mlp::kActivationCount);
}

}  // namespace

void registerMlp(Napi::Env env, Napi::Object exports) {
  exports.Set("mlpMethods", Napi::Function::New(env, mlpMethods, "mlpMethods"));
  exports.Set("mlpActivations", Napi::Function::New(env, mlpActivations, "mlpActivations"));
  exports.Set("mlpWorkspace", Napi::Function::New(env, mlpWorkspace, "mlpWorkspace"));
  exports.Set("mlpTrainEpoch", Napi::Function::New(env, mlpTrainEpoch, "mlpTrainEpoch"));
  exports.Set("mlpForward", Napi::Function::New(env, mlpForward, "mlpForward"));
  exports.Set("mlpTrainEpochAsync", Napi::Function::New(env, mlpTrainEpochAsync, "mlpTrainEpochAsync"));
  exports.Set("mlpForwardAsync", Napi::Function::New(env, mlpForwardAsync, "mlpForwardAsync"));
}

}  // namespace ck
