// Stencil step 3, `fast` (ours): temporal blocking. Over 2_tiled.cu each block loads its tile with
// an 8-cell halo once and runs up to 8 sweeps in shared memory before writing it back, so a pass of
// 8 sweeps reads and writes the grid once instead of 8 times, and keeps every sweep's residual exact
// so that run.cu can replay a pass that converged midway.
//
// H100, 100 sweeps of box9 (bench/results, commit 1ccf670): float32 8192² 6.49 ms (8268 GB/s
// effective; tiled 73.49 ms), 16384² 23.20 ms (9257 GB/s); float64 8192² 12.69 ms (8463 GB/s); a
// device copy moves about 2950 GB/s (the H200's about 4100 GB/s, where the same kernel takes about as
// long). Its rate against a 1 GiB copy, from the pair protocol, is in bench/results/README.md.
//
// fast: temporal blocking. A block loads a (TY + 2S)×(TX + 2S) tile — its TY×TX output cells plus an
// S-cell halo — once, then runs up to S sweeps between two shared-memory buffers. Sweep s is valid
// on a region that shrinks by one cell per side per sweep, so after S sweeps the output cells are
// exact without any exchange between blocks.
//
// What makes it fast (issue 19; bench/dev/stencil/NOTES.md has the measurements;
// bench/dev/stencil/fast_v1.cuh describes the kernel it replaced):
// - Each sweep writes its result one row up and one column left of where the cell is: cell (q, p) of
//   sweep s is the stencil of cells (q..q+2, p..p+2) of sweep s − 1. The valid region then always
//   starts at (0, 0) and only shrinks at its right and bottom edges, so every thread's group of C
//   columns stays aligned for 8/16-byte shared loads and stores in every sweep.
// - A thread computes C adjacent columns (4 for float, 2 for double) down a band of rows, holding a
//   3×(C + 2) window in registers: per row, one or two vector loads and one vector store for C
//   cells. The row loop is unrolled by three and rotates the window's rows by renaming.
// - A sweep's (column group, row band) items are numbered group-fastest, one per thread: the band
//   length is chosen per sweep to spread the groups × rows over the block. No lane idles for a
//   nearly empty 32-column strip, and long bands keep the two rows each band loads first cheap.
// - The tile's rows are copied with cp.async, one warp a row and one wrapped index per row and per
//   lane; the next tile's copies are in flight while this tile's results are written out.
// - The residual is one |new − old| max per valid computed cell, the halo's included: a valid halo
//   cell is a bitwise copy of the cell its owner computes, so the max is the same, and no cell needs
//   an ownership test (float64: the max of the bit patterns, on the integer pipes). Each warp keeps its
//   per-sweep maxima in shared memory, and the block publishes one atomic per sweep at the end.
// What took 18-24% off its time at 8192² (issue 34, the NOTES' third round; ncu counted about 21
// instructions per computed float32 cell, of which the row loop issues about 14):
// - The sweep loop is unrolled over its 8 sweeps, so each sweep's column groups, bands and item split
//   are constants instead of four run-time integer divisions per sweep.
// - The residual as above, instead of an ownership test per row and column.
// - Where 210 KB of shared memory fits (sm_90), 512 threads on a larger tile, one block per SM: 10%
//   (float) and 13% (double) of the cells computed are halo, against 13% and 19%.
// Bench method: fast
#include <cstdint>

#include "core/cp_async.h"
#include "stencil/sweep.cuh"
#include "stencil/variants.cuh"

namespace ck {
namespace stencil {
namespace detail {

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

// v reduced into [0, n): one conditional step when the tile reaches at most n beyond either edge.
__device__ inline long long wrapIndex(long long v, long long n, bool general) {
  if (general) {
    v %= n;
    return v < 0 ? v + n : v;
  }
  return v < 0 ? v + n : (v >= n ? v - n : v);
}

// Copies `Bytes` (4, 8 or 16) from global to shared memory without passing through registers
// (cp.async on sm_80 and later; an ordinary load and store below).
template <int Bytes, typename T>
__device__ __forceinline__ void copyToShared(T* dst, const T* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(src) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(to), "l"(src), "n"(Bytes) : "memory");
#else
  if constexpr (Bytes == 16)
    *reinterpret_cast<float4*>(dst) = *reinterpret_cast<const float4*>(src);
  else
    *dst = *src;
#endif
}

// m ← max(m, |d|), keeping a NaN once seen. On sm_80+ float32 this is one instruction (max.NaN with
// the |·| folded into its operand); the residual is only ever compared, so which NaN it holds does
// not matter.
__device__ __forceinline__ float maxAbsKeepNaN(float m, float d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(m), "f"(fabsf(d)));
  return r;
#else
  return maxKeepNaN(m, fabsf(d));
#endif
}
__device__ __forceinline__ double maxAbsKeepNaN(double m, double d) {
  return maxKeepNaN(m, fabs(d));
}

// A thread's running residual: a max of |d| that keeps NaN (ResidualMax<T, false>), or for double the
// max of |d|'s bit patterns as unsigned integers, which order like the non-negative values with NaN
// above +inf, so the result is the same max (any NaN standing for NaN).
template <typename T, bool Bits>
struct ResidualMax {
  using type = T;
  static __device__ __forceinline__ void add(T& m, T d) { m = maxAbsKeepNaN(m, d); }
  static __device__ __forceinline__ T value(T m) { return m; }
};
template <>
struct ResidualMax<double, true> {
  using type = unsigned long long;
  static __device__ __forceinline__ void add(unsigned long long& m, double d) {
    const unsigned long long b =
        static_cast<unsigned long long>(__double_as_longlong(d)) & 0x7fffffffffffffffull;
    m = b > m ? b : m;
  }
  static __device__ __forceinline__ double value(unsigned long long m) {
    return __longlong_as_double(static_cast<long long>(m));
  }
};

// A block shape: TX×TY output cells per tile, kThreads threads, C adjacent columns per thread, at most
// kItems (column group, row band) items per thread and sweep.
template <typename T, int TX_, int TY_, int Threads, int Items = 1, int C_ = 2, bool HaloResidual_ = true,
          bool StaticSweeps_ = true, bool BitsMax_ = true>
struct FastShape {
  static constexpr int TX = TX_, TY = TY_, kThreads = Threads, kItems = Items, C = C_;
  // Three flags, on in every shipped shape; the harness keeps the kernel without them (issue 34,
  // bench/dev/stencil/NOTES.md "Third round").
  // HaloResidual: the residual takes every valid cell of a sweep, the halo's included. A valid halo
  // cell is a bitwise copy of the cell its owner block computes (same inputs, same summation order),
  // so the max is the same; only the last group's columns past the valid region (stale values) are
  // left out, and the per-row ownership test goes.
  static constexpr bool HaloResidual = HaloResidual_;
  // StaticSweeps: the sweep loop is unrolled over its S sweeps, so each sweep's column groups, band
  // length and item split are constants; with the loop rolled they are run-time divisions (four a
  // sweep, ~25 instructions each, about a seventh of all instructions issued).
  static constexpr bool StaticSweeps = StaticSweeps_;
  // BitsMax (double only): the residual is the max of |new − old|'s bit patterns as 64-bit integers
  // (they order like the values, NaN above +inf) on the integer pipes, instead of two DSETPs, an |·|
  // DADD and two selects on and around the float64 pipe.
  static constexpr bool BitsMax = BitsMax_;
  static constexpr int W = TX + 2 * kMaxPassSweeps, H = TY + 2 * kMaxPassSweeps;
  // Two W×H buffers, each followed by the C − 2 cells (padded to 16 bytes) that the last group of
  // its last row reads past its end: W − 2s need not be a multiple of C, and those cells only feed
  // discarded ones. The padding is never written, so these reads race with nothing.
  static constexpr int kBuffer = W * H + (C > 2 ? 16 / static_cast<int>(sizeof(T)) : 0);
  static constexpr size_t sharedBytes = sizeof(T) * 2 * kBuffer;
  // 16-byte global loads need x0 − S and W to be multiples of 4 floats, and the groups' shared
  // accesses need W to be a multiple of C.
  static_assert(TX % 4 == 0 && Threads % 32 == 0 && (C == 2 || C == 4), "fast: bad shape");
};

// A thread's row of C + 2 cells of a shared buffer, starting at a multiple of C, read with the
// widest aligned accesses (float, C = 4: 16 + 8 bytes), and its C results written with one access.
template <typename T, int C>
struct RowIO;
template <>
struct RowIO<float, 2> {
  static __device__ __forceinline__ void load(const float* at, float (&r)[4]) {
    const float2 x = *reinterpret_cast<const float2*>(at), y = *reinterpret_cast<const float2*>(at + 2);
    r[0] = x.x, r[1] = x.y, r[2] = y.x, r[3] = y.y;
  }
  static __device__ __forceinline__ void store(float* at, const float (&v)[2]) {
    *reinterpret_cast<float2*>(at) = make_float2(v[0], v[1]);
  }
};
template <>
struct RowIO<float, 4> {
  static __device__ __forceinline__ void load(const float* at, float (&r)[6]) {
    const float4 x = *reinterpret_cast<const float4*>(at);
    const float2 y = *reinterpret_cast<const float2*>(at + 4);
    r[0] = x.x, r[1] = x.y, r[2] = x.z, r[3] = x.w, r[4] = y.x, r[5] = y.y;
  }
  static __device__ __forceinline__ void store(float* at, const float (&v)[4]) {
    *reinterpret_cast<float4*>(at) = make_float4(v[0], v[1], v[2], v[3]);
  }
};
template <>
struct RowIO<double, 2> {
  static __device__ __forceinline__ void load(const double* at, double (&r)[4]) {
    const double2 x = *reinterpret_cast<const double2*>(at), y = *reinterpret_cast<const double2*>(at + 2);
    r[0] = x.x, r[1] = x.y, r[2] = y.x, r[3] = y.y;
  }
  static __device__ __forceinline__ void store(double* at, const double (&v)[2]) {
    *reinterpret_cast<double2*>(at) = make_double2(v[0], v[1]);
  }
};

// One thread's column group for one sweep: output columns p..p+C−1, rows [q0, q1) of dst, from rows
// q0..q1+1 and columns p..p+C+1 of src, holding three rows of C + 2 cells in registers. The
// residual covers the owned rows [ownLo, ownLo + rowsOwned) and owned columns only, or with
// HaloResidual every column left of validCols (the sweep's valid region) in every row.
template <typename T, int W, int C, bool HaloResidual, class R>
__device__ __forceinline__ void sweepColumns(const Weights<T>& w, const T* __restrict__ src,
                                             T* __restrict__ dst, int p, int q0, int q1, int ownLo,
                                             int rowsOwned, int colsOwned, typename R::type& m,
                                             int validCols) {
  bool owned[C];
#pragma unroll
  for (int j = 0; j < C; ++j)
    owned[j] = HaloResidual ? p + j < validCols
                            : static_cast<unsigned>(p + j - ownLo) < static_cast<unsigned>(colsOwned);
  const T* in = src + q0 * W + p;
  T* out = dst + q0 * W + p;
  // Output row q from window rows x (q), y (q + 1), z (q + 2); y holds the old values.
  auto row = [&](const T(&x)[C + 2], const T(&y)[C + 2], const T(&z)[C + 2], int q) {
    T v[C];
#pragma unroll
    for (int j = 0; j < C; ++j)
      v[j] = applyWeights(w, x[j], x[j + 1], x[j + 2], y[j], y[j + 1], y[j + 2], z[j], z[j + 1], z[j + 2]);
    RowIO<T, C>::store(out, v);
    out += W;
    const bool ownedRow = HaloResidual || static_cast<unsigned>(q - ownLo) < static_cast<unsigned>(rowsOwned);
#pragma unroll
    for (int j = 0; j < C; ++j)
      if (ownedRow && owned[j]) R::add(m, v[j] - y[j + 1]);
  };
  T a[C + 2], b[C + 2], c[C + 2];
  RowIO<T, C>::load(in, a);
  RowIO<T, C>::load(in + W, b);
  in += 2 * W;
  // Unrolled by three so that the window's rows rotate by renaming.
  int q = q0;
  for (; q + 3 <= q1; q += 3) {
    RowIO<T, C>::load(in, c);
    row(a, b, c, q);
    RowIO<T, C>::load(in + W, a);
    row(b, c, a, q + 1);
    RowIO<T, C>::load(in + 2 * W, b);
    row(c, a, b, q + 2);
    in += 3 * W;
  }
  if (q < q1) {
    RowIO<T, C>::load(in, c);
    row(a, b, c, q);
    if (q + 1 < q1) {
      RowIO<T, C>::load(in + W, a);
      row(b, c, a, q + 1);
    }
  }
}

// Starts copying the tile whose output cells begin at (y0, x0), with its S-cell halo, into buf: each
// warp copies whole rows (one wrapped row index per row), each lane the same columns of every row
// (wrapped once per tile).
template <typename T, class Shape>
__device__ inline void loadTile(const T* __restrict__ in, T* buf, long long rows, long long cols,
                                long long y0, long long x0, bool vectors, bool generalWrap) {
  constexpr int S = kMaxPassSweeps, W = Shape::W, H = Shape::H, V = Vec16<T>::width;
  constexpr int kWarps = Shape::kThreads / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (vectors) {
    // cols is a multiple of V and x0 − S is too, so no vector straddles the wrap.
    constexpr int kSlots = (W / V + 31) / 32;
    long long gx[kSlots];
#pragma unroll
    for (int j = 0; j < kSlots; ++j) gx[j] = wrapIndex(x0 - S + (lane + 32 * j) * V, cols, generalWrap);
    for (int r = warp; r < H; r += kWarps) {
      const T* from = in + wrapIndex(y0 - S + r, rows, generalWrap) * cols;
#pragma unroll
      for (int j = 0; j < kSlots; ++j) {
        const int c = (lane + 32 * j) * V;
        if (c < W) copyToShared<16>(&buf[r * W + c], from + gx[j]);
      }
    }
  } else {
    constexpr int kSlots = (W + 31) / 32;
    long long gx[kSlots];
#pragma unroll
    for (int j = 0; j < kSlots; ++j) gx[j] = wrapIndex(x0 - S + lane + 32 * j, cols, generalWrap);
    for (int r = warp; r < H; r += kWarps) {
      const T* from = in + wrapIndex(y0 - S + r, rows, generalWrap) * cols;
#pragma unroll
      for (int j = 0; j < kSlots; ++j) {
        const int c = lane + 32 * j;
        if (c < W) copyToShared<sizeof(T)>(&buf[r * W + c], from + gx[j]);
      }
    }
  }
  copyCommit();
}

// Writes the tile's owned cells (rowsOwned × colsOwned, from res with row pitch W) to out at (y0, x0),
// each warp whole rows. res is V-aligned when the pass ran all S sweeps.
template <typename T, class Shape>
__device__ inline void storeTile(const T* res, T* __restrict__ out, long long cols, long long y0,
                                 long long x0, int rowsOwned, int colsOwned, bool vectors) {
  constexpr int TX = Shape::TX, W = Shape::W, V = Vec16<T>::width, kWarps = Shape::kThreads / 32;
  using Vec = typename Vec16<T>::type;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const bool aligned = reinterpret_cast<uintptr_t>(res) % 16 == 0;
  for (int r = warp; r < rowsOwned; r += kWarps) {
    T* to = out + (y0 + r) * cols + x0;
    const T* from = res + r * W;
    if (vectors) {
      for (int c = lane * V; c < colsOwned; c += 32 * V) {
        Vec v;
        if (aligned) {
          v = *reinterpret_cast<const Vec*>(from + c);
        } else {
          T* e = reinterpret_cast<T*>(&v);
#pragma unroll
          for (int i = 0; i < V; ++i) e[i] = from[c + i];
        }
        *reinterpret_cast<Vec*>(to + c) = v;
      }
    } else {
      for (int c = lane; c < colsOwned; c += 32) to[c] = from[c];
    }
  }
  static_assert(TX % V == 0, "fast: TX must be a multiple of the vector width");
}

template <typename T, class Shape>
__global__ void __launch_bounds__(Shape::kThreads)
    stencil_fast_kernel(const T* __restrict__ in, T* __restrict__ out, long long rows, long long cols,
                        Weights<T> w, State* st, Pass pass, double tolerance, bool vectors,
                        bool generalWrap) {
  constexpr int S = kMaxPassSweeps, TX = Shape::TX, TY = Shape::TY, W = Shape::W, H = Shape::H;
  constexpr int kThreads = Shape::kThreads, kWarps = kThreads / 32, C = Shape::C;
  extern __shared__ __align__(16) unsigned char sharedBytes[];
  T* const buf0 = reinterpret_cast<T*>(sharedBytes);
  auto buf = [&](int i) { return buf0 + i * Shape::kBuffer; };
  __shared__ T warpMax[kWarps][S];  // each warp's running max per sweep, over all its tiles

  if (passSkipped<T>(st, pass, tolerance)) return;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (lane < S) warpMax[warp][lane] = 0;
  const long long tilesX = (cols + TX - 1) / TX;
  const long long tiles = tilesX * ((rows + TY - 1) / TY);
  const int n = pass.sweeps;

  int cur = 0;  // the buffer holding the loaded tile
  if (blockIdx.x < tiles)
    loadTile<T, Shape>(in, buf(cur), rows, cols, (blockIdx.x / tilesX) * TY, (blockIdx.x % tilesX) * TX,
                       vectors, generalWrap);
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    const long long y0 = (t / tilesX) * TY, x0 = (t % tilesX) * TX;
    // Output cells inside the grid: the first rowsOwned rows and colsOwned columns of the tile.
    const int rowsOwned = static_cast<int>(rows - y0 < TY ? rows - y0 : TY);
    const int colsOwned = static_cast<int>(cols - x0 < TX ? cols - x0 : TX);
    copyWait<0>();
    __syncthreads();

    using R = ResidualMax<T, Shape::BitsMax>;
    // StaticSweeps: the bound is the constant S, so the loop unrolls and each sweep's shape folds.
#pragma unroll
    for (int s = 1; s <= (Shape::StaticSweeps ? S : n); ++s) {
      if (Shape::StaticSweeps && s > n) break;
      const T* src = buf(cur);
      T* dst = buf(cur ^ 1);
      // Sweep s computes rows [0, H − 2s) and columns [0, W − 2s) (in shifted coordinates), the
      // columns in groups of C (the last group may run past W − 2s: those cells are never used).
      const int groups = (W - 2 * s + C - 1) / C, height = H - 2 * s;
      const int bands = min(height, max(1, Shape::kItems * kThreads / groups));
      const int band = (height + bands - 1) / bands;
      const int items = groups * ((height + band - 1) / band);
      const int lo = S - s;  // the owned cells' first row and column after s shifts
      typename R::type mr(0);
      for (int k = tid; k < items; k += kThreads) {
        const int b = k / groups, q0 = b * band;
        sweepColumns<T, W, C, Shape::HaloResidual, R>(w, src, dst, C * (k - b * groups), q0,
                                                      min(q0 + band, height), lo, rowsOwned, colsOwned, mr,
                                                      W - 2 * s);
      }
      T m = warpReduce<MaxKeepNaNOp>(R::value(mr));
      if (lane == 0) warpMax[warp][s - 1] = maxKeepNaN(warpMax[warp][s - 1], m);
      __syncthreads();
      cur ^= 1;
    }

    // buf(cur) holds the result, its owned cells from (S − n, S − n); the other buffer is free for
    // the next tile, which loads while this one is written out.
    if (t + gridDim.x < tiles) {
      const long long next = t + gridDim.x;
      loadTile<T, Shape>(in, buf(cur ^ 1), rows, cols, (next / tilesX) * TY, (next % tilesX) * TX, vectors,
                         generalWrap);
    }
    storeTile<T, Shape>(buf(cur) + (S - n) * W + (S - n), out, cols, y0, x0, rowsOwned, colsOwned, vectors);
    cur ^= 1;  // the next tile is in the other buffer; the barrier at the loop's top orders the reuse
  }
  __syncthreads();
  if (tid < n) {
    T bm = 0;
    for (int i = 0; i < kWarps; ++i) bm = maxKeepNaN(bm, warpMax[i][tid]);
    atomicMax(&st->residual[pass.index % 3][tid], toBits(bm));
  }
}

#ifdef CK_TUNING_VARIANTS
// The first version of this kernel, for the harness only: bench/dev/stencil/fast_v1.cuh, found
// through the harness's -Ibench/dev/stencil (it uses the helpers above).
#include "fast_v1.cuh"
#endif

// ---------------------------------------------------------------------------------------------
// fast's kernels, one per block shape. Entries 0–3 are shipped: the first whose shared memory the
// device lets a block opt in to runs (entry 0, 210 KB: one block of 16 warps per SM, sm_90's
// 227 KB; entry 1, ~115 KB: two blocks of 8 warps per SM on sm_90, one on sm_80's 163 KB; entry 2,
// 80–92 KB, for sm_86/sm_89's 99 KB; entry 3, at most 48 KB, for the rest). The harness
// (bench/dev/stencil) compiles this file with -DCK_TUNING_VARIANTS for the shapes it compares.

template <typename T, class Shape>
FastKernel<T> fastKernel(const char* name) {
  return {name,     stencil_fast_kernel<T, Shape>, dim3(Shape::kThreads), Shape::sharedBytes, Shape::TX,
          Shape::TY};
}

template <typename T>
FastKernel<T> fastKernelAt(int i);

// Entries 0: 224×96 (float, 4 columns a thread) and 104×96 (double, 2 columns), 512 threads, were the
// fastest at 8192² and 16384² on the H200 with the three flags (bench/dev/stencil/NOTES.md, third
// round): their larger tiles recompute less halo (10% and 13% of the cells computed are halo, against
// 13% and 19% for entries 1). Entries 1 (the entries 0 until issue 34) run where 210 KB does not
// fit; entries 2 and 3 stand in on devices with less shared memory, measured on none (NOTES.md has
// their H100 figures). The other shapes stay for the harness.
template <>
FastKernel<float> fastKernelAt<float>(int i) {
  switch (i) {
    case 0: return fastKernel<float, FastShape<float, 224, 96, 512, 1, 4>>("224x96 512thr 4col");
    case 1: return fastKernel<float, FastShape<float, 112, 96, 256, 1, 4>>("112x96 256thr 4col");
    case 2: return fastKernel<float, FastShape<float, 128, 64, 256, 1, 4>>("128x64 256thr 4col");
    case 3: return fastKernel<float, FastShape<float, 64, 32, 256>>("64x32 256thr");
#ifdef CK_TUNING_VARIANTS
    // Entry 1 without the three flags (the kernel until issue 34), with one of them off, and entry 0
    // without them.
    case 4:
      return fastKernel<float, FastShape<float, 112, 96, 256, 1, 4, false, false>>(
          "112x96 256thr 4col before");
    case 5:
      return fastKernel<float, FastShape<float, 112, 96, 256, 1, 4, true, false>>("112x96 256thr 4col halo");
    case 6:
      return fastKernel<float, FastShape<float, 112, 96, 256, 1, 4, false, true>>(
          "112x96 256thr 4col static");
    case 7:
      return fastKernel<float, FastShape<float, 224, 96, 512, 1, 4, false, false>>(
          "224x96 512thr 4col before");
    case 8: return fastKernel<float, FastShape<float, 160, 64, 256, 1, 4>>("160x64 256thr 4col");
    case 9: return fastKernel<float, FastShape<float, 112, 96, 256>>("112x96 256thr");
    case 10: return fastKernel<float, FastShape<float, 112, 96, 256, 2, 4>>("112x96 256thr 4col 2items");
    case 11: return fastKernel<float, FastShape<float, 112, 96, 320, 1, 4>>("112x96 320thr 4col");
    case 12:
      return {"v1 128x64",
              stencil_fast_v1_kernel<float, true>,
              dim3(kV1ThreadsX, kV1ThreadsY),
              v1SharedBytes<float, true>(),
              V1Shape<float, true>::TX,
              V1Shape<float, true>::TY};
    case 13:
      return {"v1 64x32",
              stencil_fast_v1_kernel<float, false>,
              dim3(kV1ThreadsX, kV1ThreadsY),
              v1SharedBytes<float, false>(),
              V1Shape<float, false>::TX,
              V1Shape<float, false>::TY};
#endif
  }
  return {};
}

template <>
FastKernel<double> fastKernelAt<double>(int i) {
  switch (i) {
    case 0: return fastKernel<double, FastShape<double, 104, 96, 512>>("104x96 512thr");
    case 1: return fastKernel<double, FastShape<double, 96, 48, 256>>("96x48 256thr");
    case 2: return fastKernel<double, FastShape<double, 64, 48, 256>>("64x48 256thr");
    case 3: return fastKernel<double, FastShape<double, 32, 32, 256>>("32x32 256thr");
#ifdef CK_TUNING_VARIANTS
    // Entry 1 without the three flags (the kernel until issue 34), with some of them off, and entry 0
    // without them.
    case 4:
      return fastKernel<double, FastShape<double, 96, 48, 256, 1, 2, false, false, false>>(
          "96x48 256thr before");
    case 5:
      return fastKernel<double, FastShape<double, 96, 48, 256, 1, 2, true, false, false>>(
          "96x48 256thr halo");
    case 6:
      return fastKernel<double, FastShape<double, 96, 48, 256, 1, 2, true, true, false>>(
          "96x48 256thr halo static");
    case 7:
      return fastKernel<double, FastShape<double, 96, 48, 256, 1, 2, true, false, true>>(
          "96x48 256thr halo bits");
    case 8:
      return fastKernel<double, FastShape<double, 104, 96, 512, 1, 2, false, false, false>>(
          "104x96 512thr before");
    case 9: return fastKernel<double, FastShape<double, 72, 64, 256>>("72x64 256thr");
    case 10: return fastKernel<double, FastShape<double, 64, 64, 256>>("64x64 256thr");
    case 11: return fastKernel<double, FastShape<double, 112, 40, 256>>("112x40 256thr");
    case 12: return fastKernel<double, FastShape<double, 96, 48, 320>>("96x48 320thr");
    case 13: return fastKernel<double, FastShape<double, 96, 96, 512>>("96x96 512thr");
    case 14:
      return {"v1 64x64",
              stencil_fast_v1_kernel<double, true>,
              dim3(kV1ThreadsX, kV1ThreadsY),
              v1SharedBytes<double, true>(),
              V1Shape<double, true>::TX,
              V1Shape<double, true>::TY};
    case 15:
      return {"v1 32x32",
              stencil_fast_v1_kernel<double, false>,
              dim3(kV1ThreadsX, kV1ThreadsY),
              v1SharedBytes<double, false>(),
              V1Shape<double, false>::TX,
              V1Shape<double, false>::TY};
#endif
  }
  return {};
}

template <typename T>
cudaError_t prepareFast(int device, int sms, const Problem& pb, const T* in, const T* a, const T* b,
                        int variant, FastPlan<T>* plan) {
  int optin = 0;
  cudaError_t err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err != cudaSuccess) return err;
  if (variant < 0) {
    // The first entry whose shared memory fits: its dynamic buffers plus its static warpMax array
    // (a block's opt-in limit counts both).
    for (variant = 0; variant < 3; ++variant) {
      const FastKernel<T> k = fastKernelAt<T>(variant);
      cudaFuncAttributes attr{};
      err = cudaFuncGetAttributes(&attr, k.fn);
      if (err != cudaSuccess) return err;
      if (k.sharedBytes + attr.sharedSizeBytes <= static_cast<size_t>(optin)) break;
    }
  }
  FastKernel<T>& fast = plan->kernel;
  fast = fastKernelAt<T>(variant);
  if (fast.fn == nullptr) return cudaErrorInvalidValue;
  err = cudaFuncSetAttribute(fast.fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(fast.sharedBytes));
  int perSm = 0;
  if (err == cudaSuccess)
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &perSm, fast.fn, static_cast<int>(fast.block.x * fast.block.y), fast.sharedBytes);
  plan->blocks = static_cast<long long>(sms) * (perSm > 0 ? perSm : 1);
  constexpr int V = Vec16<T>::width;
  plan->vectors = pb.cols % V == 0;
  for (const T* p : {in, a, b}) plan->vectors = plan->vectors && reinterpret_cast<uintptr_t>(p) % 16 == 0;
  plan->generalWrap = pb.rows <= fast.ty + kMaxPassSweeps || pb.cols <= fast.tx + kMaxPassSweeps;
  return err;
}

template <typename T>
cudaError_t launchFast(const FastPlan<T>& plan, const T* src, T* dst, long long rows, long long cols,
                       const Weights<T>& w, State* st, const Pass& p, double tolerance, cudaStream_t stream) {
  const FastKernel<T>& fast = plan.kernel;
  const long long tiles = ((cols + fast.tx - 1) / fast.tx) * ((rows + fast.ty - 1) / fast.ty);
  const unsigned blocks = static_cast<unsigned>(tiles < plan.blocks ? tiles : plan.blocks);
  fast.fn<<<blocks, fast.block, fast.sharedBytes, stream>>>(src, dst, rows, cols, w, st, p, tolerance,
                                                            plan.vectors, plan.generalWrap);
  return cudaGetLastError();
}

template cudaError_t prepareFast<float>(int device, int sms, const Problem& pb, const float* in,
                                        const float* a, const float* b, int variant, FastPlan<float>* plan);
template cudaError_t launchFast<float>(const FastPlan<float>& plan, const float* src, float* dst,
                                       long long rows, long long cols, const Weights<float>& w, State* st,
                                       const Pass& p, double tolerance, cudaStream_t stream);
template cudaError_t prepareFast<double>(int device, int sms, const Problem& pb, const double* in,
                                         const double* a, const double* b, int variant,
                                         FastPlan<double>* plan);
template cudaError_t launchFast<double>(const FastPlan<double>& plan, const double* src, double* dst,
                                        long long rows, long long cols, const Weights<double>& w, State* st,
                                        const Pass& p, double tolerance, cudaStream_t stream);

#ifdef CK_TUNING_VARIANTS
// Tuning hooks for bench/dev/stencil (not part of the addon's interface).
int fastVariantCount(Dtype dtype) {
  int n = 0;
  while (dtype == Dtype::Float64 ? fastKernelAt<double>(n).fn != nullptr
                                 : fastKernelAt<float>(n).fn != nullptr)
    ++n;
  return n;
}
const char* fastVariantName(Dtype dtype, int v) {
  if (v < 0) return "auto";
  const char* name = dtype == Dtype::Float64 ? fastKernelAt<double>(v).name : fastKernelAt<float>(v).name;
  return name ? name : "?";
}
#endif

}  // namespace detail
}  // namespace stencil
}  // namespace ck
