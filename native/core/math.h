// Small integer helpers shared by the families' launchers and kernels (host and device).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ck {

// ⌈a / b⌉ for a ≥ 0, b > 0: tiles, blocks and chunks that cover a length.
__host__ __device__ inline int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// splitmix64: a full-period bijection on 64-bit counters, so neighbouring indices give
// independent-looking values without any per-thread state (fillRandom, randomGraph).
__host__ __device__ inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace ck
