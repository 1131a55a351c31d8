// All-pairs shortest paths by blocked Floyd–Warshall on an n×n int32 weight matrix.
//
// Every method runs rounds K = 0 … np/B − 1 over a matrix padded to np, a multiple of the block factor
// B. A round has three phases: (1) close the pivot block (K, K) under paths through its own vertices;
// (2) relax the pivot row and column panels through the pivot block; (3) relax every other block
// (I, J) through the panels: d_ij = min(d_ij, d_ik + d_kj) for the B values of k. Entries of pivot
// row k and column k never change while k is the intermediate (d_kk = 0), and only strictly better
// values are stored, so threads of one step that read row k or column k never race with a write.
//
// The files, in study order: 1_basic.cu, 2_shared.cu, 3_minplus.cu (one round of each method);
// run.cc (the round loop), padding.cu, random_graph.cu, paths.cuh, add_min.cuh; multi.cc (several
// GPUs); methods.cc (the table of methods); binding.cc (N-API).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace ck {
namespace apsp {

// "No edge" and "unreachable": 2^30 − 1. Distances never exceed it: a sum of two entries ≤ kInf is
// below 2^31, so d_ik + d_kj never overflows int32, and min(d_ij, d_ik + d_kj) ≤ d_ij ≤ kInf keeps
// every entry ≤ kInf without an explicit clamp (a path whose length reaches kInf reads as kInf).
constexpr int32_t kInf = 0x3fffffff;

// Largest n accepted on one GPU or in one process: n² int32 is then 64 GiB, and every tile count below
// fits in an int.
constexpr int64_t kMaxN = 131072;
// Largest n of the distributed band scheme (native/distributed/apsp.cc), whose matrix is spread over the
// ranks: 2048 tile rows, so a band's tile count (≤ 2048²) fits in an int and an offset inside a tile
// row (128 rows × ld ≤ 2^25 elements) fits in 32 bits, as the min-plus kernel assumes.
constexpr int64_t kMaxDistN = 262144;

// Called between rounds with the number of rounds completed and the total; may throw (the run stops
// enqueuing rounds, and its workspace is released in stream order).
using Progress = std::function<void(int done, int rounds)>;

// One round of a method on the padded np×np matrix `d` (np a multiple of `factor`): rounds
// 0 … np/factor − 1 in order give the shortest distances. With paths, `next` and `hops` (np×np each,
// else both null) are the next-hop and hop-count matrices: candidates are ordered by (distance, hops),
// and next[i][j] = next[i][k] whenever d_ik + d_kj wins over d_ij.
using RoundFn = cudaError_t (*)(int32_t* d, int32_t* next, int32_t* hops, int64_t np, int factor,
                                int64_t round, cudaStream_t stream);

// 1_basic.cu, the report's first design: thread per element, global memory only; phases 1 and 2 take one
// launch per k of the round (factor launches each), phase 3 one launch whose threads loop over the factor k.
cudaError_t roundBasic(int32_t* d, int32_t* next, int32_t* hops, int64_t np, int factor, int64_t round,
                       cudaStream_t stream);
// 2_shared.cu, the report's shared-memory design: 32×32 tiles, one thread per element, threadIdx.x along the
// columns so that a warp reads one A element (broadcast) and 32 consecutive B elements.
cudaError_t roundShared(int32_t* d, int32_t* next, int32_t* hops, int64_t np, int factor, int64_t round,
                        cudaStream_t stream);
// 3_minplus.cu, ours: pivot depth 128; phase 1 in one block from shared memory, phases 2 and 3 as min-plus
// tile products (128×128 tiles, 8×8 outputs per thread, cp.async slabs, VIADDMNMX on sm_90). Distances only:
// next and hops must be null.
cudaError_t roundFast(int32_t* d, int32_t* next, int32_t* hops, int64_t np, int factor, int64_t round,
                      cudaStream_t stream);

// Building blocks of `fast` (3_minplus.cu), shared with the multi-GPU schemes (multi.cc).
constexpr int kFastFactor = 128;
constexpr int kNoSkip = 0x7fffffff;

// C = min(C, A ⊗ B) (min-plus) over 128×128 output tiles: tile (ti, tj), ti < rows except rowSkip0 and
// rowSkip1, tj < cols except colSkip (kNoSkip: none), with A = a + 128·ti·ld (128 rows, 128 pivot
// columns), B = b + 128·tj (128 pivot rows), C = c + 128·ti·ld + 128·tj, all three of leading
// dimension ld (one ld: a leading dimension per operand costs the kernel registers it has not got).
// C may alias A or B (the panels of phase 2). Pointers and ld must be multiples of 4 elements.
struct TileJob {
  const int32_t* a;
  const int32_t* b;
  int32_t* c;
  int64_t ld;
  int rows, rowSkip0, rowSkip1;
  int cols, colSkip;
};

// Closes the 128×128 block at `block` (leading dimension `ld`) under paths through its own vertices.
cudaError_t launchFastPivot(int32_t* block, int64_t ld, cudaStream_t stream);
// One launch for `job` and, when `second` is not null, a second job beside it (the tiles of the two
// must not overlap).
cudaError_t launchFastMinPlus(const TileJob& job, const TileJob* second, cudaStream_t stream);

// padding.cu. Rows row0 … row0 + rows − 1 of the matrix padded to np: `band` (rows × np) from `in`, which
// points at row row0 of the n×n input (only rows below n are read; null when row0 ≥ n). The diagonal becomes
// 0.
cudaError_t launchPadRows(const int32_t* in, int32_t* band, int64_t n, int64_t np, int64_t row0, int64_t rows,
                          cudaStream_t stream);
// The first n columns of `rows` rows of a band (leading dimension np) into `out` (rows × n).
cudaError_t launchUnpadRows(const int32_t* band, int32_t* out, int64_t n, int64_t np, int64_t rows,
                            cudaStream_t stream);

// run.cc. Runs every round of `round` with block factor `factor` on a copy of `in` (n×n, row-major) and
// writes the distances to `out` (n×n, must not alias `in`) and, when `nextOut` is not null, the
// next-hop matrix (next[i][j] = first vertex after i on a shortest path with the fewest edges among
// the shortest, j when i == j, −1 when j is unreachable; a hop-count workspace comes with it). The diagonal
// of `in` is taken as 0. Pads n up to a multiple of `factor` with vertices that reach nothing (a workspace
// from the library pool when n is not a multiple). Enqueues on `stream` without synchronizing unless
// `progress` is set, in which case it waits for each round (with the next one already queued) before
// reporting it.
cudaError_t run(RoundFn round, int factor, const int32_t* in, int32_t* out, int32_t* nextOut, int64_t n,
                cudaStream_t stream, const Progress& progress);

// run() in two halves, for apspAsync: pad() queues the only reads of `in` (its copy into the padded
// workspace, or into `out` when n needs no padding) on the calling thread, so that the run computes on
// `in` as it is then, whatever is queued after; rounds() queues the rounds and the unpadding, on any
// thread, and waits between rounds when `progress` is set — spinning, or asleep on cudaEventBlockingSync
// events with `sleep` (a pool thread that waits for minutes). The workspace goes back to the pool, in
// stream order, when the object dies.
class PaddedRun {
 public:
  PaddedRun(RoundFn round, int factor, int32_t* out, int32_t* nextOut, int64_t n, cudaStream_t stream,
            bool sleep);
  ~PaddedRun();
  PaddedRun(const PaddedRun&) = delete;
  PaddedRun& operator=(const PaddedRun&) = delete;

  cudaError_t pad(const int32_t* in);
  // After a successful pad(); at most once.
  cudaError_t rounds(const Progress& progress);

 private:
  RoundFn round_;
  int factor_;
  int32_t* out_;
  int32_t* nextOut_;
  int64_t n_, np_;
  cudaStream_t stream_;
  bool sleep_;
  int32_t *d_ = nullptr, *next_ = nullptr, *hops_ = nullptr;
  bool ownsD_ = false, ownsNext_ = false;
  cudaEvent_t events_[2] = {nullptr, nullptr};
};

// random_graph.cu. Fills `out` (n×n) with a random weighted digraph: each off-diagonal entry is an edge with
// probability `density`, of weight uniform in [minWeight, maxWeight], else kInf; the diagonal is 0.
// Depends only on `seed`.
cudaError_t launchRandomGraph(int32_t* out, int64_t n, double density, int32_t minWeight, int32_t maxWeight,
                              uint64_t seed, cudaStream_t stream);
// Rows row0 … row0 + rows − 1 of the same graph into `out` (rows × n), for a band made on its own device;
// n up to kMaxDistN.
cudaError_t launchRandomGraphRows(int32_t* out, int64_t n, int64_t row0, int64_t rows, double density,
                                  int32_t minWeight, int32_t maxWeight, uint64_t seed, cudaStream_t stream);

// The generator's parameters in the form the kernels use: P(edge) = threshold / 2^32, weights in
// [minWeight, minWeight + span − 1].
struct RandomGraphParams {
  int64_t n = 0;
  uint64_t threshold = 0;
  int32_t minWeight = 0;
  uint32_t span = 1;
  uint64_t seed = 0;
};

// Checks the generator's arguments (n ≤ kMaxDistN) and fills `g`; false when one is out of range.
bool randomGraphParams(int64_t n, double density, int32_t minWeight, int32_t maxWeight, uint64_t seed,
                       RandomGraphParams* g);

// bellman_check.cu. For each of `count` pairs (i, j) (`pairs`: 2·count int32 on the device, i then j,
// both < g.n): partial[p] = min(kInf, min over this band's rows k ∈ [row0, row0 + rows), k ≠ i, of
// w(i, k) + band[(k − row0)·n + j]) with w the random graph of `g`, and own[p] = band[(i − row0)·n + j]
// when row i lies in the band, else INT32_MAX. The band is rows × n, int32.
cudaError_t launchBellmanPartial(const int32_t* band, int64_t row0, int64_t rows, const RandomGraphParams& g,
                                 const int32_t* pairs, int count, int32_t* partial, int32_t* own,
                                 cudaStream_t stream);

}  // namespace apsp
}  // namespace ck
