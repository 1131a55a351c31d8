// Multilayer-network training: see mlp.h for the layout and the equations. The epoch loop and the
// forward pass, handing each batch to the method's step (steps.h).
#include <algorithm>

#include "core/errors.h"
#include "mlp/layout.h"
#include "mlp/mlp.h"
#include "mlp/steps.h"
#include "mlp/streams.h"

namespace ck {
namespace mlp {

void trainEpoch(const Net& net, const Buffers& buf, const float* X, const float* T, int64_t patterns,
                int64_t batch, float eta, float alpha, Method method, int streams, cudaStream_t stream,
                const GradientSum& sum) {
  int device = 0;
  CK_CUDA(cudaGetDevice(&device));
  const Layout lay(net, batch, streams, true);
  const Step s{net, buf, lay};
  const Events ev(std::max(streams + 1, net.layers() + 1));
  for (int64_t p0 = 0; p0 < patterns; p0 += batch) {
    const int64_t rows = std::min(batch, patterns - p0);
    const float* Xb = X + p0 * net.sizes[0];
    const float* Tb = T + p0 * net.sizes[net.layers()];
    if (method == kCublas)
      stepCublas(s, Xb, Tb, rows, streams, device, stream, ev, eta, alpha, sum);
    else
      stepCustom(s, Xb, Tb, rows, streams, device, stream, ev, eta, alpha, sum);
  }
}

void forward(const Net& net, const Buffers& buf, const float* X, float* Y, const float* T, int64_t rows,
             Method method, cudaStream_t stream) {
  int device = 0;
  CK_CUDA(cudaGetDevice(&device));
  const Layout lay(net, rows, 1, false);
  const Step s{net, buf, lay};
  if (method == kCublas)
    forwardCublas(s, X, T, Y, rows, device, stream);
  else
    forwardCustom(s, X, T, Y, rows, stream);
}

}  // namespace mlp
}  // namespace ck
