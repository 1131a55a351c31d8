#include "methods.h"

namespace ck {
namespace apsp {

const Method kMethods[] = {
    {"basic", roundBasic, 0},
    {"shared", roundShared, 32},
    {"fast", roundFast, 128},
};
const int kMethodCount = sizeof(kMethods) / sizeof(kMethods[0]);

}  // namespace apsp
}  // namespace ck
