// What every stencil variant's kernel shares: the weights, the summation order of one cell, and the
// device-side convergence bookkeeping that lets the kernels skip every sweep after the one that met
// the tolerance (run.cu's loop reads the same State between its host checks).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/block_reduce.cuh"
#include "stencil/stencil.h"

namespace ck {
namespace stencil {
namespace detail {

// Sweeps one launch of the fast kernel may run (its halo width).
constexpr int kMaxPassSweeps = 8;

// Device-side bookkeeping shared by all methods. Residuals are stored as the bit patterns of
// non-negative floats, which order like the floats themselves (NaN above +inf), so atomicMax on
// the bits is a max on the values. Pass p writes set p % 3, reads set (p − 1) % 3 to decide whether
// to run at all, and clears set (p + 1) % 3 for the pass after it: no set is cleared while a pass
// still reads it.
struct State {
  unsigned long long residual[3][kMaxPassSweeps];
  unsigned long long finalResidual;
  int converged;            // set by the first pass that finds an earlier sweep within tolerance
  long long convergedPass;  // the pass holding that sweep
  long long iterations;
};

// Pass numbers are 64-bit: basic and tiled run one sweep a pass, and maxIterations may reach 2^53.
struct Pass {
  long long index;  // pass number p
  int sweeps;       // sweeps this pass runs (1 for basic/tiled)
  int prevSweeps;   // sweeps of pass p − 1
  long long first;  // sweeps done before this pass
  bool check;       // false for a replay, which must run whatever the state says
};

// The check the fix of a 32-bit pass counter left behind: 2^31 single-sweep passes are within reach.
static_assert(sizeof(Pass::index) == 8 && sizeof(State::convergedPass) == 8 && sizeof(Pass::first) == 8,
              "pass and sweep numbers must be 64-bit");

template <typename T>
struct Weights {
  T w[9];
};

__host__ __device__ inline unsigned long long toBits(float v) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(v);
#else
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
#endif
}
__host__ __device__ inline unsigned long long toBits(double v) {
#ifdef __CUDA_ARCH__
  return static_cast<unsigned long long>(__double_as_longlong(v));
#else
  unsigned long long u;
  std::memcpy(&u, &v, sizeof u);
  return u;
#endif
}
template <typename T>
__host__ __device__ inline T fromBits(unsigned long long bits);
template <>
__host__ __device__ inline float fromBits<float>(unsigned long long bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(static_cast<unsigned>(bits));
#else
  const uint32_t u = static_cast<uint32_t>(bits);
  float v;
  std::memcpy(&v, &u, sizeof v);
  return v;
#endif
}
template <>
__host__ __device__ inline double fromBits<double>(unsigned long long bits) {
#ifdef __CUDA_ARCH__
  return __longlong_as_double(static_cast<long long>(bits));
#else
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
#endif
}

// The residual is a max that keeps a NaN once seen (MaxKeepNaNOp), so a grid gone NaN never
// "converges"; residuals are ≥ 0, so 0 is its identity.
template <typename T>
__device__ __forceinline__ T maxKeepNaN(T m, T d) {
  return MaxKeepNaNOp::combine(m, d);
}

// Every block decides alike from the same finished data whether this pass runs: not once an earlier
// pass found convergence, not if a sweep of the previous pass was within tolerance (then block 0
// records which). Otherwise block 0 clears the residual set of the next pass.
template <typename T>
__device__ inline bool passSkipped(State* st, const Pass& p, double tolerance) {
  const bool first = blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0;
  if (p.check) {
    if (*static_cast<volatile int*>(&st->converged)) return true;
    if (p.index > 0) {
      const unsigned long long* prev = st->residual[(p.index + 2) % 3];
      for (int j = 0; j < p.prevSweeps; ++j) {
        if (static_cast<double>(fromBits<T>(prev[j])) <= tolerance) {
          if (first) {
            st->converged = 1;
            st->convergedPass = p.index - 1;
            st->iterations = p.first - p.prevSweeps + j + 1;
          }
          return true;
        }
      }
    }
  }
  if (blockIdx.x == 0 && blockIdx.y == 0) {
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    if (tid < kMaxPassSweeps) st->residual[(p.index + 1) % 3][tid] = 0;
  }
  return false;
}

template <typename T>
__device__ inline T applyWeights(const Weights<T>& w, T a0, T a1, T a2, T b0, T b1, T b2, T c0, T c1, T c2) {
  T v = w.w[0] * a0;
  v = fma(w.w[1], a1, v);
  v = fma(w.w[2], a2, v);
  v = fma(w.w[3], b0, v);
  v = fma(w.w[4], b1, v);
  v = fma(w.w[5], b2, v);
  v = fma(w.w[6], c0, v);
  v = fma(w.w[7], c1, v);
  return fma(w.w[8], c2, v);
}

}  // namespace detail
}  // namespace stencil
}  // namespace ck
