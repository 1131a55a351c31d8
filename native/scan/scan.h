// Prefix scan (inclusive / exclusive sum) and reduction (sum / min / max) over typed device buffers.
// Files, in study order: 1_warp.cu (the report's one-block scan), 2_reduce_then_scan.cu (three
// kernels), 3_decoupled_lookback.cu (ours, single pass; the look-back in lookback.cuh),
// 4_persistent_lookback.cu (ours, the same with several tiles in flight per block; persistent.cuh),
// cub.cu (the library); tile.cuh holds what the tile scans share, reduce.cu the reductions.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace ck {
namespace scan {

// out[i] = in[0] + ... + in[i] (inclusive) or in[0] + ... + in[i-1] with out[0] = 0 (exclusive), n
// elements of `dtype`, device memory. out may equal in (in-place); other overlaps are not supported.
// Integer sums wrap around modulo 2^32 (two's complement for int32). Floats accumulate in their own
// type, in an order that differs between methods (float addition is not associative).
// Each launcher enqueues on `stream`, never synchronizes, and returns the first CUDA error; n == 0
// does nothing. Workspace, where a method needs one, comes from the library pool (core/pool.h) on
// `stream`. Pointers must be aligned to their element size; 16-byte vector access is used where
// in and out share the same offset modulo 16 bytes, scalar access otherwise.

// The report's algorithm: ONE block of 1024 threads walks the array, 1024 elements a step; each warp
// runs an up-sweep/down-sweep (Blelloch) scan with shuffles, the warp totals are scanned across the
// block, and a running carry joins the steps. Reference speed only: it uses one SM.
cudaError_t launchWarp(const void* in, void* out, Dtype dtype, size_t n, bool inclusive, cudaStream_t stream);

// Classic three kernels: per-tile reduce to tile sums, exclusive scan of the tile sums (recursively,
// down to one tile), per-tile scan plus the tile's offset. Reads the input twice.
cudaError_t launchBlocks(const void* in, void* out, Dtype dtype, size_t n, bool inclusive,
                         cudaStream_t stream);

// cub::DeviceScan::InclusiveSum / ExclusiveSum (int32 is scanned as uint32 so the wrap-around is
// defined behaviour), for up to cubMaxItems() items: any count from CUB 2.7 on, INT_MAX before
// (num_items was an int); past it, cudaErrorInvalidValue. cubVersion(): CUB_VERSION (2.3.2 is 200302).
cudaError_t launchCub(const void* in, void* out, Dtype dtype, size_t n, bool inclusive, cudaStream_t stream);
uint64_t cubMaxItems();
int cubVersion();

// Single pass, decoupled look-back: each block takes the next tile (8192 4-byte items or 4096
// doubles) from an atomic counter, scans it in registers, and one warp finds its prefix from the
// published states of the tiles before it. Reads and writes every element once.
cudaError_t launchLookback(const void* in, void* out, Dtype dtype, size_t n, bool inclusive,
                           cudaStream_t stream);

// The same look-back from a grid of resident blocks that each keep six 32 KB tiles in flight (bulk
// copies into shared memory, one warp per job), so that loads continue while a tile waits for its
// prefix. sm_90 and newer, from 16 MiB up; otherwise launchLookback.
cudaError_t launchFast(const void* in, void* out, Dtype dtype, size_t n, bool inclusive, cudaStream_t stream);

enum class ReduceOp : int { Sum = 0, Min = 1, Max = 2 };

// *result (device memory, one double) = the reduction of the n elements, written on `stream`.
// Sum of float32/float64 accumulates in double; sum of int32/uint32 wraps modulo 2^32 exactly like
// the scan's last element (then converted to double: an int32 result as the signed value).
// n == 0: Sum 0, Min +inf, Max -inf. Min/Max of floats propagate NaN (like Math.min / Math.max).
// Per-block warp-shuffle reduction to partials, then one block combines the partials: no atomics,
// so the result is the same bits on every run.
cudaError_t launchReduce(const void* in, Dtype dtype, size_t n, ReduceOp op, double* result,
                         cudaStream_t stream);

}  // namespace scan
}  // namespace ck
