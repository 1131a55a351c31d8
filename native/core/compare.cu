#include <cstdint>

#include "block_reduce.cuh"
#include "compare.h"
#include "launch.h"

namespace ck {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void diff_norms_kernel(const T* __restrict__ a, const T* __restrict__ b, size_t length,
                                  double* __restrict__ sums) {
  double diff = 0, ref = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < length; i += stride) {
    const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
    diff += (x - y) * (x - y);
    ref += y * y;
  }
  // One partial per warp in shared memory, then one atomic per block.
  __shared__ double partial[2][32];
  diff = blockReduce<SumOp>(diff, partial[0], 0.0);
  ref = blockReduce<SumOp>(ref, partial[1], 0.0);
  if (threadIdx.x == 0) {
    atomicAdd(&sums[0], diff);
    atomicAdd(&sums[1], ref);
  }
}

template <typename T>
cudaError_t launchAs(const void* a, const void* b, size_t length, double* sums, cudaStream_t stream) {
  unsigned blocks = 0;
  if (cudaError_t err = gridStrideBlocks(length, kThreads, &blocks); err != cudaSuccess) return err;
  diff_norms_kernel<T>
      <<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(a), static_cast<const T*>(b), length, sums);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launchDiffNorms(const void* a, const void* b, Dtype dtype, size_t length, double* sums,
                            cudaStream_t stream) {
  if (length == 0) return cudaSuccess;
  switch (dtype) {
    case Dtype::Float32: return launchAs<float>(a, b, length, sums, stream);
    case Dtype::Float64: return launchAs<double>(a, b, length, sums, stream);
    case Dtype::Int32: return launchAs<int32_t>(a, b, length, sums, stream);
    case Dtype::Uint32: return launchAs<uint32_t>(a, b, length, sums, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace ck
