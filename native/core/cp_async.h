// The commit and wait halves of the cp.async pipelines (SGEMM, AᵀA, APSP). Each kernel keeps its
// own copy instruction (widths and cache hints differ); below sm_80 there is no cp.async, the
// copies are ordinary loads and stores, and these are no-ops. And the fence the Hopper bulk copies
// (cp.async.bulk, the scan's loader and AᵀA's epilogue) need after ordinary shared-memory writes.
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

// Makes this thread's ordinary (generic-proxy) accesses to shared memory visible to the bulk-copy
// engine (the async proxy) before a cp.async.bulk reads or writes that memory (sm_90).
__device__ __forceinline__ void fenceSharedForBulk() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

}  // namespace ck
