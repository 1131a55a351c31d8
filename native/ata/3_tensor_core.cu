// Step 3, ours: FP64 tensor cores (mma.sync f64, m16n8k4 on sm_90, m8n8k4 on sm_80) on 128×128
// upper-triangle tiles, 16 warps of 32×32, a 3-stage pipeline of K-slabs (on sm_90 one tensor copy,
// TMA, per operand and stage; cp.async chunks elsewhere) with fragments double-buffered in
// registers, a banded tile order for L2 reuse, and split-K with a deterministic reduce: every tile
// split when the tiles cannot fill the device, or only the tiles of a last partial wave, which run
// as K-pieces after the whole tiles (tail split); whole tiles leave through shared memory as bulk
// copies (BulkStore).
// H100, 8000², 150 ms idle before each run (h100-c206c64-ata-time.log in
// bench/results/logs/h100-2026-11-27): 8.67 ms (59.1 TFLOP/s of useful n³ flops, 88% of the FP64
// tensor peak), cuBLAS DSYRK + mirror 11.00 ms; alternated with DSYRK under the 700 W cap both
// take about 10.7-10.9 ms (issue 34). Its rate against DSYRK, from the pair protocol, is in
// bench/results/README.md; bench/dev/ata/NOTES.md has each version between.
// Bench method: fast
#include <cuda.h>  // CUtensorMap and its enums only: cuTensorMapEncodeTiled comes from the driver at run time
#include <cudaTypedefs.h>  // its function-pointer type

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <type_traits>

#include "ata/ata.h"
#include "ata/common.cuh"
#include "core/cp_async.h"
#include "core/driver_entry.h"
#include "core/math.h"
#include "core/mbarrier.cuh"
#include "core/pool.h"

namespace ck {
namespace ata {
namespace detail {

enum class MmaShape { m8n8k4, m16n8k4, m16n8k8, m16n8k16 };

// One warp fragment is 16 rows × 8 columns × KS k. Thread (g = lane / 4, t = lane % 4) holds
//   a[2u], a[2u+1] = rows 2g, 2g+1 (of the 16) at k = t + 4u,  u < KS / 4
//   b[u]           = column g at k = t + 4u
//   c[0], c[1]     = row 2g,   columns 2t, 2t+1;   c[2], c[3] = row 2g+1, same columns.
// The PTX m16n8kK f64 layout puts a0 at row g and a1 at row g + 8; mapping hardware rows g and
// g + 8 to rows 2g and 2g + 1 makes each thread's two A values adjacent in shared memory (one
// 16-byte load) and its C values a 2×2 block (16-byte stores for the tile and its mirror). k is a
// pure reduction index, so its order only has to agree between a and b. m8n8k4 (sm_80) issues
// the two 8-row halves as two instructions.
template <MmaShape Shape, int KS>
__device__ __forceinline__ void mmaStep(double (&c)[4], const double (&a)[KS / 2],
                                        const double (&b)[KS / 4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (Shape == MmaShape::m8n8k4) {
#pragma unroll
    for (int u = 0; u < KS / 4; ++u) {
      asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
          : "+d"(c[0]), "+d"(c[1])
          : "d"(a[2 * u]), "d"(b[u]));
      asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
          : "+d"(c[2]), "+d"(c[3])
          : "d"(a[2 * u + 1]), "d"(b[u]));
    }
  }
#if __CUDA_ARCH__ >= 900
  if constexpr (Shape == MmaShape::m16n8k4) {
#pragma unroll
    for (int u = 0; u < KS / 4; ++u) {
      asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
          : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
          : "d"(a[2 * u]), "d"(a[2 * u + 1]), "d"(b[u]));
    }
  }
  if constexpr (Shape == MmaShape::m16n8k8) {
    static_assert(KS % 8 == 0, "m16n8k8 needs KS % 8 == 0");
#pragma unroll
    for (int v = 0; v < KS / 8; ++v) {
      asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%0,%1,%2,%3};\n"
          : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
          : "d"(a[4 * v]), "d"(a[4 * v + 1]), "d"(a[4 * v + 2]), "d"(a[4 * v + 3]), "d"(b[2 * v]),
            "d"(b[2 * v + 1]));
    }
  }
  if constexpr (Shape == MmaShape::m16n8k16) {
    static_assert(KS % 16 == 0, "m16n8k16 needs KS % 16 == 0");
#pragma unroll
    for (int w = 0; w < KS / 16; ++w) {
      asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, "
          "{%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
          : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
          : "d"(a[8 * w]), "d"(a[8 * w + 1]), "d"(a[8 * w + 2]), "d"(a[8 * w + 3]), "d"(a[8 * w + 4]),
            "d"(a[8 * w + 5]), "d"(a[8 * w + 6]), "d"(a[8 * w + 7]), "d"(b[4 * w]), "d"(b[4 * w + 1]),
            "d"(b[4 * w + 2]), "d"(b[4 * w + 3]));
    }
  }
#else
  // The 16-row f64 shapes exist from sm_90 on; the launcher never picks them below that.
  if constexpr (Shape != MmaShape::m8n8k4) __trap();
#endif
#endif
}

// Bulk copy of `bytes` (a multiple of 16, both addresses 16-byte aligned) from shared memory to
// global memory, in this thread's bulk group; bulkWaitRead waits until this thread's copies have
// read their source. fenceSharedForBulk (core/cp_async.h) makes this thread's shared-memory writes visible to
// the copies.
__device__ __forceinline__ void bulkStore(double* dst, const double* src, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst),
               "r"(sharedAddr(src)), "r"(bytes)
               : "memory");
#elif defined(__CUDA_ARCH__)
  __trap();  // the launcher never picks BulkStore configs below sm_90
#endif
}
__device__ __forceinline__ void bulkWaitRead() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
#endif
}

// Copies `bytes` (0 or the full width) and zero-fills the rest: out-of-range rows and columns of A
// become zeros in shared memory, so edge tiles need no special case in the product loop.
template <int Width>
__device__ __forceinline__ void cpAsyncZfill(void* dst, const void* src, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (Width == 16) {
    // .cg: the slab is reused from L2 by other blocks, not by this SM's L1.
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sharedAddr(dst)), "l"(src),
                 "r"(bytes)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(sharedAddr(dst)), "l"(src), "r"(bytes)
                 : "memory");
  }
#endif
}

template <int BM_, int WarpsM_, int WarpsN_, int BK_, int Stages_, MmaShape Shape_, int KS_,
          bool PairB_ = true, int MinBlocks_ = 1, bool Pipelined_ = false, bool InterleaveCopy_ = false,
          bool LeanCopy_ = false, bool SkipLower_ = false, bool BulkStore_ = false, bool TmaLoad_ = false,
          bool SkipIdle_ = false, int FragBufs_ = 2>
struct FastConfig {
  static constexpr int BM = BM_;  // square output tile: both operands are column slabs of A
  static constexpr int WarpsM = WarpsM_, WarpsN = WarpsN_;
  static constexpr int BK = BK_, Stages = Stages_, KS = KS_;
  static constexpr MmaShape Shape = Shape_;
  // PairB: two neighbouring 8-column B fragments take physical columns 2g and 2g + 1 of a 16-column
  // group, so each thread loads both with one 16-byte access, like A.
  static constexpr bool PairB = PairB_;
  static constexpr int MinBlocks = MinBlocks_;
  static constexpr bool Pipelined = Pipelined_;  // fragments pipelined in registers (FragBufs)
  // Pipelined only: the cp.async refill of a stage slot is issued in pieces between the MMA rows
  // of the last step instead of all at once before them, so the tensor pipe is fed right after
  // the barrier.
  static constexpr bool InterleaveCopy = InterleaveCopy_;
  // LeanCopy: each thread keeps a pointer to its next source row and steps it, instead of
  // recomputing (k0 + r)·n with 64-bit multiplies and range checks for every 16-byte chunk (the
  // SASS of the copy was ~25 instructions per chunk, a quarter of all instructions issued).
  static constexpr bool LeanCopy = LeanCopy_;
  // SkipLower: on a diagonal tile, warps whose whole block lies below the diagonal (discarded by
  // the mirror store) skip their fragment loads and MMAs; with 4×4 warps, the warp-to-block map
  // spreads those idle warps over the four schedulers so that no scheduler keeps four busy ones.
  static constexpr bool SkipLower = SkipLower_;
  // BulkStore (sm_90): a whole tile goes to C through shared memory, as 1 KB rows written by bulk
  // copies (cp.async.bulk), then its mirror the same way; the block is done when the copies have
  // read shared memory, and the writes drain while the SM's next block runs.
  static constexpr bool BulkStore = BulkStore_;
  // TmaLoad (sm_90, Pipelined, n even): one thread loads each operand's stage slab with one tensor
  // copy (TMA, cp.async.bulk.tensor) that lands on the slot's mbarrier `full`, instead of every
  // thread issuing cp.async chunks and waiting on its own groups. The box is BM + 4 columns wide, so
  // it lands in the padded rows as they are (the 4 extra columns fill the pad and are never read),
  // and the copy engine writes zeros for rows and columns outside A, as the zero-filled chunks did.
  // A slot is refilled after the block barrier each stage already had (per-slot "empty" mbarriers
  // instead, with or without a stage of lag, timed the same: NOTES.md §11).
  static constexpr bool TmaLoad = TmaLoad_;
  // SkipIdle (Pipelined, only with TmaLoad's tensor copies: the 8-byte cp.async kernel ignores it):
  // on diagonal tiles and on the tiles of the last column, whose warp blocks lie partly below the
  // diagonal or right of column n, the warps are mapped to blocks busy ones first, so that the busy
  // blocks spread evenly over the four schedulers (warp w runs on scheduler w % 4), and the idle
  // warps skip the main loop, whose barriers then count only the busy warps. Unlike SkipLower's
  // branch in every step, the loop of the other tiles is unchanged.
  static constexpr bool SkipIdle = SkipIdle_;
  // FragBufs (Pipelined): 2 = a step's fragments load while the previous step's MMAs run (two
  // register buffers); 1 = one buffer, loaded after the step's MMAs have issued, so that a deeper
  // MMA shape (m16n8k8: half the instructions and accumulator reads per flop) fits the registers
  // of 16 warps; the other warps of the scheduler hide the loads' latency.
  static constexpr int FragBufs = FragBufs_;
  static_assert(FragBufs == 1 || FragBufs == 2, "one or two fragment buffers");
  static constexpr int Threads = 32 * WarpsM * WarpsN;
  static constexpr int WM = BM / WarpsM, WN = BM / WarpsN;
  static constexpr int MT = WM / 16, NT = WN / 8;  // 16×8 fragments per warp
  // Row pitch ≡ 4 (mod 16) doubles. A quarter-warp's 16-byte loads (k = t + 4u, columns 2g, 2g+1
  // for g < 2, t < 4) then start at 4t + 2g (mod 16): 8 disjoint pairs covering all 32 banks; a
  // half-warp's 8-byte loads (k = t, column g for g < 4) land on 4t + g: 16 distinct words. It
  // also keeps every row 16-byte aligned for cp.async.
  static constexpr int LDS = BM + 4;
  static constexpr int Slab = BK * LDS;  // doubles per operand per stage
  static constexpr size_t StageBytes = static_cast<size_t>(Stages) * 2 * Slab * sizeof(double);
  // TmaLoad: one 8-byte mbarrier per slot after the stages.
  static constexpr size_t Smem = StageBytes + (TmaLoad ? Stages * sizeof(unsigned long long) : 0);
  static_assert(WM % 16 == 0 && WN % (PairB ? 16 : 8) == 0 && BK % KS == 0 && KS % 4 == 0, "tile shape");
  static_assert(Stages >= 2, "pipeline");
  // Harness probes (bench/dev/ata) derive from a config and hide these two: Stores (2: the tile and
  // its mirror; 1: the tile only; 0: nothing, results discarded) and mark(point), which every thread
  // calls at four points of a block's life (entry, first stage landed, product done, stores issued).
  // The shipped configs store everything and mark nothing (an empty inline function).
  static constexpr int Stores = 2;
  static __device__ __forceinline__ void mark(int) {}
  // A third probe hook, RowStores: the bulk epilogue's rows leave shared memory by the threads' own
  // coalesced 16-byte stores (each warp 512 contiguous bytes) instead of bulk copies, so the block
  // need not wait until the copies have read shared memory; the stores drain after it exits. Under
  // 1% faster than the bulk copies on an H100 (bench/dev/ata/NOTES.md §15).
  static constexpr bool RowStores = false;
  // A fourth, HalfEdge (4×4 warps of 32×32, tensor copies): a whole tile of the last tile column with
  // at most BM / 2 columns left of n (8000 = 62.5 × 128) runs its warps on 16×32 blocks of the left
  // half, MT = 1 instead of 2, so it takes about half the product loop instead of all of it. No
  // faster than `fast` as it runs on an H100 (NOTES.md §16).
  static constexpr bool HalfEdge = false;
};

// Tiles of one launch run in bands of `bandRows` tile-rows, column by column inside a band, so the
// blocks resident at one time touch about bandRows + SMs / bandRows column slabs of A and re-read
// them from L2 rather than DRAM.
constexpr int kBandRows = 8;

__device__ __forceinline__ void bandedTileCoords(int64_t t, int T, int bandRows, int& bi, int& bj) {
  int b0 = 0;
  for (;;) {
    const int gb = min(bandRows, T - b0);
    const int64_t tri = static_cast<int64_t>(gb) * (gb + 1) / 2;
    const int64_t count = tri + static_cast<int64_t>(gb) * (T - b0 - gb);
    if (t < count) {
      if (t < tri) {
        int c = 0;
        while ((c + 1) * (c + 2) / 2 <= t) ++c;
        bj = b0 + c;
        bi = b0 + static_cast<int>(t - c * (c + 1) / 2);
      } else {
        const int64_t r = t - tri;
        bj = b0 + gb + static_cast<int>(r / gb);
        bi = b0 + static_cast<int>(r % gb);
      }
      return;
    }
    t -= count;
    b0 += gb;
  }
}

// Where a block's partial sums go; tiles that own their whole K range write C directly.
struct SplitPlan {
  int64_t kTilesPerSplit;  // uniform split-K (blockIdx.y = split): k-tiles per split
  // Tail split (grid.y == 1): blocks from tailStart on are K-pieces of the last tailTiles tiles,
  // split-major (piece s of tail tile i is block tailStart + s · tailTiles + i), tailKPer k-tiles
  // each; every block before tailStart is a whole tile. tailTiles == 0: no tail split.
  int64_t tailStart, tailKPer;
  int tailTiles;
};

// A block's work: tile index, K split, k-tiles per split, and its slot in the partial-sum workspace
// (-1: the tile is whole and goes straight to C), from the block index (bx, by).
struct BlockWork {
  int64_t tile, kPer, slot;
  int split;
};
template <bool Tail>
__device__ __forceinline__ BlockWork blockWork(const SplitPlan& sp, bool splitK, unsigned bx, unsigned by) {
  BlockWork w{bx, sp.kTilesPerSplit, -1, static_cast<int>(by)};
  if constexpr (Tail) {
    if (w.tile >= sp.tailStart) {
      const int64_t u = w.tile - sp.tailStart;
      w.split = static_cast<int>(u / sp.tailTiles);
      w.slot = u;  // = split · tailTiles + (tile − tailStart)
      w.tile = sp.tailStart + u % sp.tailTiles;
      w.kPer = sp.tailKPer;
    }
  } else if (splitK) {
    w.slot = static_cast<int64_t>(w.split) * gridDim.x + w.tile;
  }
  return w;
}

// BulkStore epilogue. The tile goes through shared memory (row pitch BM + 2 doubles: 16-byte rows,
// 2-way bank conflicts for the 16-byte writes of either orientation, which even pitches cannot
// avoid), first as itself (rows i0.. of C), then transposed (rows j0.., the mirror); BM threads
// each copy one row. A diagonal tile is written once, its lower half from the upper elements so
// that C stays bitwise symmetric. Edge tiles copy only the columns and rows inside C.
// The PairB layout of a warp's accumulators (m16n8k4, two n8 fragments side by side): for fragment row
// block mi and column group q, thread (g, t) holds rows 2g and 2g + 1 (h = 0, 1) of the block and four
// consecutive columns from 4t; gathers them into v[h][0..3]. Both epilogues read the tile this way.
template <int MT, int NT>
__device__ __forceinline__ void pairBRows(const double (&acc)[MT][NT][4], int mi, int q, double (&v)[2][4]) {
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      v[h][2 * e] = acc[mi][2 * q][2 * h + e];
      v[h][2 * e + 1] = acc[mi][2 * q + 1][2 * h + e];
    }
}

template <class Cfg, int MT, int NT, int MTe = MT>
__device__ __forceinline__ void storeTileBulk(double* S, double* C, int64_t n, int64_t i0, int64_t j0,
                                              bool diag, const double (&acc)[MT][NT][4], int wm0, int wn0,
                                              int g, int t, int tid) {
  constexpr int BM = Cfg::BM, Pitch = BM + 2;
  static_assert(Cfg::PairB && static_cast<size_t>(BM) * Pitch * sizeof(double) <= Cfg::StageBytes,
                "bulk store plan");
  // Thread (g, t) holds, for fragment row block mi and column group q, rows lr, lr + 1 and columns
  // lc .. lc + 3 (PairB layout, as in the direct epilogue).
  auto forEach = [&](auto&& f) {
#pragma unroll
    for (int mi = 0; mi < MTe; ++mi)  // MTe: the fragment rows a HalfEdge tile's warps use
#pragma unroll
      for (int q = 0; q < NT / 2; ++q) {
        double v[2][4];
        pairBRows(acc, mi, q, v);
        f(wm0 + mi * 16 + 2 * g, wn0 + q * 16 + 4 * t, v);
      }
  };
  // Rows of S (BM doubles each from column c0 of C) to rows r0.. of C; rows and columns past n are
  // left out. Every thread passes the barrier after the copies have read S.
  auto copyRows = [&](int64_t r0, int64_t c0) {
    if constexpr (Cfg::RowStores) {
      constexpr int Warps = Cfg::Threads / 32;
      static_assert(BM % Warps == 0 && BM % 64 == 0, "row-store plan");
      const int lane = tid & 31, warp = tid >> 5;
      const int width = static_cast<int>(n - c0 < BM ? n - c0 : BM);  // even: n is
      __syncthreads();
#pragma unroll
      for (int i = 0; i < BM / Warps; ++i) {
        const int r = warp + i * Warps;
        if (r0 + r < n) {
#pragma unroll
          for (int c = 2 * lane; c < BM; c += 64)
            if (c < width)
              *reinterpret_cast<double2*>(C + (r0 + r) * n + c0 + c) =
                  *reinterpret_cast<const double2*>(S + r * Pitch + c);
        }
      }
      __syncthreads();  // S is rewritten next (the mirror) or the block exits
    } else {
      fenceSharedForBulk();
      __syncthreads();
      if (tid < BM && r0 + tid < n) {
        bulkStore(C + (r0 + tid) * n + c0, S + tid * Pitch, static_cast<int>(n - c0 < BM ? n - c0 : BM) * 8);
        bulkWaitRead();
      }
      __syncthreads();
    }
  };
  __syncthreads();  // no warp still reads the last stage
  if (diag) {
    forEach([&](int lr, int lc, const double(&v)[2][4]) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int w = 0; w < 4; ++w)
          if (lr + h <= lc + w) S[(lr + h) * Pitch + lc + w] = S[(lc + w) * Pitch + lr + h] = v[h][w];
    });
    copyRows(i0, j0);
    return;
  }
  forEach([&](int lr, int lc, const double(&v)[2][4]) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int w = 0; w < 4; w += 2)
        *reinterpret_cast<double2*>(S + (lr + h) * Pitch + lc + w) = make_double2(v[h][w], v[h][w + 1]);
  });
  copyRows(i0, j0);
  forEach([&](int lr, int lc, const double(&v)[2][4]) {
#pragma unroll
    for (int w = 0; w < 4; ++w)
      *reinterpret_cast<double2*>(S + (lc + w) * Pitch + lr) = make_double2(v[0][w], v[1][w]);
  });
  copyRows(j0, i0);
}

// One block per (upper tile, K split), see SplitPlan. A whole tile (partial == nullptr, or before
// the tail) writes itself and its mirror into C; a split writes its BM×BM partial sum to
// partial[slot] and ata_splitk_reduce_kernel finishes. Tail: the launch has a tail split (its own
// instantiation, so that the kernel without one keeps its registers and code).
template <class Cfg, bool Vec16, bool Tail = false>
__global__ void __launch_bounds__(Cfg::Threads, Cfg::MinBlocks)
    ata_mma_sym_kernel(const double* __restrict__ A, double* __restrict__ C, double* __restrict__ partial,
                       int64_t rows, int64_t n, int T, int bandRows, SplitPlan sp,
                       const __grid_constant__ CUtensorMap tmA) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int BM = Cfg::BM, BK = Cfg::BK, Stages = Cfg::Stages, KS = Cfg::KS, LDS = Cfg::LDS;
  constexpr int Slab = Cfg::Slab, Threads = Cfg::Threads, MT = Cfg::MT, NT = Cfg::NT;
  constexpr bool PairB = Cfg::PairB;
  extern __shared__ __align__(128) double smem[];  // 128: tensor copies land on 128-byte boundaries
  // The slab is 128-byte aligned for the tensor copies (Slab * 8 is a multiple of 128).
  constexpr bool Tma = Cfg::TmaLoad && Vec16 && Cfg::Pipelined;
  static_assert(!Tma || (Slab * sizeof(double)) % 128 == 0, "tensor copy alignment");
  // SkipIdle needs the tensor copies: its idle warps leave the product loop, and only with tensor
  // copies does no warp but warp 0 load the stages.
  constexpr bool SkipIdle = Cfg::SkipIdle && Tma;
  unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + Stages * 2 * Slab);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  int wmi = warp / Cfg::WarpsN, wni = warp % Cfg::WarpsN;
  if constexpr (!SkipIdle && Cfg::SkipLower && Cfg::WarpsM == 4 && Cfg::WarpsN == 4) {
    // Warp w runs on scheduler w % 4. Blocks (row, column) as 4·row + column, chosen so that the
    // 6 blocks below the diagonal (row > column) fall 1, 1, 2, 2 on the schedulers: on a diagonal
    // tile the busiest scheduler has 3 active warps instead of 4.
    // Packed 4 bits per warp (warp 0 lowest): {0, 2, 3, 7, 1, 5, 6, 10, 4, 8, 9, 13, 11, 15, 12, 14}.
    constexpr unsigned long long kMap = 0xecfbd984a6517320ull;
    const int b = static_cast<int>((kMap >> (4 * warp)) & 15);
    wmi = b >> 2;
    wni = b & 3;
  }

  Cfg::mark(0);
  const BlockWork work = blockWork<Tail>(sp, partial != nullptr, blockIdx.x, blockIdx.y);
  int bi, bj;
  bandedTileCoords(work.tile, T, bandRows, bi, bj);
  const bool diag = bi == bj;  // uniform: a diagonal tile loads one slab and uses it twice
  const int64_t i0 = static_cast<int64_t>(bi) * BM, j0 = static_cast<int64_t>(bj) * BM;
  // SkipIdle: a warp block is busy when it holds elements on or above the diagonal and left of
  // column n (rows past n only occur on the last diagonal tile, below its diagonal there). Warp w
  // takes the w-th block with the busy ones first; with every block busy that is the usual map.
  bool idle = false;
  int busyCount = Cfg::WarpsM * Cfg::WarpsN;  // warps that run the product loop
  if constexpr (SkipIdle) {
    auto busy = [&](int b) {
      const int r = b / Cfg::WarpsN, c = b % Cfg::WarpsN;
      return (!diag || r * Cfg::WM < (c + 1) * Cfg::WN) && j0 + c * Cfg::WN < n;
    };
    busyCount = 0;
#pragma unroll
    for (int b = 0; b < Cfg::WarpsM * Cfg::WarpsN; ++b) busyCount += busy(b);
    int nextBusy = 0, nextIdle = busyCount, pick = 0;
#pragma unroll
    for (int b = 0; b < Cfg::WarpsM * Cfg::WarpsN; ++b) {
      const int order = busy(b) ? nextBusy++ : nextIdle++;
      if (order == warp) pick = b;
    }
    wmi = pick / Cfg::WarpsN;
    wni = pick % Cfg::WarpsN;
    idle = warp >= busyCount;
  }
  // HalfEdge: a whole tile (no split piece) of the last tile column whose columns left of n fit in
  // its left half; its warps take 16×32 blocks of that half (8 rows of blocks × 2), so every
  // scheduler keeps four warps, each with half the fragments. Its stores go through the bulk path.
  bool half = false;
  if constexpr (Cfg::HalfEdge) {
    // The bulk epilogue is the only one that writes just the rows the warps hold (Stores == 2).
    static_assert(Cfg::WarpsM == 4 && Cfg::WarpsN == 4 && Cfg::MT == 2 && Cfg::BulkStore &&
                      Cfg::Stores == 2 && Cfg::Pipelined && !Cfg::SkipIdle && !Cfg::SkipLower,
                  "HalfEdge plan");
    // Every condition of the bulk epilogue below (n even, C 16-byte aligned, a whole tile) is tested
    // here too: the other epilogues write both fragment rows.
    half = Tma && !diag && work.slot < 0 && n % 2 == 0 && n - j0 <= BM / 2 &&
           (reinterpret_cast<uintptr_t>(C) & 15) == 0;
    if (half) {
      wmi = warp >> 1;  // 16-row blocks: wm0 = 16 · wmi below
      wni = warp & 1;
    }
  }
  const int wm0 = half ? wmi * 16 : wmi * Cfg::WM, wn0 = wni * Cfg::WN;
  // SkipLower: this warp's block is entirely below the diagonal of a diagonal tile (warp-uniform).
  if constexpr (!SkipIdle) idle = Cfg::SkipLower && diag && wm0 >= wn0 + Cfg::WN;
  const int64_t kBegin = work.split * work.kPer * BK;
  const int64_t kEnd = min(rows, kBegin + work.kPer * BK);
  const int kTiles = static_cast<int>(ceilDiv(kEnd - kBegin, BK));

  // Copy plan: a stage is BK rows × BM columns per operand, in Width-byte chunks.
  constexpr int Width = Vec16 ? 16 : 8;
  constexpr int PerChunk = Width / 8;
  constexpr int ChunksPerRow = BM / PerChunk;
  static_assert(Threads % ChunksPerRow == 0 && (BK * ChunksPerRow) % Threads == 0, "copy plan");
  constexpr int RowStep = Threads / ChunksPerRow;
  constexpr int PerThread = BK * ChunksPerRow / Threads;
  const int cr = tid / ChunksPerRow;
  const int cc = (tid % ChunksPerRow) * PerChunk;
  // With Vec16, n is even and chunks start at even columns, so a chunk is all in or all out.
  const bool iIn = i0 + cc < n, jIn = j0 + cc < n;

  // LeanCopy state: this thread's source for piece 0 of the next k-tile to load (k-tiles are loaded
  // in order), the distance between its pieces and between k-tiles.
  const double* srcI = A + (kBegin + cr) * n + i0 + cc;
  const int64_t pieceStride = static_cast<int64_t>(RowStep) * n, tileStride = static_cast<int64_t>(BK) * n;
  const int64_t jOffset = j0 - i0;

  // Piece p (< PerThread) of the copy of k-tile kt into stage slot `stage`.
  auto loadStagePart = [&](int kt, int stage, int p) {
    double* sI = smem + stage * 2 * Slab;
    double* sJ = sI + Slab;
    const int64_t k0 = kBegin + static_cast<int64_t>(kt) * BK;
    const int r = cr + p * RowStep;
    if constexpr (Cfg::LeanCopy) {
      // Rows at or past kEnd (only in the last k-tile) and columns past n are zero-filled.
      const bool kIn = r < kEnd - k0;
      const double* row = srcI + p * pieceStride;
      cpAsyncZfill<Width>(sI + r * LDS + cc, (kIn && iIn) ? row : A, (kIn && iIn) ? Width : 0);
      if (!diag)
        cpAsyncZfill<Width>(sJ + r * LDS + cc, (kIn && jIn) ? row + jOffset : A, (kIn && jIn) ? Width : 0);
      if (p == PerThread - 1) srcI += tileStride;
    } else {
      const bool kIn = k0 + r < kEnd;
      const double* row = A + (k0 + r) * n;
      cpAsyncZfill<Width>(sI + r * LDS + cc, (kIn && iIn) ? row + i0 + cc : A, (kIn && iIn) ? Width : 0);
      if (!diag)
        cpAsyncZfill<Width>(sJ + r * LDS + cc, (kIn && jIn) ? row + j0 + cc : A, (kIn && jIn) ? Width : 0);
    }
  };
  auto loadStage = [&](int kt, int stage) {
#pragma unroll
    for (int p = 0; p < PerThread; ++p) loadStagePart(kt, stage, p);
  };

  double acc[MT][NT][4];
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
#pragma unroll
    for (int ni = 0; ni < NT; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0;

  // Fragments of one KS-deep step: A for MT 16-row blocks, B for NT 8-column blocks.
  // rowsUsed: the fragment rows used, MT except on HalfEdge tiles (1); a constant at every call, where
  // the lambda is inlined, so the loops below unroll to that count (a generic lambda with the count as
  // a type crashes cicc 13.0).
  auto loadFrags = [&](int rowsUsed, double(&fa)[MT][KS / 2], double(&fb)[NT][KS / 4], const double* sI,
                       const double* sJ, int kk) {
    if (!SkipIdle && idle) return;  // SkipIdle: idle warps do not run the loop
#pragma unroll
    for (int u = 0; u < KS / 4; ++u) {
      const double* row = sJ + (kk + t + 4 * u) * LDS + wn0;
      if constexpr (PairB) {
#pragma unroll
        for (int np = 0; np < NT / 2; ++np) {
          const double2 v = *reinterpret_cast<const double2*>(row + np * 16 + 2 * g);
          fb[2 * np][u] = v.x;
          fb[2 * np + 1][u] = v.y;
        }
      } else {
#pragma unroll
        for (int ni = 0; ni < NT; ++ni) fb[ni][u] = row[ni * 8 + g];
      }
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) {
        if (mi >= rowsUsed) break;
        const double2 v =
            *reinterpret_cast<const double2*>(sI + (kk + t + 4 * u) * LDS + wm0 + mi * 16 + 2 * g);
        fa[mi][2 * u] = v.x;
        fa[mi][2 * u + 1] = v.y;
      }
    }
  };
  auto mmaFrags = [&](int rowsUsed, const double(&fa)[MT][KS / 2], const double(&fb)[NT][KS / 4]) {
    if (!SkipIdle && idle) return;  // SkipIdle: idle warps do not run the loop
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
      if (mi >= rowsUsed) break;
#pragma unroll
      for (int ni = 0; ni < NT; ++ni) mmaStep<Cfg::Shape, KS>(acc[mi][ni], fa[mi], fb[ni]);
    }
  };
  // The same MMAs with the copy of k-tile kt (kt < 0: none) into slot `stage` spread between the
  // rows of MMAs.
  auto mmaFragsCopy = [&](const double(&fa)[MT][KS / 2], const double(&fb)[NT][KS / 4], int kt, int stage) {
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
      if (!idle) {  // the cp.async path only, where SkipIdle is off
#pragma unroll
        for (int ni = 0; ni < NT; ++ni) mmaStep<Cfg::Shape, KS>(acc[mi][ni], fa[mi], fb[ni]);
      }
      if (kt >= 0) {
#pragma unroll
        for (int p = mi * PerThread / MT; p < (mi + 1) * PerThread / MT; ++p) loadStagePart(kt, stage, p);
      }
    }
  };
  auto stageI = [&](int kt) -> const double* { return smem + (kt % Stages) * 2 * Slab; };
  using AllRows = std::integral_constant<int, MT>;
  // Tma: thread 0 starts k-tile kt's tensor copies into slot `slot` (one for a diagonal tile); they
  // complete on full[slot], whose phase p is the slot's p-th k-tile.
  auto tmaStage = [&](int kt, int slot) {
    double* sI = smem + slot * 2 * Slab;
    const int k0 = static_cast<int>(kBegin + static_cast<int64_t>(kt) * BK);
    mbarArriveExpectBytes(&full[slot], (diag ? 1u : 2u) * Slab * static_cast<unsigned>(sizeof(double)));
    tmaLoad2d(sI, &tmA, static_cast<int>(i0), k0, &full[slot]);
    if (!diag) tmaLoad2d(sI + Slab, &tmA, static_cast<int>(j0), k0, &full[slot]);
  };
  auto waitStage = [&](int kt) { mbarWait(&full[kt % Stages], (kt / Stages) & 1); };

  if constexpr (!Cfg::Pipelined) {
#pragma unroll
    for (int s = 0; s < Stages - 1; ++s) {
      if (s < kTiles) loadStage(s, s);
      copyCommit();
    }
    for (int kt = 0; kt < kTiles; ++kt) {
      copyWait<Stages - 2>();
      // One barrier per stage: it publishes stage kt to all warps and proves that every warp is
      // done with stage kt - 1, whose slot the next load overwrites.
      __syncthreads();
      {
        const int next = kt + Stages - 1;
        if (next < kTiles) loadStage(next, next % Stages);
        copyCommit();
      }
      const double* sI = stageI(kt);
      const double* sJ = diag ? sI : sI + Slab;
#pragma unroll
      for (int kk = 0; kk < BK; kk += KS) {
        double fa[MT][KS / 2], fb[NT][KS / 4];
        loadFrags(MT, fa, fb, sI, sJ, kk);
        mmaFrags(MT, fa, fb);
      }
    }
  } else {
    // Fragments are double-buffered in registers (FragBufs 2): step s + 1 is read from shared memory
    // while the tensor cores run step s, so shared-memory latency hides behind MMAs instead of
    // stalling (with two warps per scheduler there is too little other work to hide it); with one
    // buffer, step s + 1 is read right after step s's MMAs issue. The barrier sits before the last
    // step of a stage: by then every warp has all of stage kt in registers, so its slot can be
    // refilled (all Stages slots prefetch), and the first fragments of stage kt + 1 load with (two
    // buffers) or after (one) the last MMAs of stage kt.
    constexpr int Steps = BK / KS;
    static_assert(Steps % 2 == 0, "an even number of steps per stage keeps the register buffers in phase");
    // SkipIdle: only the busy warps (warp 0 among them) run the loop; the idle ones go on to the
    // epilogue (the bulk store's first barrier, all threads, waits there for the busy ones before
    // the stage memory is reused; a partial tile's stores need no barrier). The loop's barriers are
    // then named barrier 1 for the busy warps' threads, which all reach it at the same instruction
    // (an earlier form ran the idle warps through a second copy of the loop and met them at the
    // unaligned barrier: correct, but more cycles, NOTES.md §11.5).
    const unsigned loopThreads = 32u * static_cast<unsigned>(busyCount);
    auto blockSync = [&] {
      if constexpr (SkipIdle)
        asm volatile("bar.sync 1, %0;\n" ::"r"(loopThreads) : "memory");
      else
        __syncthreads();
    };
    auto mainLoop = [&](auto mte) {
      constexpr int Rows = decltype(mte)::value;
      constexpr int Bufs = Cfg::FragBufs;
      double fa[Bufs][MT][KS / 2], fb[Bufs][NT][KS / 4];
      // The buffer of step s (two buffers: alternate; one: always the same).
      auto buf = [](int s) { return Bufs == 2 ? s & 1 : 0; };
      if constexpr (Tma) {
        if (tid == 0) {
#pragma unroll
          for (int s = 0; s < Stages; ++s) mbarInit(&full[s], 1);
          fenceBarrierInit();
        }
        blockSync();
        if (tid == 0) {
#pragma unroll
          for (int s = 0; s < Stages; ++s)
            if (s < kTiles) tmaStage(s, s);
        }
        if (kTiles > 0) waitStage(0);
      } else {
#pragma unroll
        for (int s = 0; s < Stages; ++s) {
          if (s < kTiles) loadStage(s, s);
          copyCommit();
        }
        copyWait<Stages - 1>();
        blockSync();
      }
      Cfg::mark(1);
      loadFrags(Rows, fa[0], fb[0], stageI(0), diag ? stageI(0) : stageI(0) + Slab, 0);
      for (int kt = 0; kt < kTiles; ++kt) {
        const double* sI = stageI(kt);
        const double* sJ = diag ? sI : sI + Slab;
#pragma unroll
        for (int s = 0; s < Steps; ++s) {
          const int cur = buf(s), next = buf(s + 1);
          // The next step's fragments: with two buffers before this step's MMAs (they load under
          // them), with one after (the MMAs have read the buffer by then).
          auto nextFrags = [&] {
            if (s < Steps - 1) {
              loadFrags(Rows, fa[next], fb[next], sI, sJ, (s + 1) * KS);
            } else if (kt + 1 < kTiles) {
              const double* nI = stageI(kt + 1);
              loadFrags(Rows, fa[next], fb[next], nI, diag ? nI : nI + Slab, 0);
            }
          };
          if (s == Steps - 1 && Tma) {
            if (kt + 1 < kTiles) waitStage(kt + 1);
            blockSync();  // no warp reads slot kt % Stages any more
            if (tid == 0 && kt + Stages < kTiles) {
              fenceSharedForBulk();  // the warps' reads of the slot before the copy engine's writes
              tmaStage(kt + Stages, kt % Stages);
            }
          } else if (s == Steps - 1) {
            copyWait<Stages - 2>();  // stage kt + 1 has landed (this thread's part)
            blockSync();
            if constexpr (!Cfg::InterleaveCopy) {
              if (kt + Stages < kTiles) loadStage(kt + Stages, kt % Stages);
              copyCommit();
            }
          }
          if constexpr (Bufs == 2) nextFrags();
          if (s == Steps - 1 && !Tma && Cfg::InterleaveCopy) {
            mmaFragsCopy(fa[cur], fb[cur], kt + Stages < kTiles ? kt + Stages : -1, kt % Stages);
            copyCommit();
          } else {
            mmaFrags(Rows, fa[cur], fb[cur]);
          }
          if constexpr (Bufs == 1) nextFrags();
        }
      }
    };
    if constexpr (Cfg::HalfEdge) {
      if (half)
        mainLoop(std::integral_constant<int, 1>{});
      else
        mainLoop(AllRows{});
    } else if (!(SkipIdle && idle)) {
      mainLoop(AllRows{});
    }
  }
  copyWait<0>();
  Cfg::mark(2);

  // Each thread holds 2×W blocks: rows r, r + 1 and W consecutive columns from c (W = 4 with PairB:
  // fragment 2np + s, hardware column h sits at physical column 16np + 2h + s).
  constexpr int W = PairB ? 4 : 2;
  constexpr int Groups = NT * 2 / W;
  // 16-byte stores need 16-byte-aligned addresses: (r * n + c) even for even c, i.e. n even.
  const bool vecStore = !diag && n % 2 == 0 && (reinterpret_cast<uintptr_t>(C) & 15) == 0;
  // Recomputed from the block index (a few integer ops) rather than kept live through the k-loop.
  const int64_t slot = blockWork<Tail>(sp, partial != nullptr, blockIdx.x, blockIdx.y).slot;
  double* P = slot >= 0 ? partial + slot * (BM * BM) : nullptr;
  if constexpr (Cfg::BulkStore && Cfg::Stores == 2) {
    // Whole tile, n even, C 16-byte aligned: every row of the tile and of its mirror is one bulk copy.
    if (P == nullptr && n % 2 == 0 && (reinterpret_cast<uintptr_t>(C) & 15) == 0) {
      if constexpr (Cfg::HalfEdge) {
        if (half)
          storeTileBulk<Cfg, MT, NT, 1>(smem, C, n, i0, j0, diag, acc, wm0, wn0, g, t, tid);
        else
          storeTileBulk<Cfg>(smem, C, n, i0, j0, diag, acc, wm0, wn0, g, t, tid);
      } else {
        storeTileBulk<Cfg>(smem, C, n, i0, j0, diag, acc, wm0, wn0, g, t, tid);
      }
      Cfg::mark(3);
      return;
    }
  }
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
#pragma unroll
    for (int q = 0; q < Groups; ++q) {
      double v[2][W];
      int lc;
      if constexpr (PairB) {
        pairBRows(acc, mi, q, v);
        lc = wn0 + q * 16 + 4 * t;
      } else {
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int e = 0; e < 2; ++e) v[h][e] = acc[mi][q][2 * h + e];
        lc = wn0 + q * 8 + 2 * t;
      }
      const int lr = wm0 + mi * 16 + 2 * g;
      if (P) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int w = 0; w < W; w += 2)
            *reinterpret_cast<double2*>(P + (lr + h) * BM + lc + w) = make_double2(v[h][w], v[h][w + 1]);
        continue;
      }
      const int64_t r = i0 + lr, c = j0 + lc;
      if constexpr (Cfg::Stores == 0) {
        // Probe: no stores; a store that no product of inputs in [-1, 1) can trigger keeps them live.
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int w = 0; w < W; ++w)
            if (v[h][w] == 0x1p1000) C[0] = v[h][w];
        continue;
      }
      if (vecStore && r + 1 < n && c + W - 1 < n) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int w = 0; w < W; w += 2)
            *reinterpret_cast<double2*>(C + (r + h) * n + c + w) = make_double2(v[h][w], v[h][w + 1]);
        if constexpr (Cfg::Stores == 2) {
#pragma unroll
          for (int w = 0; w < W; ++w)
            *reinterpret_cast<double2*>(C + (c + w) * n + r) = make_double2(v[0][w], v[1][w]);
        }
      } else {
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int w = 0; w < W; ++w) {
            if constexpr (Cfg::Stores == 2)
              storeSym(C, n, r + h, c + w, v[h][w]);
            else if (r + h <= c + w && c + w < n)
              C[(r + h) * n + c + w] = v[h][w];
          }
      }
    }
  Cfg::mark(3);
#endif
}

// Sums the splits of each partial tile in a fixed order (deterministic) and writes C and its
// mirror. blockIdx.x: tile; blockIdx.y: a run of 32 elements of the BM×BM tile. Each of the 8 warps
// sums every 8th split, then warp 0 adds the 8 partial sums in order: 8 loads in flight per element
// instead of one long dependent chain.
constexpr int kReduceLanes = 32, kReduceGroups = 8;

__global__ void __launch_bounds__(kReduceLanes* kReduceGroups)
    ata_splitk_reduce_kernel(const double* __restrict__ partial, double* __restrict__ C, int64_t n, int T,
                             int bandRows, int bm, int splits, int64_t tileBase) {
  __shared__ double part[kReduceGroups][kReduceLanes];
  const int x = threadIdx.x, y = threadIdx.y;
  const int64_t tile = blockIdx.x, tiles = gridDim.x;  // tileBase + blockIdx.x in the tile order
  const int64_t tileElems = static_cast<int64_t>(bm) * bm;
  const int e = blockIdx.y * kReduceLanes + x;
  double s = 0.0;
  for (int k = y; k < splits; k += kReduceGroups) s += partial[(k * tiles + tile) * tileElems + e];
  part[y][x] = s;
  __syncthreads();
  if (y != 0) return;
#pragma unroll
  for (int k = 1; k < kReduceGroups; ++k) s += part[k][x];
  int bi, bj;
  bandedTileCoords(tileBase + tile, T, bandRows, bi, bj);
  const int64_t r = static_cast<int64_t>(bi) * bm + e / bm, c = static_cast<int64_t>(bj) * bm + e % bm;
  storeSym(C, n, r, c, s);
}

// Guesses for the cost model only (relative costs matter, not absolute accuracy).
constexpr double kModelFlops = 50e12;         // sustained FP64 tensor rate of the device, 128-tiles
constexpr double kModelBandwidth = 2.5e12;    // sustained DRAM bytes/s
constexpr double kModelLaunch = 8e-6;         // the extra reduce launch, seconds
constexpr double kModelAllocPerByte = 1e-12;  // cudaMallocAsync from a trimmed pool: ~1 us per MB (measured)
constexpr int64_t kMaxWorkspaceBytes = int64_t(256) << 20;
constexpr int kMaxSplits = 4096;
// Tail split only: a block's pipeline fill and epilogue (seconds), and the fewest k-tiles a piece
// may have (pieces of ~5 k-tiles ran at half the model's rate: NOTES-persistent-tail-experiment.md).
constexpr double kModelTileFixed = 4e-6;
constexpr int64_t kMinTailKTiles = 32;

// The K splits the planner may use. Uniform split-K splits every tile the same number of ways (for
// shapes with fewer tiles than SMs); a tail split keeps whole tiles for the full waves and splits
// only the last tiles, so that the partial last wave becomes one short round of pieces (8000² on 132
// SMs: 2016 tiles = 15 waves + 36, split 3 ways: 15.33 waves of work instead of 16; measured −3.3% on
// the H200 and −3.1% on the H100, 6000² −2.2%, 200000×2000 −4%: NOTES.md §9). The planner weighs
// both; tailSplit = false leaves uniform split-K alone (the kernel until issue 19's second round,
// which the harness times as the baseline).

struct FastPlan {
  int splits = 1;     // uniform split-K
  int tailTiles = 0;  // > 0: the last tailTiles tiles run as tailSplits pieces each (splits == 1)
  int tailSplits = 1;
  double seconds = 0;  // model estimate
  int perSm = 0;
  bool vec16 = false;
};

// Picks the number of K splits: waves × (k-tiles per split) of tile time, plus workspace allocation
// and the reduce pass. Splitting must win by 3%: the model is rough and splitting costs memory.
inline void chooseSplits(FastPlan& plan, int64_t tiles, int64_t kTiles, int slots, int bm, int bk,
                         double rate, bool tailSplit) {
  const double tileSeconds = 2.0 * bm * bm * bk / (rate / slots);  // one k-tile of one block
  const double tileBytes = 8.0 * bm * bm;
  auto cost = [&](int64_t s) {
    const int64_t kPer = ceilDiv(kTiles, s);
    const int64_t sEff = ceilDiv(kTiles, kPer);
    const int64_t waves = ceilDiv(tiles * sEff, slots);
    double c = static_cast<double>(waves) * kPer * tileSeconds;
    if (sEff > 1) {
      const double ws = sEff * tiles * tileBytes;
      c += ws * (kModelAllocPerByte + 2.0 / kModelBandwidth) + 2.0 * tiles * tileBytes / kModelBandwidth +
           kModelLaunch;
    }
    return c;
  };
  const double one = cost(1);
  double best = one;
  int bestS = 1;
  const int64_t perSplitBytes = tiles * bm * bm * static_cast<int64_t>(sizeof(double));
  const int64_t sMax = std::min<int64_t>({kMaxSplits, kTiles, kMaxWorkspaceBytes / perSplitBytes});
  for (int64_t s = 2; s <= sMax; ++s) {
    const double c = cost(s);
    if (c < best) {
      best = c;
      bestS = static_cast<int>(s);
    }
  }
  plan.splits = best < 0.97 * one ? bestS : 1;
  plan.seconds = best < 0.97 * one ? best : one;
  plan.tailTiles = 0;
  plan.tailSplits = 1;
  if (!tailSplit) return;

  // Tail split: the last W = R + j·slots tiles (R = the partial wave, j more full waves) run as S
  // pieces each, after the whole tiles of the other full waves (at least one). Per block a fixed
  // fill + epilogue cost on top of the k-tiles, so short pieces do not look free.
  const int64_t full = tiles / slots, rest = tiles % slots;
  if (rest == 0 || full < 1) return;
  const double whole = static_cast<double>(full + 1) * (kTiles * tileSeconds + kModelTileFixed);
  double bestTail = whole, bestFixed = 0;
  for (int64_t j = 0; j < std::min<int64_t>(full, 3); ++j) {
    const int64_t w = rest + j * slots;
    for (int64_t s = 2; s <= std::min<int64_t>(kMaxSplits, kTiles / kMinTailKTiles); ++s) {
      const int64_t kPer = ceilDiv(kTiles, s);
      const int64_t sEff = ceilDiv(kTiles, kPer);
      const double ws = static_cast<double>(w) * sEff * tileBytes;
      if (ws > static_cast<double>(kMaxWorkspaceBytes)) break;
      const int64_t rounds = ceilDiv(w * sEff, slots);
      const double fixed = static_cast<double>(full - j + rounds) * kModelTileFixed;
      const double c = static_cast<double>(full - j) * kTiles * tileSeconds +
                       static_cast<double>(rounds) * kPer * tileSeconds + fixed +
                       ws * (kModelAllocPerByte + 2.0 / kModelBandwidth) +
                       2.0 * w * tileBytes / kModelBandwidth + kModelLaunch;
      if (c < bestTail) {
        bestTail = c;
        bestFixed = fixed;
        plan.tailTiles = static_cast<int>(w);
        plan.tailSplits = static_cast<int>(sEff);
      }
    }
  }
  // Like uniform splitting, the tail split must win by 2% over whole tiles, and beat the uniform split.
  const double uniform =
      plan.seconds + static_cast<double>(ceilDiv(tiles * plan.splits, slots)) * kModelTileFixed;
  if (plan.tailTiles > 0 && bestTail < 0.98 * whole && bestTail < uniform) {
    plan.splits = 1;
    plan.seconds = bestTail - bestFixed;  // comparable with the other plans, which leave fixed costs out
  } else {
    plan.tailTiles = 0;
    plan.tailSplits = 1;
  }
}

// The shared-memory opt-in of Cfg's kernels and their blocks per SM, once per device: set on every
// call (as until issue 19's third round), the attributes and the occupancy query took 4 µs of host
// time but made each launch ~25 µs later on the GPU, 2% of 4000² (NOTES.md §10.4).
template <class Cfg, bool Vec16>
cudaError_t prepareKernel(int& perSm) {
  static std::mutex mutex;
  static std::map<int, int> prepared;  // device -> blocks per SM
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto it = prepared.find(device);
  if (it != prepared.end()) {
    perSm = it->second;
    return cudaSuccess;
  }
  auto kernel = ata_mma_sym_kernel<Cfg, Vec16>;
  err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Cfg::Smem));
  if (err == cudaSuccess)
    err = cudaFuncSetAttribute(ata_mma_sym_kernel<Cfg, Vec16, true>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Cfg::Smem));
  if (err == cudaSuccess)
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, Cfg::Threads, Cfg::Smem);
  if (err == cudaSuccess && perSm < 1) err = cudaErrorInvalidConfiguration;
  if (err == cudaSuccess) prepared[device] = perSm;
  return err;
}

// Occupancy, splits and the model's time for running C = AᵀA with Cfg; `rate` is the device rate
// the model assumes for this config's tiles.
template <class Cfg>
cudaError_t planFast(const double* A, int64_t rows, int64_t n, double rate, int forcedSplits, FastPlan& plan,
                     bool tailSplit = true) {
  int device = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return err;
  // 16-byte copies need every row start 16-byte aligned: n even and A 16-byte aligned.
  plan.vec16 = n % 2 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0;
  err = plan.vec16 ? prepareKernel<Cfg, true>(plan.perSm) : prepareKernel<Cfg, false>(plan.perSm);
  if (err != cudaSuccess) return err;
  const int64_t T = ceilDiv(n, Cfg::BM);
  const int64_t tiles = T * (T + 1) / 2;
  if (tiles > INT_MAX) return cudaErrorInvalidValue;
  chooseSplits(plan, tiles, ceilDiv(rows, Cfg::BK), sms * plan.perSm, Cfg::BM, Cfg::BK, rate, tailSplit);
  if (forcedSplits > 0) {
    plan.splits = forcedSplits;
    plan.tailTiles = 0;
    plan.tailSplits = 1;
  }
  return cudaSuccess;
}

// The driver's cuTensorMapEncodeTiled, looked up once (the addon links only cudart); null when the
// driver has none.
inline PFN_cuTensorMapEncodeTiled_v12000 tensorMapEncoder() {
  static const auto encode =
      reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(driverEntryPoint("cuTensorMapEncodeTiled"));
  return encode;
}

// The tensor map of A (rows × n, row-major, n even, A 16-byte aligned) for Cfg's TmaLoad: boxes of
// BK rows × (BM + 4) columns, zeros outside A. False when the driver cannot make one or a coordinate
// would not fit the copy's 32-bit ones.
template <class Cfg>
bool makeTensorMap(const double* A, int64_t rows, int64_t n, CUtensorMap& map) {
  const auto encode = tensorMapEncoder();
  if (encode == nullptr || rows > INT_MAX || n > INT_MAX) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(n), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(n) * sizeof(double)};
  const cuuint32_t box[2] = {Cfg::LDS, Cfg::BK}, unit[2] = {1, 1};
  return encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 2, const_cast<double*>(A), dims, strides, box, unit,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The loads of a launch: a vec16 launch of a TmaLoad config needs A's tensor map in `map`; without one
// it takes the 8-byte cp.async kernel instead (vec16 becomes false), whose shared-memory opt-in is made
// here. Other configs leave both as they are (the kernel never reads the all-zero map).
template <class Cfg>
cudaError_t prepareLoads(const double* A, int64_t rows, int64_t n, bool& vec16, CUtensorMap& map) {
  if constexpr (Cfg::TmaLoad) {
    if (vec16 && !makeTensorMap<Cfg>(A, rows, n, map)) {
      int perSm = 0;
      const cudaError_t err = prepareKernel<Cfg, false>(perSm);
      if (err != cudaSuccess) return err;
      vec16 = false;
    }
  }
  return cudaSuccess;
}

template <class Cfg>
cudaError_t launchPlanned(const double* A, double* C, int64_t rows, int64_t n, cudaStream_t stream,
                          const FastPlan& plan, int bandRows = kBandRows) {
  CUtensorMap map{};
  bool vec16 = plan.vec16;
  if (const cudaError_t err = prepareLoads<Cfg>(A, rows, n, vec16, map); err != cudaSuccess) return err;
  auto kernel = vec16 ? ata_mma_sym_kernel<Cfg, true> : ata_mma_sym_kernel<Cfg, false>;
  const int64_t T64 = ceilDiv(n, Cfg::BM);
  const int64_t tiles = T64 * (T64 + 1) / 2;
  const int T = static_cast<int>(T64);
  const int64_t kTiles = ceilDiv(rows, Cfg::BK);
  const int64_t kPer = ceilDiv(kTiles, std::min<int64_t>(plan.splits, kTiles));
  const int splits = static_cast<int>(ceilDiv(kTiles, kPer));  // no empty split
  if (splits > 65535) return cudaErrorInvalidValue;

  SplitPlan sp{kPer, tiles, 0, 0};
  // The tiles and pieces that go through the workspace: all of them (uniform), the tail, or none.
  int64_t splitTiles = splits > 1 ? tiles : 0, tileBase = 0;
  int pieces = splits;
  dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(splits));
  if (splits == 1 && plan.tailTiles > 0) {
    const int64_t w = std::min<int64_t>(plan.tailTiles, tiles);
    sp.tailKPer = ceilDiv(kTiles, std::min<int64_t>(plan.tailSplits, kTiles));
    pieces = static_cast<int>(ceilDiv(kTiles, sp.tailKPer));  // no empty piece
    if (pieces > 1) {
      sp.tailStart = tiles - w;
      sp.tailTiles = static_cast<int>(w);
      splitTiles = w;
      tileBase = sp.tailStart;
      const int64_t blocks = sp.tailStart + w * pieces;
      if (blocks > INT_MAX) return cudaErrorInvalidValue;
      grid = dim3(static_cast<unsigned>(blocks), 1);
      kernel = vec16 ? ata_mma_sym_kernel<Cfg, true, true> : ata_mma_sym_kernel<Cfg, false, true>;
    }
  }
  if (splitTiles == 0) {
    kernel<<<grid, Cfg::Threads, Cfg::Smem, stream>>>(A, C, nullptr, rows, n, T, bandRows, sp, map);
    return cudaGetLastError();
  }
  double* ws = nullptr;
  cudaError_t err =
      poolMalloc(&ws, static_cast<size_t>(pieces) * splitTiles * Cfg::BM * Cfg::BM * sizeof(double), stream);
  if (err != cudaSuccess) return err;
  kernel<<<grid, Cfg::Threads, Cfg::Smem, stream>>>(A, C, ws, rows, n, T, bandRows, sp, map);
  err = cudaGetLastError();
  if (err == cudaSuccess) {
    static_assert((Cfg::BM * Cfg::BM) % kReduceLanes == 0, "reduce plan");
    const dim3 rgrid(static_cast<unsigned>(splitTiles),
                     static_cast<unsigned>(Cfg::BM * Cfg::BM / kReduceLanes));
    ata_splitk_reduce_kernel<<<rgrid, dim3(kReduceLanes, kReduceGroups), 0, stream>>>(
        ws, C, n, T, bandRows, Cfg::BM, pieces, tileBase);
    err = cudaGetLastError();
  }
  const cudaError_t freeErr = poolFree(ws, stream);
  return err != cudaSuccess ? err : freeErr;
}

template <class Cfg>
cudaError_t launchFastWith(const double* A, double* C, int64_t rows, int64_t n, cudaStream_t stream,
                           int forcedSplits = 0, int bandRows = kBandRows, bool tailSplit = true) {
  FastPlan plan;
  const cudaError_t err = planFast<Cfg>(A, rows, n, kModelFlops, forcedSplits, plan, tailSplit);
  return err != cudaSuccess ? err : launchPlanned<Cfg>(A, C, rows, n, stream, plan, bandRows);
}

// sm_90+: m16n8k4 fragments (every 16-row f64 shape runs at the same rate there; k4 keeps two
// register buffers of fragments small). sm_80: m8n8k4.
// Large: 128×128 tiles, 16 warps of 32×32 (four per scheduler to hide shared-memory latency),
// 3 stages of 32 k-rows (203 KB shared), 1 block per SM; the refill copy interleaved with the MMAs
// and lean copy addressing (issue 19: tensor pipe 82% -> 90% busy, bench/dev/ata/NOTES.md §8).
// SkipLower is off here: its per-step branch cost more than the idle warps saved. BulkStore: the
// epilogue's stores had kept each SM from its next block for 10-19 µs (issue 19, third round: 4000²
// -2%, 10000² -1%, NOTES.md §10). TmaLoad: one tensor copy per operand and stage instead of every
// thread's cp.async chunks (issue 34: 4-5% faster from 4000² to 16000², 109 registers instead of
// 126, NOTES.md §11); odd n, or no tensor map from the driver, keeps the 8-byte cp.async copies.
// SkipIdle (idle warps of diagonal and last-column tiles skip the product loop) is off: it takes
// 1-2% fewer cycles at 8000² to 20000×8000, but its runs got a lower SM clock, so it was no faster
// in time or in the pair protocol (H100, bench/dev/ata/NOTES.md §11.5). FragBufs 1 with m16n8k8
// (half the MMA instructions) was 2-3% slower.
// Small: 64×64 tiles, 4 warps of 32×32, 2 blocks per SM: tall-skinny A (n <= 64 is one tile) and
// sizes whose 128-tile count fills the SMs badly. Tensor-copy loads and the bulk epilogue as in the
// large config, m16n8k4 in two register buffers (114 registers, where the cp.async m16n8k16 config
// it replaces needed 246 and m16n8k16 with tensor copies 254), no SkipLower: H100, 150 ms gaps,
// 1000² 0.077 -> 0.065 ms, 2000² 0.227 -> 0.205, 100000×256 0.263 -> 0.230 (issue 34, NOTES.md §11.6).
// From 4000² to 16000² it takes 32-85% longer than the large config (a 64-tile's k-tile is a quarter
// of the work, so three stages hide a quarter as much latency), and the planner's kSmallTileRate
// keeps it to the shapes above.
using FastLarge90 =
    FastConfig<128, 4, 4, 32, 3, MmaShape::m16n8k4, 4, true, 1, true, true, true, false, true, true, false>;
using FastSmall90 =
    FastConfig<64, 2, 2, 32, 3, MmaShape::m16n8k4, 4, true, 2, true, true, true, false, true, true, false>;
// sm_80 parts allow 163 KB of shared memory per block (A100); 135 KB here.
using FastLarge80 = FastConfig<128, 4, 4, 16, 4, MmaShape::m8n8k4, 4, true, 1, true>;
using FastSmall80 = FastConfig<64, 2, 2, 16, 4, MmaShape::m8n8k4, 4, true, 2, true>;
// The model's rate for small tiles relative to large ones (measured on the H100: more shared-memory
// and L2 traffic per flop).
constexpr double kSmallTileRate = 0.8;

// Plans both tile sizes, runs the one the model expects to be faster. A config whose shared memory
// exceeds the device's per-block limit is skipped; with neither, the tiled kernel runs.
template <class Large, class Small>
cudaError_t launchBestOf(const double* A, double* C, int64_t rows, int64_t n, cudaStream_t stream,
                         bool tailSplit = true) {
  int device = 0, optin = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err != cudaSuccess) return err;
  const bool largeFits = Large::Smem <= static_cast<size_t>(optin);
  const bool smallFits = Small::Smem <= static_cast<size_t>(optin);
  FastPlan large, small;
  if (largeFits) err = planFast<Large>(A, rows, n, kModelFlops, 0, large, tailSplit);
  if (err == cudaSuccess && smallFits)
    err = planFast<Small>(A, rows, n, kModelFlops * kSmallTileRate, 0, small, tailSplit);
  if (err != cudaSuccess) return err;
  if (smallFits && (!largeFits || small.seconds < large.seconds)) {
    return launchPlanned<Small>(A, C, rows, n, stream, small);
  }
  if (largeFits) return launchPlanned<Large>(A, C, rows, n, stream, large);
  return cudaErrorNotSupported;  // caller falls back to the tiled kernel
}

}  // namespace detail

cudaError_t launchFast(const double* A, double* C, int64_t rows, int64_t cols, cudaStream_t stream) {
  cudaError_t err;
  if (detail::trivialShape(C, rows, cols, stream, err)) return err;
  int device = 0, major = 0;
  err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (err != cudaSuccess) return err;
  if (major < 8) return launchTiled(A, C, rows, cols, stream);
  err = major >= 9 ? detail::launchBestOf<detail::FastLarge90, detail::FastSmall90>(A, C, rows, cols, stream)
                   : detail::launchBestOf<detail::FastLarge80, detail::FastSmall80>(A, C, rows, cols, stream);
  return err == cudaErrorNotSupported ? launchTiled(A, C, rows, cols, stream) : err;
}

}  // namespace ata
}  // namespace ck
