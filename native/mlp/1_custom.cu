// MLP step 1, `custom`: the report's design. Our tiled GEMM (64×64 output tiles, 16 deep, 4×4 outputs
// per thread) with the bias, activation, output error and derivative fused into its epilogues
// (epilogues.cuh); the patterns of a batch split over `streams` streams, each with its own gradient
// set, summed in the update kernel (gradients.cu); the targets read through the read-only data path;
// the error by warp-shuffle block reduction and one atomic add per block.
//
// H100, one full-batch epoch, sigmoid (bench/results, commit 2ccd49a): [784, 1024, 1024, 10] × 60000
// patterns 34.34 ms (19.51 TFLOP/s; the cuBLAS method 13.37 ms), 27.25 ms on 4 streams (24.59 TFLOP/s:
// the 10-wide output layer leaves most of the GPU idle on one stream); [4096, 4096, 4096, 4096] ×
// 16384 191.2 ms (25.88 TFLOP/s; cuBLAS 87.66 ms), 185.4 ms on 4 streams.
// Bench method: custom, custom-s2, custom-s4
#include <algorithm>
#include <cstdint>

#include "core/failure.h"
#include "mlp/epilogues.cuh"
#include "mlp/forward.cuh"
#include "mlp/gradients.h"
#include "mlp/steps.h"

namespace ck {
namespace mlp {
namespace {

constexpr int kTile = 64;  // output tile of the custom GEMM (kTile × kTile)
constexpr int kTileK = 16;
constexpr int kGemmThreads = 256;  // 16 × 16 threads, 4 × 4 outputs each

// The custom tiled GEMM: C (M×N) = op(A)·op(B), row-major, handed element by element to an
// epilogue. op(A) = A (M×K, lda) or, with TA, Aᵀ where A is stored K×M; op(B) = B (K×N, ldb) or,
// with TB, Bᵀ where B is stored N×K. Tiles of kTile × kTile outputs, kTileK deep, staged in shared
// memory k-major; thread (ty, tx) owns rows ty + 16i and columns tx + 16j, so the shared reads are
// broadcasts (A) and 16 consecutive words (B), and the epilogue's stores are coalesced. The column tiles
// are walked with a stride of gridDim.y: grid.y stops at 65535, 4,194,240 columns, while a layer may
// be up to 2^31 − 1 wide.

template <bool TA, bool TB, class Epilogue>
__global__ void __launch_bounds__(kGemmThreads)
    tileGemm(int64_t M, int64_t N, int64_t K, const float* __restrict__ A, int64_t lda,
             const float* __restrict__ B, int64_t ldb, Epilogue ep) {
  __shared__ float As[kTileK][kTile + 4];
  __shared__ float Bs[kTileK][kTile + 4];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kTile;
  float err = 0.0f;
  for (int64_t n0 = static_cast<int64_t>(blockIdx.y) * kTile; n0 < N;
       n0 += static_cast<int64_t>(gridDim.y) * kTile) {
    float acc[4][4] = {};
    for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        // Consecutive threads read consecutive addresses of whichever layout A and B have.
        const int am = TA ? t % kTile : t / kTileK + 16 * i, ak = TA ? t / kTile + 4 * i : t % kTileK;
        const int64_t gm = m0 + am, gak = k0 + ak;
        float a = 0.0f;
        if (gm < M && gak < K) a = TA ? A[gak * lda + gm] : A[gm * lda + gak];
        As[ak][am] = a;
        const int bn = TB ? t / kTileK + 16 * i : t % kTile, bk = TB ? t % kTileK : t / kTile + 4 * i;
        const int64_t gn = n0 + bn, gbk = k0 + bk;
        float b = 0.0f;
        if (gn < N && gbk < K) b = TB ? B[gn * ldb + gbk] : B[gbk * ldb + gn];
        Bs[bk][bn] = b;
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kTileK; ++k) {
        float a[4], b[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) a[i] = As[k][ty + 16 * i];
#pragma unroll
        for (int j = 0; j < 4; ++j) b[j] = Bs[k][tx + 16 * j];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
      __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t r = m0 + ty + 16 * i, c = n0 + tx + 16 * j;
        if (r < M && c < N) err += ep(r, c, acc[i][j]);
      }
  }
  if constexpr (Epilogue::kError) {
    const float sum = blockSum(err);
    if (t == 0 && ep.error != nullptr && sum != 0.0f) atomicAdd(ep.error, static_cast<double>(sum));
  }
}

template <bool TA, bool TB, class Epilogue>
void launchGemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                const Epilogue& ep, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  const dim3 grid(static_cast<unsigned>((M + kTile - 1) / kTile),
                  static_cast<unsigned>(std::min<int64_t>((N + kTile - 1) / kTile, 65535)));
  tileGemm<TA, TB, Epilogue><<<grid, kGemmThreads, 0, stream>>>(M, N, K, A, lda, B, ldb, ep);
  CK_CUDA(cudaGetLastError());
}

// One layer of the forward pass (forward.cuh): the GEMM with the epilogue fused; `out` is the
// epilogue's.
struct CustomLayer {
  template <class Epilogue>
  void operator()(int64_t rows, int64_t nOut, int64_t nIn, const float* in, const float* W, float* out,
                  const Epilogue& ep, cudaStream_t stream) const {
    launchGemm<false, false>(rows, nOut, nIn, in, nIn, W, nOut, ep, stream);
  }
};

// The custom method's backward pass over one stream's rows: this stream's gradient set.
void backwardCustom(const Step& s, const float* X, int64_t r0, int64_t rows, float* grads, float* partial,
                    cudaStream_t stream) {
  const Net& net = s.net;
  for (int l = net.layers() - 1; l >= 0; --l) {
    const int64_t nIn = net.sizes[l], nOut = net.sizes[l + 1];
    const float* H = l == 0 ? X + r0 * nIn : s.buf.workspace + s.lay.act[l] + r0 * nIn;
    const float* D = s.buf.workspace + s.lay.delta[l + 1] + r0 * nOut;
    launchGemm<true, false>(nIn, nOut, rows, H, nIn, D, nOut,
                            StoreEpilogue{grads + net.weightOffset(l), nOut}, stream);
    columnSums(D, rows, nOut, partial, grads + net.biasOffset(l), stream);
    if (l > 0) {
      float* Dl = s.buf.workspace + s.lay.delta[l] + r0 * nIn;
      launchGemm<false, true>(rows, nIn, nOut, D, nOut, s.buf.params + net.weightOffset(l), nOut,
                              BackEpilogue{Dl, H, nIn, net.hidden}, stream);
    }
  }
}

}  // namespace

void stepCustom(const Step& s, const float* X, const float* T, int64_t rows, int streams, int device,
                cudaStream_t stream, const Events& ev, float eta, float alpha, const GradientSum& sum) {
  const int active = static_cast<int>(std::min<int64_t>(streams, rows));
  const int64_t per = rows / active, extra = rows % active;
  float* grads = s.buf.workspace + s.lay.grads;
  if (active > 1) CK_CUDA(cudaEventRecord(ev[0], stream));
  SideResources* r = active > 1 ? &side(device) : nullptr;
  for (int i = 0; i < active; ++i) {
    const int64_t r0 = i * per + std::min<int64_t>(i, extra), n = per + (i < extra ? 1 : 0);
    cudaStream_t st = active > 1 ? r->streams[i] : stream;
    if (active > 1) CK_CUDA(cudaStreamWaitEvent(st, ev[0], 0));
    float* Y = s.buf.workspace + s.lay.act[s.net.layers()];
    forwardRows(s, X, T, Y, r0, n, true, CustomLayer{}, st);
    backwardCustom(
        s, X, r0, n, grads + i * s.net.parameterCount(),
        s.buf.workspace + s.lay.partials + static_cast<int64_t>(i) * kColsumChunks * s.net.widest(), st);
    if (active > 1) {
      CK_CUDA(cudaEventRecord(ev[1 + i], st));
      CK_CUDA(cudaStreamWaitEvent(stream, ev[1 + i], 0));
    }
  }
  if (sum) {
    const int64_t count = s.net.parameterCount();
    if (active > 1) foldGradientSets(grads, count, active, stream);
    sum(grads, count, stream);
    enqueueUpdate(s.net, s.buf, grads, 1, eta, alpha, stream);
  } else {
    enqueueUpdate(s.net, s.buf, grads, active, eta, alpha, stream);
  }
}

void forwardCustom(const Step& s, const float* X, const float* T, float* Y, int64_t rows,
                   cudaStream_t stream) {
  forwardRows(s, X, T, Y, 0, rows, false, CustomLayer{}, stream);
}

}  // namespace mlp
}  // namespace ck
