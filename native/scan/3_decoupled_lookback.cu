// Step 3, ours: a single pass. Each block takes the next tile (8192 4-byte items or 4096 doubles)
// from an atomic counter, scans it in registers, and one warp finds the tile's prefix from the states
// its predecessors published (decoupled look-back, lookback.cuh), so every element is read and
// written once: the traffic of a copy.
// H100 (bench/results, 2^28 int32): 0.930 ms, 2309 GB/s, 1.44× step 2, 1.04× CUB, 0.77× a
// device-to-device copy (bench/dev/scan/NOTES.md: what was tried to close the rest).
// Bench method: fast
#include <cstdint>

#include "scan/lookback.cuh"
#include "scan/scan.h"
#include "scan/tile.cuh"

namespace ck {
namespace scan {
namespace detail {

// The shipped shape (threads, bytes per thread, min-blocks hint, persistent grid, backoff):
// 128 threads x 256 bytes (64 items of 4 bytes, 32 doubles), one tile per block, was the fastest
// shape at every dtype and size from 2^24 up on the H200 (bench/dev/scan/NOTES.md, run 3) and no
// other shape beat it on the H100. It needs 96 registers and 34.9 KB of static shared memory a
// block: 5 blocks (160 KB of tile data) per Hopper SM, fewer on sm_75/86/89. The other shapes timed
// are in bench/dev/scan/fast_variants.cu.
template <class T>
struct FastRunner {
  static cudaError_t run(const T* i, T* o, size_t n, bool inc, cudaStream_t s) {
    return lookbackScan<T, 128, 256, 4, false, true>(i, o, n, inc, s);
  }
};

}  // namespace detail

cudaError_t launchFast(const void* in, void* out, Dtype dtype, size_t n, bool inclusive,
                       cudaStream_t stream) {
  return detail::dispatchScan<detail::FastRunner>(dtype, in, out, n, inclusive, stream);
}

}  // namespace scan
}  // namespace ck
