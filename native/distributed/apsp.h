// All-pairs shortest paths over the ranks of a communicator: each rank holds only its band of rows.
#pragma once

#include <cstdint>
#include <functional>

#include "distributed/comm.h"

namespace ck {
namespace dist {

// Rank `rank`'s rows of the n×n matrix when its 128-row tile rows are split over `size` ranks as the
// in-process band scheme splits them over GPUs (apsp::bandOf): rows [*row0, *row0 + *rows) (*rows is 0
// on the ranks beyond the tile rows).
void apspBandRows(int64_t n, int size, int rank, int64_t* row0, int64_t* rows);

// The band scheme of apsp::runMulti with one band per rank: every round the owner of the pivot tile
// row closes its pivot block and row panel and broadcasts the 128×n panel through NCCL; every rank
// then updates its part of the pivot column and the rest of its band, and the next round's owner
// prepares and broadcasts the next panel on a high-priority stream while the rest of its band is
// updated (look-ahead). `in` holds this rank's rows of the weight matrix (rows × n, int32, on the
// communicator's device; the diagonal is taken as 0), `out` receives their distances (may be `in`).
// When n is a multiple of 128 the run works in `out` itself (after copying `in` there) and needs
// only two 128×n panels besides; otherwise it also holds a padded copy of the band. Both may be null
// when this rank has no rows. Every rank must call it with the same n. Calls
// `progress(done, rounds)` as rounds complete, and returns when this rank's part is done. On any
// failure the communicator is aborted (the ranks' call sequences no longer match) and CudaFailure
// is thrown. Runs on a worker thread holding the communicator (Comm::reserve / claim).
void apspDistributed(Comm& comm, const int32_t* in, int32_t* out, int64_t n,
                     const std::function<void(int done, int rounds)>& progress);

}  // namespace dist
}  // namespace ck
