// Shared machinery of the tile scans (2_reduce_then_scan.cu, 3_decoupled_lookback.cu): 16-byte
// vectors, the alignment of a pair of pointers, a tile's layout and its in-block scan, and the dtype
// dispatch every scan launcher goes through.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/block_reduce.cuh"
#include "core/dtype.h"
#include "core/math.h"

namespace ck {
namespace scan {
namespace detail {

constexpr unsigned kFullMask = 0xffffffffu;
// ---------------------------------------------------------------------------------------------
// 16-byte vectors. Typed vector types (rather than a uint4 reinterpreted per element) keep the
// element accesses free of type punning.

template <class T>
struct Vec16;
template <>
struct Vec16<float> {
  using type = float4;
};
template <>
struct Vec16<uint32_t> {
  using type = uint4;
};
template <>
struct Vec16<int32_t> {
  using type = int4;
};
template <>
struct Vec16<double> {
  using type = double2;
};

__device__ __forceinline__ void splitVec(const float4& v, float* a) {
  a[0] = v.x;
  a[1] = v.y;
  a[2] = v.z;
  a[3] = v.w;
}
__device__ __forceinline__ void splitVec(const uint4& v, uint32_t* a) {
  a[0] = v.x;
  a[1] = v.y;
  a[2] = v.z;
  a[3] = v.w;
}
__device__ __forceinline__ void splitVec(const int4& v, int32_t* a) {
  a[0] = v.x;
  a[1] = v.y;
  a[2] = v.z;
  a[3] = v.w;
}
__device__ __forceinline__ void splitVec(const double2& v, double* a) {
  a[0] = v.x;
  a[1] = v.y;
}
__device__ __forceinline__ float4 joinVec(const float* a) {
  return make_float4(a[0], a[1], a[2], a[3]);
}
__device__ __forceinline__ uint4 joinVec(const uint32_t* a) {
  return make_uint4(a[0], a[1], a[2], a[3]);
}
__device__ __forceinline__ double2 joinVec(const double* a) {
  return make_double2(a[0], a[1]);
}

// Where the 16-byte grid falls for a pair of pointers. Tiles are laid on a "virtual" index that
// starts `pre` elements before `in`, at the 16-byte boundary below it, so that every tile but the
// first and the last starts on a 16-byte boundary in both arrays. That needs in and out to sit at
// the same offset modulo 16; otherwise every tile takes the scalar path.
struct Alignment {
  int64_t pre = 0;
  bool vec = false;
};

template <class T>
Alignment alignmentOf(const void* in, const void* out) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(in), b = reinterpret_cast<uintptr_t>(out);
  Alignment al;
  if (a % sizeof(T) == 0 && b % sizeof(T) == 0 && a % 16 == b % 16) {
    al.vec = true;
    al.pre = static_cast<int64_t>((a % 16) / sizeof(T));
  }
  return al;
}

// ---------------------------------------------------------------------------------------------
// Tile machinery shared by the three-kernel and the look-back scans.
//
// A tile is THREADS * ITEMS consecutive elements; warp w owns the 32 * ITEMS elements starting at
// w * 32 * ITEMS, and lane l of it the ITEMS consecutive elements starting at l * ITEMS (the serial
// scan in registers needs consecutive items per thread). Global memory is read and written
// warp-striped (lane l touches vector l, l + 32, ...) so every instruction covers 512 contiguous
// bytes, and the transposition between the two layouts goes through a per-warp shared buffer, so
// it needs only __syncwarp, never a block barrier.

template <class T, int THREADS, int ITEMS>
struct TileShape {
  static constexpr int kWarps = THREADS / 32;
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  static constexpr int kVecsPerThread = ITEMS / kVec;
  // One 16-byte vector of padding per lane row: with a row pitch of ITEMS + kVec elements, the 8
  // lanes of a quarter-warp reading their rows as vectors hit 8 distinct 4-bank groups.
  static constexpr int kRow = ITEMS + kVec;
  static constexpr int kWarpItems = 32 * ITEMS;
  static constexpr int kWarpBuffer = 32 * kRow;
  static constexpr int64_t kItems = static_cast<int64_t>(THREADS) * ITEMS;
  static_assert(THREADS % 32 == 0, "whole warps");
  static_assert(ITEMS % kVec == 0, "items per thread must fill whole 16-byte vectors");
  using V = typename Vec16<T>::type;
};

// Loads the warp's 32 * ITEMS elements whose virtual positions start at `seg` into x[], lane l
// getting items l * ITEMS ... Positions outside [pre, end) read as zero (the sum's identity), so
// partial and unaligned tiles need no other special case. `vec`: the whole warp segment lies
// inside the array and is 16-byte aligned in `in`.
template <class T, int THREADS, int ITEMS, bool STREAM = false>
__device__ __forceinline__ void loadWarpItems(const T* __restrict__ in, int64_t seg, int64_t pre, int64_t end,
                                              bool vec, T* sw, int lane, T (&x)[ITEMS]) {
  using S = TileShape<T, THREADS, ITEMS>;
  using V = typename S::V;
  if (vec) {
    const V* src = reinterpret_cast<const V*>(in + (seg - pre));
    V v[S::kVecsPerThread];
#pragma unroll
    for (int j = 0; j < S::kVecsPerThread; ++j)  // all loads in flight first
      v[j] = STREAM ? __ldcs(src + j * 32 + lane) : src[j * 32 + lane];
#pragma unroll
    for (int j = 0; j < S::kVecsPerThread; ++j) {
      const int k = j * 32 + lane;
      *reinterpret_cast<V*>(sw + (k / S::kVecsPerThread) * S::kRow + (k % S::kVecsPerThread) * S::kVec) =
          v[j];
    }
  } else {
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int e = j * 32 + lane;
      const int64_t p = seg + e;
      sw[(e / ITEMS) * S::kRow + e % ITEMS] = (p >= pre && p < end) ? in[p - pre] : T(0);
    }
  }
  __syncwarp();
#pragma unroll
  for (int q = 0; q < S::kVecsPerThread; ++q)
    splitVec(*reinterpret_cast<const V*>(sw + lane * S::kRow + q * S::kVec), &x[q * S::kVec]);
  __syncwarp();  // the store rewrites this buffer
}

// The inverse of loadWarpItems: y[] (lane-consecutive) to global, positions outside [pre, end)
// skipped.
template <class T, int THREADS, int ITEMS, bool STREAM = false>
__device__ __forceinline__ void storeWarpItems(T* __restrict__ out, int64_t seg, int64_t pre, int64_t end,
                                               bool vec, T* sw, int lane, const T (&y)[ITEMS]) {
  using S = TileShape<T, THREADS, ITEMS>;
  using V = typename S::V;
#pragma unroll
  for (int q = 0; q < S::kVecsPerThread; ++q)
    *reinterpret_cast<V*>(sw + lane * S::kRow + q * S::kVec) = joinVec(&y[q * S::kVec]);
  __syncwarp();
  if (vec) {
    V* dst = reinterpret_cast<V*>(out + (seg - pre));
#pragma unroll
    for (int j = 0; j < S::kVecsPerThread; ++j) {
      const int k = j * 32 + lane;
      const V v = *reinterpret_cast<const V*>(sw + (k / S::kVecsPerThread) * S::kRow +
                                              (k % S::kVecsPerThread) * S::kVec);
      if (STREAM)
        __stcs(dst + j * 32 + lane, v);
      else
        dst[j * 32 + lane] = v;
    }
  } else {
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int e = j * 32 + lane;
      const int64_t p = seg + e;
      if (p >= pre && p < end) out[p - pre] = sw[(e / ITEMS) * S::kRow + e % ITEMS];
    }
  }
  __syncwarp();  // the next tile's load rewrites this buffer
}

template <class T>
__device__ __forceinline__ T warpInclusiveScan(T v, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const T up = __shfl_up_sync(kFullMask, v, d);
    if (lane >= d) v = up + v;
  }
  return v;
}

// Per-thread and per-warp part of a tile scan: the thread's total, its exclusive prefix inside
// the warp, and (from lane 31) the warp's total into warpTotals[warp].
template <class T, int ITEMS>
__device__ __forceinline__ T threadExclusiveInWarp(const T (&x)[ITEMS], int lane, int warp, T* warpTotals) {
  T total = x[0];
#pragma unroll
  for (int i = 1; i < ITEMS; ++i) total += x[i];
  const T inc = warpInclusiveScan(total, lane);
  if (lane == 31) warpTotals[warp] = inc;
  // Shifting the inclusive scan by one lane (rather than subtracting the thread's total) keeps
  // float results free of a cancellation error.
  const T exc = __shfl_up_sync(kFullMask, inc, 1);
  return lane == 0 ? T(0) : exc;
}

// Block totals after the barrier that follows threadExclusiveInWarp: the sum of the warps before
// `warp`, and the whole tile's sum. Every thread reads the few warp totals itself (broadcast reads)
// instead of one warp scanning them and a second barrier publishing the result.
template <class T, int WARPS>
__device__ __forceinline__ void warpPrefixAndTotal(const T* warpTotals, int warp, T& prefix, T& total) {
  prefix = T(0);
  total = T(0);
#pragma unroll
  for (int w = 0; w < WARPS; ++w) {
    const T v = warpTotals[w];
    if (w < warp) prefix += v;
    total += v;
  }
}

// x[] becomes its inclusive or exclusive scan starting from `running`. Exclusive output is the
// running sum before each item: the "shift by one" happens here, inside the thread, so out[0] = 0
// comes from tile 0's zero prefix and no element crosses a tile boundary.
template <class T, int ITEMS>
__device__ __forceinline__ void applyScan(T (&x)[ITEMS], T running, bool inclusive) {
  if (inclusive) {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      running += x[i];
      x[i] = running;
    }
  } else {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const T v = x[i];
      x[i] = running;
      running += v;
    }
  }
}

template <class T, int THREADS, int ITEMS>
struct TileSmem {
  using S = TileShape<T, THREADS, ITEMS>;
  alignas(16) T trans[S::kWarps][S::kWarpBuffer];
  T warpTotals[S::kWarps];
  T prefix;
  T aggregate;
  long long tile[2];
};

// ---------------------------------------------------------------------------------------------
// dtype dispatch. int32 is scanned as uint32: same bits under two's complement, and unsigned
// overflow is defined.

template <template <class> class F, class... Args>
cudaError_t dispatchScan(Dtype dtype, const void* in, void* out, Args... args) {
  switch (dtype) {
    case Dtype::Float32:
      return F<float>::run(static_cast<const float*>(in), static_cast<float*>(out), args...);
    case Dtype::Float64:
      return F<double>::run(static_cast<const double*>(in), static_cast<double*>(out), args...);
    case Dtype::Int32:
    case Dtype::Uint32:
      return F<uint32_t>::run(static_cast<const uint32_t*>(in), static_cast<uint32_t*>(out), args...);
  }
  return cudaErrorInvalidValue;
}

}  // namespace detail
}  // namespace scan
}  // namespace ck
