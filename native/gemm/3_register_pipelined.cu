// Step 3, ours: 128×128 block tiles of 256 threads, each thread an 8×8 register tile of C, so one
// pair of LDS.128 feeds 64 FFMAs; the pipeline written out by hand (fragments double-buffered in
// registers, operands staged global → registers → two shared buffers, one barrier per k-slab). The
// kernel template is in register_pipeline.cuh; this file picks the shipped shape.
// H100 (bench/results, 4096³): 2.79 ms, 49.3 TFLOP/s (74% of the FFMA peak; step 2: 16.4 ms). Its
// rate against cuBLAS (TF32 off), from the pair protocol, is in bench/results/README.md;
// bench/dev/gemm/NOTES.md has each version between.
// Bench method: fast
#include <climits>
#include <cstdint>

#include "core/math.h"
#include "gemm/common.cuh"
#include "gemm/gemm.h"
#include "gemm/register_pipeline.cuh"

namespace ck {
namespace gemm {
namespace detail {

//                           BM   BN  BK  WM  WN RM RN MinBlocks
using Pipe128x128k16 = PipeConfig<128, 128, 16, 32, 64, 2, 2, 2>;

}  // namespace detail

cudaError_t launchFast(const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n,
                       cudaStream_t stream) {
  cudaError_t err;
  if (detail::trivialShape(C, m, k, n, stream, err)) return err;
  return detail::launchPipeWith<detail::Pipe128x128k16>(A, B, C, m, k, n, stream);
}

}  // namespace gemm
}  // namespace ck
