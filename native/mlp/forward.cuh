// The forward pass both methods share, layer by layer: a method supplies `layer`, which computes
// out = epilogue(in·W) for one layer (1_custom.cu: its GEMM with the epilogue fused; cublas.cu:
// cublasSgemm, then the epilogue as an element-wise kernel).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "mlp/epilogues.cuh"
#include "mlp/layout.h"

namespace ck {
namespace mlp {

// Forward pass of `rows` patterns starting at row r0 of the batch buffers (X and T already offset
// to the batch). `Y` (the last layer, ld n_L) is the workspace's or the caller's; with `deltas` the
// output deltas are written too.
template <class Layer>
void forwardRows(const Step& s, const float* X, const float* T, float* Y, int64_t r0, int64_t rows,
                 bool deltas, const Layer& layer, cudaStream_t stream) {
  const Net& net = s.net;
  const int L = net.layers();
  const float* in = X + r0 * net.sizes[0];
  for (int l = 0; l < L; ++l) {
    const int64_t nIn = net.sizes[l], nOut = net.sizes[l + 1];
    const float* W = s.buf.params + net.weightOffset(l);
    const float* b = s.buf.params + net.biasOffset(l);
    const bool last = l == L - 1;
    float* out = last ? Y + r0 * nOut : s.buf.workspace + s.lay.act[l + 1] + r0 * nOut;
    if (last) {
      OutputEpilogue ep{out,
                        nOut,
                        b,
                        net.output,
                        T ? T + r0 * nOut : nullptr,
                        deltas ? s.buf.workspace + s.lay.delta[L] + r0 * nOut : nullptr,
                        T ? s.buf.error : nullptr};
      layer(rows, nOut, nIn, in, W, out, ep, stream);
    } else {
      HiddenEpilogue ep{out, nOut, b, net.hidden};
      layer(rows, nOut, nIn, in, W, out, ep, stream);
    }
    in = out;
  }
}

}  // namespace mlp
}  // namespace ck
