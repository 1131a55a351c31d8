// Standalone test and benchmark of ck::ata (not part of the addon; keep it out of native/, whose
// sources CMake globs). Unity build: it includes native/ata's kernel files so that the tuning
// variants of the fast kernel (ck::ata::detail) can be run next to the public launchers.
//
//   nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -Inative -Inative/ata bench/dev/ata/ata_harness.cu -lcublas -o /tmp/h
//   /tmp/h            correctness on every shape, then timing, compact table last
//   /tmp/h --small    small correctness shapes only (for compute-sanitizer)
//   /tmp/h --variants also run the fast-kernel variants (earlier versions, forced configs, sm_80 path)
//   /tmp/h --keeppool also time launchFast with the memory pool keeping freed memory
//   /tmp/h --keeppool-all  every method with the pool keeping freed memory (the addon's pool does)
//   /tmp/h --tiny     the small shapes that racecheck gets through quickly
//   /tmp/h --profile  one launch per method at 8000² and 1000000×64, nothing else (for ncu)
//   /tmp/h --gap-ms N idle time before each timed run (default 150; 0 = back to back)
//   /tmp/h --no-timing
//   /tmp/h --methods a,b   only these methods/variants, timed round-robin in this order
//   /tmp/h --shapes 8000,200000x2000   the timed shapes (N = N×N)
//   /tmp/h --check-shapes 2069x1410,1408   the correctness shapes instead of the built-in ones
//   /tmp/h --reps N  timed repetitions (default 7)   --fixed-order  no rotation of the order
//   /tmp/h --no-big-check   skip the correctness pass over the big shapes
//   /tmp/h --timeline 4000,10000   where each SM's time goes in the 128-tile kernel (timestamps)
//   /tmp/h --host-plan  host time of launchFast's planning and of the API calls in it
// Every timed run also records the SM clock it ran at (clock64/globaltimer probes) and NVML's
// power, temperature and power-cap state (NOTES.md §8).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <type_traits>
#include <memory>
#include <tuple>
#include <random>
#include <string>
#include <vector>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <dlfcn.h>

#include "ata/1_basic.cu"
#include "ata/2_tiled_symmetric.cu"
#include "ata/3_tensor_core.cu"
#include "ata/mirror.cu"

#include "../harness_support.h"

namespace {

cublasHandle_t gCublas = nullptr;
cudaStream_t gStream = nullptr;

// ---- GPU state while a method runs ------------------------------------------------------------
// (1) The SM clock actually run at: a probe kernel before and after each timed run records, per SM,
// clock64() and %globaltimer; Δcycles / Δns over the run is that SM's mean clock (median over SMs).
// (2) NVML, loaded at run time (no header or link needed), sampled every 2 ms by a thread: power,
// temperature, the SM clock it reports and whether the software power cap is throttling.
constexpr int kMaxSms = 1024;
__global__ void clock_probe_kernel(unsigned long long* out, int* claimed) {
  if (threadIdx.x != 0) return;
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (smid >= kMaxSms || atomicCAS(&claimed[smid], 0, 1) != 0) return;
  unsigned long long g;
  const unsigned long long c = clock64();
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g));
  out[2 * smid] = c;
  out[2 * smid + 1] = g;
}

struct ClockProbe {
  unsigned long long* d = nullptr;  // [2][2 * kMaxSms]: before, after
  int* claimed = nullptr;
  int sms = 0;
  void init(int smCount) {
    sms = smCount;
    CHECK_CUDA(cudaMalloc(&d, 4 * kMaxSms * sizeof(unsigned long long)));
    CHECK_CUDA(cudaMalloc(&claimed, kMaxSms * sizeof(int)));
  }
  void record(int slot) {  // enqueued on gStream
    CHECK_CUDA(cudaMemsetAsync(d + slot * 2 * kMaxSms, 0, 2 * kMaxSms * sizeof(unsigned long long), gStream));
    CHECK_CUDA(cudaMemsetAsync(claimed, 0, kMaxSms * sizeof(int), gStream));
    clock_probe_kernel<<<8 * sms, 32, 0, gStream>>>(d + slot * 2 * kMaxSms, claimed);
    CHECK_CUDA(cudaGetLastError());
  }
  void release() {
    if (d) CHECK_CUDA(cudaFree(d));
    if (claimed) CHECK_CUDA(cudaFree(claimed));
    d = nullptr;
    claimed = nullptr;
  }
  double mhz() {  // after the stream synchronized; median over SMs seen by both probes
    std::vector<unsigned long long> h(4 * kMaxSms);
    CHECK_CUDA(cudaMemcpy(h.data(), d, h.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    std::vector<double> f;
    for (int s = 0; s < kMaxSms; ++s) {
      const unsigned long long c0 = h[2 * s], g0 = h[2 * s + 1], c1 = h[2 * kMaxSms + 2 * s],
                               g1 = h[2 * kMaxSms + 2 * s + 1];
      if (g0 && g1 > g0 && c1 > c0) f.push_back(static_cast<double>(c1 - c0) / static_cast<double>(g1 - g0) * 1e3);
    }
    if (f.empty()) return NAN;
    std::sort(f.begin(), f.end());
    return f[f.size() / 2];
  }
} gProbe;

struct Nvml {
  using Fn1 = int (*)();
  using FnH = int (*)(unsigned, void**);
  using FnU = int (*)(void*, unsigned*);
  using FnClk = int (*)(void*, int, unsigned*);
  using FnT = int (*)(void*, int, unsigned*);
  using FnR = int (*)(void*, unsigned long long*);
  void* dev = nullptr;
  FnU power = nullptr;
  FnClk clock = nullptr;
  FnT temp = nullptr;
  FnR reasons = nullptr;
  bool ok = false;
  struct Sample {
    double t;  // seconds since start
    unsigned mw, mhz, tempC;
    unsigned long long reasons;
  };
  std::vector<Sample> samples;
  std::mutex mutex;
  std::atomic<bool> stop{false};
  std::thread thread;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();

  double now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  void start() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!lib) return;
    auto init = reinterpret_cast<Fn1>(dlsym(lib, "nvmlInit_v2"));
    auto handle = reinterpret_cast<FnH>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    power = reinterpret_cast<FnU>(dlsym(lib, "nvmlDeviceGetPowerUsage"));
    clock = reinterpret_cast<FnClk>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    temp = reinterpret_cast<FnT>(dlsym(lib, "nvmlDeviceGetTemperature"));
    reasons = reinterpret_cast<FnR>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    if (!init || !handle || !power || !clock || !temp || !reasons || init() != 0 || handle(0, &dev) != 0) return;
    ok = true;
    thread = std::thread([this] {
      while (!stop.load()) {
        Sample s{now(), 0, 0, 0, 0};
        power(dev, &s.mw);
        clock(dev, 1 /* NVML_CLOCK_SM */, &s.mhz);
        temp(dev, 0 /* NVML_TEMPERATURE_GPU */, &s.tempC);
        reasons(dev, &s.reasons);
        {
          std::lock_guard<std::mutex> lock(mutex);
          samples.push_back(s);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  }
  void finish() {
    stop = true;
    if (thread.joinable()) thread.join();
  }
  ~Nvml() { finish(); }  // also on std::exit from a failed check
  // Means over [a, b] (seconds); capped = share of samples with the software power cap (bit 0x4) set.
  bool window(double a, double b, double& watts, double& mhz, double& tempC, double& capped) {
    std::lock_guard<std::mutex> lock(mutex);
    double w = 0, m = 0, tc = 0, c = 0;
    int k = 0;
    for (const auto& s : samples)
      if (s.t >= a && s.t <= b) {
        w += s.mw * 1e-3;
        m += s.mhz;
        tc += s.tempC;
        c += (s.reasons & 0x4ull) ? 1 : 0;
        ++k;
      }
    if (!k) return false;
    watts = w / k, mhz = m / k, tempC = tc / k, capped = c / k;
    return true;
  }
  std::string state() {
    if (!ok) return "nvml unavailable";
    unsigned mw = 0, mhz = 0, t = 0;
    unsigned long long r = 0;
    power(dev, &mw);
    clock(dev, 1, &mhz);
    temp(dev, 0, &t);
    reasons(dev, &r);
    char buf[160];
    std::snprintf(buf, sizeof buf, "SM %u MHz, %.0f W, %u C, throttle reasons 0x%llx", mhz, mw * 1e-3, t, r);
    return buf;
  }
} gNvml;

__global__ void fill_uniform_kernel(double* a, int64_t count, uint64_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    uint64_t z = seed + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    a[i] = static_cast<double>(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;  // [-1, 1)
  }
}

// sums[0] += Σ (c - r)², sums[1] += Σ r²; counts[0] += non-finite c.
__global__ void compare_kernel(const double* c, const double* r, int64_t count, double* sums,
                               unsigned long long* counts) {
  double d2 = 0, r2 = 0;
  unsigned long long bad = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const double x = c[i], y = r[i];
    if (!isfinite(x)) ++bad;
    d2 += (x - y) * (x - y);
    r2 += y * y;
  }
  for (int o = 16; o > 0; o >>= 1) {
    d2 += __shfl_down_sync(0xffffffffu, d2, o);
    r2 += __shfl_down_sync(0xffffffffu, r2, o);
    bad += __shfl_down_sync(0xffffffffu, bad, o);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&sums[0], d2);
    atomicAdd(&sums[1], r2);
    atomicAdd(&counts[0], bad);
  }
}

// counts[1] += pairs i < j with C[i][j] and C[j][i] not bitwise equal.
__global__ void asym_kernel(const double* c, int64_t n, unsigned long long* counts) {
  unsigned long long bad = 0;
  const int64_t total = n * n;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t i = e / n, j = e % n;
    if (i < j && __double_as_longlong(c[i * n + j]) != __double_as_longlong(c[j * n + i])) ++bad;
  }
  for (int o = 16; o > 0; o >>= 1) bad += __shfl_down_sync(0xffffffffu, bad, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(&counts[1], bad);
}

struct Check {
  double rel = NAN;
  unsigned long long nonfinite = 0, asym = 0;
  bool pass(double tol, bool needSym) const {
    return std::isfinite(rel) && rel < tol && nonfinite == 0 && (asym == 0 || !needSym);
  }
};

double* gSums = nullptr;
unsigned long long* gCounts = nullptr;

Check compare(const double* dC, const double* dRef, int64_t n) {
  double*& sums = gSums;
  unsigned long long*& counts = gCounts;
  if (!sums) {
    CHECK_CUDA(cudaMalloc(&sums, 2 * sizeof(double)));
    CHECK_CUDA(cudaMalloc(&counts, 2 * sizeof(unsigned long long)));
  }
  CHECK_CUDA(cudaMemsetAsync(sums, 0, 2 * sizeof(double), gStream));
  CHECK_CUDA(cudaMemsetAsync(counts, 0, 2 * sizeof(unsigned long long), gStream));
  compare_kernel<<<1024, 256, 0, gStream>>>(dC, dRef, n * n, sums, counts);
  CHECK_CUDA(cudaGetLastError());
  asym_kernel<<<1024, 256, 0, gStream>>>(dC, n, counts);
  CHECK_CUDA(cudaGetLastError());
  double hs[2];
  unsigned long long hc[2];
  CHECK_CUDA(cudaMemcpyAsync(hs, sums, sizeof hs, cudaMemcpyDeviceToHost, gStream));
  CHECK_CUDA(cudaMemcpyAsync(hc, counts, sizeof hc, cudaMemcpyDeviceToHost, gStream));
  CHECK_CUDA(cudaStreamSynchronize(gStream));
  Check r;
  r.rel = hs[1] > 0 ? std::sqrt(hs[0] / hs[1]) : std::sqrt(hs[0]);
  r.nonfinite = hc[0];
  r.asym = hc[1];
  return r;
}

using LaunchFn = std::function<cudaError_t(const double*, double*, int64_t, int64_t, cudaStream_t)>;

cudaError_t cublasGemmAtA(const double* A, double* C, int64_t rows, int64_t cols, cudaStream_t s) {
  // Column-major view: A is the cols×rows matrix X = Aᵀ (ld = cols), and C = X·Xᵀ.
  const double one = 1.0, zero = 0.0;
  CHECK_CUBLAS(cublasSetStream(gCublas, s));
  const int n = static_cast<int>(cols), k = static_cast<int>(rows);
  return cublasDgemm(gCublas, CUBLAS_OP_N, CUBLAS_OP_T, n, n, k, &one, A, n, A, n, &zero, C, n) ==
                 CUBLAS_STATUS_SUCCESS
             ? cudaSuccess
             : cudaErrorUnknown;
}

cudaError_t cublasSyrkAtA(const double* A, double* C, int64_t rows, int64_t cols, cudaStream_t s) {
  // Column-major lower triangle of X·Xᵀ is the row-major upper triangle; mirror it down.
  const double one = 1.0, zero = 0.0;
  CHECK_CUBLAS(cublasSetStream(gCublas, s));
  const int n = static_cast<int>(cols), k = static_cast<int>(rows);
  if (cublasDsyrk(gCublas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k, &one, A, n, &zero, C, n) !=
      CUBLAS_STATUS_SUCCESS)
    return cudaErrorUnknown;
  return ck::ata::launchMirrorUpper(C, cols, s);
}

struct Method {
  std::string name;
  LaunchFn fn;
  int64_t maxColsTimed;  // 0: no limit
  bool variant;
  bool ours = true;  // ours must be bitwise symmetric; cuBLAS DGEMM need not be
  bool keepPool = false;  // time with the default memory pool keeping freed memory (no re-allocation)
  bool check = true;      // false: a timing probe that computes only part of C (never checked)
};

namespace d = ck::ata::detail;
using MS = d::MmaShape;
// The earlier versions of the large config, kept to show what each step bought (NOTES.md).
using V1NoPipe = d::FastConfig<128, 2, 4, 16, 4, MS::m16n8k16, 16, false, 1, false>;  // first mma kernel
using V2Bk32 = d::FastConfig<128, 2, 4, 32, 3, MS::m16n8k16, 16, true, 1, false>;     // deeper k, paired B
using V3Pipe8w = d::FastConfig<128, 2, 4, 32, 3, MS::m16n8k4, 4, true, 1, true>;      // + register pipeline
using V4Large = d::FastConfig<128, 4, 4, 32, 3, MS::m16n8k4, 4, true, 1, true>;       // 16 warps (until issue 19)
// Candidates for the issue-19 round (NOTES.md §8): 8 warps of 64×32 or 32×64 (fewer shared-memory
// fragment loads per MMA, 255 registers allowed), k8 fragments (half the MMA instructions), shorter
// stages (BK 16 × 6, same shared memory).
using W8x64x32k8 = d::FastConfig<128, 2, 4, 32, 3, MS::m16n8k8, 8, true, 1, true>;
using W8x32x64k4 = d::FastConfig<128, 4, 2, 32, 3, MS::m16n8k4, 4, true, 1, true>;
using W8x32x64k8 = d::FastConfig<128, 4, 2, 32, 3, MS::m16n8k8, 8, true, 1, true>;
using W16Bk16s6 = d::FastConfig<128, 4, 4, 16, 6, MS::m16n8k4, 4, true, 1, true>;
// The copy of the next stage spread between the MMA rows of the step after the barrier.
using W16Ilv = d::FastConfig<128, 4, 4, 32, 3, MS::m16n8k4, 4, true, 1, true, true>;
using W8x64x32Ilv = d::FastConfig<128, 2, 4, 32, 3, MS::m16n8k4, 4, true, 1, true, true>;
using W8x32x64Ilv = d::FastConfig<128, 4, 2, 32, 3, MS::m16n8k4, 4, true, 1, true, true>;
// v6 pieces: interleaved copy + lean copy addressing (+ idle lower warps on diagonal tiles).
using V6NoSkip = d::FastConfig<128, 4, 4, 32, 3, MS::m16n8k4, 4, true, 1, true, true, true, false>;
using V6 = d::FastConfig<128, 4, 4, 32, 3, MS::m16n8k4, 4, true, 1, true, true, true, true>;
using V6Small = d::FastConfig<64, 2, 2, 32, 3, MS::m16n8k16, 16, true, 2, true, true, true, true>;
using V6SmallNoSkip = d::FastConfig<64, 2, 2, 32, 3, MS::m16n8k16, 16, true, 2, true, true, true, false>;
using V4Small = d::FastConfig<64, 2, 2, 32, 3, MS::m16n8k16, 16, true, 2, true>;  // small config until issue 19

// One config for every shape (splits chosen by the model unless forced).
template <class Cfg>
LaunchFn forced(int splits = 0) {
  return [=](const double* A, double* C, int64_t r, int64_t c, cudaStream_t s) {
    return d::launchFastWith<Cfg>(A, C, r, c, s, splits);
  };
}

// `fast` with other configs: launchBestOf chooses between the large and the small one, as
// launchFast does with FastLarge90 and FastSmall90.
template <class Large, class Small = d::FastSmall90>
LaunchFn fastWith() {
  return [](const double* A, double* C, int64_t r, int64_t c, cudaStream_t s) {
    return d::launchBestOf<Large, Small>(A, C, r, c, s);
  };
}

// One config with a forced tail split: the last max(1, tiles / 2) tiles in `pieces` K-pieces each
// (fewer where K is short), so that small shapes run whole tiles, pieces and the reduce together.
template <class Cfg>
LaunchFn forcedTail(int pieces) {
  return [=](const double* A, double* C, int64_t r, int64_t c, cudaStream_t s) {
    d::FastPlan plan;
    cudaError_t err = d::planFast<Cfg>(A, r, c, d::kModelFlops, 1, plan);
    if (err != cudaSuccess) return err;
    plan.tailTiles = static_cast<int>(std::max<int64_t>(1, d::upperTiles(c, Cfg::BM) / 2));
    plan.tailSplits = pieces;
    return d::launchPlanned<Cfg>(A, C, r, c, s, plan);
  };
}

// The model's tail (the partial wave's tiles, as 128-tiles on this device) in `pieces` pieces each.
LaunchFn forcedTailRest(int pieces) {
  return [=](const double* A, double* C, int64_t r, int64_t c, cudaStream_t s) {
    using Cfg = d::FastLarge90;
    d::FastPlan plan;
    cudaError_t err = d::planFast<Cfg>(A, r, c, d::kModelFlops, 1, plan);
    if (err != cudaSuccess) return err;
    int dev = 0, sms = 0;
    CHECK_CUDA(cudaGetDevice(&dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const int64_t tiles = d::upperTiles(c, Cfg::BM), slots = int64_t(sms) * plan.perSm;
    plan.tailTiles = static_cast<int>(tiles > slots && tiles % slots ? tiles % slots : 0);
    plan.tailSplits = pieces;
    return d::launchPlanned<Cfg>(A, C, r, c, s, plan);
  };
}

// Timing probe, not a result: only the whole waves of 128-tiles (tiles rounded down to a multiple
// of the SM count), no tail. Its time next to the full launch's is what the last partial wave costs;
// Tail: the same blocks run by the kernel instantiation that tail-split launches use.
template <bool Tail>
LaunchFn wholeWavesOnly() {
  return [](const double* A, double* C, int64_t r, int64_t c, cudaStream_t s) {
    using Cfg = d::FastLarge90;
    d::FastPlan plan;
    cudaError_t err = d::planFast<Cfg>(A, r, c, d::kModelFlops, 1, plan, /*tailSplit=*/false);
    if (err != cudaSuccess) return err;
    int dev = 0, sms = 0;
    CHECK_CUDA(cudaGetDevice(&dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const int64_t T = ck::ceilDiv(c, Cfg::BM), tiles = T * (T + 1) / 2;
    const int64_t waves = std::max<int64_t>(1, tiles / (sms * plan.perSm)) * sms * plan.perSm;
    const d::SplitPlan sp{ck::ceilDiv(r, Cfg::BK), tiles, 0, 0};
    // FastLarge90 loads by tensor copies (TmaLoad): its vec16 kernel needs A's tensor map, as in
    // launchPlanned (an all-zero map faults).
    CUtensorMap map{};
    bool vec16 = plan.vec16;
    err = d::prepareLoads<Cfg>(A, r, c, vec16, map);
    if (err != cudaSuccess) return err;
    auto kernel = vec16 ? d::ata_mma_sym_kernel<Cfg, true, Tail> : d::ata_mma_sym_kernel<Cfg, false, Tail>;
    kernel<<<static_cast<unsigned>(std::min(waves, tiles)), Cfg::Threads, Cfg::Smem, s>>>(
        A, C, nullptr, r, c, static_cast<int>(T), d::kBandRows, sp, map);
    return cudaGetLastError();
  };
}

// ---- Where a block's time goes (issue 19, 4000²: NOTES.md §10) ------------------------------
// Probe configs derive from a shipped config and hide its Stores / mark hooks (3_tensor_core.cu).
template <class Base, int S>
struct StoreProbe : Base {
  static constexpr int Stores = S;  // 1: the tile only, no mirror; 0: no stores at all
};
// mark(p): thread 0 records %globaltimer (ns) and clock64 (this SM's cycles) at the four points of
// its block's life, and the SM it ran on; point 3 waits for every warp to have issued its stores.
__device__ unsigned long long* gMarkLog = nullptr;
constexpr int kMarkWords = 9;  // g0..g3, c0..c3, smid
template <class Base>
struct Timed : Base {
  static __device__ __forceinline__ void mark(int p) {
    if (p == 3) __syncthreads();
    if (threadIdx.x != 0 || gMarkLog == nullptr) return;
    unsigned long long g;
    const unsigned long long c = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g));
    unsigned long long* e = gMarkLog + static_cast<size_t>(blockIdx.x) * kMarkWords;
    e[p] = g;
    e[4 + p] = c;
    if (p == 0) {
      unsigned sm;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
      e[8] = sm;
    }
  }
};
// Issue 19, 4000² lever: the large config with the bulk-copy epilogue (BulkStore), shipped as
// FastLarge90 after NOTES.md §10.4 (until its tensor-copy loads, §11); LargeNoBulk is the large
// config before it.
using LargeBulk = d::FastConfig<128, 4, 4, 32, 3, MS::m16n8k4, 4, true, 1, true, true, true, false, true, false>;
using LargeNoBulk = d::FastConfig<128, 4, 4, 32, 3, MS::m16n8k4, 4, true, 1, true, true, true, false, false>;
static_assert(LargeBulk::BulkStore && !LargeNoBulk::BulkStore, "the A/B pair");
// Issue 34: FastLarge90 loads its stage slabs with tensor copies (TmaLoad); LargeCpAsync is the
// large config before that, every thread's cp.async chunks (NOTES.md §11).
using LargeCpAsync = LargeBulk;
static_assert(d::FastLarge90::TmaLoad && !LargeCpAsync::TmaLoad && LargeCpAsync::BulkStore, "the A/B pair");
// LargeTma and LargeSkipIdle: the tensor-copy config without and with SkipIdle (idle warps of
// diagonal and last-column tiles skip the product loop; its first forms met the idle warps at the
// block barrier from a second copy of the loop, aligned in dc89770, which synccheck rejects, then
// unaligned in 1dd9930, more cycles; now they leave the loop and the busy warps meet at a named
// barrier of their own, NOTES.md §11.5). FastLarge90 is one of the two; `fast.tma` and
// `fast.skipidle` time both whichever ships.
using LargeTma =
    d::FastConfig<128, 4, 4, 32, 3, MS::m16n8k4, 4, true, 1, true, true, true, false, true, true, false>;
using LargeSkipIdle =
    d::FastConfig<128, 4, 4, 32, 3, MS::m16n8k4, 4, true, 1, true, true, true, false, true, true, true>;
static_assert(std::is_same_v<d::FastLarge90, LargeTma> || std::is_same_v<d::FastLarge90, LargeSkipIdle>,
              "the A/B pair");
// LargeK8 (issue 34): m16n8k8 instead of m16n8k4, half the MMA instructions and accumulator
// register reads per flop (energy under the power cap), in one fragment buffer (FragBufs 1: two
// would spill at 16 warps); LargeK4One is the shipped shape with one buffer, to tell the shape's
// effect from the buffer's.
using LargeK8 =
    d::FastConfig<128, 4, 4, 32, 3, MS::m16n8k8, 8, true, 1, true, true, true, false, true, true, false, 1>;
using LargeK4One =
    d::FastConfig<128, 4, 4, 32, 3, MS::m16n8k4, 4, true, 1, true, true, true, false, true, true, false, 1>;
// 64×64 tiles with tensor-copy loads and the bulk epilogue (issue 34, DSYRK's own shape): two or
// three blocks per SM, so one block's fill and epilogue run under another's product loop, and the
// lower halves of diagonal tiles and the empty columns of the last tile column are a quarter of
// what they are at 128 (more L2 traffic per flop: each slab feeds half the columns).
using SmallTma =
    d::FastConfig<64, 2, 2, 32, 3, MS::m16n8k16, 16, true, 2, true, true, true, false, true, true, false>;
using SmallTmaSkip =
    d::FastConfig<64, 2, 2, 32, 3, MS::m16n8k16, 16, true, 2, true, true, true, true, true, true, false>;
using SmallTmaK4 =
    d::FastConfig<64, 2, 2, 32, 3, MS::m16n8k4, 4, true, 2, true, true, true, false, true, true, false>;
// FastSmall90 since NOTES.md §11.6; the small config before it (cp.async, m16n8k16, SkipLower) is V6Small.
static_assert(std::is_same_v<d::FastSmall90, SmallTmaK4> && !V6Small::TmaLoad, "the A/B pair");
using SmallTmaK4Skip =
    d::FastConfig<64, 2, 2, 32, 3, MS::m16n8k4, 4, true, 2, true, true, true, true, true, true, false>;
using SmallTmaK8 =
    d::FastConfig<64, 2, 2, 32, 3, MS::m16n8k8, 8, true, 2, true, true, true, false, true, true, false>;
using SmallTmaK4x3 =
    d::FastConfig<64, 2, 2, 16, 4, MS::m16n8k4, 4, true, 3, true, true, true, false, true, true, false>;
// Eight warps (2026-11-28): two warps per scheduler on the 128-tile, as DSYRK's kernel runs two blocks
// of four, with m16n8k16 in one fragment buffer (a quarter of m16n8k4's instructions and accumulator
// reads per flop), m16n8k8 in two buffers (w8k8) or one (w8k8one), or m16n8k4 in two (w8k4). The
// tensor-copy (16-byte) kernels keep no copy state and fit 254 registers or fewer without spills (the
// cp.async forms of NOTES.md §8.2 spilled with k8); their 8-byte cp.async fallbacks, for odd or
// misaligned n, spill 24-136 bytes. W8 = 2×4 warps of 64×32, W8T = 4×2 warps of 32×64. Measured on an
// H100 (NOTES.md §14): 0.7-11% more cycles than FastLarge90; none ships.
using LargeW8K16 =
    d::FastConfig<128, 2, 4, 32, 3, MS::m16n8k16, 16, true, 1, true, true, true, false, true, true, false, 1>;
using LargeW8TK16 =
    d::FastConfig<128, 4, 2, 32, 3, MS::m16n8k16, 16, true, 1, true, true, true, false, true, true, false, 1>;
using LargeW8K8 =
    d::FastConfig<128, 2, 4, 32, 3, MS::m16n8k8, 8, true, 1, true, true, true, false, true, true, false, 2>;
using LargeW8K8One =
    d::FastConfig<128, 2, 4, 32, 3, MS::m16n8k8, 8, true, 1, true, true, true, false, true, true, false, 1>;
using LargeW8K4 =
    d::FastConfig<128, 2, 4, 32, 3, MS::m16n8k4, 4, true, 1, true, true, true, false, true, true, false, 2>;
// The shipped config with the epilogue's rows stored by the threads (RowStores, 2026-11-28): the
// bulk copies' wait for their reads of shared memory took 17-25 k cycles per block at every size
// (NOTES.md §10.4), as long as the memory system takes the 262 KB, so the SM could not start its next
// block; plain stores let the block exit while they drain. Measured on an H100 (NOTES.md §15): the
// epilogue 21% shorter, the next block's loop slower by a quarter to a third of that, under 1% faster
// at 4 of 5 sizes with 150 ms gaps and level in the pair's order; not shipped.
template <class Base>
struct ViaRows : Base {
  static constexpr bool RowStores = true;
};
using LargeRows = ViaRows<d::FastLarge90>;
// HalfEdge (2026-11-28): the tiles of the last tile column with at most 64 columns left of n (62 of
// 2016 at 8000², 78 of 3160 at 10000², 31 of 528 at 4000²) run their 16 warps on 16×32 blocks of the
// left half instead of computing the empty right half (issue 34's wasted tensor work, NOTES.md §11.5).
// Measured on an H100 (NOTES.md §16): the edge tiles' loop 45% shorter, 2.2% fewer cycles at 8000²
// without the tail split, but no faster than `fast` as it runs (+0.4%, +1.3%, -0.1% at 8000², 10000²,
// 20000×8000: the tail split, the wave count, a lower clock); not shipped.
template <class Base>
struct WithHalfEdge : Base {
  static constexpr bool HalfEdge = true;
};
using LargeHalfEdge = WithHalfEdge<d::FastLarge90>;
using ProbeTimedTma = Timed<d::FastLarge90>;
using ProbeTimedRows = Timed<LargeRows>;
using ProbeTimedHalfEdge = Timed<LargeHalfEdge>;
using ProbeTimedBulk = Timed<LargeBulk>;
using ProbeNoStore = StoreProbe<LargeNoBulk, 0>;
using ProbeNoMirror = StoreProbe<LargeNoBulk, 1>;
using ProbeTimed = Timed<LargeNoBulk>;

// One config, its plan made once per shape (the first call, a warm-up in the timing loop) and kept:
// what launchFast's host-side planning (device attributes, cudaFuncSetAttribute, the occupancy
// query, for both tile sizes) costs inside the timed interval.
template <class Cfg>
LaunchFn cachedPlan() {
  auto cache = std::make_shared<std::map<std::tuple<int64_t, int64_t, bool>, d::FastPlan>>();
  return [cache](const double* A, double* C, int64_t r, int64_t c, cudaStream_t s) {
    const auto key = std::make_tuple(r, c, reinterpret_cast<uintptr_t>(A) % 16 == 0);
    auto it = cache->find(key);
    if (it == cache->end()) {
      d::FastPlan plan;
      const cudaError_t err = d::planFast<Cfg>(A, r, c, d::kModelFlops, 0, plan);
      if (err != cudaSuccess) return err;
      it = cache->emplace(key, plan).first;
    }
    return d::launchPlanned<Cfg>(A, C, r, c, s, it->second);
  };
}

// What prepareKernel did on every call before it kept its result per device: the shared-memory
// opt-in of both kernel instantiations of the vec16 flavour and the occupancy query.
template <class Cfg>
void uncachedPrepare() {
  int perSm = 0;
  CHECK_CUDA(cudaFuncSetAttribute(d::ata_mma_sym_kernel<Cfg, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Cfg::Smem)));
  CHECK_CUDA(cudaFuncSetAttribute(d::ata_mma_sym_kernel<Cfg, true, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Cfg::Smem)));
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, d::ata_mma_sym_kernel<Cfg, true>, Cfg::Threads,
                                                           Cfg::Smem));
}

// --host-plan: microseconds of host time per launchFast planning (both configs) and per API call in it.
void hostPlanCost() {
  const double* A = reinterpret_cast<const double*>(256);
  constexpr int N = 2000;
  auto time = [&](const char* what, auto&& f) {
    f();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < N; ++i) f();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / N;
    std::printf("host: %-58s %7.2f us per call\n", what, us);
  };
  time("planFast<FastLarge90> + planFast<FastSmall90> (4000x4000, prepared once)", [&] {
    d::FastPlan a, b;
    CHECK_CUDA(d::planFast<d::FastLarge90>(A, 4000, 4000, d::kModelFlops, 0, a));
    CHECK_CUDA(d::planFast<d::FastSmall90>(A, 4000, 4000, d::kModelFlops * d::kSmallTileRate, 0, b));
  });
  time("both configs prepared as before (attributes + occupancy each call)", [&] {
    uncachedPrepare<LargeNoBulk>();
    uncachedPrepare<d::FastSmall90>();
  });
  time("cudaFuncSetAttribute(max dynamic shared memory)", [&] {
    CHECK_CUDA(cudaFuncSetAttribute(d::ata_mma_sym_kernel<d::FastLarge90, true>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(d::FastLarge90::Smem)));
  });
  time("cudaOccupancyMaxActiveBlocksPerMultiprocessor", [&] {
    int perSm = 0;
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, d::ata_mma_sym_kernel<d::FastLarge90, true>,
                                                             d::FastLarge90::Threads, d::FastLarge90::Smem));
  });
  time("makeTensorMap<FastLarge90> (cuTensorMapEncodeTiled, every launch)", [&] {
    CUtensorMap map;
    if (!d::makeTensorMap<d::FastLarge90>(A, 4000, 4000, map)) {
      std::fprintf(stderr, "no tensor map: launchPlanned falls back to the 8-byte cp.async kernel\n");
      std::exit(1);
    }
  });
  time("cudaGetDevice + cudaDeviceGetAttribute", [&] {
    int dev = 0, v = 0;
    CHECK_CUDA(cudaGetDevice(&dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev));
  });
}

// Correctness only: A copied to 8 bytes past a 16-byte boundary, so that an even n takes the 8-byte
// cp.async kernel (no tensor copies) with the bulk-copy epilogue: the kernel that also runs where the
// driver gives no tensor map. SkipIdle needs the tensor copies, so a SkipIdle config runs the plain
// kernel here (v.large.skipidle.a8 checks just that). Not timed (the copy would be in the time).
template <class Cfg>
LaunchFn misalignedA() {
  return [](const double* A, double* C, int64_t r, int64_t c, cudaStream_t s) {
    double* buf = nullptr;
    cudaError_t err = cudaMallocAsync(&buf, static_cast<size_t>(r * c + 1) * sizeof(double), s);
    if (err != cudaSuccess) return err;
    err = cudaMemcpyAsync(buf + 1, A, static_cast<size_t>(r * c) * sizeof(double), cudaMemcpyDeviceToDevice, s);
    if (err == cudaSuccess) err = d::launchFastWith<Cfg>(buf + 1, C, r, c, s);
    const cudaError_t freeErr = cudaFreeAsync(buf, s);
    return err != cudaSuccess ? err : freeErr;
  };
}

// Timing probe: every block of the 128-tile launch with an empty K range, i.e. only the launch and
// the epilogue's stores (of zeros) of every tile, all SMs storing at once.
LaunchFn epilogueOnly() {
  return [](const double* A, double* C, int64_t r, int64_t c, cudaStream_t s) {
    using Cfg = d::FastLarge90;
    d::FastPlan plan;
    cudaError_t err = d::planFast<Cfg>(A, r, c, d::kModelFlops, 1, plan, false);
    if (err != cudaSuccess) return err;
    const int64_t T = ck::ceilDiv(c, Cfg::BM), tiles = T * (T + 1) / 2;
    const d::SplitPlan sp{1, tiles, 0, 0};
    // rows = 0: no k-tiles, so no tensor copy reads the (all-zero) tensor map.
    auto kernel = plan.vec16 ? d::ata_mma_sym_kernel<Cfg, true> : d::ata_mma_sym_kernel<Cfg, false>;
    kernel<<<static_cast<unsigned>(tiles), Cfg::Threads, Cfg::Smem, s>>>(A, C, nullptr, 0, c, static_cast<int>(T),
                                                                         d::kBandRows, sp, CUtensorMap{});
    return cudaGetLastError();
  };
}

std::vector<Method> methods(bool variants, bool keepPoolVariant) {
  std::vector<Method> m = {
      {"basic", ck::ata::launchBasic, 4000, false},
      {"tiled", ck::ata::launchTiled, 0, false},
      {"fast", ck::ata::launchFast, 0, false},
      {"cublasDgemm", cublasGemmAtA, 0, false, false},
      {"cublasDsyrk+mirror", cublasSyrkAtA, 0, false},
  };
  if (variants) {
    m.push_back({"v1.nopipe", forced<V1NoPipe>(), 0, true});
    m.push_back({"v2.bk32", forced<V2Bk32>(), 0, true});
    m.push_back({"v3.pipe8w", forced<V3Pipe8w>(), 0, true});
    m.push_back({"v4", forced<V4Large>(), 0, true});
    m.push_back({"v.large", forced<d::FastLarge90>(), 0, true});
    m.push_back({"v5.8w64x32k8", forced<W8x64x32k8>(), 0, true});
    m.push_back({"v5.8w32x64k4", forced<W8x32x64k4>(), 0, true});
    m.push_back({"v5.8w32x64k8", forced<W8x32x64k8>(), 0, true});
    m.push_back({"v5.16w.bk16s6", forced<W16Bk16s6>(), 0, true});
    m.push_back({"v5.16w.ilv", forced<W16Ilv>(), 0, true});
    m.push_back({"v5.8w64x32.ilv", forced<W8x64x32Ilv>(), 0, true});
    m.push_back({"v5.8w32x64.ilv", forced<W8x32x64Ilv>(), 0, true});
    m.push_back({"v6.noskip", forced<V6NoSkip>(), 0, true});
    m.push_back({"v6", forced<V6>(), 0, true});
    m.push_back({"v6.small", forced<V6Small>(), 0, true});
    m.push_back({"v6.small.noskip", forced<V6SmallNoSkip>(), 0, true});
    m.push_back({"v4.small", forced<V4Small>(), 0, true});
    m.push_back({"v.small", forced<d::FastSmall90>(), 0, true});
    m.push_back({"v.large.nosplit", forced<d::FastLarge90>(1), 0, true});
    // Issue 19, second round: the tail split (NOTES.md §9).
    m.push_back({"v6.fast", [](const double* A, double* C, int64_t r, int64_t c, cudaStream_t s) {
                   return d::launchBestOf<d::FastLarge90, d::FastSmall90>(A, C, r, c, s, /*tailSplit=*/false);
                 }, 0, true});
    m.push_back({"v.large.tail3", forcedTail<d::FastLarge90>(3), 0, true});
    m.push_back({"v.small.tail3", forcedTail<d::FastSmall90>(3), 0, true});
    m.push_back({"v.large.tail40", forcedTail<d::FastLarge90>(40), 0, true});
    for (int p : {2, 3, 4}) m.push_back({"v.large.rest" + std::to_string(p), forcedTailRest(p), 0, true});
    Method probe{"probe.wholewaves", wholeWavesOnly<false>(), 0, true};
    probe.check = false;
    m.push_back(probe);
    probe = {"probe.wholewaves.tailkernel", wholeWavesOnly<true>(), 0, true};
    probe.check = false;
    m.push_back(probe);
    for (auto [name, fn] : std::vector<std::pair<std::string, LaunchFn>>{{"probe.nostore", forced<ProbeNoStore>(1)},
                                                                         {"probe.nomirror", forced<ProbeNoMirror>(1)},
                                                                         {"probe.epionly", epilogueOnly()}}) {
      Method pm{name, fn, 0, true};
      pm.check = false;
      m.push_back(pm);
    }
    m.push_back({"probe.timed", forced<ProbeTimed>(1), 0, true});  // computes C: checked
    m.push_back({"v.large.bulk", forced<LargeBulk>(), 0, true});
    m.push_back({"v.large.bulk.nosplit", forced<LargeBulk>(1), 0, true});
    m.push_back({"fast.cachedplan", cachedPlan<LargeNoBulk>(), 0, true});
    m.push_back({"v.large.bulk.cachedplan", cachedPlan<LargeBulk>(), 0, true});
    m.push_back({"v.large.nobulk", forced<LargeNoBulk>(), 0, true});
    // `fast` as it was before NOTES.md §10.4: the large config without BulkStore, and the kernels'
    // attributes and occupancy set and queried on every call.
    m.push_back({"v7.fast.before", [](const double* A, double* C, int64_t r, int64_t c, cudaStream_t s) {
                   uncachedPrepare<LargeNoBulk>();
                   uncachedPrepare<V6Small>();
                   return d::launchBestOf<LargeNoBulk, V6Small>(A, C, r, c, s);
                 }, 0, true});
    // Issue 34: `fast` before its stage slabs came by tensor copies, and the variants tried on the
    // tensor-copy config (SkipIdle, one fragment buffer with m16n8k4 and m16n8k8: NOTES.md §11).
    m.push_back({"v.large.a8", misalignedA<d::FastLarge90>(), 1, true});  // maxColsTimed 1: never timed
    m.push_back({"v.large.cpasync", forced<LargeCpAsync>(), 0, true});
    m.push_back({"v.large.skipidle", forced<LargeSkipIdle>(), 0, true});
    m.push_back({"v.large.skipidle.tail3", forcedTail<LargeSkipIdle>(3), 0, true});
    m.push_back({"v.large.skipidle.a8", misalignedA<LargeSkipIdle>(), 1, true});
    m.push_back({"fast.skipidle", fastWith<LargeSkipIdle>(), 0, true});
    m.push_back({"v.large.tma", forced<LargeTma>(), 0, true});
    m.push_back({"v.large.k8", forced<LargeK8>(), 0, true});
    m.push_back({"v.large.k8.tail3", forcedTail<LargeK8>(3), 0, true});
    m.push_back({"v.large.k4one", forced<LargeK4One>(), 0, true});
    m.push_back({"fast.k8", fastWith<LargeK8>(), 0, true});
    m.push_back({"fast.k4one", fastWith<LargeK4One>(), 0, true});
    m.push_back({"fast.tma", fastWith<LargeTma>(), 0, true});
    m.push_back({"v8.fast.cpasync", fastWith<LargeCpAsync>(), 0, true});
    m.push_back({"fast.rows", fastWith<LargeRows>(), 0, true});
    m.push_back({"v.large.rows", forced<LargeRows>(), 0, true});
    m.push_back({"v.large.rows.nosplit", forced<LargeRows>(1), 0, true});
    m.push_back({"v.large.rows.tail3", forcedTail<LargeRows>(3), 0, true});
    m.push_back({"fast.halfedge", fastWith<LargeHalfEdge>(), 0, true});
    m.push_back({"v.large.halfedge", forced<LargeHalfEdge>(), 0, true});
    m.push_back({"v.large.halfedge.nosplit", forced<LargeHalfEdge>(1), 0, true});
    m.push_back({"v.large.halfedge.tail3", forcedTail<LargeHalfEdge>(3), 0, true});
    m.push_back({"v.large.halfedge.a8", misalignedA<LargeHalfEdge>(), 1, true});
    for (auto [name, fast, forcedFn, tail] : std::vector<std::tuple<std::string, LaunchFn, LaunchFn, LaunchFn>>{
             {"w8k16", fastWith<LargeW8K16>(), forced<LargeW8K16>(), forcedTail<LargeW8K16>(3)},
             {"w8tk16", fastWith<LargeW8TK16>(), forced<LargeW8TK16>(), forcedTail<LargeW8TK16>(3)},
             {"w8k8", fastWith<LargeW8K8>(), forced<LargeW8K8>(), forcedTail<LargeW8K8>(3)},
             {"w8k8one", fastWith<LargeW8K8One>(), forced<LargeW8K8One>(), forcedTail<LargeW8K8One>(3)},
             {"w8k4", fastWith<LargeW8K4>(), forced<LargeW8K4>(), forcedTail<LargeW8K4>(3)}}) {
      m.push_back({"fast." + name, fast, 0, true});
      m.push_back({"v.large." + name, forcedFn, 0, true});
      m.push_back({"v.large." + name + ".tail3", tail, 0, true});
    }
    m.push_back({"v.small.tma", forced<SmallTma>(), 0, true});
    m.push_back({"v.small.tma.skiplower", forced<SmallTmaSkip>(), 0, true});
    m.push_back({"v.small.tma.k4", forced<SmallTmaK4>(), 0, true});
    m.push_back({"v.small.tma.k8", forced<SmallTmaK8>(), 0, true});
    m.push_back({"v.small.tma.k4x3", forced<SmallTmaK4x3>(), 0, true});
    m.push_back({"v.small.tma.k4skip", forced<SmallTmaK4Skip>(), 0, true});
    m.push_back({"v.small.tma.tail3", forcedTail<SmallTma>(3), 0, true});
    m.push_back({"v.small.tma.k4.tail3", forcedTail<SmallTmaK4>(3), 0, true});
    m.push_back({"v.small.tma.k4.a8", misalignedA<SmallTmaK4>(), 1, true});
    m.push_back({"v9.fast.smallcpasync", fastWith<d::FastLarge90, V6Small>(), 0, true});  // fast before §11.6
    m.push_back({"fast.small.tma", fastWith<d::FastLarge90, SmallTma>(), 0, true});
    m.push_back({"fast.small.tma.k4", fastWith<d::FastLarge90, SmallTmaK4>(), 0, true});
    m.push_back({"fast.small.tma.k8", fastWith<d::FastLarge90, SmallTmaK8>(), 0, true});
    m.push_back({"fast.small.tma.k4skip", fastWith<d::FastLarge90, SmallTmaK4Skip>(), 0, true});
    m.push_back({"v.sm80path", [](const double* A, double* C, int64_t r, int64_t c, cudaStream_t s) {
                   return d::launchBestOf<d::FastLarge80, d::FastSmall80>(A, C, r, c, s);
                 }, 0, true});
  }
  if (variants || keepPoolVariant) {
    Method keep{"fast.keeppool", ck::ata::launchFast, 0, true};
    keep.keepPool = true;
    m.push_back(keep);
    // The same with the pool kept for the variants that allocate a workspace (as the addon's pool
    // does): a trimmed pool costs ~0.1 ms per 14 MB workspace (NOTES.md §9).
    const size_t n = m.size();
    for (size_t i = 0; i < n; ++i)
      if (m[i].variant && !m[i].keepPool && m[i].check &&
          (m[i].name == "v6.fast" || m[i].name.rfind("v.large.rest", 0) == 0)) {
        Method k = m[i];
        k.name += ".keeppool";
        k.keepPool = true;
        m.push_back(k);
      }
  }
  return m;
}

void setPoolKeep(bool keep) {
  int dev = 0;
  cudaMemPool_t pool;
  CHECK_CUDA(cudaGetDevice(&dev));
  CHECK_CUDA(cudaDeviceGetDefaultMemPool(&pool, dev));
  uint64_t threshold = keep ? UINT64_MAX : 0;
  CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  if (!keep) CHECK_CUDA(cudaMemPoolTrimTo(pool, 0));
}

void cpuReference(const std::vector<double>& A, std::vector<double>& C, int64_t rows, int64_t n) {
  C.assign(static_cast<size_t>(n * n), 0.0);
  for (int64_t k = 0; k < rows; ++k) {
    const double* a = &A[static_cast<size_t>(k * n)];
    for (int64_t i = 0; i < n; ++i) {
      const double ai = a[i];
      double* c = &C[static_cast<size_t>(i * n)];
      for (int64_t j = i; j < n; ++j) c[j] += ai * a[j];
    }
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) C[static_cast<size_t>(i * n + j)] = C[static_cast<size_t>(j * n + i)];
}

uint64_t freshSeed() {
  static std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

struct Problem {
  int64_t rows, cols;
  double* A = nullptr;
  double* C = nullptr;
  double* Ref = nullptr;
  uint64_t seed = 0;
  std::string refKind;
};

void setup(Problem& p, bool cpuRef) {
  const int64_t ac = p.rows * p.cols, cc = p.cols * p.cols;
  CHECK_CUDA(cudaMalloc(&p.A, ac * sizeof(double)));
  CHECK_CUDA(cudaMalloc(&p.C, cc * sizeof(double)));
  CHECK_CUDA(cudaMalloc(&p.Ref, cc * sizeof(double)));
  p.seed = freshSeed();
  fill_uniform_kernel<<<1024, 256, 0, gStream>>>(p.A, ac, p.seed);
  CHECK_CUDA(cudaGetLastError());
  if (cpuRef) {
    std::vector<double> hA(static_cast<size_t>(ac)), hC;
    CHECK_CUDA(cudaMemcpyAsync(hA.data(), p.A, ac * sizeof(double), cudaMemcpyDeviceToHost, gStream));
    CHECK_CUDA(cudaStreamSynchronize(gStream));
    cpuReference(hA, hC, p.rows, p.cols);
    CHECK_CUDA(cudaMemcpy(p.Ref, hC.data(), cc * sizeof(double), cudaMemcpyHostToDevice));
    p.refKind = "cpu";
  } else {
    CHECK_CUDA(cublasGemmAtA(p.A, p.Ref, p.rows, p.cols, gStream));
    CHECK_CUDA(cudaStreamSynchronize(gStream));
    p.refKind = "dgemm";
  }
}

void teardown(Problem& p) {
  CHECK_CUDA(cudaFree(p.A));
  CHECK_CUDA(cudaFree(p.C));
  CHECK_CUDA(cudaFree(p.Ref));
}

void poison(const Problem& p) {
  CHECK_CUDA(cudaMemsetAsync(p.C, 0xFF, p.cols * p.cols * sizeof(double), gStream));  // NaN
}

constexpr double kTol = 1e-12;
int gFailures = 0;
int gGapMs = 150;

struct Row {
  std::string shape, method;
  double ms, tflops, gemmTflops, rel;
  bool pass;
  double mhz = NAN, watts = NAN, capped = NAN, tempC = NAN;
  float minMs = 0, maxMs = 0;
};
std::vector<Row> gRows;

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a <= s.size()) {
    const size_t b = s.find(',', a);
    const std::string item = s.substr(a, b == std::string::npos ? std::string::npos : b - a);
    if (!item.empty()) out.push_back(item);
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return out;
}

std::string shapeName(int64_t r, int64_t c) { return std::to_string(r) + "x" + std::to_string(c); }

void correctness(const std::vector<std::pair<int64_t, int64_t>>& shapes, const std::vector<Method>& ms) {
  std::printf("== correctness (tol %.0e, ref: cpu float64 when rows*cols^2 <= 4e8, else cublasDgemm)\n", kTol);
  for (auto [rows, cols] : shapes) {
    Problem p{rows, cols};
    setup(p, static_cast<double>(rows) * cols * cols <= 4e8);
    for (const auto& m : ms) {
      if ((m.variant && cols < 2) || !m.check) continue;
      poison(p);
      const cudaError_t err = m.fn(p.A, p.C, rows, cols, gStream);
      const cudaError_t serr = cudaStreamSynchronize(gStream);
      if (err != cudaSuccess || serr != cudaSuccess) {
        std::printf("%-14s %-20s CUDA ERROR %s / %s\n", shapeName(rows, cols).c_str(), m.name.c_str(),
                    cudaGetErrorString(err), cudaGetErrorString(serr));
        ++gFailures;
        continue;
      }
      const Check c = compare(p.C, p.Ref, cols);
      const bool ok = c.pass(kTol, m.ours);
      if (!ok) ++gFailures;
      std::printf("%-14s %-20s ref=%-5s rel=%.3e nonfinite=%llu asym=%llu seed=%016llx %s\n",
                  shapeName(rows, cols).c_str(), m.name.c_str(), p.refKind.c_str(), c.rel, c.nonfinite, c.asym,
                  static_cast<unsigned long long>(p.seed), ok ? "PASS" : "FAIL");
    }
    teardown(p);
  }
}

int gReps = 7;
bool gRotate = true;
// --keeppool-all: the default pool keeps freed memory for every method, as the addon's own pool does,
// so a workspace is mapped once (in the warm-up) instead of after every other method's trim.
bool gKeepAll = false;

void timing(const std::vector<std::pair<int64_t, int64_t>>& shapes, const std::vector<Method>& ms) {
  std::printf("== timing (2 warm-up rounds, median of %d; methods interleaved round-robin, %s;\n"
              "   %d ms idle before each timed run; C poisoned before each run; per run: the SM clock from\n"
              "   clock64/globaltimer probes around it (MHz), NVML power (W), temperature, share of 2 ms\n"
              "   samples with the software power cap active)\n",
              gReps, gRotate ? "the order rotated each round" : "fixed order", gGapMs);
  std::printf("   GPU at start: %s\n", gNvml.state().c_str());
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  constexpr int kWarm = 2;
  for (auto [rows, cols] : shapes) {
    Problem p{rows, cols};
    setup(p, false);
    const bool square = rows == cols;
    std::vector<const Method*> run;
    for (const auto& m : ms) {
      if (m.maxColsTimed && cols > m.maxColsTimed) continue;
      if (m.name == "basic" && !square) continue;
      run.push_back(&m);
    }
    struct Sample {
      float ms;
      double mhz, watts, nvmlMhz, tempC, capped;
    };
    std::vector<std::vector<Sample>> t(run.size());
    std::vector<bool> failed(run.size(), false);
    for (int it = 0; it < kWarm + gReps; ++it) {
      for (size_t step = 0; step < run.size(); ++step) {
        const size_t mi = gRotate ? (step + it) % run.size() : step;
        if (failed[mi]) continue;
        const Method& m = *run[mi];
        setPoolKeep(gKeepAll || m.keepPool);
        poison(p);
        CHECK_CUDA(cudaStreamSynchronize(gStream));
        if (gGapMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(gGapMs));
        const double h0 = gNvml.now();
        gProbe.record(0);
        CHECK_CUDA(cudaEventRecord(e0, gStream));
        const cudaError_t err = m.fn(p.A, p.C, rows, cols, gStream);
        CHECK_CUDA(cudaEventRecord(e1, gStream));
        gProbe.record(1);
        const cudaError_t serr = cudaStreamSynchronize(gStream);
        const double h1 = gNvml.now();
        if (err != cudaSuccess || serr != cudaSuccess) {
          std::printf("%s %s CUDA ERROR %s / %s\n", shapeName(rows, cols).c_str(), m.name.c_str(),
                      cudaGetErrorString(err), cudaGetErrorString(serr));
          failed[mi] = true;
          ++gFailures;
          continue;
        }
        Sample smp{0, gProbe.mhz(), NAN, NAN, NAN, NAN};
        CHECK_CUDA(cudaEventElapsedTime(&smp.ms, e0, e1));
        gNvml.window(h0, h1, smp.watts, smp.nvmlMhz, smp.tempC, smp.capped);
        if (it >= kWarm) t[mi].push_back(smp);
        if (it == kWarm + gReps - 1) {
          // Last round: this method's C is the one checked.
          std::vector<float> v;
          std::vector<double> mhz, watts, capped, temps;
          for (const auto& x : t[mi]) {
            v.push_back(x.ms);
            mhz.push_back(x.mhz);
            if (std::isfinite(x.watts)) watts.push_back(x.watts), capped.push_back(x.capped), temps.push_back(x.tempC);
          }
          auto med = [](std::vector<double> a) {
            if (a.empty()) return NAN * 1.0;
            std::sort(a.begin(), a.end());
            return a[a.size() / 2];
          };
          std::sort(v.begin(), v.end());
          const double medMs = v[v.size() / 2];
          Check c;
          bool ok = true;
          if (m.check) {
            c = compare(p.C, p.Ref, cols);
            ok = c.pass(kTol, m.ours);
          }
          if (!ok) ++gFailures;
          const double useful = static_cast<double>(cols) * cols * rows;
          Row r{shapeName(rows, cols), m.name, medMs, useful / (medMs * 1e-3) / 1e12,
                2 * useful / (medMs * 1e-3) / 1e12, c.rel, ok, med(mhz), med(watts), med(capped), med(temps),
                v.front(), v.back()};
          gRows.push_back(r);
          std::printf("%-14s %-20s %10.3f ms  %7.2f TFLOP/s (n^2*rows)  min %.3f max %.3f  clk %4.0f MHz  %3.0f W "
                      "%2.0f C cap %.2f rel=%.2e %s\n",
                      r.shape.c_str(), r.method.c_str(), medMs, r.tflops, v.front(), v.back(), r.mhz, r.watts,
                      r.tempC, r.capped, c.rel, ok ? "PASS" : "FAIL");
          std::fflush(stdout);
        }
      }
    }
    setPoolKeep(false);
    teardown(p);
  }
  std::printf("   GPU at end: %s\n", gNvml.state().c_str());
  CHECK_CUDA(cudaEventDestroy(e0));
  CHECK_CUDA(cudaEventDestroy(e1));
}

template <class Cfg, bool V, bool Tail = false>
void printKernel(const char* name) {
  cudaFuncAttributes a{};
  CHECK_CUDA(cudaFuncGetAttributes(&a, d::ata_mma_sym_kernel<Cfg, V, Tail>));
  int perSm = 0;
  CHECK_CUDA(cudaFuncSetAttribute(d::ata_mma_sym_kernel<Cfg, V, Tail>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Cfg::Smem)));
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, d::ata_mma_sym_kernel<Cfg, V, Tail>, Cfg::Threads,
                                                           Cfg::Smem));
  std::printf("kernel %-28s vec16=%d tail=%d regs=%3d local=%zu dynsmem=%zu threads=%d blocks/SM=%d\n", name, V, Tail, a.numRegs,
              a.localSizeBytes, Cfg::Smem, Cfg::Threads, perSm);
}

template <class Cfg>
void printPlan(int64_t rows, int64_t cols, double rel) {
  d::FastPlan p;
  CHECK_CUDA(d::planFast<Cfg>(reinterpret_cast<const double*>(256), rows, cols, d::kModelFlops * rel, 0, p));
  const int64_t T = ck::ceilDiv(cols, Cfg::BM), tiles = T * (T + 1) / 2;
  std::printf("plan %-14s BM=%3d tiles=%6lld perSM=%d splits=%4d tail=%d tiles x %d pieces model=%.3f ms\n",
              shapeName(rows, cols).c_str(), Cfg::BM, (long long)tiles, p.perSm, p.splits, p.tailTiles, p.tailSplits,
              p.seconds * 1e3);
}

// The tensor-copy configs fall back to the 8-byte cp.async kernel without a word when the driver
// makes no tensor map, so a passing result does not show that the tensor copies ran: check that
// the maps of the edge shapes (n below the box width, one row, a tail of 21 rows) are made.
void tensorMapChecks() {
  const double* A = reinterpret_cast<const double*>(uintptr_t{1} << 20);  // any 16-byte-aligned address
  for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 2}, {2, 2}, {1000, 2}, {1, 64}, {64, 64}, {70, 66}, {2069, 1410}, {1000000, 64}, {8000, 8000}}) {
    CUtensorMap small{}, large{};
    const bool okSmall = d::makeTensorMap<d::FastSmall90>(A, r, c, small);
    const bool okLarge = d::makeTensorMap<d::FastLarge90>(A, r, c, large);
    if (!okSmall || !okLarge) ++gFailures;
    std::printf("tensor map %-14s FastSmall90 %s FastLarge90 %s\n", shapeName(r, c).c_str(), okSmall ? "ok" : "FAIL",
                okLarge ? "ok" : "FAIL");
  }
}

void printPlans() {
  printKernel<d::FastLarge90, true>("FastLarge90");
  printKernel<d::FastLarge90, false>("FastLarge90");
  printKernel<d::FastLarge90, true, true>("FastLarge90");
  printKernel<d::FastLarge90, false, true>("FastLarge90");
  printKernel<d::FastSmall90, true, true>("FastSmall90");
  printKernel<d::FastSmall90, true>("FastSmall90");
  printKernel<d::FastSmall90, false>("FastSmall90");
  printKernel<LargeK8, true>("LargeK8 (m16n8k8, 1 buffer)");
  printKernel<LargeK8, true, true>("LargeK8 (m16n8k8, 1 buffer)");
  printKernel<LargeK4One, true>("LargeK4One (1 buffer)");
  printKernel<SmallTma, true>("SmallTma");
  printKernel<SmallTma, true, true>("SmallTma");
  printKernel<SmallTma, false>("SmallTma");
  printKernel<SmallTmaSkip, true>("SmallTmaSkip");
  printKernel<SmallTmaK4, true>("SmallTmaK4");
  printKernel<SmallTmaK4, true, true>("SmallTmaK4");
  printKernel<SmallTmaK4, false>("SmallTmaK4");
  printKernel<SmallTmaK4Skip, true>("SmallTmaK4Skip");
  printKernel<SmallTmaK8, true>("SmallTmaK8");
  printKernel<SmallTmaK4x3, true>("SmallTmaK4x3");
  printKernel<d::FastLarge80, true>("FastLarge80 (m8n8k4)");
  printKernel<d::FastSmall80, true>("FastSmall80 (m8n8k4)");
  printKernel<V1NoPipe, true>("V1NoPipe");
  printKernel<V2Bk32, true>("V2Bk32");
  printKernel<V3Pipe8w, true>("V3Pipe8w");
  printKernel<V4Large, true>("V4Large");
  printKernel<W8x64x32k8, true>("W8x64x32k8");
  printKernel<W8x32x64k4, true>("W8x32x64k4");
  printKernel<W8x32x64k8, true>("W8x32x64k8");
  printKernel<W16Bk16s6, true>("W16Bk16s6");
  printKernel<W16Ilv, true>("W16Ilv");
  printKernel<W16Ilv, false>("W16Ilv");
  printKernel<W8x64x32Ilv, true>("W8x64x32Ilv");
  printKernel<W8x32x64Ilv, true>("W8x32x64Ilv");
  printKernel<V6NoSkip, true>("V6NoSkip");
  printKernel<V6, true>("V6");
  printKernel<V6, false>("V6");
  printKernel<V6Small, true>("V6Small");
  printKernel<V6Small, false>("V6Small");
  printKernel<V6SmallNoSkip, true>("V6SmallNoSkip");
  printKernel<V4Small, true>("V4Small");
  printKernel<ProbeTimed, true>("ProbeTimed");
  printKernel<LargeBulk, true>("LargeBulk");
  printKernel<LargeCpAsync, true>("LargeCpAsync");
  printKernel<LargeSkipIdle, true>("LargeSkipIdle");
  printKernel<LargeSkipIdle, false>("LargeSkipIdle");
  printKernel<LargeBulk, true, true>("LargeBulk");
  printKernel<LargeBulk, false>("LargeBulk");
  printKernel<LargeNoBulk, true>("LargeNoBulk");
  printKernel<ProbeTimedBulk, true>("ProbeTimedBulk");
  printKernel<ProbeNoStore, true>("ProbeNoStore");
  printKernel<ProbeNoMirror, true>("ProbeNoMirror");
  for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{{2000, 2000}, {4000, 4000}, {6000, 6000}, {7000, 7000}, {8000, 8000},
                                                             {9000, 9000}, {10000, 10000}, {12000, 12000}, {14000, 14000},
                                                             {16000, 16000}, {18000, 18000}, {200000, 2000}, {50000, 4000},
                                                             {20000, 130}, {1000000, 64}, {5000, 64}, {2069, 1410},
                                                             {7050, 1410}, {14100, 1410}}) {
    printPlan<d::FastLarge90>(r, c, 1.0);
    printPlan<d::FastSmall90>(r, c, d::kSmallTileRate);
  }
}

// --timeline SHAPES: the shipped 128-tile kernel with timestamps (ProbeTimed, no split), 2 warm-up
// launches and 3 recorded ones per shape (each after the idle gap), then where each SM's time went:
// block lead-in, pipeline fill (entry to first stage landed), product loop, epilogue (stores
// issued), the gaps between one block's end and the next block's entry on the same SM (retire +
// launch), and the idle time at the end (the ragged last wave). Cycles are each SM's clock64.
template <class Cfg>
void timeline(const std::vector<std::pair<int64_t, int64_t>>& shapes, const char* name) {
  std::printf("== timeline (%s + timestamps, no split; %d ms idle before each launch)\n", name, gGapMs);
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  auto coords = [](int64_t t, int T, int band, int& bi, int& bj) {  // host copy of bandedTileCoords
    int b0 = 0;
    for (;;) {
      const int gb = std::min(band, T - b0);
      const int64_t tri = int64_t(gb) * (gb + 1) / 2, count = tri + int64_t(gb) * (T - b0 - gb);
      if (t < count) {
        if (t < tri) {
          int c = 0;
          while ((c + 1) * (c + 2) / 2 <= t) ++c;
          bj = b0 + c, bi = b0 + static_cast<int>(t - c * (c + 1) / 2);
        } else {
          bj = b0 + gb + static_cast<int>((t - tri) / gb), bi = b0 + static_cast<int>((t - tri) % gb);
        }
        return;
      }
      t -= count, b0 += gb;
    }
  };
  for (auto [rows, cols] : shapes) {
    Problem p{rows, cols};
    setup(p, false);
    const int T = static_cast<int>(ck::ceilDiv(cols, Cfg::BM));
    const int64_t tiles = int64_t(T) * (T + 1) / 2, kTiles = ck::ceilDiv(rows, Cfg::BK);
    unsigned long long* log = nullptr;
    CHECK_CUDA(cudaMalloc(&log, tiles * kMarkWords * sizeof(unsigned long long)));
    CHECK_CUDA(cudaMemcpyToSymbol(gMarkLog, &log, sizeof log));
    const LaunchFn fn = forced<Cfg>(1);
    for (int it = 0; it < 5; ++it) {
      poison(p);
      CHECK_CUDA(cudaMemsetAsync(log, 0, tiles * kMarkWords * sizeof(unsigned long long), gStream));
      CHECK_CUDA(cudaStreamSynchronize(gStream));
      if (gGapMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(gGapMs));
      CHECK_CUDA(cudaEventRecord(e0, gStream));
      CHECK_CUDA(fn(p.A, p.C, rows, cols, gStream));
      CHECK_CUDA(cudaEventRecord(e1, gStream));
      CHECK_CUDA(cudaStreamSynchronize(gStream));
      if (it < 2) continue;
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
      std::vector<unsigned long long> h(static_cast<size_t>(tiles) * kMarkWords);
      CHECK_CUDA(cudaMemcpy(h.data(), log, h.size() * sizeof(h[0]), cudaMemcpyDeviceToHost));
      struct Blk {
        unsigned long long g[4], c[4];
        int sm, cls;  // cls 0 interior, 1 diagonal, 2 edge (last tile column, n not a multiple of BM)
      };
      std::vector<Blk> b(static_cast<size_t>(tiles));
      unsigned long long gMin = ~0ull, gMax = 0;
      int smMax = 0;
      for (int64_t t = 0; t < tiles; ++t) {
        Blk& x = b[t];
        for (int k = 0; k < 4; ++k) x.g[k] = h[t * kMarkWords + k], x.c[k] = h[t * kMarkWords + 4 + k];
        x.sm = static_cast<int>(h[t * kMarkWords + 8]);
        int bi, bj;
        coords(t, T, d::kBandRows, bi, bj);
        x.cls = bi == bj ? 1 : (bj == T - 1 && cols % Cfg::BM ? 2 : 0);
        gMin = std::min(gMin, x.g[0]), gMax = std::max(gMax, x.g[3]);
        smMax = std::max(smMax, x.sm);
      }
      std::vector<std::vector<int>> perSm(smMax + 1);
      for (int64_t t = 0; t < tiles; ++t) perSm[b[t].sm].push_back(static_cast<int>(t));
      std::vector<double> clk;  // MHz per SM: its cycles over its ns, first entry to last end
      for (auto& v : perSm) {
        if (v.empty()) continue;
        std::sort(v.begin(), v.end(), [&](int x, int y) { return b[x].c[0] < b[y].c[0]; });
        const Blk &f = b[v.front()], &l = b[v.back()];
        if (l.g[3] > f.g[0]) clk.push_back(double(l.c[3] - f.c[0]) / double(l.g[3] - f.g[0]) * 1e3);
      }
      std::sort(clk.begin(), clk.end());
      const double mhz = clk[clk.size() / 2];
      auto pct = [](std::vector<double> v, double q) {
        if (v.empty()) return NAN * 1.0;
        std::sort(v.begin(), v.end());
        return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
      };
      std::printf("%s launch %d: event %.3f ms, first entry to last end %.1f us, SM clock %.0f MHz, %lld tiles on %zu SMs,"
                  " %lld k-tiles each\n",
                  shapeName(rows, cols).c_str(), it - 1, ms, (gMax - gMin) * 1e-3, mhz, (long long)tiles, clk.size(),
                  (long long)kTiles);
      const char* names[3] = {"interior", "diagonal", "edge"};
      for (int cls = 0; cls < 3; ++cls) {
        std::vector<double> fill, main, epi;
        for (const auto& x : b)
          if (x.cls == cls) {
            fill.push_back(double(x.c[1] - x.c[0]));
            main.push_back(double(x.c[2] - x.c[1]) / kTiles);
            epi.push_back(double(x.c[3] - x.c[2]));
          }
        if (fill.empty()) continue;
        std::printf("  %-8s %4zu blocks, cycles median [p10 p90]: fill %6.0f [%6.0f %6.0f]  per k-tile %5.0f [%5.0f %5.0f]"
                    "  epilogue %6.0f [%6.0f %6.0f]\n",
                    names[cls], fill.size(), pct(fill, .5), pct(fill, .1), pct(fill, .9), pct(main, .5), pct(main, .1),
                    pct(main, .9), pct(epi, .5), pct(epi, .1), pct(epi, .9));
      }
      // Per SM, in us: lead-in (first entry after the launch's first), fill, loop, epilogue, gaps between
      // its blocks, idle after its last block until the launch's last end; means over SMs.
      double lead = 0, fill = 0, loop = 0, epi = 0, gap = 0, idle = 0;
      int nSm = 0, bMin = INT_MAX, bMax = 0;
      std::vector<double> ends;
      size_t depth = 0;
      for (const auto& v : perSm) depth = std::max(depth, v.size());
      std::vector<std::vector<double>> endAt(depth), epiAt(depth), fillAt(depth), gapAt(depth);
      for (const auto& v : perSm) {
        if (v.empty()) continue;
        ++nSm;
        bMin = std::min<int>(bMin, static_cast<int>(v.size())), bMax = std::max<int>(bMax, static_cast<int>(v.size()));
        lead += (b[v.front()].g[0] - gMin) * 1e-3;
        idle += (gMax - b[v.back()].g[3]) * 1e-3;
        ends.push_back((b[v.back()].g[3] - gMin) * 1e-3);
        for (size_t k = 0; k < v.size(); ++k) {
          const Blk& x = b[v[k]];
          fill += (x.c[1] - x.c[0]) / mhz, loop += (x.c[2] - x.c[1]) / mhz, epi += (x.c[3] - x.c[2]) / mhz;
          endAt[k].push_back((x.g[3] - gMin) * 1e-3);
          epiAt[k].push_back(double(x.c[3] - x.c[2]));
          fillAt[k].push_back(double(x.c[1] - x.c[0]));
          if (k > 0) {
            const double gp = double(x.c[0] - b[v[k - 1]].c[3]) / mhz;
            gap += gp;
            gapAt[k].push_back(gp);
          }
        }
      }
      std::printf("  per SM, mean us: lead-in %.2f  fill %.2f  loop %.2f  epilogue %.2f  gaps %.2f  idle at end %.2f"
                  "  (sum %.1f; blocks per SM %d-%d; last end over SMs: min %.1f median %.1f max %.1f us)\n",
                  lead / nSm, fill / nSm, loop / nSm, epi / nSm, gap / nSm, idle / nSm,
                  (lead + fill + loop + epi + gap + idle) / nSm, bMin, bMax, pct(ends, 0), pct(ends, .5),
                  pct(ends, 1.0));
      for (size_t k = 0; k < depth; ++k)
        std::printf("  block %zu on its SM (%3zu SMs): end median %8.1f us [min %8.1f max %8.1f]  fill %6.0f cyc  "
                    "epilogue %6.0f cyc  gap before %5.2f us\n",
                    k, endAt[k].size(), pct(endAt[k], .5), pct(endAt[k], 0), pct(endAt[k], 1.0), pct(fillAt[k], .5),
                    pct(epiAt[k], .5), k ? pct(gapAt[k], .5) : 0.0);
    }
    const Check c = compare(p.C, p.Ref, cols);
    const bool ok = c.pass(kTol, true);
    if (!ok) ++gFailures;
    std::printf("%s timeline kernel's C: rel=%.3e nonfinite=%llu asym=%llu %s\n", shapeName(rows, cols).c_str(), c.rel,
                c.nonfinite, c.asym, ok ? "PASS" : "FAIL");
    unsigned long long* none = nullptr;
    CHECK_CUDA(cudaMemcpyToSymbol(gMarkLog, &none, sizeof none));
    CHECK_CUDA(cudaFree(log));
    teardown(p);
  }
  CHECK_CUDA(cudaEventDestroy(e0));
  CHECK_CUDA(cudaEventDestroy(e1));
}

// --profile: no helper kernels (A is filled from the host), one launch of each method at 8000²
// (and of launchFast at 1000000×64 when no --methods are given), for ncu.
void profile(const std::vector<Method>& ms, bool all) {
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{8000, 8000}, {1000000, 64}}) {
    if (!all && cols < 8000) continue;
    const int64_t ac = rows * cols;
    std::vector<double> h(static_cast<size_t>(ac));
    std::mt19937_64 rng(freshSeed());
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (auto& x : h) x = u(rng);
    double *A, *C;
    CHECK_CUDA(cudaMalloc(&A, ac * sizeof(double)));
    CHECK_CUDA(cudaMalloc(&C, cols * cols * sizeof(double)));
    CHECK_CUDA(cudaMemcpy(A, h.data(), ac * sizeof(double), cudaMemcpyHostToDevice));
    if (all) {
      CHECK_CUDA(ck::ata::launchFast(A, C, rows, cols, gStream));
      if (cols > 64) {
        CHECK_CUDA(cublasGemmAtA(A, C, rows, cols, gStream));
        CHECK_CUDA(cublasSyrkAtA(A, C, rows, cols, gStream));
      }
    } else {
      for (const auto& m : ms) CHECK_CUDA(m.fn(A, C, rows, cols, gStream));
    }
    CHECK_CUDA(cudaStreamSynchronize(gStream));
    CHECK_CUDA(cudaFree(A));
    CHECK_CUDA(cudaFree(C));
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool small = false, tiny = false, variants = false, doTiming = true, profileOnly = false, keepPool = false;
  bool bigCheck = true, hostPlan = false;
  std::vector<std::string> methodFilter;
  std::vector<std::pair<int64_t, int64_t>> timelineShapes, checkShapes;
  std::vector<std::pair<int64_t, int64_t>> timedShapes = {{2000, 2000},   {4000, 4000},  {8000, 8000},
                                                          {16000, 16000}, {1000000, 64}, {200000, 2000}};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--small")) small = true;
    else if (!std::strcmp(argv[i], "--tiny")) small = tiny = true;
    else if (!std::strcmp(argv[i], "--variants")) variants = true;
    else if (!std::strcmp(argv[i], "--profile")) profileOnly = true;
    else if (!std::strcmp(argv[i], "--keeppool")) keepPool = true;
    else if (!std::strcmp(argv[i], "--keeppool-all")) gKeepAll = true;
    else if (!std::strcmp(argv[i], "--gap-ms") && i + 1 < argc) gGapMs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--no-timing")) doTiming = false;
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) gReps = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--fixed-order")) gRotate = false;
    else if (!std::strcmp(argv[i], "--no-big-check")) bigCheck = false;
    else if (!std::strcmp(argv[i], "--host-plan")) hostPlan = true;
    else if (!std::strcmp(argv[i], "--methods") && i + 1 < argc) methodFilter = splitList(argv[++i]);
    else if ((!std::strcmp(argv[i], "--shapes") || !std::strcmp(argv[i], "--timeline") ||
              !std::strcmp(argv[i], "--check-shapes")) &&
             i + 1 < argc) {
      auto& list = argv[i][2] == 's' ? timedShapes : argv[i][2] == 't' ? timelineShapes : checkShapes;
      list.clear();
      for (const auto& x : splitList(argv[++i])) {
        const auto xpos = x.find('x');
        const long long r = std::atoll(x.c_str()), c = xpos == std::string::npos ? r : std::atoll(x.c_str() + xpos + 1);
        list.push_back({r, c});
      }
    }
    else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  int dev = 0;
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDevice(&dev));
  CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
  std::printf("device %s, cc %d.%d, %d SMs, L2 %d MB\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount, prop.l2CacheSize >> 20);
  CHECK_CUDA(cudaStreamCreateWithFlags(&gStream, cudaStreamNonBlocking));
  CHECK_CUBLAS(cublasCreate(&gCublas));
  CHECK_CUBLAS(cublasSetStream(gCublas, gStream));

  auto ms = methods(variants || !methodFilter.empty(), keepPool);
  if (!methodFilter.empty()) {
    // The listed methods, in the listed order (the order of a round-robin without rotation).
    std::vector<Method> kept;
    for (const auto& name : methodFilter) {
      auto it = std::find_if(ms.begin(), ms.end(), [&](const Method& m) { return m.name == name; });
      if (it == ms.end()) {
        std::fprintf(stderr, "unknown method %s\n", name.c_str());
        return 2;
      }
      kept.push_back(*it);
    }
    ms = kept;
  }
  gProbe.init(prop.multiProcessorCount);
  gNvml.start();
  if (profileOnly) {
    profile(ms, methodFilter.empty());
    gNvml.finish();
    gProbe.release();
    CHECK_CUBLAS(cublasDestroy(gCublas));
    CHECK_CUDA(cudaStreamDestroy(gStream));
    return 0;
  }
  std::vector<std::pair<int64_t, int64_t>> smallShapes = {
      {1, 1},    {1, 7},    {7, 1},     {2, 2},     {17, 33},   {33, 17},     {257, 131},  {1009, 17},
      {128, 128}, {129, 257}, {64, 64},  {65, 63},   {300, 65},  {40, 130},    {3, 200},    {5000, 64},
      {1000, 2}, {2000, 130}, {20000, 130}, {20001, 131}, {50, 1000}, {777, 255}, {4096, 256}, {17, 1025},
      // The large config's edges (issue 34): last tile columns of 2 and 34 columns of C, tensor copies
      // mostly past A, rows ending in partial k-tiles; 20001×770 splits K on an H100.
      {70, 258}, {100, 162}, {20001, 770}};
  // 2069×1410 and 2069×1411: the planner's own tail split on 64×64 tiles (12 tiles in 2 pieces), with
  // tensor copies and with the 8-byte copies; 21 rows in the last k-tile, a last tile column 2 wide.
  std::vector<std::pair<int64_t, int64_t>> bigShapes = {{2000, 2000}, {1000000, 64}, {200000, 2000}, {3001, 2999},
                                                        {3001, 2946}, {2069, 1410}, {2069, 1411}};
  if (!checkShapes.empty()) {
    smallShapes = checkShapes;
    bigShapes.clear();
  }
  if (tiny) {
    // racecheck tracks every shared-memory access: keep the work small.
    smallShapes.erase(std::remove_if(smallShapes.begin(), smallShapes.end(),
                                     [](auto s) { return static_cast<double>(s.first) * s.second * s.second > 6e7; }),
                      smallShapes.end());
  }
  printPlans();
  tensorMapChecks();
  if (!timelineShapes.empty()) {
    timeline<ProbeTimed>(timelineShapes, "LargeNoBulk");
    timeline<ProbeTimedBulk>(timelineShapes, "LargeBulk (FastLarge90 until §11)");
    timeline<ProbeTimedTma>(timelineShapes, "FastLarge90");
    timeline<ProbeTimedRows>(timelineShapes, "FastLarge90 with RowStores");
    timeline<ProbeTimedHalfEdge>(timelineShapes, "FastLarge90 with HalfEdge");
  }
  if (hostPlan) hostPlanCost();
  correctness(smallShapes, ms);
  if (!small) {
    if (bigCheck) correctness(bigShapes, ms);
    if (doTiming) timing(timedShapes, ms);
  }

  if (!gRows.empty()) {
    std::printf("\n== table: ms (median) | TFLOP/s (n^2*rows) | x DSYRK time | x DGEMM time (>1 = faster) | min-max ms |"
                " SM MHz (probe) | W | C | power-capped share\n");
    std::string last;
    double syrk = 0, gemm = 0;
    for (const auto& r : gRows) {
      if (r.shape != last) {
        last = r.shape;
        syrk = gemm = 0;
        for (const auto& q : gRows)
          if (q.shape == r.shape) {
            if (q.method == "cublasDsyrk+mirror") syrk = q.ms;
            if (q.method == "cublasDgemm") gemm = q.ms;
          }
      }
      std::printf("%-14s %-20s %10.3f %7.2f %6.2f %6.2f  %.3f-%.3f  %4.0f %3.0f %2.0f %.2f %s\n", r.shape.c_str(),
                  r.method.c_str(), r.ms, r.tflops, syrk > 0 ? syrk / r.ms : 0.0, gemm > 0 ? gemm / r.ms : 0.0,
                  r.minMs, r.maxMs, r.mhz, r.watts, r.tempC, r.capped, r.pass ? "" : "FAIL");
    }
  }
  std::printf("\n%s: %d failure(s)\n", gFailures ? "FAILED" : "ALL PASS", gFailures);
  gNvml.finish();
  gProbe.release();
  if (gSums) CHECK_CUDA(cudaFree(gSums));
  if (gCounts) CHECK_CUDA(cudaFree(gCounts));
  CHECK_CUBLAS(cublasDestroy(gCublas));
  CHECK_CUDA(cudaStreamDestroy(gStream));
  return gFailures ? 1 : 0;
}
