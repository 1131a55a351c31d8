#include "methods.h"

namespace ck {
namespace stencil {

const MethodEntry kMethods[] = {
    {"basic", Method::Basic},
    {"tiled", Method::Tiled},
    {"fast", Method::Fast},
};
const int kMethodCount = sizeof(kMethods) / sizeof(kMethods[0]);

}  // namespace stencil
}  // namespace ck
