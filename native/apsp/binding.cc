// N-API glue for all-pairs shortest paths: unwrap, re-check, launch, nothing else.
#include <napi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apsp/apsp.h"
#include "apsp/methods.h"
#include "apsp/multi.h"
#include "core/args.h"
#include "core/async_work.h"
#include "core/buffer.h"
#include "core/device.h"
#include "core/errors.h"
#include "core/method_names.h"
#include "scan/queued_reduce.h"

namespace ck {

namespace {

void checkSquare(Napi::Env env, const DeviceBuffer& b, int64_t n, const char* name) {
  if (b.dtype != Dtype::Int32) throw Napi::TypeError::New(env, std::string(name) + " must be int32");
  if (static_cast<uint64_t>(n) * static_cast<uint64_t>(n) != b.length)
    throw Napi::RangeError::New(env, std::string(name) + " must hold n·n elements");
}

// The arrays and method of apspRun / apspRunAsync: (dist, out, next | null, n, methodIndex,
// blockFactor, ...), checked.
struct RunArgs {
  DeviceBuffer* in = nullptr;
  DeviceBuffer* out = nullptr;
  DeviceBuffer* next = nullptr;
  int64_t n = 0;
  const apsp::Method* m = nullptr;
  int factor = 0;

  apsp::RoundFn round() const { return next ? m->pathsRound : m->round; }
  int roundFactor() const { return next && m->pathsFactor ? m->pathsFactor : factor; }
};

RunArgs parseRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RunArgs r;
  DeviceBuffer& in = unwrapBuffer(info[0], "dist");
  DeviceBuffer& out = unwrapOutput(info[1], "out");
  DeviceBuffer* next = nullptr;
  if (info.Length() > 2 && !info[2].IsNull() && !info[2].IsUndefined()) next = &unwrapOutput(info[2], "next");
  const int64_t n = countArg(info, 3, "n");
  const int method = intArg(info, 4, "method");
  const int factor = intArg(info, 5, "blockFactor");
  if (method < 0 || method >= apsp::kMethodCount)
    throw Napi::RangeError::New(env, "method index out of range");
  const apsp::Method& m = apsp::kMethods[method];
  if (m.fixedFactor ? factor != m.fixedFactor : (factor < 1 || factor > apsp::kMaxBasicFactor))
    throw Napi::RangeError::New(env, std::string("blockFactor is not valid for method ") + m.name);
  if (n < 1 || n > apsp::kMaxN) throw Napi::RangeError::New(env, "n must be in [1, 131072]");
  checkSquare(env, in, n, "dist");
  checkSquare(env, out, n, "out");
  if (&in == &out) throw Napi::RangeError::New(env, "out must not be dist");
  if (in.device != out.device) throw Napi::RangeError::New(env, "dist and out must be on the same device");
  if (next) {
    checkSquare(env, *next, n, "next");
    if (next == &in || next == &out) throw Napi::RangeError::New(env, "next must not be dist or out");
    if (next->device != in.device) throw Napi::RangeError::New(env, "next must be on the device of dist");
  }
  r.in = &in;
  r.out = &out;
  r.next = next;
  r.n = n;
  r.m = &m;
  r.factor = factor;
  return r;
}

// apspRun(dist, out, next | null, n, methodIndex, blockFactor, progress | undefined)
Napi::Value apspRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const RunArgs a = parseRun(info);
  apsp::Progress progress;
  if (info.Length() > 6 && !info[6].IsUndefined() && !info[6].IsNull()) {
    if (!info[6].IsFunction()) throw Napi::TypeError::New(env, "progress must be a function");
    Napi::Function fn = info[6].As<Napi::Function>();
    progress = [env, fn](int done, int rounds) {
      // A scope per round: up to 131,072 rounds would otherwise pile their handles up until we return.
      Napi::HandleScope scope(env);
      fn.Call({Napi::Number::New(env, done), Napi::Number::New(env, rounds)});
    };
  }
  // The callback runs between rounds while kernels still use the three arrays: a free() from it is
  // deferred until we return, and writes to out/next from it are refused (unwrapOutput).
  CallLock lock(env, "apsp", {a.in}, {a.out, a.next});
  guard(env, [&] {
    cudaStream_t stream = libraryStream(a.in->device);
    check(apsp::run(a.round(), a.roundFactor(), a.in->as<const int32_t>(), a.out->as<int32_t>(),
                    a.next ? a.next->as<int32_t>() : nullptr, a.n, stream, progress),
          (std::string("apsp ") + a.m->name).c_str());
  });
  return env.Undefined();
}

// Between two rounds on the pool thread: report the rounds done, then stop if the call was cancelled
// (not after the last round: the result is complete).
apsp::Progress roundHook(const CancelFlag& cancel, const GpuTask::Report& report) {
  return [cancel, &report](int done, int rounds) {
    if (cancel) cancel->steps.store(done);  // before the report and the flag's read: see asyncCancel
    report(done, rounds);
    if (done < rounds && cancel && cancel->load()) throw Cancelled{};
  };
}

bool validateArg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsBoolean())
    throw Napi::TypeError::New(info.Env(), "validate must be a boolean");
  return info[i].As<Napi::Boolean>().Value();
}

// apspAsync's check that every weight is in [0, INF]: the min and max of `dist`, queued at the call
// before the run's padding (so they cover exactly the matrix the run computes on) and read on the pool
// thread before any round is queued.
struct WeightCheck {
  std::unique_ptr<scan::QueuedReductions> queued;  // null: not asked for
  double lo = 0, hi = 0;

  WeightCheck(bool validate, const DeviceBuffer& dist, cudaStream_t stream) {
    if (validate)
      queued = std::make_unique<scan::QueuedReductions>(
          dist.ptr, Dtype::Int32, dist.length,
          std::vector<scan::ReduceOp>{scan::ReduceOp::Min, scan::ReduceOp::Max}, stream);
  }
  // Pool thread: whether the rounds may run (no check asked for, or every weight in range).
  bool passes() {
    if (!queued) return true;
    const std::vector<double> v = queued->wait();
    lo = v[0];
    hi = v[1];
    return lo >= 0 && hi <= apsp::kInf;
  }
  // What the promise resolves to: [min, max] when checked (lib/ops/apsp.ts turns a range outside
  // [0, INF] into the RangeError of the blocking form), else undefined.
  Napi::Value settle(Napi::Env env) const {
    if (!queued) return env.Undefined();
    Napi::Array range = Napi::Array::New(env, 2);
    range.Set(0u, Napi::Number::New(env, lo));
    range.Set(1u, Napi::Number::New(env, hi));
    return range;
  }
};

// apspRunAsync(dist, out, next | null, n, methodIndex, blockFactor, validate, token | undefined,
// progress | undefined) -> Promise<[min, max] | undefined>. Here, on the JS thread, it queues what reads
// `dist` (the weight check when `validate`, and the padding into the run's workspace), so the run
// computes on `dist` as it is at the call and a write queued later cannot reach it; the pool thread then
// checks the weights (no round runs when one is outside [0, INF]), queues the rounds and waits for each
// (with the next one queued) to check the token and report progress, asleep.
Napi::Value apspRunAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const RunArgs a = parseRun(info);
  const bool validate = validateArg(info, 6);
  const CancelFlag cancel = unwrapCancel(info.Length() > 7 ? info[7] : env.Undefined(), "token");
  const Napi::Value progress = info.Length() > 8 ? info[8] : env.Undefined();
  if (!progress.IsUndefined() && !progress.IsFunction())
    throw Napi::TypeError::New(env, "progress must be a function");
  return guard(env, [&]() -> Napi::Value {
    cudaStream_t stream = libraryStream(a.in->device);
    // `dist` is not held: nothing reads it after this call, and its free() is ordered after the reads.
    std::vector<GpuTask::Array> arrays{{info[1], a.out, true}};
    if (a.next) arrays.push_back({info[2], a.next, true});
    const std::string what = std::string("apsp ") + a.m->name;
    auto weights = std::make_shared<WeightCheck>(validate, *a.in, stream);
    auto run = std::make_shared<std::unique_ptr<apsp::PaddedRun>>(
        std::make_unique<apsp::PaddedRun>(a.round(), a.roundFactor(), a.out->as<int32_t>(),
                                          a.next ? a.next->as<int32_t>() : nullptr, a.n, stream, true));
    check((*run)->pad(a.in->as<const int32_t>()), what.c_str());
    return GpuTask::start(
        env, "apspAsync", a.in->device, arrays,
        [=](const GpuTask::Report& report) {
          // The workspace goes back here, with the device current, however the body ends.
          struct Done {
            std::unique_ptr<apsp::PaddedRun>& run;
            ~Done() { run.reset(); }
          } done{*run};
          if (!weights->passes()) return;
          check((*run)->rounds(roundHook(cancel, report)), what.c_str());
        },
        [weights](Napi::Env e) { return weights->settle(e); }, progress);
  });
}

// The arguments of apspRunMulti / apspRunMultiAsync: (dist, out, n, devices, scheme (0 band,
// 1 replicated), viaHost, ...), checked.
struct MultiArgs {
  DeviceBuffer* in = nullptr;
  DeviceBuffer* out = nullptr;
  int64_t n = 0;
  std::vector<int> devices;
  apsp::MultiScheme scheme = apsp::MultiScheme::Band;
  bool viaHost = false;
};

MultiArgs parseMulti(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  MultiArgs r;
  DeviceBuffer& in = unwrapBuffer(info[0], "dist");
  DeviceBuffer& out = unwrapOutput(info[1], "out");
  const int64_t n = countArg(info, 2, "n");
  if (info.Length() < 4 || !info[3].IsArray()) throw Napi::TypeError::New(env, "devices must be an array");
  Napi::Array list = info[3].As<Napi::Array>();
  const int scheme = intArg(info, 4, "scheme");
  if (info.Length() < 6 || !info[5].IsBoolean()) throw Napi::TypeError::New(env, "viaHost must be a boolean");
  const bool viaHost = info[5].As<Napi::Boolean>().Value();
  if (scheme != 0 && scheme != 1)
    throw Napi::RangeError::New(env, "scheme must be 0 (band) or 1 (replicated)");
  if (n < 1 || n > apsp::kMaxN) throw Napi::RangeError::New(env, "n must be in [1, 131072]");
  checkSquare(env, in, n, "dist");
  checkSquare(env, out, n, "out");
  if (&in == &out) throw Napi::RangeError::New(env, "out must not be dist");
  std::vector<int>& devices = r.devices;
  for (uint32_t i = 0; i < list.Length(); ++i) {
    Napi::Value v = list.Get(i);
    if (!v.IsNumber()) throw Napi::TypeError::New(env, "devices must hold numbers");
    const double d = v.As<Napi::Number>().DoubleValue();
    if (!(d >= 0 && d < 65536) || static_cast<double>(static_cast<int>(d)) != d)
      throw Napi::RangeError::New(env, "devices must hold device indices");
    for (int e : devices)
      if (e == static_cast<int>(d)) throw Napi::RangeError::New(env, "devices must be distinct");
    devices.push_back(static_cast<int>(d));
  }
  if (devices.empty()) throw Napi::RangeError::New(env, "devices must not be empty");
  if (out.device != devices[0]) throw Napi::RangeError::New(env, "out must be on devices[0]");
  r.in = &in;
  r.out = &out;
  r.n = n;
  r.scheme = scheme == 1 ? apsp::MultiScheme::Replicated : apsp::MultiScheme::Band;
  r.viaHost = viaHost;
  return r;
}

// apspRunMulti(dist, out, n, devices, scheme (0 band, 1 replicated), viaHost)
Napi::Value apspRunMulti(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const MultiArgs a = parseMulti(info);
  guard(env, [&] {
    apsp::runMulti(a.scheme, a.in->as<const int32_t>(), a.in->device, a.out->as<int32_t>(), a.n, a.devices,
                   a.viaHost);
  });
  return env.Undefined();
}

// apspRunMultiAsync(dist, out, n, devices, scheme, viaHost, validate, token | undefined,
// progress | undefined) -> Promise<[min, max] | undefined>: as apspRunAsync, with several devices: the
// weight check and the copies of `dist` into the bands are queued here, the rest on a pool thread.
Napi::Value apspRunMultiAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const MultiArgs a = parseMulti(info);
  const bool validate = validateArg(info, 6);
  const CancelFlag cancel = unwrapCancel(info.Length() > 7 ? info[7] : env.Undefined(), "token");
  const Napi::Value progress = info.Length() > 8 ? info[8] : env.Undefined();
  if (!progress.IsUndefined() && !progress.IsFunction())
    throw Napi::TypeError::New(env, "progress must be a function");
  return guard(env, [&]() -> Napi::Value {
    useDevice(a.out->device);  // a bad device fails here, not on the pool thread
    auto weights = std::make_shared<WeightCheck>(validate, *a.in, libraryStream(a.in->device));
    auto run = std::make_shared<std::unique_ptr<apsp::MultiRun>>(
        std::make_unique<apsp::MultiRun>(a.scheme, a.in->as<const int32_t>(), a.in->device,
                                         a.out->as<int32_t>(), a.n, a.devices, a.viaHost, true));
    return GpuTask::start(
        env, "apspAsync", a.out->device, {{info[1], a.out, true}},
        [=](const GpuTask::Report& report) {
          struct Done {
            std::unique_ptr<apsp::MultiRun>& run;
            ~Done() { run.reset(); }  // waits for what was queued, on this thread, however the body ends
          } done{*run};
          if (!weights->passes()) return;
          (*run)->finish(roundHook(cancel, report));
        },
        [weights](Napi::Env e) { return weights->settle(e); }, progress);
  });
}

Napi::Value apspMethods(const Napi::CallbackInfo& info) {
  return methodNames(info.Env(), apsp::kMethods, apsp::kMethodCount);
}

// apspRandomGraph(out, n, density, minWeight, maxWeight, seed)
Napi::Value apspRandomGraph(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& out = unwrapOutput(info[0], "out");
  const int64_t n = countArg(info, 1, "n");
  const double density = numberArg(info, 2, "density");
  const int minWeight = intArg(info, 3, "minWeight");
  const int maxWeight = intArg(info, 4, "maxWeight");
  const int64_t seed = countArg(info, 5, "seed");
  if (n < 1 || n > apsp::kMaxN) throw Napi::RangeError::New(env, "n must be in [1, 131072]");
  checkSquare(env, out, n, "out");
  if (!(density >= 0 && density <= 1)) throw Napi::RangeError::New(env, "density must be in [0, 1]");
  if (minWeight < 0 || maxWeight < minWeight || maxWeight >= apsp::kInf)
    throw Napi::RangeError::New(env, "weights must satisfy 0 <= minWeight <= maxWeight < INF");
  guard(env, [&] {
    cudaStream_t stream = libraryStream(out.device);
    check(apsp::launchRandomGraph(out.as<int32_t>(), n, density, minWeight, maxWeight,
                                  static_cast<uint64_t>(seed), stream),
          "apsp random graph");
  });
  return env.Undefined();
}

}  // namespace

void registerApsp(Napi::Env env, Napi::Object exports) {
  exports.Set("apspRun", Napi::Function::New(env, apspRun, "apspRun"));
  exports.Set("apspMethods", Napi::Function::New(env, apspMethods, "apspMethods"));
  exports.Set("apspRunMulti", Napi::Function::New(env, apspRunMulti, "apspRunMulti"));
  exports.Set("apspRunAsync", Napi::Function::New(env, apspRunAsync, "apspRunAsync"));
  exports.Set("apspRunMultiAsync", Napi::Function::New(env, apspRunMultiAsync, "apspRunMultiAsync"));
  exports.Set("apspRandomGraph", Napi::Function::New(env, apspRandomGraph, "apspRandomGraph"));
}

}  // namespace ck
