#include <cstdint>

#include "fill.h"
#include "launch.h"
#include "math.h"

namespace ck {

template <typename T>
__global__ void fill_kernel(T* __restrict__ out, size_t length, T value) {
  // Grid-stride so a fixed, occupancy-sized grid covers any length, including > 2^31 elements.
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < length; i += stride) {
    out[i] = value;
  }
}

template <typename T>
static cudaError_t fillAs(void* ptr, size_t length, T value, cudaStream_t stream) {
  constexpr int kThreads = 256;
  unsigned blocks = 0;
  if (cudaError_t err = gridStrideBlocks(length, kThreads, &blocks); err != cudaSuccess) return err;
  fill_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<T*>(ptr), length, value);
  return cudaGetLastError();
}

cudaError_t launchFill(void* ptr, Dtype dtype, size_t length, double value, cudaStream_t stream) {
  if (length == 0) return cudaSuccess;
  switch (dtype) {
    case Dtype::Float32: return fillAs<float>(ptr, length, static_cast<float>(value), stream);
    case Dtype::Float64: return fillAs<double>(ptr, length, value, stream);
    case Dtype::Int32: return fillAs<int32_t>(ptr, length, static_cast<int32_t>(value), stream);
    case Dtype::Uint32: return fillAs<uint32_t>(ptr, length, static_cast<uint32_t>(value), stream);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
__global__ void fill_random_kernel(T* __restrict__ out, size_t length, uint64_t seed) {
  const uint64_t key = splitmix64(seed);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < length; i += stride) {
    const uint64_t bits = splitmix64(key ^ i);
    if constexpr (sizeof(T) == 8 && static_cast<T>(0.5) != 0) {
      out[i] = static_cast<T>(bits >> 11) * 0x1.0p-52 - 1.0;  // 53 random bits in [-1, 1)
    } else if constexpr (static_cast<T>(0.5) != 0) {
      out[i] = static_cast<T>(bits >> 40) * 0x1.0p-23f - 1.0f;  // 24 random bits in [-1, 1)
    } else {
      out[i] = static_cast<T>(bits >> 32);
    }
  }
}

template <typename T>
static cudaError_t fillRandomAs(void* ptr, size_t length, uint64_t seed, cudaStream_t stream) {
  constexpr int kThreads = 256;
  unsigned blocks = 0;
  if (cudaError_t err = gridStrideBlocks(length, kThreads, &blocks); err != cudaSuccess) return err;
  fill_random_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<T*>(ptr), length, seed);
  return cudaGetLastError();
}

cudaError_t launchFillRandom(void* ptr, Dtype dtype, size_t length, uint64_t seed, cudaStream_t stream) {
  if (length == 0) return cudaSuccess;
  switch (dtype) {
    case Dtype::Float32: return fillRandomAs<float>(ptr, length, seed, stream);
    case Dtype::Float64: return fillRandomAs<double>(ptr, length, seed, stream);
    case Dtype::Int32: return fillRandomAs<int32_t>(ptr, length, seed, stream);
    case Dtype::Uint32: return fillRandomAs<uint32_t>(ptr, length, seed, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace ck
