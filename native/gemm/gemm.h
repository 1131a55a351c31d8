// C = A·B in float32 (SGEMM): a one-thread-per-element kernel (1_naive.cu), the textbook shared-memory
// tiled kernel (2_shared_tiles.cu), and a hand-pipelined register-tiled FFMA kernel
// (3_register_pipelined.cu); cuBLAS in cublas.cc. No tensor cores anywhere: every
// product and sum is an IEEE float32 FMA, so results are float32-accurate (no TF32).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ck {
namespace gemm {

// A: m×k, B: k×n, C: m×n, all row-major float32 device memory. C = A·B (C is overwritten).
// Each launcher enqueues on `stream`, never synchronizes, returns the first CUDA error.
// m == 0 or n == 0 does nothing; k == 0 writes a zero C; negative sizes give cudaErrorInvalidValue.
// Pointers need only float alignment: the fast kernel checks 16-byte alignment itself and takes a
// scalar path where a vector access would be illegal.

// One thread per C element, global memory only. Reference speed only.
cudaError_t launchNaive(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n,
                        cudaStream_t stream);

// tile ∈ {8, 16, 32}: tile×tile thread blocks, tile×tile shared-memory tiles of A and B (the report's
// kernel); any other tile gives cudaErrorInvalidValue.
cudaError_t launchShared(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n, int tile,
                         cudaStream_t stream);

// 128×128 block tiles of 256 threads (two blocks per SM), 8×8 register tiles, k-slabs of 16. Both
// operands are staged global → registers → shared memory (two buffers, one barrier per slab; A
// transposed), and each k's A and B fragments are read from shared memory while the previous k's
// FFMAs run. Edge tiles are zero-filled; where rows are not 16-byte aligned (n or k not a multiple
// of 4, or an unaligned pointer) the same kernel takes scalar loads and stores. 33,280 bytes of
// dynamic shared memory, under the default limit, so no per-device setup.
// A C of at most one tile per two SMs cuts k into pieces (split-K, a workspace of the pool and a
// second kernel that sums the pieces in order); where the workspace does not fit, one piece.
cudaError_t launchFast(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n,
                       cudaStream_t stream);

// The test hook debugGemmSplits: every later launchFast cuts k into `splits` pieces (0: its own plan),
// as whole slabs of 16 with none empty, so the count can come out lower (6 forced on 10 slabs gives 5
// pieces of 2), and one piece where the workspace does not fit; and how many pieces the last
// launchFast used (0 after a read).
void setForcedSplits(int splits);
int takeLastSplits();

}  // namespace gemm
}  // namespace ck
