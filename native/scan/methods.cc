#include "methods.h"

#include "scan/scan.h"

namespace ck {
namespace scan {

const Method kMethods[] = {
    {"warp", launchWarp},         {"blocks", launchBlocks}, {"cub", launchCub},
    {"lookback", launchLookback}, {"fast", launchFast},
};
const int kMethodCount = sizeof(kMethods) / sizeof(kMethods[0]);

}  // namespace scan
}  // namespace ck
