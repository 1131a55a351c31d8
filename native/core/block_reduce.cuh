// Warp- and block-wide reductions shared by the kernels (scan/reduce, the stencil's residual, the
// MLP's error, relativeError). Blocks may be 1-D or 2-D; their thread count is a multiple of 32.
#pragma once

#include <cuda_runtime.h>

namespace ck {

struct SumOp {
  template <class T>
  __device__ __forceinline__ static T combine(T a, T b) {
    return a + b;
  }
};

// max that keeps a NaN once seen (fmax would drop it), so a grid gone NaN never "converges".
struct MaxKeepNaNOp {
  template <class T>
  __device__ __forceinline__ static T combine(T m, T d) {
    return (d > m || d != d) ? d : m;
  }
};

// Butterfly over the 32 lanes: every lane ends with the whole warp's result.
template <class Op, class T>
__device__ __forceinline__ T warpReduce(T v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v = Op::combine(v, __shfl_xor_sync(0xffffffffu, v, d));
  return v;
}

// The block's result, valid in thread (0, 0) (and every lane of warp 0). `scratch` holds one slot per
// warp (32 at most); `identity` fills the slots of warps that do not exist. Callers that reuse
// `scratch` afterwards need a __syncthreads() first.
template <class Op, class T>
__device__ __forceinline__ T blockReduce(T v, T* scratch, T identity) {
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  v = warpReduce<Op>(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = static_cast<int>(blockDim.x * blockDim.y) >> 5;
    v = warpReduce<Op>(lane < warps ? scratch[lane] : identity);
  }
  return v;
}

}  // namespace ck
