// Padding: every variant runs on a matrix padded to a multiple of its block factor, whose extra
// vertices reach nothing; run() (run.cc) pads the whole matrix, the multi-GPU schemes (multi.cc) one
// row band per device.
#include <cstdint>

#include "apsp/apsp.h"
#include "apsp/padding.h"
#include "core/launch.h"

namespace ck {
namespace apsp {
namespace {

constexpr int kThreads = 256;

__global__ void apsp_pad_kernel(const int32_t* __restrict__ in, int32_t* __restrict__ d,
                                int32_t* __restrict__ next, int32_t* __restrict__ hops, int64_t n,
                                int64_t np) {
  const int64_t total = np * np;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / np, j = e - i * np;
    const int32_t v = i == j ? 0 : (i < n && j < n ? in[i * n + j] : kInf);
    d[e] = v;
    if (next) {
      next[e] = v < kInf ? static_cast<int32_t>(j) : -1;
      hops[e] = i == j ? 0 : 1;
    }
  }
}

__global__ void apsp_unpad_kernel(const int32_t* __restrict__ src, int32_t* __restrict__ dst, int64_t n,
                                  int64_t np) {
  const int64_t total = n * n;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / n, j = e - i * n;
    dst[e] = src[i * np + j];
  }
}

// A band of the padded matrix: rows row0 … row0 + rows − 1 of np columns, from `in` (its row row0,
// leading dimension n; rows at or past n read nothing).
__global__ void apsp_pad_rows_kernel(const int32_t* __restrict__ in, int32_t* __restrict__ d, int64_t n,
                                     int64_t np, int64_t row0, int64_t rows) {
  const int64_t total = rows * np;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = e / np, j = e - r * np, i = row0 + r;
    d[e] = i == j ? 0 : (i < n && j < n ? in[r * n + j] : kInf);
  }
}

__global__ void apsp_unpad_rows_kernel(const int32_t* __restrict__ src, int32_t* __restrict__ dst, int64_t n,
                                       int64_t np, int64_t rows) {
  const int64_t total = rows * n;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / n, j = e - i * n;
    dst[e] = src[i * np + j];
  }
}

cudaError_t gridFor(int64_t length, unsigned* blocks) {
  return gridStrideBlocks(static_cast<size_t>(length), kThreads, blocks);
}

}  // namespace

cudaError_t launchPad(const int32_t* in, int32_t* d, int32_t* next, int32_t* hops, int64_t n, int64_t np,
                      cudaStream_t stream) {
  unsigned blocks = 0;
  const cudaError_t err = gridFor(np * np, &blocks);
  if (err != cudaSuccess) return err;
  apsp_pad_kernel<<<blocks, kThreads, 0, stream>>>(in, d, next, hops, n, np);
  return cudaGetLastError();
}

cudaError_t launchUnpad(const int32_t* src, int32_t* dst, int64_t n, int64_t np, cudaStream_t stream) {
  unsigned blocks = 0;
  const cudaError_t err = gridFor(n * n, &blocks);
  if (err != cudaSuccess) return err;
  apsp_unpad_kernel<<<blocks, kThreads, 0, stream>>>(src, dst, n, np);
  return cudaGetLastError();
}

cudaError_t launchPadRows(const int32_t* in, int32_t* band, int64_t n, int64_t np, int64_t row0, int64_t rows,
                          cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  unsigned blocks = 0;
  cudaError_t err = gridFor(rows * np, &blocks);
  if (err != cudaSuccess) return err;
  apsp_pad_rows_kernel<<<blocks, kThreads, 0, stream>>>(in, band, n, np, row0, rows);
  return cudaGetLastError();
}

cudaError_t launchUnpadRows(const int32_t* band, int32_t* out, int64_t n, int64_t np, int64_t rows,
                            cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  unsigned blocks = 0;
  cudaError_t err = gridFor(rows * n, &blocks);
  if (err != cudaSuccess) return err;
  apsp_unpad_rows_kernel<<<blocks, kThreads, 0, stream>>>(band, out, n, np, rows);
  return cudaGetLastError();
}

}  // namespace apsp
}  // namespace ck
