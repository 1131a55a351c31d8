// Periodic 3×3 stencil sweeps (basic, tiled, temporally blocked) with device-side convergence.
// See stencil.h for the contract.
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/block_reduce.cuh"
#include "core/pool.h"
#include "stencil.h"

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

// ---------------------------------------------------------------------------------------------
// basic: the report's kernel. One thread per cell in 32×16 blocks (grid-stride beyond the grid
// limits), neighbours by modular index arithmetic so the grid is a torus without halo copies, and
// a flag raised by any thread whose cell changed by more than the tolerance. The flag's race is
// benign: every writer stores some value above the tolerance.

template <typename T>
__global__ void stencil_basic_kernel(const T* __restrict__ in, T* __restrict__ out, long long rows,
                                     long long cols, Weights<T> w, State* st, Pass pass, double tolerance) {
  if (passSkipped<T>(st, pass, tolerance)) return;
  unsigned long long* flag = &st->residual[pass.index % 3][0];
  for (long long i = blockIdx.y * (long long)blockDim.y + threadIdx.y; i < rows;
       i += (long long)gridDim.y * blockDim.y) {
    const long long up = (i + rows - 1) % rows, down = (i + 1) % rows;
    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < cols;
         j += (long long)gridDim.x * blockDim.x) {
      const long long left = (j + cols - 1) % cols, right = (j + 1) % cols;
      const T old = in[i * cols + j];
      const T v = applyWeights(w, in[up * cols + left], in[up * cols + j], in[up * cols + right],
                               in[i * cols + left], old, in[i * cols + right], in[down * cols + left],
                               in[down * cols + j], in[down * cols + right]);
      out[i * cols + j] = v;
      const T d = v > old ? v - old : old - v;
      if (!(static_cast<double>(d) <= tolerance)) *flag = toBits(d);
    }
  }
}

// max |a − b| into st->finalResidual (the basic method's residual value, reduced once at the end).
template <typename T>
__global__ void stencil_max_abs_diff_kernel(const T* __restrict__ a, const T* __restrict__ b, long long n,
                                            State* st) {
  __shared__ T scratch[32];
  T m = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const T d = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
    m = maxKeepNaN(m, d);
  }
  m = blockReduce<MaxKeepNaNOp>(m, scratch, T(0));
  if (threadIdx.x == 0) atomicMax(&st->finalResidual, toBits(m));
}

// ---------------------------------------------------------------------------------------------
// tiled: 32×16 output cells per tile staged in shared memory with a one-cell halo (loaded by
// modular index, so the torus needs no halo exchange), persistent blocks looping over tiles, and
// the residual reduced per block with one atomic.

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

// ---------------------------------------------------------------------------------------------
// fast: temporal blocking. A block loads a (TY + 2S)×(TX + 2S) tile — its TY×TX output cells plus an
// S-cell halo — once, with 16-byte loads when the rows allow, then runs up to S sweeps between two
// shared-memory buffers. Sweep s is valid on a region that shrinks by one cell per side per sweep,
// so after S sweeps the output cells are exact without any exchange between blocks. Each thread
// walks a band of rows down one column keeping the 3×3 window in registers (3 shared loads per
// cell instead of 9). Every sweep's residual is the max over the output cells only (the halo
// repeats other blocks' cells), reduced per block in shared memory and published with one atomic
// per sweep per block at the end.

template <typename T>
struct Vec16;
template <>
struct Vec16<float> {
  using type = float4;
  static constexpr int width = 4;
};
template <>
struct Vec16<double> {
  using type = double2;
  static constexpr int width = 2;
};

// Output tile per block (TX×TY) for devices that allow large shared-memory blocks (sm_80, sm_90:
// two blocks of ~92 KB (float) or 100 KB (double) per SM), and a small one for the rest.
template <typename T, bool Large>
struct FastShape;
template <>
struct FastShape<float, true> {
  static constexpr int TX = 128, TY = 64;
};
template <>
struct FastShape<double, true> {
  static constexpr int TX = 64, TY = 64;
};
template <>
struct FastShape<float, false> {
  static constexpr int TX = 64, TY = 32;
};
template <>
struct FastShape<double, false> {
  static constexpr int TX = 32, TY = 32;
};

constexpr int kFastThreadsX = 32, kFastThreadsY = 8;

template <typename T, bool Large>
constexpr size_t fastSharedBytes() {
  constexpr int W = FastShape<T, Large>::TX + 2 * kMaxPassSweeps,
                H = FastShape<T, Large>::TY + 2 * kMaxPassSweeps;
  return 2 * sizeof(T) * W * H;
}

// v reduced into [0, n): one conditional step when the tile reaches at most n beyond either edge.
__device__ inline long long wrapIndex(long long v, long long n, bool general) {
  if (general) {
    v %= n;
    return v < 0 ? v + n : v;
  }
  return v < 0 ? v + n : (v >= n ? v - n : v);
}

template <typename T, bool Large>
__global__ void __launch_bounds__(kFastThreadsX* kFastThreadsY)
    stencil_fast_kernel(const T* __restrict__ in, T* __restrict__ out, long long rows, long long cols,
                        Weights<T> w, State* st, Pass pass, double tolerance, bool vectors,
                        bool generalWrap) {
  constexpr int S = kMaxPassSweeps, TX = FastShape<T, Large>::TX, TY = FastShape<T, Large>::TY;
  constexpr int W = TX + 2 * S, H = TY + 2 * S, V = Vec16<T>::width;
  using Vec = typename Vec16<T>::type;
  extern __shared__ __align__(16) unsigned char sharedBytes[];
  T* buf0 = reinterpret_cast<T*>(sharedBytes);
  T* buf1 = buf0 + W * H;
  __shared__ T scratch[2][kFastThreadsY];
  __shared__ T sweepMax[S];

  if (passSkipped<T>(st, pass, tolerance)) return;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kFastThreadsX + tx;
  constexpr int kThreads = kFastThreadsX * kFastThreadsY;
  if (tid < S) sweepMax[tid] = 0;
  const long long tilesX = (cols + TX - 1) / TX;
  const long long tiles = tilesX * ((rows + TY - 1) / TY);

  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    const long long y0 = (t / tilesX) * TY, x0 = (t % tilesX) * TX;
    if (vectors) {
      // cols is a multiple of V and x0 − S is too, so no vector straddles the wrap.
      for (int k = tid; k < H * (W / V); k += kThreads) {
        const int r = k / (W / V), c = (k % (W / V)) * V;
        const long long gy = wrapIndex(y0 - S + r, rows, generalWrap);
        const long long gx = wrapIndex(x0 - S + c, cols, generalWrap);
        *reinterpret_cast<Vec*>(&buf0[r * W + c]) = *reinterpret_cast<const Vec*>(&in[gy * cols + gx]);
      }
    } else {
      for (int k = tid; k < H * W; k += kThreads) {
        const int r = k / W, c = k % W;
        const long long gy = wrapIndex(y0 - S + r, rows, generalWrap);
        const long long gx = wrapIndex(x0 - S + c, cols, generalWrap);
        buf0[r * W + c] = in[gy * cols + gx];
      }
    }
    __syncthreads();

    // Output cells inside the grid, in tile coordinates: rows [S, rEnd), cols [S, cEnd).
    const int rEnd = S + static_cast<int>(rows - y0 < TY ? rows - y0 : TY);
    const int cEnd = S + static_cast<int>(cols - x0 < TX ? cols - x0 : TX);
    const T* src = buf0;
    T* dst = buf1;
    for (int s = 1; s <= pass.sweeps; ++s) {
      T m = 0;
      const int band = (H - 2 * s + kFastThreadsY - 1) / kFastThreadsY;
      const int r0 = s + ty * band;
      const int r1 = min(r0 + band, H - s);
      for (int c = s + tx; c < W - s && r0 < r1; c += kFastThreadsX) {
        const T* p = src + (r0 - 1) * W + c;
        T a0 = p[-1], a1 = p[0], a2 = p[1];
        p += W;
        T b0 = p[-1], b1 = p[0], b2 = p[1];
        const bool ownedCol = c >= S && c < cEnd;
        for (int r = r0; r < r1; ++r) {
          p += W;
          const T c0 = p[-1], c1 = p[0], c2 = p[1];
          const T v = applyWeights(w, a0, a1, a2, b0, b1, b2, c0, c1, c2);
          dst[r * W + c] = v;
          if (ownedCol && r >= S && r < rEnd) m = maxKeepNaN(m, v > b1 ? v - b1 : b1 - v);
          a0 = b0, a1 = b1, a2 = b2;
          b0 = c0, b1 = c1, b2 = c2;
        }
      }
      m = warpReduce<MaxKeepNaNOp>(m);
      if (tx == 0) scratch[s & 1][ty] = m;
      __syncthreads();
      if (tid == 0) {
        T bm = sweepMax[s - 1];
        for (int i = 0; i < kFastThreadsY; ++i) bm = maxKeepNaN(bm, scratch[s & 1][i]);
        sweepMax[s - 1] = bm;
      }
      const T* nextSrc = dst;
      dst = const_cast<T*>(src);
      src = nextSrc;
    }

    if (vectors) {
      for (int k = tid; k < TY * (TX / V); k += kThreads) {
        const int r = S + k / (TX / V), c = S + (k % (TX / V)) * V;
        if (r < rEnd && c < cEnd)
          *reinterpret_cast<Vec*>(&out[(y0 + r - S) * cols + x0 + c - S]) =
              *reinterpret_cast<const Vec*>(&src[r * W + c]);
      }
    } else {
      for (int k = tid; k < TY * TX; k += kThreads) {
        const int r = S + k / TX, c = S + k % TX;
        if (r < rEnd && c < cEnd) out[(y0 + r - S) * cols + x0 + c - S] = src[r * W + c];
      }
    }
    __syncthreads();  // the next tile's loads overwrite buf0
  }
  if (tid < pass.sweeps) atomicMax(&st->residual[pass.index % 3][tid], toBits(sweepMax[tid]));
}

// ---------------------------------------------------------------------------------------------
// Host side: launch passes, check every checkEvery sweeps, replay a pass that converged midway.

template <typename T>
class Runner {
 public:
  Runner(Method method, const Problem& pb, cudaStream_t stream) : method_(method), pb_(pb), stream_(stream) {
    for (int i = 0; i < 9; ++i) w_.w[i] = static_cast<T>(pb.weights[i]);
  }

  cudaError_t prepare(const T* in, const T* a, const T* b) {
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device);
    if (err != cudaSuccess) return err;
    if (method_ == Method::Tiled) {
      int perSm = 0;
      err =
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, stencil_tiled_kernel<T>, kTileX * kTileY, 0);
      blocks_ = sms_ * (perSm > 0 ? perSm : 1);
    } else if (method_ == Method::Fast) {
      int optin = 0;
      err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
      large_ = err == cudaSuccess && static_cast<size_t>(optin) >= fastSharedBytes<T, true>();
      if (err == cudaSuccess) err = large_ ? prepareFast<true>() : prepareFast<false>();
      constexpr int V = Vec16<T>::width;
      vectors_ = pb_.cols % V == 0;
      for (const T* p : {in, a, b}) vectors_ = vectors_ && reinterpret_cast<uintptr_t>(p) % 16 == 0;
      const int tx = large_ ? FastShape<T, true>::TX : FastShape<T, false>::TX;
      const int ty = large_ ? FastShape<T, true>::TY : FastShape<T, false>::TY;
      generalWrap_ = pb_.rows <= ty + kMaxPassSweeps || pb_.cols <= tx + kMaxPassSweeps;
    }
    return err;
  }

  int sweepsPerPass() const { return method_ == Method::Fast ? kMaxPassSweeps : 1; }

  cudaError_t launch(const T* src, T* dst, State* st, const Pass& p) {
    const long long rows = pb_.rows, cols = pb_.cols;
    switch (method_) {
      case Method::Basic: {
        const dim3 block(32, 16);
        const long long gx = (cols + 31) / 32, gy = (rows + 15) / 16;
        const dim3 grid(static_cast<unsigned>(gx < 65535 ? gx : 65535),
                        static_cast<unsigned>(gy < 65535 ? gy : 65535));
        stencil_basic_kernel<T><<<grid, block, 0, stream_>>>(src, dst, rows, cols, w_, st, p, pb_.tolerance);
        break;
      }
      case Method::Tiled: {
        const long long tiles = ((cols + kTileX - 1) / kTileX) * ((rows + kTileY - 1) / kTileY);
        const unsigned blocks = static_cast<unsigned>(tiles < blocks_ ? tiles : blocks_);
        stencil_tiled_kernel<T>
            <<<blocks, dim3(kTileX, kTileY), 0, stream_>>>(src, dst, rows, cols, w_, st, p, pb_.tolerance);
        break;
      }
      case Method::Fast:
        return large_ ? launchFast<true>(src, dst, st, p) : launchFast<false>(src, dst, st, p);
    }
    return cudaGetLastError();
  }

  template <bool Large>
  cudaError_t prepareFast() {
    constexpr size_t bytes = fastSharedBytes<T, Large>();
    cudaError_t err = cudaFuncSetAttribute(
        stencil_fast_kernel<T, Large>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    int perSm = 0;
    if (err == cudaSuccess)
      err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, stencil_fast_kernel<T, Large>,
                                                          kFastThreadsX * kFastThreadsY, bytes);
    blocks_ = static_cast<long long>(sms_) * (perSm > 0 ? perSm : 1);
    return err;
  }

  template <bool Large>
  cudaError_t launchFast(const T* src, T* dst, State* st, const Pass& p) {
    constexpr int TX = FastShape<T, Large>::TX, TY = FastShape<T, Large>::TY;
    const long long tiles = ((pb_.cols + TX - 1) / TX) * ((pb_.rows + TY - 1) / TY);
    const unsigned blocks = static_cast<unsigned>(tiles < blocks_ ? tiles : blocks_);
    stencil_fast_kernel<T, Large>
        <<<blocks, dim3(kFastThreadsX, kFastThreadsY), fastSharedBytes<T, Large>(), stream_>>>(
            src, dst, pb_.rows, pb_.cols, w_, st, p, pb_.tolerance, vectors_, generalWrap_);
    return cudaGetLastError();
  }

  cudaError_t finalResidual(const T* a, const T* b, State* st, double* out) {
    cudaError_t err = cudaMemsetAsync(&st->finalResidual, 0, sizeof st->finalResidual, stream_);
    const long long n = pb_.rows * pb_.cols;
    const long long want = (n + 255) / 256, cap = static_cast<long long>(sms_) * 8;
    if (err == cudaSuccess) {
      stencil_max_abs_diff_kernel<T>
          <<<static_cast<unsigned>(want < cap ? want : cap), 256, 0, stream_>>>(a, b, n, st);
      err = cudaGetLastError();
    }
    unsigned long long bits = 0;
    if (err == cudaSuccess)
      err = cudaMemcpyAsync(&bits, &st->finalResidual, sizeof bits, cudaMemcpyDeviceToHost, stream_);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream_);
    *out = static_cast<double>(fromBits<T>(bits));
    return err;
  }

 private:
  Method method_;
  Problem pb_;
  cudaStream_t stream_;
  Weights<T> w_;
  int sms_ = 1;
  long long blocks_ = 1;
  bool vectors_ = false, generalWrap_ = true, large_ = false;
};

template <typename T>
cudaError_t runTyped(Method method, const T* in, T* a, T* b, const Problem& pb, cudaStream_t stream,
                     State* st, Result* result) {
  Runner<T> runner(method, pb, stream);
  cudaError_t err = runner.prepare(in, a, b);
  if (err == cudaSuccess) err = cudaMemsetAsync(st, 0, sizeof(State), stream);
  if (err != cudaSuccess) return err;

  const int S = runner.sweepsPerPass();
  // Pass 0 reads `in` itself (no copy); pass p writes bufs[p % 2] and pass p + 1 reads it back. The
  // order of a and b is chosen so that a run to maxIterations ends in `a`.
  const long long maxPasses = (pb.maxIterations + S - 1) / S;
  T* bufs[2] = {a, b};
  if ((maxPasses - 1) % 2 == 1) std::swap(bufs[0], bufs[1]);
  auto source = [&](long long p) -> const T* { return p == 0 ? in : bufs[(p + 1) % 2]; };
  auto dest = [&](long long p) -> T* { return bufs[p % 2]; };
  // Passes are full (S sweeps) except the one that reaches maxIterations, so pass p starts at p·S.
  const long long chunk = (pb.checkEvery + S - 1) / S * S;
  long long launched = 0, pass = 0;
  int prevSweeps = 0;
  for (;;) {
    const long long target = launched + chunk < pb.maxIterations ? launched + chunk : pb.maxIterations;
    while (launched < target) {
      const int n = static_cast<int>(target - launched < S ? target - launched : S);
      err = runner.launch(source(pass), dest(pass), st, Pass{pass, n, prevSweeps, launched, true});
      if (err != cudaSuccess) return err;
      prevSweeps = n;
      launched += n;
      ++pass;
    }
    State h;
    err = cudaMemcpyAsync(&h, st, sizeof h, cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
    if (err != cudaSuccess) return err;

    const long long last = pass - 1;
    long long done = -1, where = -1;
    if (h.converged) {
      done = h.iterations;
      where = h.convergedPass;
    } else {
      for (int j = 0; j < prevSweeps; ++j) {
        if (static_cast<double>(fromBits<T>(h.residual[last % 3][j])) <= pb.tolerance) {
          done = last * S + j + 1;
          where = last;
          break;
        }
      }
    }
    if (done < 0 && launched < pb.maxIterations) continue;
    if (done < 0) {
      done = launched;
      where = last;
    }
    // Sweeps of pass `where` up to the converged one; the later passes were skipped, so that pass's
    // input is intact and a shorter replay of it leaves exactly the converged grid.
    const long long passFirst = where * S;
    const int needed = static_cast<int>(done - passFirst);
    const int ran = where == last ? prevSweeps : S;
    if (needed < ran) {
      err = runner.launch(source(where), dest(where), st, Pass{where + 1, needed, 0, passFirst, false});
      if (err != cudaSuccess) return err;
    }
    result->iterations = done;
    result->finalBuffer = dest(where) == a ? 0 : 1;
    if (method == Method::Basic) {
      // The flag is not the residual's value: measure it between the last two grids.
      err = runner.finalResidual(dest(where), source(where), st, &result->residual);
    } else {
      // A replay still running is waited for (and its errors caught) by run()'s final synchronize.
      result->residual = static_cast<double>(fromBits<T>(h.residual[where % 3][needed - 1]));
    }
    return err;
  }
}

}  // namespace detail

cudaError_t run(Method method, Dtype dtype, const void* in, void* a, void* b, const Problem& pb,
                cudaStream_t stream, Result* result) {
  using namespace detail;
  if (pb.rows < 1 || pb.cols < 1 || pb.maxIterations < 1 || pb.checkEvery < 1) return cudaErrorInvalidValue;
  State* st = nullptr;
  cudaError_t err = poolMalloc(&st, sizeof(State), stream);
  if (err != cudaSuccess) return err;
  switch (dtype) {
    case Dtype::Float32:
      err = runTyped(method, static_cast<const float*>(in), static_cast<float*>(a), static_cast<float*>(b),
                     pb, stream, st, result);
      break;
    case Dtype::Float64:
      err = runTyped(method, static_cast<const double*>(in), static_cast<double*>(a), static_cast<double*>(b),
                     pb, stream, st, result);
      break;
    default: err = cudaErrorInvalidValue;
  }
  const cudaError_t freed = poolFree(st, stream);
  const cudaError_t synced = cudaStreamSynchronize(stream);
  if (err != cudaSuccess) return err;
  return freed != cudaSuccess ? freed : synced;
}

}  // namespace stencil
}  // namespace ck
