// Where a training step's pieces lie in the workspace (see mlp.h), and what a method's step works on.
#pragma once

#include <cstdint>
#include <vector>

#include "mlp/mlp.h"

namespace ck {
namespace mlp {

// Offsets (in floats) of the workspace's parts; see workspaceFloats. One gradient set per stream
// (what the custom method needs; the cuBLAS method uses the first).
struct Layout {
  std::vector<int64_t> act, delta;  // index l = 1..L
  int64_t grads = 0, partials = 0, total = 0;
  bool overflow = false;  // a part or the total passed int64 (user sizes too large for any array)
  Layout(const Net& net, int64_t batch, int streams, bool train) {
    const int L = net.layers();
    act.assign(L + 1, 0);
    delta.assign(L + 1, 0);
    int64_t off = 0;
    // off += a·b, checked: the binding sizes a workspace from user sizes before anything runs.
    auto add = [&](int64_t a, int64_t b) {
      int64_t part = 0;
      overflow = overflow || __builtin_mul_overflow(a, b, &part) || __builtin_add_overflow(off, part, &off);
    };
    for (int l = 1; l <= L; ++l) act[l] = off, add(batch, net.sizes[l]);
    if (train) {
      for (int l = 1; l <= L; ++l) delta[l] = off, add(batch, net.sizes[l]);
      grads = off, add(streams, net.parameterCount());
      partials = off, add(static_cast<int64_t>(streams) * kColsumChunks, net.widest());
    }
    total = off;
  }
};

struct Step {
  const Net& net;
  const Buffers& buf;
  const Layout& lay;
};

}  // namespace mlp
}  // namespace ck
