// All-pairs shortest paths split across several GPUs, with the `fast` kernels (block factor 128).
#pragma once

#include <cstdint>
#include <vector>

namespace ck {
namespace apsp {

enum class MultiScheme {
  // Each GPU owns a band of tile rows; the pivot row panel is the only thing sent each round.
  Band,
  // The report's scheme: every GPU holds the whole matrix and repeats phases 1 and 2; phase 3 is
  // split by rows and every GPU sends its band to all others each round.
  Replicated,
};

// Band of tile rows [first, first + count) of `tiles` for GPU `index` of `gpus`: the first tiles % gpus
// GPUs get one more (so bands differ by at most one tile row; trailing GPUs get none when tiles < gpus).
void bandOf(int64_t tiles, int gpus, int index, int64_t* first, int64_t* count);

// Distances of the n×n matrix `in` (on inDevice) into `out` (n×n, on devices[0]) with the devices in
// `devices` (distinct, at least one). Round transfers go device to device (peer access enabled for
// every pair here), or through pinned host memory when `viaHost`. Input and output are ordered after
// the work queued on the library streams of their devices; returns when everything is done. Throws
// CudaFailure.
void runMulti(MultiScheme scheme, const int32_t* in, int inDevice, int32_t* out, int64_t n,
              const std::vector<int>& devices, bool viaHost);

}  // namespace apsp
}  // namespace ck
