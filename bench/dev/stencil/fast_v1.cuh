// The first `fast` kernel, kept for bench/dev/stencil's harness (compiled only with
// -DCK_TUNING_VARIANTS, included by native/stencil/3_temporal.cu after the helpers it uses, through
// the harness's -Ibench/dev/stencil). It ran at 1.26–1.35× copy
// on the H100 (8192², 100 sweeps): one column per thread walking a band of rows, 32-lane strips over
// W − 2s = 130…142 columns (five strips where 4.1–4.4 are needed), 3 shared loads, 9 FMAs, a store
// and the residual's compare per cell, two 256-thread blocks per SM. 3_temporal.cu's kernel replaced it.
#pragma once

// ---------------------------------------------------------------------------------------------
// fast v1 (the shipped `fast` until issue 19; kept for the tuning harness): temporal blocking. A block loads
// a (TY + 2S)×(TX + 2S) tile — its TY×TX output cells plus an S-cell halo — once, with 16-byte loads when the
// rows allow, then runs up to S sweeps between two shared-memory buffers. Sweep s is valid on a region that
// shrinks by one cell per side per sweep, so after S sweeps the output cells are exact without any exchange
// between blocks. Each thread walks a band of rows down one column keeping the 3×3 window in registers (3
// shared loads per cell instead of 9). Every sweep's residual is the max over the output cells only (the halo
// repeats other blocks' cells), reduced per block in shared memory and published with one atomic
// per sweep per block at the end.

// Output tile per block (TX×TY) for devices that allow large shared-memory blocks (sm_80, sm_90:
// two blocks of ~92 KB (float) or 100 KB (double) per SM), and a small one for the rest.
template <typename T, bool Large>
struct V1Shape;
template <>
struct V1Shape<float, true> {
  static constexpr int TX = 128, TY = 64;
};
template <>
struct V1Shape<double, true> {
  static constexpr int TX = 64, TY = 64;
};
template <>
struct V1Shape<float, false> {
  static constexpr int TX = 64, TY = 32;
};
template <>
struct V1Shape<double, false> {
  static constexpr int TX = 32, TY = 32;
};

constexpr int kV1ThreadsX = 32, kV1ThreadsY = 8;

template <typename T, bool Large>
constexpr size_t v1SharedBytes() {
  constexpr int W = V1Shape<T, Large>::TX + 2 * kMaxPassSweeps,
                H = V1Shape<T, Large>::TY + 2 * kMaxPassSweeps;
  return 2 * sizeof(T) * W * H;
}

template <typename T, bool Large>
__global__ void __launch_bounds__(kV1ThreadsX* kV1ThreadsY)
    stencil_fast_v1_kernel(const T* __restrict__ in, T* __restrict__ out, long long rows, long long cols,
                           Weights<T> w, State* st, Pass pass, double tolerance, bool vectors,
                           bool generalWrap) {
  constexpr int S = kMaxPassSweeps, TX = V1Shape<T, Large>::TX, TY = V1Shape<T, Large>::TY;
  constexpr int W = TX + 2 * S, H = TY + 2 * S, V = Vec16<T>::width;
  using Vec = typename Vec16<T>::type;
  extern __shared__ __align__(16) unsigned char sharedBytes[];
  T* buf0 = reinterpret_cast<T*>(sharedBytes);
  T* buf1 = buf0 + W * H;
  __shared__ T scratch[2][kV1ThreadsY];
  __shared__ T sweepMax[S];

  if (passSkipped<T>(st, pass, tolerance)) return;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kV1ThreadsX + tx;
  constexpr int kThreads = kV1ThreadsX * kV1ThreadsY;
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
      const int band = (H - 2 * s + kV1ThreadsY - 1) / kV1ThreadsY;
      const int r0 = s + ty * band;
      const int r1 = min(r0 + band, H - s);
      for (int c = s + tx; c < W - s && r0 < r1; c += kV1ThreadsX) {
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
        for (int i = 0; i < kV1ThreadsY; ++i) bm = maxKeepNaN(bm, scratch[s & 1][i]);
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
