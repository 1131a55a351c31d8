// N-API glue for peer access and copies between devices: unwrap, re-check, call, nothing else.
#include <napi.h>

#include <cstdint>

#include "core/args.h"
#include "core/buffer.h"
#include "core/errors.h"
#include "peer/peer.h"

namespace ck {

namespace {

// peerCanAccess(a, b) -> boolean
Napi::Value peerCanAccess(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int a = intArg(info, 0, "a"), b = intArg(info, 1, "b");
  return Napi::Boolean::New(env, guard(env, [&] { return peer::canAccess(a, b); }));
}

// peerEnable(a, b)
Napi::Value peerEnable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int a = intArg(info, 0, "a"), b = intArg(info, 1, "b");
  guard(env, [&] { peer::enable(a, b); });
  return env.Undefined();
}

// peerCopy(dst, src, dstOffset, srcOffset, count, viaHost): elements, same dtype, asynchronous.
Napi::Value peerCopy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& dst = unwrapOutput(info[0], "dst");
  DeviceBuffer& src = unwrapBuffer(info[1], "src");
  if (dst.dtype != src.dtype) throw Napi::TypeError::New(env, "dst and src must have the same dtype");
  const int64_t dOff = countArg(info, 2, "dstOffset"), sOff = countArg(info, 3, "srcOffset");
  const int64_t count = countArg(info, 4, "length");
  if (info.Length() < 6 || !info[5].IsBoolean()) throw Napi::TypeError::New(env, "viaHost must be a boolean");
  const bool viaHost = info[5].As<Napi::Boolean>().Value();
  if (static_cast<uint64_t>(dOff) + count > dst.length || static_cast<uint64_t>(sOff) + count > src.length) {
    throw Napi::RangeError::New(env, "copy range exceeds an array's length");
  }
  if (count == 0) return env.Undefined();
  const size_t elem = dtypeSize(src.dtype);
  char* d = static_cast<char*>(dst.ptr) + dOff * elem;
  const char* s = static_cast<const char*>(src.ptr) + sOff * elem;
  const size_t bytes = static_cast<size_t>(count) * elem;
  guard(env, [&] {
    if (viaHost)
      peer::copyViaHostAsync(d, dst.device, s, src.device, bytes);
    else
      peer::copyAsync(d, dst.device, s, src.device, bytes);
  });
  return env.Undefined();
}

}  // namespace

void registerPeer(Napi::Env env, Napi::Object exports) {
  exports.Set("peerCanAccess", Napi::Function::New(env, peerCanAccess, "peerCanAccess"));
  exports.Set("peerEnable", Napi::Function::New(env, peerEnable, "peerEnable"));
  exports.Set("peerCopy", Napi::Function::New(env, peerCopy, "peerCopy"));
}

}  // namespace ck
