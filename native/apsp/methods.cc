#include "methods.h"

namespace ck {
namespace apsp {

const Method kMethods[] = {
    {"basic", roundBasic, 0, roundBasic, 0},
    {"shared", roundShared, 32, roundShared, 0},
    // The 128×128 min-plus tiles hold no room for hop counts and next hops (the distances alone take
    // the 128 registers that two blocks per SM allow): with paths, fast runs shared's kernels.
    {"fast", roundFast, 128, roundShared, 32},
};
const int kMethodCount = sizeof(kMethods) / sizeof(kMethods[0]);

}  // namespace apsp
}  // namespace ck
