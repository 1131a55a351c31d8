// All-pairs shortest paths split across several GPUs, with the `fast` kernels (block factor 128).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "apsp/apsp.h"

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

// One band of the band scheme: tile rows [tile0, tile0 + tiles) of the padded np×np matrix, stored
// contiguously at `m` (leading dimension np). runMulti (several GPUs in one process) and the
// distributed version (native/distributed/apsp.cc, one band per process) build their rounds from the steps
// below, so both schedule the same kernels with the same tile jobs.
struct Band {
  int32_t* m = nullptr;
  int64_t tile0 = 0, tiles = 0, np = 0;
  bool owns(int64_t k) const { return k >= tile0 && k < tile0 + tiles; }
  int32_t* tileRow(int64_t k) const { return m + (k - tile0) * kFastFactor * np; }
};

// Look-ahead on the owner of round k: tile row k brought up to date for round k − 1 through
// `prevPanel` (row panel k − 1); its column block k − 1 must be done (the column panel of k − 1).
void bandRowUpdate(const Band& b, int64_t k, const int32_t* prevPanel, cudaStream_t s);
// Owner of round k: the pivot block (k, k) closed, then the row panel k, both in its own rows.
void bandPivotRow(const Band& b, int64_t k, cudaStream_t s);
// Every band, round k: the column panel (I, k) through the pivot block of `panel` (row panel k: the
// owner's rows or a copy of them), the owner's own tile row k left out.
void bandColumnPanel(const Band& b, int64_t k, const int32_t* panel, cudaStream_t s);
// Every band, round k: phase 3 on (I, J), J ≠ k, through the column panel and `panel`, leaving out
// tile row k and tile row `aheadRow` when this band owns it (the look-ahead did it; kNoSkip: none).
void bandPhase3(const Band& b, int64_t k, const int32_t* panel, int64_t aheadRow, cudaStream_t s);

// Distances of the n×n matrix `in` (on inDevice) into `out` (n×n, on devices[0]) with the devices in
// `devices` (distinct, at least one). Round transfers go device to device (peer access enabled for
// every pair here), or through pinned host memory when `viaHost`. Input and output are ordered after
// the work queued on the library streams of their devices; returns when everything is done. Throws
// CudaFailure. With `progress`, it waits after queueing each round for the round before (so one stays
// queued) and reports the rounds done, the last report when `out` is complete; what the callback throws
// stops the run (`out` is then left as it was) and propagates once the queued work is done.
void runMulti(MultiScheme scheme, const int32_t* in, int inDevice, int32_t* out, int64_t n,
              const std::vector<int>& devices, bool viaHost, const Progress& progress = nullptr);

// runMulti in two halves, for apspAsync: the constructor queues, on the calling thread, the only reads of
// `in` (its rows copied into every device's band) and orders later work on `in`'s library stream after
// them, so the run computes on `in` as it is then, whatever is queued after; finish() queues the rounds
// and the gather and waits for them as runMulti does — asleep on cudaEventBlockingSync events with
// `sleep` (a pool thread that waits for minutes). Both throw CudaFailure.
class MultiRun {
 public:
  MultiRun(MultiScheme scheme, const int32_t* in, int inDevice, int32_t* out, int64_t n,
           const std::vector<int>& devices, bool viaHost, bool sleep);
  ~MultiRun();
  MultiRun(const MultiRun&) = delete;
  MultiRun& operator=(const MultiRun&) = delete;

  // At most once.
  void finish(const Progress& progress = nullptr);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace apsp
}  // namespace ck
