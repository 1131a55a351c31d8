// Launch shapes shared by the core's grid-stride kernels.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ck {

// Blocks for a grid-stride loop over `length` items with `threads` per block on the current
// device: enough to cover the items, capped at 8 blocks per SM (more only adds scheduling).
inline cudaError_t gridStrideBlocks(size_t length, int threads, unsigned* blocks) {
  int device = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return err;
  const size_t needed = (length + threads - 1) / threads;
  const size_t cap = static_cast<size_t>(sms) * 8;
  *blocks = static_cast<unsigned>(needed < cap ? needed : cap);
  return cudaSuccess;
}

}  // namespace ck
