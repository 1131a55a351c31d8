// Stencil step 2, `tiled`. Over 1_basic.cu: 32×16 output cells per tile staged in shared memory
// with a one-cell halo (loaded by modular index, so the torus needs no halo exchange), persistent
// blocks looping over tiles (as many as the device keeps resident), and the exact residual of every
// sweep reduced per block with one atomic.
//
// H100, 100 sweeps of box9 (bench/results, commit d76d5ab): float32 8192² 72.90 ms (736.5 GB/s;
// basic 1287 ms), 16384² 302.4 ms (710.2 GB/s); float64 8192² 83.53 ms (1285 GB/s).
// Bench method: tiled
#include "stencil/sweep.cuh"
#include "stencil/variants.cuh"

namespace ck {
namespace stencil {
namespace detail {

constexpr int kTileX = 32, kTileY = 16;

template <typename T>
__global__ void __launch_bounds__(kTileX* kTileY)
    stencil_tiled_kernel(const T* __restrict__ in, T* __restrict__ out, long long rows, long long cols,
                         Weights<T> w, State* st, Pass pass, double tolerance) {
  __shared__ T tile[kTileY + 2][kTileX + 2];
  __shared__ T scratch[32];
  if (passSkipped<T>(st, pass, tolerance)) return;
  const long long tilesX = (cols + kTileX - 1) / kTileX;
  const long long tiles = tilesX * ((rows + kTileY - 1) / kTileY);
  const int tid = threadIdx.y * kTileX + threadIdx.x;
  T m = 0;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    const long long y0 = (t / tilesX) * kTileY, x0 = (t % tilesX) * kTileX;
    for (int k = tid; k < (kTileY + 2) * (kTileX + 2); k += kTileX * kTileY) {
      const int r = k / (kTileX + 2), c = k % (kTileX + 2);
      const long long gy = (y0 + r - 1 + rows) % rows, gx = (x0 + c - 1 + cols) % cols;
      tile[r][c] = in[gy * cols + gx];
    }
    __syncthreads();
    const long long gy = y0 + threadIdx.y, gx = x0 + threadIdx.x;
    if (gy < rows && gx < cols) {
      const int r = threadIdx.y + 1, c = threadIdx.x + 1;
      const T old = tile[r][c];
      const T v = applyWeights(w, tile[r - 1][c - 1], tile[r - 1][c], tile[r - 1][c + 1], tile[r][c - 1], old,
                               tile[r][c + 1], tile[r + 1][c - 1], tile[r + 1][c], tile[r + 1][c + 1]);
      out[gy * cols + gx] = v;
      m = maxKeepNaN(m, v > old ? v - old : old - v);
    }
    __syncthreads();
  }
  m = blockReduce<MaxKeepNaNOp>(m, scratch, T(0));
  if (tid == 0) atomicMax(&st->residual[pass.index % 3][0], toBits(m));
}

template <typename T>
cudaError_t tiledBlocksPerSm(int* perSm) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(perSm, stencil_tiled_kernel<T>, kTileX * kTileY, 0);
}

template <typename T>
cudaError_t launchTiled(const T* src, T* dst, long long rows, long long cols, long long blocks,
                        const Weights<T>& w, State* st, const Pass& p, double tolerance,
                        cudaStream_t stream) {
  const long long tiles = ((cols + kTileX - 1) / kTileX) * ((rows + kTileY - 1) / kTileY);
  const unsigned n = static_cast<unsigned>(tiles < blocks ? tiles : blocks);
  stencil_tiled_kernel<T><<<n, dim3(kTileX, kTileY), 0, stream>>>(src, dst, rows, cols, w, st, p, tolerance);
  return cudaGetLastError();
}

template cudaError_t tiledBlocksPerSm<float>(int* perSm);
template cudaError_t tiledBlocksPerSm<double>(int* perSm);
template cudaError_t launchTiled<float>(const float* src, float* dst, long long rows, long long cols,
                                        long long blocks, const Weights<float>& w, State* st, const Pass& p,
                                        double tolerance, cudaStream_t stream);
template cudaError_t launchTiled<double>(const double* src, double* dst, long long rows, long long cols,
                                         long long blocks, const Weights<double>& w, State* st, const Pass& p,
                                         double tolerance, cudaStream_t stream);

}  // namespace detail
}  // namespace stencil
}  // namespace ck
