// The parameter layout of a net and the workspace size of a step (mlp.h, layout.h).
#include "mlp/layout.h"

#include <algorithm>

#include "mlp/mlp.h"

namespace ck {
namespace mlp {

int64_t Net::weightOffset(int l) const {
  int64_t off = 0;
  for (int i = 0; i < l; ++i) off += sizes[i] * sizes[i + 1] + sizes[i + 1];
  return off;
}

int64_t Net::widest() const {
  int64_t w = 0;
  for (size_t l = 1; l < sizes.size(); ++l) w = std::max(w, sizes[l]);
  return w;
}

int64_t workspaceFloats(const Net& net, int64_t batch, int streams, bool train) {
  const Layout lay(net, batch, streams, train);
  return lay.overflow ? -1 : lay.total;
}

}  // namespace mlp
}  // namespace ck
