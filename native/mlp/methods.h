// The MLP variants and activation codes: names in the order lib/ops/mlp.ts lists them.
#pragma once

#include "mlp/mlp.h"

namespace ck {
namespace mlp {

struct MethodEntry {
  const char* name;
  Method method;
};
extern const MethodEntry kMethods[];
extern const int kMethodCount;

// Indexed by the Activation code that lib/ops/mlp.ts passes: hidden layers take the first three,
// the output layer sigmoid or identity.
struct ActivationEntry {
  const char* name;
  Activation code;
};
extern const ActivationEntry kActivations[];
extern const int kActivationCount;

}  // namespace mlp
}  // namespace ck
