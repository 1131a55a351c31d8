// MLP, the library method `cublas`: cublasSgemm (TF32 off) per layer with our fused bias+activation /
// output / derivative kernels (epilogues.cuh, run element-wise after each product); with streams > 1
// the weight-gradient GEMMs run on a side stream beside the input-gradient ones.
//
// H100, one full-batch epoch, sigmoid (bench/results, commit 2ccd49a): [784, 1024, 1024, 10] × 60000
// patterns 13.37 ms (50.14 TFLOP/s; PyTorch 2.11 on the same epoch 13.37 ms), 13.03 ms on 2 streams;
// [4096, 4096, 4096, 4096] × 16384 87.66 ms (56.44 TFLOP/s; PyTorch 89.04 ms), 86.31 ms on 2
// streams. cuBLAS SGEMM on the nets' own GEMM shapes alone took 14.43 and 97.04 ms.
// Bench method: cublas, cublas-s2
#include <algorithm>
#include <cstdint>
#include <mutex>

#include "core/cublas.h"
#include "core/failure.h"
#include "core/launch.h"
#include "mlp/epilogues.cuh"
#include "mlp/forward.cuh"
#include "mlp/gradients.h"
#include "mlp/steps.h"
#include "mlp/streams.h"

namespace ck {
namespace mlp {
namespace {

// Element-wise kernels of the cuBLAS method (the custom method fuses these into its epilogues).

template <class Epilogue>
__global__ void __launch_bounds__(256) elementwise(int64_t rows, int64_t n, const float* Z, Epilogue ep) {
  // Z holds the GEMM result (rows × n, ld n), which the epilogue may overwrite in place (so no
  // __restrict__); block (32, 8) walks a 32-column strip down the rows.
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  float err = 0.0f;
  if (c < n)
    for (int64_t r = static_cast<int64_t>(blockIdx.y) * 8 + threadIdx.y; r < rows;
         r += static_cast<int64_t>(gridDim.y) * 8)
      err += ep(r, c, Z[r * n + c]);
  if constexpr (Epilogue::kError) {
    const float sum = blockSum(err);
    if (threadIdx.x == 0 && threadIdx.y == 0 && ep.error != nullptr && sum != 0.0f)
      atomicAdd(ep.error, static_cast<double>(sum));
  }
}

template <class Epilogue>
void launchElementwise(int64_t rows, int64_t n, const float* Z, const Epilogue& ep, cudaStream_t stream) {
  if (rows == 0 || n == 0) return;
  unsigned blocks = 0;
  CK_CUDA(gridStrideBlocks(static_cast<size_t>(rows * n), 256, &blocks));
  const int64_t strips = (n + 31) / 32;
  const int64_t perStrip =
      std::max<int64_t>(1, std::min<int64_t>((blocks + strips - 1) / strips, (rows + 7) / 8));
  const dim3 grid(static_cast<unsigned>(strips), static_cast<unsigned>(std::min<int64_t>(perStrip, 65535)));
  elementwise<Epilogue><<<grid, dim3(32, 8), 0, stream>>>(rows, n, Z, ep);
  CK_CUDA(cudaGetLastError());
}

// The second cuBLAS handle of `device`, bound to its first side stream; the caller holds
// side(device).handleMutex while using it.
cublas::Handle sideHandle(int device) {
  SideResources& r = side(device);
  if (r.sideHandle == nullptr) {
    const cublas::Api& a = cublas::api();
    cublas::Handle h = nullptr;
    CK_CUBLAS(a.create(&h));
    CK_CUBLAS(a.setStream(h, r.streams[0]));
    CK_CUBLAS(a.setMathMode(h, cublas::Math::Default));
    r.sideHandle = h;
  }
  return r.sideHandle;
}

// Row-major C (M×N) = op(A)·op(B) with cublasSgemm on column-major storage: Cᵀ = op(B)ᵀ·op(A)ᵀ. K
// (the batch's rows for the weight gradient) goes in chunks, accumulating into C (core/cublas.h: long
// K went wrong inside cuBLAS's int range): chunk k0.. is A's rows k0.. when A is transposed (stored
// K×M), else its columns, and likewise for B (stored N×K when transposed).
void rowMajorSgemm(cublas::Handle h, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A,
                   int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  const cublas::Api& a = cublas::api();
  const float one = 1.0f;
  cublas::forEachKChunk(K, cublas::kMaxKChunk, [&](int64_t k0, int kc, double beta) {
    const float b = static_cast<float>(beta);
    CK_CUBLAS(a.sgemm(h, tb ? cublas::Operation::T : cublas::Operation::N,
                      ta ? cublas::Operation::T : cublas::Operation::N, static_cast<int>(N),
                      static_cast<int>(M), kc, &one, B + (tb ? k0 : k0 * ldb), static_cast<int>(ldb),
                      A + (ta ? k0 * lda : k0), static_cast<int>(lda), &b, C, static_cast<int>(ldc)));
  });
}

// One layer of the forward pass (forward.cuh): cublasSgemm into `out`, then the epilogue over it.
struct CublasLayer {
  cublas::Handle h;
  template <class Epilogue>
  void operator()(int64_t rows, int64_t nOut, int64_t nIn, const float* in, const float* W, float* out,
                  const Epilogue& ep, cudaStream_t stream) const {
    rowMajorSgemm(h, false, false, rows, nOut, nIn, in, nIn, W, nOut, out, nOut);
    launchElementwise(rows, nOut, out, ep, stream);
  }
};

}  // namespace

void stepCublas(const Step& s, const float* X, const float* T, int64_t rows, int streams, int device,
                cudaStream_t stream, const Events& ev, float eta, float alpha, const GradientSum& sum) {
  const Net& net = s.net;
  const int L = net.layers();
  // Both handles are held for the whole step: cuBLAS allows one host thread per handle at a time.
  const cublas::Session session(device);
  const cublas::Handle main = session.handle();
  CK_CUBLAS(cublas::api().setMathMode(main, cublas::Math::Default));
  const bool fork = streams > 1;
  std::unique_lock<std::mutex> sideLock;
  if (fork) sideLock = std::unique_lock<std::mutex>(side(device).handleMutex);
  const cublas::Handle gradHandle = fork ? sideHandle(device) : main;
  cudaStream_t gradStream = fork ? side(device).streams[0] : stream;
  float* ws = s.buf.workspace;
  float* grads = ws + s.lay.grads;
  forwardRows(s, X, T, ws + s.lay.act[L], 0, rows, true, CublasLayer{main}, stream);
  for (int l = L - 1; l >= 0; --l) {
    const int64_t nIn = net.sizes[l], nOut = net.sizes[l + 1];
    const float* H = l == 0 ? X : ws + s.lay.act[l];
    const float* D = ws + s.lay.delta[l + 1];
    if (fork) {  // δ_{l+1} is ready on the main stream: the gradient stream may start on it
      CK_CUDA(cudaEventRecord(ev[l], stream));
      CK_CUDA(cudaStreamWaitEvent(gradStream, ev[l], 0));
    }
    rowMajorSgemm(gradHandle, true, false, nIn, nOut, rows, H, nIn, D, nOut, grads + net.weightOffset(l),
                  nOut);
    columnSums(D, rows, nOut, ws + s.lay.partials, grads + net.biasOffset(l), gradStream);
    if (l > 0) {
      float* Dl = ws + s.lay.delta[l];
      rowMajorSgemm(main, false, true, rows, nIn, nOut, D, nOut, s.buf.params + net.weightOffset(l), nOut, Dl,
                    nIn);
      launchElementwise(rows, nIn, Dl, BackEpilogue{Dl, H, nIn, net.hidden}, stream);
    }
  }
  if (fork) {
    CK_CUDA(cudaEventRecord(ev[L], gradStream));
    CK_CUDA(cudaStreamWaitEvent(stream, ev[L], 0));
  }
  if (sum) sum(grads, net.parameterCount(), stream);
  enqueueUpdate(net, s.buf, grads, 1, eta, alpha, stream);
}

void forwardCublas(const Step& s, const float* X, const float* T, float* Y, int64_t rows, int device,
                   cudaStream_t stream) {
  const cublas::Session session(device);
  CK_CUBLAS(cublas::api().setMathMode(session.handle(), cublas::Math::Default));
  forwardRows(s, X, T, Y, 0, rows, false, CublasLayer{session.handle()}, stream);
}

}  // namespace mlp
}  // namespace ck
