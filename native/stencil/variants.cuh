// The launchers run.cu's sweep loop calls, one group per variant file (float and double each).
// Every launcher enqueues one pass (`p.sweeps` sweeps) on `stream` and returns cudaGetLastError().
#pragma once

#include <cuda_runtime_api.h>

#include "stencil/stencil.h"
#include "stencil/sweep.cuh"

namespace ck {
namespace stencil {
namespace detail {

// 1_basic.cu: one thread per cell, 32×16 blocks.
template <typename T>
cudaError_t launchBasic(const T* src, T* dst, long long rows, long long cols, const Weights<T>& w, State* st,
                        const Pass& p, double tolerance, cudaStream_t stream);
// 1_basic.cu: max |a − b| over n cells into st->finalResidual, on `blocks` blocks of 256 threads
// (basic's flag is not the residual's value).
template <typename T>
cudaError_t launchMaxAbsDiff(const T* a, const T* b, long long n, unsigned blocks, State* st,
                             cudaStream_t stream);

// 2_tiled.cu: the tiled kernel's resident blocks per SM, and one pass on `blocks` persistent blocks
// (at most one per tile).
template <typename T>
cudaError_t tiledBlocksPerSm(int* perSm);
template <typename T>
cudaError_t launchTiled(const T* src, T* dst, long long rows, long long cols, long long blocks,
                        const Weights<T>& w, State* st, const Pass& p, double tolerance, cudaStream_t stream);

// 3_temporal.cu: the temporally blocked kernel, one instantiation per block shape.
template <typename T>
using FastFn = void (*)(const T*, T*, long long, long long, Weights<T>, State*, Pass, double, bool, bool);

template <typename T>
struct FastKernel {
  const char* name = nullptr;
  FastFn<T> fn = nullptr;
  dim3 block;
  size_t sharedBytes = 0;
  int tx = 0, ty = 0;  // output tile
};

// What a run of `fast` launches: the shape, the persistent blocks, whether the rows allow 16-byte
// accesses and whether a tile can wrap more than once around the grid.
template <typename T>
struct FastPlan {
  FastKernel<T> kernel;
  long long blocks = 1;
  bool vectors = false, generalWrap = true;
};

// Picks the shape (`variant`, an entry of fastKernelAt, or −1 for the shipped choice: the first
// whose shared memory the device allows) and sizes the launch for `pb` on the current device.
template <typename T>
cudaError_t prepareFast(int device, int sms, const Problem& pb, const T* in, const T* a, const T* b,
                        int variant, FastPlan<T>* plan);
template <typename T>
cudaError_t launchFast(const FastPlan<T>& plan, const T* src, T* dst, long long rows, long long cols,
                       const Weights<T>& w, State* st, const Pass& p, double tolerance, cudaStream_t stream);

}  // namespace detail
}  // namespace stencil
}  // namespace ck
