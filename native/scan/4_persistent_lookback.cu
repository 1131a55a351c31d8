// Step 4, ours: the same look-back (lookback.cuh), with a grid of resident blocks that each keep
// six 32 KB tiles in flight in shared memory (persistent.cuh): a loader warp starts the next tiles'
// bulk copies while the tile before them waits for its prefix, so the memory pipe never drains
// during a walk. H100, 2^28 int32: its rate against a device-to-device copy and against CUB, from
// the pair protocol, is in bench/results/README.md (bench/dev/scan/NOTES.md, third round, has the
// tuning).
// Bench method: fast
#include <cstdint>

#include "scan/lookback.cuh"
#include "scan/persistent.cuh"
#include "scan/scan.h"

namespace ck {
namespace scan {
namespace detail {

// Below this many bytes the array has too few tiles to fill the stages of every SM (2^20 int32 is
// 128 tiles of 32 KB for 132 SMs), each block's four hand-offs between warps are pure latency, and
// step 3 was faster on the H100; from here up the persistent kernel was (NOTES.md, third round).
constexpr size_t kPersistentMinBytes = size_t(16) << 20;

// The shipped shape: 32 KB tiles, 6 stages (192 KB of shared memory, one block per SM), 8 scan
// warps, input marked evict-first in L2 (it is read once; the output then keeps more of L2 at
// 2^24). The other shapes timed are in bench/dev/scan/fast_variants.cu.
template <class T>
struct FastRunner {
  static cudaError_t run(const T* i, T* o, size_t n, bool inc, cudaStream_t s) {
    if (n * sizeof(T) >= kPersistentMinBytes) {
      const cudaError_t err = persistentScan<T, 32768, 6, 8, kPersistEvictFirst>(i, o, n, inc, s);
      if (err != cudaErrorNotSupported) return err;  // else: before sm_90, or no room: step 3
    }
    return shippedLookbackScan(i, o, n, inc, s);
  }
};

}  // namespace detail

cudaError_t launchFast(const void* in, void* out, Dtype dtype, size_t n, bool inclusive,
                       cudaStream_t stream) {
  return detail::dispatchScan<detail::FastRunner>(dtype, in, out, n, inclusive, stream);
}

}  // namespace scan
}  // namespace ck
