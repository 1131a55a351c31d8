// The activations and the per-element work both methods fuse after a product: 1_custom.cu into its
// GEMM's epilogue, cublas.cu into an element-wise kernel after cublasSgemm.
#pragma once

#include <cstdint>

#include "core/block_reduce.cuh"
#include "mlp/mlp.h"

namespace ck {
namespace mlp {

__device__ __forceinline__ float activate(float x, Activation a) {
  switch (a) {
    case kSigmoid: return 1.0f / (1.0f + expf(-x));
    case kTanh: return tanhf(x);
    case kRelu: return x > 0.0f ? x : 0.0f;
    default: return x;
  }
}

// f'(x) written in terms of y = f(x).
__device__ __forceinline__ float derivative(float y, Activation a) {
  switch (a) {
    case kSigmoid: return y * (1.0f - y);
    case kTanh: return 1.0f - y * y;
    case kRelu: return y > 0.0f ? 1.0f : 0.0f;
    default: return 1.0f;
  }
}

// Sum over the block (1D or 2D, a multiple of 32 threads up to 1024) by warp shuffles; valid in
// the block's first thread. Every thread of the block must call it. Static, as it was in one file: each
// kernel's file keeps its own copy, with its warpSums at module scope.
static __device__ float blockSum(float v) {
  __shared__ float warpSums[32];
  return blockReduce<SumOp>(v, warpSums, 0.0f);
}

// An epilogue takes element (r, c) of a product and returns its share of the error (kError: the
// caller reduces it and adds it to `error`).

struct StoreEpilogue {  // C = acc (a weight gradient)
  float* C;
  int64_t ldc;
  static constexpr bool kError = false;
  __device__ float operator()(int64_t r, int64_t c, float acc) const {
    C[r * ldc + c] = acc;
    return 0.0f;
  }
};

struct HiddenEpilogue {  // H = f(acc + b)
  float* H;
  int64_t ldh;
  const float* bias;
  Activation act;
  static constexpr bool kError = false;
  __device__ float operator()(int64_t r, int64_t c, float acc) const {
    H[r * ldh + c] = activate(acc + bias[c], act);
    return 0.0f;
  }
};

struct OutputEpilogue {  // y = f(acc + b); with targets: error and δ = (y − t)·f'(y)
  float* Y;
  int64_t ldy;
  const float* bias;
  Activation act;
  const float* __restrict__ T;  // may be null
  float* D;                     // may be null
  double* error;                // may be null
  static constexpr bool kError = true;
  __device__ float operator()(int64_t r, int64_t c, float acc) const {
    const float y = activate(acc + bias[c], act);
    Y[r * ldy + c] = y;
    if (T == nullptr) return 0.0f;
    const float d = y - __ldg(T + r * ldy + c);
    if (D != nullptr) D[r * ldy + c] = d * derivative(y, act);
    return 0.5f * d * d;
  }
};

struct BackEpilogue {  // δ_l = acc · f'(H_l)
  float* D;
  const float* H;
  int64_t ld;
  Activation act;
  static constexpr bool kError = false;
  __device__ float operator()(int64_t r, int64_t c, float acc) const {
    D[r * ld + c] = acc * derivative(H[r * ld + c], act);
    return 0.0f;
  }
};

}  // namespace mlp
}  // namespace ck
