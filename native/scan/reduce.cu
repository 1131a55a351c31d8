// Reductions (sum, min, max) to one number: a per-block warp-shuffle reduction to partials, then one
// block combines them, with no atomics, so the result is the same bits on every run. `reduce` and the
// stencil's residual and checksum use it.
#include <cmath>
#include <cstdint>

#include "core/block_reduce.cuh"
#include "core/math.h"
#include "core/pool.h"
#include "scan/scan.h"
#include "scan/tile.cuh"

namespace ck {
namespace scan {
namespace detail {

// ---------------------------------------------------------------------------------------------
// reduce

__device__ __forceinline__ bool isNan(float v) {
  return v != v;
}
__device__ __forceinline__ bool isNan(double v) {
  return v != v;
}
__device__ __forceinline__ bool isNan(int32_t) {
  return false;
}
__device__ __forceinline__ bool isNan(uint32_t) {
  return false;
}

template <class T>
struct Limits;
template <>
struct Limits<float> {
  static __device__ float lowest() { return -INFINITY; }
  static __device__ float highest() { return INFINITY; }
};
template <>
struct Limits<double> {
  static __device__ double lowest() { return -INFINITY; }
  static __device__ double highest() { return INFINITY; }
};
template <>
struct Limits<int32_t> {
  static __device__ int32_t lowest() { return INT_MIN; }
  static __device__ int32_t highest() { return INT_MAX; }
};
template <>
struct Limits<uint32_t> {
  static __device__ uint32_t lowest() { return 0u; }
  static __device__ uint32_t highest() { return UINT_MAX; }
};

// Float sums in double (the contract); integer sums in uint32 so they wrap like the scan.
template <class T>
struct SumToDouble {
  using Acc = double;
  static __device__ Acc identity() { return 0.0; }
  static __device__ Acc lift(T v) { return static_cast<double>(v); }
  static __device__ Acc combine(Acc a, Acc b) { return a + b; }
  static __device__ double empty() { return 0.0; }
};
struct SumWrapped {
  using Acc = uint32_t;
  static __device__ Acc identity() { return 0u; }
  static __device__ Acc lift(uint32_t v) { return v; }
  static __device__ Acc combine(Acc a, Acc b) { return a + b; }
  static __device__ double empty() { return 0.0; }
};
// NaN wins (like Math.min): the first operand is kept when it is NaN, the second is returned when
// the comparison fails, which it does when the second is NaN.
template <class T>
struct MinOf {
  using Acc = T;
  static __device__ Acc identity() { return Limits<T>::highest(); }
  static __device__ Acc lift(T v) { return v; }
  static __device__ Acc combine(Acc a, Acc b) { return (isNan(a) || a < b) ? a : b; }
  static __device__ double empty() { return INFINITY; }
};
template <class T>
struct MaxOf {
  using Acc = T;
  static __device__ Acc identity() { return Limits<T>::lowest(); }
  static __device__ Acc lift(T v) { return v; }
  static __device__ Acc combine(Acc a, Acc b) { return (isNan(a) || a > b) ? a : b; }
  static __device__ double empty() { return -INFINITY; }
};

constexpr int kReduceThreads = 256;
constexpr int kReduceUnroll = 4;  // independent 16-byte loads in flight per thread

// Grid-stride over the 16-byte-aligned body; the few unaligned head and tail elements go to the
// first threads of the grid. One partial per block: no atomics (there is no atomicMin for double,
// and a second pass keeps the result deterministic).
template <class T, class Op>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_to_block_partials_kernel(const T* __restrict__ in, int64_t n, int64_t head,
                                    typename Op::Acc* partials) {
  using Acc = typename Op::Acc;
  using V = typename Vec16<T>::type;
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  __shared__ Acc shared[kReduceThreads / 32];
  const int64_t vectors = (n - head) / kVec;
  const V* body = reinterpret_cast<const V*>(in + head);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  Acc acc = Op::identity();
  int64_t v = g;
  for (; v + (kReduceUnroll - 1) * stride < vectors; v += kReduceUnroll * stride) {
    V r[kReduceUnroll];
#pragma unroll
    for (int u = 0; u < kReduceUnroll; ++u) r[u] = body[v + u * stride];
#pragma unroll
    for (int u = 0; u < kReduceUnroll; ++u) {
      T e[kVec];
      splitVec(r[u], e);
#pragma unroll
      for (int k = 0; k < kVec; ++k) acc = Op::combine(acc, Op::lift(e[k]));
    }
  }
  for (; v < vectors; v += stride) {
    T e[kVec];
    splitVec(body[v], e);
#pragma unroll
    for (int k = 0; k < kVec; ++k) acc = Op::combine(acc, Op::lift(e[k]));
  }
  if (g < head) acc = Op::combine(acc, Op::lift(in[g]));
  const int64_t tail = head + vectors * kVec;
  if (g < n - tail) acc = Op::combine(acc, Op::lift(in[tail + g]));
  acc = blockReduce<Op>(acc, shared, Op::identity());
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

template <class Acc>
__device__ __forceinline__ double accToDouble(Acc a, bool) {
  return static_cast<double>(a);
}
template <>
__device__ __forceinline__ double accToDouble<uint32_t>(uint32_t a, bool asSigned) {
  return asSigned ? static_cast<double>(static_cast<int32_t>(a)) : static_cast<double>(a);
}

template <class Op>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_partials_to_result_kernel(const typename Op::Acc* partials, int count, bool asSigned,
                                     double* result) {
  using Acc = typename Op::Acc;
  __shared__ Acc shared[kReduceThreads / 32];
  Acc acc = Op::identity();
  for (int i = threadIdx.x; i < count; i += blockDim.x) acc = Op::combine(acc, partials[i]);
  acc = blockReduce<Op>(acc, shared, Op::identity());
  if (threadIdx.x == 0) *result = count == 0 ? Op::empty() : accToDouble(acc, asSigned);
}

template <class T, class Op>
cudaError_t reduceWith(const T* in, size_t n, bool asSigned, double* result, cudaStream_t stream) {
  using Acc = typename Op::Acc;
  if (n == 0) {
    reduce_partials_to_result_kernel<Op><<<1, kReduceThreads, 0, stream>>>(nullptr, 0, asSigned, result);
    return cudaGetLastError();
  }
  constexpr int64_t kVec = 16 / sizeof(T);
  const uintptr_t addr = reinterpret_cast<uintptr_t>(in);
  int64_t head = static_cast<int64_t>(((16 - addr % 16) % 16) / sizeof(T));
  if (addr % sizeof(T) != 0) return cudaErrorMisalignedAddress;
  if (head > static_cast<int64_t>(n)) head = static_cast<int64_t>(n);
  const int64_t vectors = (static_cast<int64_t>(n) - head) / kVec;

  int device = 0, sms = 0, perSm = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess)
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, reduce_to_block_partials_kernel<T, Op>,
                                                        kReduceThreads, 0);
  if (err != cudaSuccess) return err;
  // Enough blocks to fill the device once; fewer when there is little work. At least one block,
  // which also covers the head and tail (at most 2 * kVec - 2 elements).
  const int64_t wanted = ceilDiv(vectors > 0 ? vectors : 1, kReduceThreads);
  const int64_t cap = static_cast<int64_t>(sms) * (perSm > 0 ? perSm : 1);
  const int blocks = static_cast<int>(wanted < cap ? wanted : cap);

  Acc* partials = nullptr;
  err = poolMalloc(&partials, static_cast<size_t>(blocks) * sizeof(Acc), stream);
  if (err != cudaSuccess) return err;
  reduce_to_block_partials_kernel<T, Op>
      <<<blocks, kReduceThreads, 0, stream>>>(in, static_cast<int64_t>(n), head, partials);
  err = cudaGetLastError();
  if (err == cudaSuccess) {
    reduce_partials_to_result_kernel<Op>
        <<<1, kReduceThreads, 0, stream>>>(partials, blocks, asSigned, result);
    err = cudaGetLastError();
  }
  const cudaError_t freeErr = poolFree(partials, stream);
  return err != cudaSuccess ? err : freeErr;
}

template <class T>
cudaError_t reduceMinMax(const T* in, size_t n, ReduceOp op, double* result, cudaStream_t stream) {
  return op == ReduceOp::Min ? reduceWith<T, MinOf<T>>(in, n, false, result, stream)
                             : reduceWith<T, MaxOf<T>>(in, n, false, result, stream);
}

}  // namespace detail

cudaError_t launchReduce(const void* in, Dtype dtype, size_t n, ReduceOp op, double* result,
                         cudaStream_t stream) {
  using namespace detail;
  if (op != ReduceOp::Sum && op != ReduceOp::Min && op != ReduceOp::Max) return cudaErrorInvalidValue;
  switch (dtype) {
    case Dtype::Float32: {
      const float* p = static_cast<const float*>(in);
      return op == ReduceOp::Sum ? reduceWith<float, SumToDouble<float>>(p, n, false, result, stream)
                                 : reduceMinMax(p, n, op, result, stream);
    }
    case Dtype::Float64: {
      const double* p = static_cast<const double*>(in);
      return op == ReduceOp::Sum ? reduceWith<double, SumToDouble<double>>(p, n, false, result, stream)
                                 : reduceMinMax(p, n, op, result, stream);
    }
    case Dtype::Int32:
      if (op == ReduceOp::Sum)
        return reduceWith<uint32_t, SumWrapped>(static_cast<const uint32_t*>(in), n, true, result, stream);
      return reduceMinMax(static_cast<const int32_t*>(in), n, op, result, stream);
    case Dtype::Uint32:
      if (op == ReduceOp::Sum)
        return reduceWith<uint32_t, SumWrapped>(static_cast<const uint32_t*>(in), n, false, result, stream);
      return reduceMinMax(static_cast<const uint32_t*>(in), n, op, result, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace scan
}  // namespace ck
