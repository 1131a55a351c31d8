// What both methods do with the gradients (gradients.h): column sums for the bias gradients, the
// fold of the per-stream gradient sets, and the momentum update with η and α in constant memory.
#include <algorithm>
#include <mutex>

#include "core/failure.h"
#include "core/launch.h"
#include "mlp/gradients.h"

namespace ck {
namespace mlp {
namespace {

__constant__ float cEta;
__constant__ float cAlpha;

// Bias gradients: column sums of δ (rows × n), deterministic — partial sums per row chunk, then a
// second pass over the chunks.

__global__ void __launch_bounds__(256)
    colsumPartial(const float* __restrict__ D, int64_t rows, int64_t n, float* __restrict__ partial) {
  __shared__ float s[8][33];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  float sum = 0.0f;
  if (c < n)
    for (int64_t r = static_cast<int64_t>(blockIdx.y) * 8 + threadIdx.y; r < rows;
         r += static_cast<int64_t>(gridDim.y) * 8)
      sum += D[r * n + c];
  s[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < n) {
    float total = 0.0f;
#pragma unroll
    for (int y = 0; y < 8; ++y) total += s[y][threadIdx.x];
    partial[blockIdx.y * n + c] = total;
  }
}

__global__ void colsumFinal(const float* __restrict__ partial, int chunks, int64_t n,
                            float* __restrict__ out) {
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < n;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float total = 0.0f;
    for (int g = 0; g < chunks; ++g) total += partial[g * n + c];
    out[c] = total;
  }
}

// The update: g = Σ over the gradient sets; ΔW = −η·g + α·ΔW_prev; W += ΔW (η, α from constant memory).

__global__ void update(float* __restrict__ W, float* __restrict__ prev, const float* __restrict__ grads,
                       int64_t count, int sets) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float g = grads[i];
    for (int s = 1; s < sets; ++s) g += grads[s * count + i];
    const float d = -cEta * g + cAlpha * prev[i];
    prev[i] = d;
    W[i] += d;
  }
}

// Data parallel: the gradient sets folded into the first, in the update's order, before the sum over ranks.
__global__ void foldSets(float* __restrict__ grads, int64_t count, int sets) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float g = grads[i];
    for (int s = 1; s < sets; ++s) g += grads[s * count + i];
    grads[i] = g;
  }
}

// η and α are set and the update enqueued under one lock, so that two trainings on one device
// (worker threads) cannot interleave their constant-memory writes between the two.
std::mutex& updateMutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void columnSums(const float* D, int64_t rows, int64_t n, float* partial, float* out, cudaStream_t stream) {
  const int chunks =
      static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kColsumChunks, (rows + 255) / 256)));
  colsumPartial<<<dim3(static_cast<unsigned>((n + 31) / 32), chunks), dim3(32, 8), 0, stream>>>(D, rows, n,
                                                                                                partial);
  CK_CUDA(cudaGetLastError());
  colsumFinal<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(partial, chunks, n, out);
  CK_CUDA(cudaGetLastError());
}

void foldGradientSets(float* grads, int64_t count, int sets, cudaStream_t stream) {
  unsigned blocks = 0;
  CK_CUDA(gridStrideBlocks(static_cast<size_t>(count), 256, &blocks));
  foldSets<<<blocks, 256, 0, stream>>>(grads, count, sets);
  CK_CUDA(cudaGetLastError());
}

void enqueueUpdate(const Net& net, const Buffers& buf, const float* grads, int sets, float eta, float alpha,
                   cudaStream_t stream) {
  const int64_t count = net.parameterCount();
  unsigned blocks = 0;
  CK_CUDA(gridStrideBlocks(static_cast<size_t>(count), 256, &blocks));
  std::lock_guard<std::mutex> lock(updateMutex());
  CK_CUDA(cudaMemcpyToSymbolAsync(cEta, &eta, sizeof(float), 0, cudaMemcpyHostToDevice, stream));
  CK_CUDA(cudaMemcpyToSymbolAsync(cAlpha, &alpha, sizeof(float), 0, cudaMemcpyHostToDevice, stream));
  update<<<blocks, 256, 0, stream>>>(buf.params, buf.momentum, grads, count, sets);
  CK_CUDA(cudaGetLastError());
}

}  // namespace mlp
}  // namespace ck
