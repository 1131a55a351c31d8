// Reading N-API arguments defensively. lib/ops/*.ts validates first and gives the friendly errors;
// these re-checks only make sure nothing that reaches CUDA can crash the process.
#pragma once

#include <napi.h>

#include <cmath>
#include <cstdint>
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

}  // namespace ck
