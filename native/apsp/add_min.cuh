// min(a + b, c), the relaxation step of the min-plus variants (2_shared.cu, 3_minplus.cu).
#pragma once

namespace ck {
namespace apsp {

// min(a + b, c) — one VIADDMNMX on sm_90 (DPX). nvcc 13 emits the same instruction for the plain
// expression there; the intrinsic documents the intent. Elsewhere an IADD and an IMNMX.
__device__ __forceinline__ int addMin(int a, int b, int c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return __viaddmin_s32(a, b, c);
#else
  return min(a + b, c);
#endif
}

}  // namespace apsp
}  // namespace ck
