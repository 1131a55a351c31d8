// The library: CUB's DeviceScan (its own decoupled look-back), the reference every step is measured
// against.
// H100 (bench/results, 2^28 int32): 0.966 ms, 2223 GB/s.
// Bench method: cub
#include <climits>
#include <cstdint>
#include <cub/cub.cuh>
#include <cub/version.cuh>

#include "core/pool.h"
#include "scan/scan.h"
#include "scan/tile.cuh"

namespace ck {
namespace scan {
namespace detail {

// ---------------------------------------------------------------------------------------------
// cub

template <class T>
cudaError_t cubScan(const T* in, T* out, size_t n, bool inclusive, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (n > cubMaxItems()) return cudaErrorInvalidValue;  // the binding refuses these with the limit named
  const int64_t items = static_cast<int64_t>(n);  // from CUB 2.7 num_items is a template: 64-bit offsets
  size_t bytes = 0;
  cudaError_t err = inclusive ? cub::DeviceScan::InclusiveSum(nullptr, bytes, in, out, items, stream)
                              : cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, items, stream);
  if (err != cudaSuccess) return err;
  void* temp = nullptr;
  err = poolMalloc(&temp, bytes, stream);
  if (err != cudaSuccess) return err;
  err = inclusive ? cub::DeviceScan::InclusiveSum(temp, bytes, in, out, items, stream)
                  : cub::DeviceScan::ExclusiveSum(temp, bytes, in, out, items, stream);
  const cudaError_t freeErr = poolFree(temp, stream);
  return err != cudaSuccess ? err : freeErr;
}

template <class T>
struct CubRunner {
  static cudaError_t run(const T* i, T* o, size_t n, bool inc, cudaStream_t s) {
    return cubScan(i, o, n, inc, s);
  }
};

}  // namespace detail

// Up to CUB 2.6 DeviceScan's num_items is an int, and a longer count narrows without a word at the
// call above: 2^32 + m items would scan the first m and leave the rest unwritten. The CUDA 12 fallback
// binary is built against CUB 2.3.2 (scripts/release/cuda12.sh); a source build takes its toolkit's.
uint64_t cubMaxItems() {
#if CUB_VERSION < 200700
  return INT_MAX;
#else
  return UINT64_MAX;
#endif
}

int cubVersion() {
  return CUB_VERSION;
}

cudaError_t launchCub(const void* in, void* out, Dtype dtype, size_t n, bool inclusive, cudaStream_t stream) {
  return detail::dispatchScan<detail::CubRunner>(dtype, in, out, n, inclusive, stream);
}

}  // namespace scan
}  // namespace ck
