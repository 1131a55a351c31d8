// The commit and wait halves of the cp.async pipelines (SGEMM, AᵀA, APSP). Each kernel keeps its
// own copy instruction (widths and cache hints differ); below sm_80 there is no cp.async, the
// copies are ordinary loads and stores, and these are no-ops.
#pragma once

namespace ck {

__device__ __forceinline__ void copyCommit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most N committed groups are still in flight.
template <int N>
__device__ __forceinline__ void copyWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

}  // namespace ck
