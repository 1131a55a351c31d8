// The APSP variants: name -> round launcher and block factor, in the order lib/ops/apsp.ts lists them.
#pragma once

#include "apsp/apsp.h"

namespace ck {
namespace apsp {

struct Method {
  const char* name;
  RoundFn round;
  // The block factor the method is built for; 0 when the caller picks one in [1, kMaxBasicFactor].
  int fixedFactor;
  // What runs with paths (next-hop matrix), and its factor (0: the same as without paths).
  RoundFn pathsRound;
  int pathsFactor;
};

constexpr int kMaxBasicFactor = 256;

extern const Method kMethods[];
extern const int kMethodCount;

}  // namespace apsp
}  // namespace ck
