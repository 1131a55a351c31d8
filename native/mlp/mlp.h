// Multilayer-network training (feed-forward, back-propagation with momentum) on one device.
//
// Layout shared with lib/ops/mlp.ts and lib/cpu/mlp.ts:
// - parameters: one float32 allocation; for each layer l = 0..L-1 the weights W_l (n_l × n_{l+1},
//   row-major: input index × output index) followed by the biases b_l (n_{l+1});
// - momentum: the previous update ΔW, same layout;
// - a workspace of workspaceFloats(...) floats: activations of layers 1..L (batch × n_l each,
//   row-major), their deltas (same), per-stream gradients (streams × parameter count) and the
//   column-sum partials of the bias gradients.
//
// One batch step: H_{l+1} = f(H_l·W_l + b_l) (f = the hidden activation, the output activation on
// the last layer); E += ½Σ(y − t)²; δ_L = (y − t)·f'(y); δ_l = (δ_{l+1}·W_lᵀ)·f'(H_l);
// ∂E/∂W_l = H_lᵀ·δ_{l+1}, ∂E/∂b_l = Σ_rows δ_{l+1}; ΔW = −η·∂E/∂W + α·ΔW_prev; W += ΔW.
//
// The files, in study order: 1_custom.cu (the report's design: our GEMM with fused epilogues),
// cublas.cu (the library method); train.cc (the epoch loop and the forward pass every method runs
// under), layout.h/.cc (the parameter and workspace layout), epilogues.cuh (activations and the
// per-element work after a product), forward.cuh (the layer loop), gradients.cu (bias-gradient
// column sums, the fold of gradient sets, the momentum update), streams.cc (side streams and events),
// steps.h (the methods' entry points); methods.cc (the table of methods); binding.cc (N-API).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace ck {
namespace mlp {

enum Activation : int { kSigmoid = 0, kTanh = 1, kRelu = 2, kIdentity = 3 };
enum Method : int { kCustom = 0, kCublas = 1 };
constexpr int kMaxStreams = 8;
constexpr int kColsumChunks = 64;  // row chunks of the bias-gradient column sums (workspace partials)

struct Net {
  std::vector<int64_t> sizes;  // n_0 … n_L
  Activation hidden = kSigmoid;
  Activation output = kSigmoid;

  int layers() const { return static_cast<int>(sizes.size()) - 1; }
  int64_t weightOffset(int l) const;  // W_l in the parameters
  int64_t biasOffset(int l) const { return weightOffset(l) + sizes[l] * sizes[l + 1]; }
  int64_t parameterCount() const { return weightOffset(layers()); }
  int64_t widest() const;  // max n_l over l >= 1
};

// Floats of workspace one training step (or a forward pass, with train = false) of `batch`
// patterns needs.
// −1 when that count passes int64 (sizes no array could hold).
int64_t workspaceFloats(const Net& net, int64_t batch, int streams, bool train);

struct Buffers {
  float* params = nullptr;
  float* momentum = nullptr;  // training only
  float* workspace = nullptr;
  double* error = nullptr;  // the epoch's ½Σ(y − t)² is added here (may be null for a forward pass)
};

// Data-parallel training (lib/distributed): called once per batch when the batch's gradient (one set of
// `count` floats, the parameter layout) is complete on `stream` and before the update reads it; it
// sums the gradient over the ranks in place (an NCCL all-reduce), so every rank applies one update.
using GradientSum = std::function<void(float* grads, int64_t count, cudaStream_t stream)>;

// Trains one epoch over `patterns` patterns (X: patterns × n_0, T: patterns × n_L) in batches of
// `batch` consecutive patterns, one update per batch, adding the error of every batch (computed
// with the weights before its update) to *error. Everything is enqueued on `stream` (the library
// stream of the current device); `streams` > 1 forks onto side streams and joins back. Throws
// CudaFailure.
void trainEpoch(const Net& net, const Buffers& buf, const float* X, const float* T, int64_t patterns,
                int64_t batch, float eta, float alpha, Method method, int streams, cudaStream_t stream,
                const GradientSum& sum = nullptr);

// Y = network(X) for `rows` patterns; with T and buf.error, also adds ½Σ(y − t)² to *error.
void forward(const Net& net, const Buffers& buf, const float* X, float* Y, const float* T, int64_t rows,
             Method method, cudaStream_t stream);

}  // namespace mlp
}  // namespace ck
