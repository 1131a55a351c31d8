// Multilayer-network training: see mlp.h for the layout and the equations.
//
// Two methods share the layout, the bias-gradient column sums and the momentum update:
// - custom: the report's design — our tiled GEMM kernel with the bias, activation, output error
//   and derivative fused into its epilogues; the patterns of a batch split over `streams` streams,
//   each with its own gradient buffer, reduced in the update kernel; η and α in constant memory;
//   the targets read through the read-only data path; the error by warp-shuffle block reduction and
//   one atomic add per block.
// - cublas: cublasSgemm (TF32 off) per layer with our fused bias+activation / output / derivative
//   kernels; with streams > 1 the weight-gradient GEMMs run on a side stream beside the
//   input-gradient ones.
#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "core/block_reduce.cuh"
#include "core/cublas.h"
#include "core/errors.h"
#include "core/launch.h"
#include "mlp/mlp.h"

namespace ck {
namespace mlp {

int64_t Net::weightOffset(int l) const {
  int64_t off = 0;
  for (int i = 0; i < l; ++i) off += sizes[i] * sizes[i + 1] + sizes[i + 1];
  return off;
}

int64_t Net::widest() const {
  int64_t w = 0;
  for (size_t l = 1; l < sizes.size(); ++l) w = std::max(w, sizes[l]);
  return w;
}

namespace {

constexpr int kTile = 64;  // output tile of the custom GEMM (kTile × kTile)
constexpr int kTileK = 16;
constexpr int kGemmThreads = 256;  // 16 × 16 threads, 4 × 4 outputs each

// Offsets (in floats) of the workspace's parts; see workspaceFloats. One gradient set per stream
// (what the custom method needs; the cuBLAS method uses the first).
struct Layout {
  std::vector<int64_t> act, delta;  // index l = 1..L
  int64_t grads = 0, partials = 0, total = 0;
  bool overflow = false;  // a part or the total passed int64 (user sizes too large for any array)
  Layout(const Net& net, int64_t batch, int streams, bool train) {
    const int L = net.layers();
    act.assign(L + 1, 0);
    delta.assign(L + 1, 0);
    int64_t off = 0;
    // off += a·b, checked: the binding sizes a workspace from user sizes before anything runs.
    auto add = [&](int64_t a, int64_t b) {
      int64_t part = 0;
      overflow = overflow || __builtin_mul_overflow(a, b, &part) || __builtin_add_overflow(off, part, &off);
    };
    for (int l = 1; l <= L; ++l) act[l] = off, add(batch, net.sizes[l]);
    if (train) {
      for (int l = 1; l <= L; ++l) delta[l] = off, add(batch, net.sizes[l]);
      grads = off, add(streams, net.parameterCount());
      partials = off, add(static_cast<int64_t>(streams) * kColsumChunks, net.widest());
    }
    total = off;
  }
};

// ---------------------------------------------------------------------------------------------
// Device helpers

__constant__ float cEta;
__constant__ float cAlpha;

__device__ __forceinline__ float activate(float x, Activation a) {
  switch (a) {
    case kSigmoid: return 1.0f / (1.0f + expf(-x));
    case kTanh: return tanhf(x);
    case kRelu: return x > 0.0f ? x : 0.0f;
    default: return x;
  }
}

// f'(x) written in terms of y = f(x).
__device__ __forceinline__ float derivative(float y, Activation a) {
  switch (a) {
    case kSigmoid: return y * (1.0f - y);
    case kTanh: return 1.0f - y * y;
    case kRelu: return y > 0.0f ? 1.0f : 0.0f;
    default: return 1.0f;
  }
}

// Sum over the block (1D or 2D, a multiple of 32 threads up to 1024) by warp shuffles; valid in
// the block's first thread. Every thread of the block must call it.
__device__ float blockSum(float v) {
  __shared__ float warpSums[32];
  return blockReduce<SumOp>(v, warpSums, 0.0f);
}

// ---------------------------------------------------------------------------------------------
// The custom tiled GEMM: C (M×N) = op(A)·op(B), row-major, handed element by element to an
// epilogue. op(A) = A (M×K, lda) or, with TA, Aᵀ where A is stored K×M; op(B) = B (K×N, ldb) or,
// with TB, Bᵀ where B is stored N×K. Tiles of kTile × kTile outputs, kTileK deep, staged in shared
// memory k-major; thread (ty, tx) owns rows ty + 16i and columns tx + 16j, so the shared reads are
// broadcasts (A) and 16 consecutive words (B), and the epilogue's stores are coalesced.

struct StoreEpilogue {  // C = acc (a weight gradient)
  float* C;
  int64_t ldc;
  static constexpr bool kError = false;
  __device__ float operator()(int64_t r, int64_t c, float acc) const {
    C[r * ldc + c] = acc;
    return 0.0f;
  }
};

struct HiddenEpilogue {  // H = f(acc + b)
  float* H;
  int64_t ldh;
  const float* bias;
  Activation act;
  static constexpr bool kError = false;
  __device__ float operator()(int64_t r, int64_t c, float acc) const {
    H[r * ldh + c] = activate(acc + bias[c], act);
    return 0.0f;
  }
};

struct OutputEpilogue {  // y = f(acc + b); with targets: error and δ = (y − t)·f'(y)
  float* Y;
  int64_t ldy;
  const float* bias;
  Activation act;
  const float* __restrict__ T;  // may be null
  float* D;                     // may be null
  double* error;                // may be null
  static constexpr bool kError = true;
  __device__ float operator()(int64_t r, int64_t c, float acc) const {
    const float y = activate(acc + bias[c], act);
    Y[r * ldy + c] = y;
    if (T == nullptr) return 0.0f;
    const float d = y - __ldg(T + r * ldy + c);
    if (D != nullptr) D[r * ldy + c] = d * derivative(y, act);
    return 0.5f * d * d;
  }
};

struct BackEpilogue {  // δ_l = acc · f'(H_l)
  float* D;
  const float* H;
  int64_t ld;
  Activation act;
  static constexpr bool kError = false;
  __device__ float operator()(int64_t r, int64_t c, float acc) const {
    D[r * ld + c] = acc * derivative(H[r * ld + c], act);
    return 0.0f;
  }
};

template <bool TA, bool TB, class Epilogue>
__global__ void __launch_bounds__(kGemmThreads)
    tileGemm(int64_t M, int64_t N, int64_t K, const float* __restrict__ A, int64_t lda,
             const float* __restrict__ B, int64_t ldb, Epilogue ep) {
  __shared__ float As[kTileK][kTile + 4];
  __shared__ float Bs[kTileK][kTile + 4];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kTile, n0 = static_cast<int64_t>(blockIdx.y) * kTile;
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
  float err = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t r = m0 + ty + 16 * i, c = n0 + tx + 16 * j;
      if (r < M && c < N) err += ep(r, c, acc[i][j]);
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
                  static_cast<unsigned>((N + kTile - 1) / kTile));
  tileGemm<TA, TB, Epilogue><<<grid, kGemmThreads, 0, stream>>>(M, N, K, A, lda, B, ldb, ep);
  CK_CUDA(cudaGetLastError());
}

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
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

void columnSums(const float* D, int64_t rows, int64_t n, float* partial, float* out, cudaStream_t stream) {
  const int chunks =
      static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kColsumChunks, (rows + 255) / 256)));
  colsumPartial<<<dim3(static_cast<unsigned>((n + 31) / 32), chunks), dim3(32, 8), 0, stream>>>(D, rows, n,
                                                                                                partial);
  CK_CUDA(cudaGetLastError());
  colsumFinal<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(partial, chunks, n, out);
  CK_CUDA(cudaGetLastError());
}

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
// Streams and cuBLAS handles beside the library stream: created on first use per device, kept.

struct SideResources {
  cudaStream_t streams[kMaxStreams] = {};
  cublas::Handle sideHandle = nullptr;  // bound to streams[0]
  std::mutex handleMutex;               // held while a call uses sideHandle (one host thread at a time)
};

SideResources& side(int device) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<SideResources>> all;
  std::lock_guard<std::mutex> lock(mutex);
  if (all.size() <= static_cast<size_t>(device)) all.resize(static_cast<size_t>(device) + 1);
  auto& r = all[static_cast<size_t>(device)];
  if (!r) {
    auto fresh = std::make_unique<SideResources>();
    for (auto& s : fresh->streams) CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    r = std::move(fresh);
  }
  return *r;
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

// Events for one call's fork and joins, destroyed when the call has enqueued everything (CUDA
// releases an event still in use once its work completes).
class Events {
 public:
  explicit Events(int count) : events_(static_cast<size_t>(count), nullptr) {
    for (auto& e : events_) CK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  ~Events() {
    for (auto e : events_)
      if (e) cudaEventDestroy(e);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  cudaEvent_t operator[](int i) const { return events_[static_cast<size_t>(i)]; }

 private:
  std::vector<cudaEvent_t> events_;
};

// Row-major C (M×N) = op(A)·op(B) with cublasSgemm on column-major storage: Cᵀ = op(B)ᵀ·op(A)ᵀ.
void rowMajorSgemm(cublas::Handle h, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A,
                   int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  const cublas::Api& a = cublas::api();
  const float one = 1.0f, zero = 0.0f;
  CK_CUBLAS(a.sgemm(h, tb ? cublas::Operation::T : cublas::Operation::N,
                    ta ? cublas::Operation::T : cublas::Operation::N, static_cast<int>(N),
                    static_cast<int>(M), static_cast<int>(K), &one, B, static_cast<int>(ldb), A,
                    static_cast<int>(lda), &zero, C, static_cast<int>(ldc)));
}

struct Step {
  const Net& net;
  const Buffers& buf;
  const Layout& lay;
};

// Forward pass of `rows` patterns starting at row r0 of the batch buffers (X and T already offset
// to the batch). `Y` (the last layer, ld n_L) is the workspace's or the caller's; with `deltas` the
// output deltas are written too.
void forwardRows(const Step& s, const float* X, const float* T, float* Y, int64_t r0, int64_t rows,
                 bool deltas, Method method, cublas::Handle h, cudaStream_t stream) {
  const Net& net = s.net;
  const int L = net.layers();
  const float* in = X + r0 * net.sizes[0];
  for (int l = 0; l < L; ++l) {
    const int64_t nIn = net.sizes[l], nOut = net.sizes[l + 1];
    const float* W = s.buf.params + net.weightOffset(l);
    const float* b = s.buf.params + net.biasOffset(l);
    const bool last = l == L - 1;
    float* out = last ? Y + r0 * nOut : s.buf.workspace + s.lay.act[l + 1] + r0 * nOut;
    if (method == kCublas) rowMajorSgemm(h, false, false, rows, nOut, nIn, in, nIn, W, nOut, out, nOut);
    if (last) {
      OutputEpilogue ep{out,
                        nOut,
                        b,
                        net.output,
                        T ? T + r0 * nOut : nullptr,
                        deltas ? s.buf.workspace + s.lay.delta[L] + r0 * nOut : nullptr,
                        T ? s.buf.error : nullptr};
      if (method == kCublas)
        launchElementwise(rows, nOut, out, ep, stream);
      else
        launchGemm<false, false>(rows, nOut, nIn, in, nIn, W, nOut, ep, stream);
    } else {
      HiddenEpilogue ep{out, nOut, b, net.hidden};
      if (method == kCublas)
        launchElementwise(rows, nOut, out, ep, stream);
      else
        launchGemm<false, false>(rows, nOut, nIn, in, nIn, W, nOut, ep, stream);
    }
    in = out;
  }
}

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
    forwardRows(s, X, T, Y, r0, n, true, kCustom, nullptr, st);
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
    if (active > 1) {
      unsigned blocks = 0;
      CK_CUDA(gridStrideBlocks(static_cast<size_t>(count), 256, &blocks));
      foldSets<<<blocks, 256, 0, stream>>>(grads, count, active);
      CK_CUDA(cudaGetLastError());
    }
    sum(grads, count, stream);
    enqueueUpdate(s.net, s.buf, grads, 1, eta, alpha, stream);
  } else {
    enqueueUpdate(s.net, s.buf, grads, active, eta, alpha, stream);
  }
}

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
  forwardRows(s, X, T, ws + s.lay.act[L], 0, rows, true, kCublas, main, stream);
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

}  // namespace

int64_t workspaceFloats(const Net& net, int64_t batch, int streams, bool train) {
  const Layout lay(net, batch, streams, train);
  return lay.overflow ? -1 : lay.total;
}

void trainEpoch(const Net& net, const Buffers& buf, const float* X, const float* T, int64_t patterns,
                int64_t batch, float eta, float alpha, Method method, int streams, cudaStream_t stream,
                const GradientSum& sum) {
  int device = 0;
  CK_CUDA(cudaGetDevice(&device));
  const Layout lay(net, batch, streams, true);
  const Step s{net, buf, lay};
  const Events ev(std::max(streams + 1, net.layers() + 1));
  for (int64_t p0 = 0; p0 < patterns; p0 += batch) {
    const int64_t rows = std::min(batch, patterns - p0);
    const float* Xb = X + p0 * net.sizes[0];
    const float* Tb = T + p0 * net.sizes[net.layers()];
    if (method == kCublas)
      stepCublas(s, Xb, Tb, rows, streams, device, stream, ev, eta, alpha, sum);
    else
      stepCustom(s, Xb, Tb, rows, streams, device, stream, ev, eta, alpha, sum);
  }
}

void forward(const Net& net, const Buffers& buf, const float* X, float* Y, const float* T, int64_t rows,
             Method method, cudaStream_t stream) {
  int device = 0;
  CK_CUDA(cudaGetDevice(&device));
  const Layout lay(net, rows, 1, false);
  const Step s{net, buf, lay};
  if (method == kCublas) {
    const cublas::Session session(device);
    CK_CUBLAS(cublas::api().setMathMode(session.handle(), cublas::Math::Default));
    forwardRows(s, X, T, Y, 0, rows, false, method, session.handle(), stream);
  } else {
    forwardRows(s, X, T, Y, 0, rows, false, method, nullptr, stream);
  }
}

}  // namespace mlp
}  // namespace ck
