// The padded working copy of run() (run.cc): the matrix padded to a multiple of the block factor
// and back. The row-band versions for the multi-GPU schemes are declared in apsp.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ck {
namespace apsp {

// `d` (np×np) from `in` (n×n): the diagonal 0, padding vertices reach nothing. With paths (`next`
// not null), next[i][j] = j where an edge exists, else −1, and hops[i][j] = 1 off the diagonal.
cudaError_t launchPad(const int32_t* in, int32_t* d, int32_t* next, int32_t* hops, int64_t n, int64_t np,
                      cudaStream_t stream);
// The first n columns of the first n rows of `src` (np×np) into `dst` (n×n).
cudaError_t launchUnpad(const int32_t* src, int32_t* dst, int64_t n, int64_t np, cudaStream_t stream);

}  // namespace apsp
}  // namespace ck
