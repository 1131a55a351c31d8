// mbarrier and bulk-copy wrappers (PTX ISA 8.0, sm_90), shared by the persistent scan's loader and
// AᵀA's TMA loads. A barrier phase completes when its expected arrivals have all arrived and the
// bytes it was told to expect (arrive.expect_tx) have landed. Arrive is a release and a successful
// wait an acquire at CTA scope, so data written before an arrive is visible after the wait. Below
// sm_90 they compile to nothing; their callers run only on sm_90.
#pragma once

#include <cstdint>

namespace ck {

__device__ __forceinline__ unsigned sharedAddr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbarInit(unsigned long long* bar, unsigned count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sharedAddr(bar)), "r"(count) : "memory");
#endif
}

__device__ __forceinline__ void mbarArrive(unsigned long long* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n\t.reg .b64 state;\n\t"
      "mbarrier.arrive.shared::cta.b64 state, [%0];\n\t}" ::"r"(sharedAddr(bar))
      : "memory");
#endif
}

// Arrives and tells the barrier to also wait for `bytes` more bytes of bulk copies.
__device__ __forceinline__ void mbarArriveExpectBytes(unsigned long long* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n\t.reg .b64 state;\n\t"
      "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}" ::"r"(sharedAddr(bar)),
      "r"(bytes)
      : "memory");
#endif
}

// Waits until the phase of parity `parity` has completed. A fresh barrier is in phase 0, and a
// wait for parity 1 on it returns at once (the phase "before" the first counts as complete): the
// loader's first pass over the empty barriers relies on that.
__device__ __forceinline__ void mbarWait(unsigned long long* bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned done = 0;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(sharedAddr(bar)), "r"(parity)
        : "memory");
  } while (!done);
#endif
}

// One bulk copy global -> shared (16-byte aligned ends, size a multiple of 16) whose bytes complete
// on `bar`. `policy`: an L2 cache policy from createpolicy (evict-first for data read once).
__device__ __forceinline__ void bulkLoad(void* smem, const void* gmem, unsigned bytes,
                                         unsigned long long* bar, unsigned long long policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, "
      "[%3], "
      "%4;" ::"r"(sharedAddr(smem)),
      "l"(__cvta_generic_to_global(gmem)), "r"(bytes), "r"(sharedAddr(bar)), "l"(policy)
      : "memory");
#endif
}

// Makes mbarrier.init visible to the copy engine before any copy completes on the barriers.
__device__ __forceinline__ void fenceBarrierInit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// One 2-D tensor copy (TMA) global -> shared of the box at (column c0, row c1) of the tensor map
// `map` (a __grid_constant__ kernel parameter), whose bytes complete on `bar`. Elements outside the
// tensor are written as zeros. `smem` must be 128-byte aligned.
__device__ __forceinline__ void tmaLoad2d(void* smem, const void* map, int c0, int c1,
                                          unsigned long long* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3}], "
      "[%4];" ::"r"(sharedAddr(smem)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(sharedAddr(bar))
      : "memory");
#endif
}

}  // namespace ck
