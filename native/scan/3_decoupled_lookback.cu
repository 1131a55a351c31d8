// Step 3, ours: a single pass. Each block takes the next tile (8192 4-byte items or 4096 doubles) from an
// atomic counter, scans it in registers, and one warp finds the tile's prefix from the states its
// predecessors published (decoupled look-back, lookback.cuh), so every element is read and written
// once: the traffic of a copy. Its limit: a block holds its SM slot while that warp walks back, so
// the SM's loads stop during the walk (2424 GB/s on the H100 at 2^28 int32, a copy 2976 GB/s);
// step 4 (4_persistent_lookback.cu) keeps loading during the walk, and falls back to this kernel
// for small arrays and before sm_90.
// Bench method: lookback
#include <cstdint>

#include "scan/lookback.cuh"
#include "scan/scan.h"
#include "scan/tile.cuh"

namespace ck {
namespace scan {
namespace detail {

// The shape, and why it was chosen: shippedLookbackScan in lookback.cuh (step 4 falls back to it too).
template <class T>
struct LookbackRunner {
  static cudaError_t run(const T* i, T* o, size_t n, bool inc, cudaStream_t s) {
    return shippedLookbackScan(i, o, n, inc, s);
  }
};

}  // namespace detail

cudaError_t launchLookback(const void* in, void* out, Dtype dtype, size_t n, bool inclusive,
                           cudaStream_t stream) {
  return detail::dispatchScan<detail::LookbackRunner>(dtype, in, out, n, inclusive, stream);
}

}  // namespace scan
}  // namespace ck
