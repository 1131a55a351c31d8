// Reading N-API arguments defensively. lib/ops/*.ts validates first and gives the friendly errors;
// these re-checks only make sure nothing that reaches CUDA can crash the process.
#pragma once

#include <napi.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace ck {

inline double numberArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsNumber()) {
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a number");
  }
  return info[i].As<Napi::Number>().DoubleValue();
}

// A non-negative integer below 2^53 (exactly representable), as int64.
inline int64_t countArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  double v = numberArg(info, i, name);
  if (!(v >= 0) || v > 9007199254740991.0 || std::floor(v) != v) {
    throw Napi::RangeError::New(info.Env(), std::string(name) + " must be a non-negative integer");
  }
  return static_cast<int64_t>(v);
}

inline int intArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  double v = numberArg(info, i, name);
  if (std::floor(v) != v || v < -2147483648.0 || v > 2147483647.0) {
    throw Napi::RangeError::New(info.Env(), std::string(name) + " must be a 32-bit integer");
  }
  return static_cast<int>(v);
}

// The product of user sizes, for comparing with an array's length: a RangeError naming `what` when it
// passes 2^53 (no array is that long), where a plain 64-bit product could wrap around to a length
// that matches (2^32 · 2^32 wraps to 0, which an empty array "holds").
inline uint64_t sizeProduct(Napi::Env env, std::initializer_list<int64_t> factors, const char* what) {
  uint64_t p = 1;
  for (int64_t f : factors) {
    if (f < 0 || __builtin_mul_overflow(p, static_cast<uint64_t>(f), &p) || p > (uint64_t{1} << 53)) {
      throw Napi::RangeError::New(env, std::string(what) + " is larger than any array");
    }
  }
  return p;
}

}  // namespace ck
