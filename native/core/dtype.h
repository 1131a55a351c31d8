// Element types shared by the TS layer (codes mirror lib/array.ts) and every family.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ck {

enum class Dtype : int { Float32 = 0, Float64 = 1, Int32 = 2, Uint32 = 3 };

constexpr int kDtypeCount = 4;

inline size_t dtypeSize(Dtype d) {
  return d == Dtype::Float64 ? 8 : 4;
}

inline const char* dtypeName(Dtype d) {
  switch (d) {
    case Dtype::Float32: return "float32";
    case Dtype::Float64: return "float64";
    case Dtype::Int32: return "int32";
    case Dtype::Uint32: return "uint32";
  }
  return "unknown";
}

}  // namespace ck
