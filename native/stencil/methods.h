// The stencil variants: name -> Method, in the order lib/ops/stencil.ts lists them.
#pragma once

#include "stencil/stencil.h"

namespace ck {
namespace stencil {

struct MethodEntry {
  const char* name;
  Method method;
};

extern const MethodEntry kMethods[];
extern const int kMethodCount;

}  // namespace stencil
}  // namespace ck
