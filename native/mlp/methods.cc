#include "methods.h"

namespace ck {
namespace mlp {

const MethodEntry kMethods[] = {
    {"custom", kCustom},
    {"cublas", kCublas},
};
const int kMethodCount = sizeof(kMethods) / sizeof(kMethods[0]);

const ActivationEntry kActivations[] = {
    {"sigmoid", kSigmoid},
    {"tanh", kTanh},
    {"relu", kRelu},
    {"identity", kIdentity},
};
const int kActivationCount = sizeof(kActivations) / sizeof(kActivations[0]);
// The table is indexed by code.
static_assert(kSigmoid == 0 && kTanh == 1 && kRelu == 2 && kIdentity == 3,
              "activation codes are table indices");

}  // namespace mlp
}  // namespace ck
