#include <cstdint>

#include "fill.h"

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
  int device = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return err;
  constexpr int kThreads = 256;
  const size_t needed = (length + kThreads - 1) / kThreads;
  const size_t cap = static_cast<size_t>(sms) * 8;
  const unsigned blocks = static_cast<unsigned>(needed < cap ? needed : cap);
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

}  // namespace ck
