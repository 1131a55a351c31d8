// Standalone check and benchmark of the stencil's `fast` shapes (GPU host, no Node.js).
//   nvcc -std=c++17 -O3 -DCK_TUNING_VARIANTS -Inative -Ibench/dev/stencil -gencode arch=compute_90,code=sm_90 \
//        native/stencil/[123]_*.cu native/stencil/run.cu bench/dev/stencil/stencil_harness.cu -o stencil_harness
//   ./stencil_harness              checks every shape against `tiled`, then times them
//   ./stencil_harness --no-time    checks only
//   ./stencil_harness --no-time --small --variants 0,1    small grids (under compute-sanitizer)
//   ./stencil_harness --no-time --race --variants 0,1     a few grids (under racecheck)
//   ./stencil_harness --reps 5 --sizes 4096,8192,2048x16384 --variants -1,0,2 --dtype float32
//                                                 (-1: the entry fast picks; RxC: R rows, C columns)
//
// Every shape is checked bit for bit against the `tiled` method (same summation order, so the grids,
// sweep counts and residuals must be identical): odd and tiny sizes, several sweep counts, random
// weights, convergence with host checks every 1, 3 and 64 sweeps, a NaN, and an input that is not
// 16-byte aligned (scalar loads). The timing runs 100 sweeps of box9 at tolerance 0 through the same
// entry point as the library (host checks every 64 sweeps), the shapes and a 1 GiB device copy
// interleaved round robin; effective GB/s = 2·rows·cols·bytes·sweeps / time, as in lib/bench/stencil.ts.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/pool.h"
#include "stencil/stencil.h"

#include "../harness_support.h"

namespace ck {
namespace stencil {
namespace detail {
int fastVariantCount(Dtype dtype);
const char* fastVariantName(Dtype dtype, int v);
cudaError_t runFastVariant(int variant, Dtype dtype, const void* in, void* a, void* b, const Problem& pb,
                           cudaStream_t stream, Result* result);
}  // namespace detail
}  // namespace stencil
}  // namespace ck

using ck::Dtype;
namespace cs = ck::stencil;

static int failures = 0, checks = 0;

struct Grids {
  size_t bytes = 0;
  void *in = nullptr, *a = nullptr, *b = nullptr;
  Grids(size_t n, size_t elem, int misalign = 0) : bytes(n * elem) {
    CHECK_CUDA(cudaMalloc(&in, bytes + 16));
    CHECK_CUDA(cudaMalloc(&a, bytes + 16));
    CHECK_CUDA(cudaMalloc(&b, bytes + 16));
    in = static_cast<char*>(in) + misalign * elem;
  }
  void release(int misalign, size_t elem) {
    cudaFree(static_cast<char*>(in) - misalign * elem);
    cudaFree(a);
    cudaFree(b);
  }
};

struct Outcome {
  cs::Result r;
  std::vector<unsigned char> grid;
};

// Runs `variant` of fast (−1: the method itself, e.g. tiled) and reads back the final grid. a and b
// are poisoned with NaN first.
static Outcome runOne(cs::Method method, int variant, Dtype dtype, Grids& g, const cs::Problem& pb) {
  CHECK_CUDA(cudaMemset(g.a, 0xff, g.bytes));
  CHECK_CUDA(cudaMemset(g.b, 0xff, g.bytes));
  Outcome o;
  cudaError_t err = variant < 0 ? cs::run(method, dtype, g.in, g.a, g.b, pb, 0, &o.r)
                                : cs::detail::runFastVariant(variant, dtype, g.in, g.a, g.b, pb, 0, &o.r);
  CHECK_CUDA(err);
  o.grid.resize(g.bytes);
  CHECK_CUDA(cudaMemcpy(o.grid.data(), o.r.finalBuffer == 0 ? g.a : g.b, g.bytes, cudaMemcpyDeviceToHost));
  return o;
}

static void randomWeights(std::mt19937_64& rng, double* w) {
  std::uniform_real_distribution<double> u(1.5, 2.5);
  double sum = 0;
  for (int i = 0; i < 9; ++i) sum += (w[i] = u(rng));
  for (int i = 0; i < 9; ++i) w[i] /= sum;
}

static const double kBox9[9] = {1 / 9., 1 / 9., 1 / 9., 1 / 9., 1 / 9., 1 / 9., 1 / 9., 1 / 9., 1 / 9.};

static void fill(std::mt19937_64& rng, Dtype dtype, Grids& g, long long n, long long nanAt = -1) {
  std::uniform_real_distribution<double> u(0, 1);
  if (dtype == Dtype::Float32) {
    std::vector<float> h(n);
    for (auto& x : h) x = static_cast<float>(u(rng));
    if (nanAt >= 0) h[nanAt] = NAN;
    CHECK_CUDA(cudaMemcpy(g.in, h.data(), n * 4, cudaMemcpyHostToDevice));
  } else {
    std::vector<double> h(n);
    for (auto& x : h) x = u(rng);
    if (nanAt >= 0) h[nanAt] = NAN;
    CHECK_CUDA(cudaMemcpy(g.in, h.data(), n * 8, cudaMemcpyHostToDevice));
  }
}

static bool sameResidual(double x, double y) {
  return (std::isnan(x) && std::isnan(y)) || x == y;
}

static void compare(const char* what, const Outcome& ref, const Outcome& got, Dtype dtype) {
  ++checks;
  const size_t elem = dtype == Dtype::Float32 ? 4 : 8;
  size_t bad = ref.grid.size();
  for (size_t i = 0; i < ref.grid.size(); i += elem) {
    if (std::memcmp(&ref.grid[i], &got.grid[i], elem) != 0) {
      // NaN patterns may differ; a NaN in both places is the same cell value.
      double x, y;
      if (elem == 4) {
        float fx, fy;
        std::memcpy(&fx, &ref.grid[i], 4);
        std::memcpy(&fy, &got.grid[i], 4);
        x = fx, y = fy;
      } else {
        std::memcpy(&x, &ref.grid[i], 8);
        std::memcpy(&y, &got.grid[i], 8);
      }
      if (std::isnan(x) && std::isnan(y)) continue;
      bad = i / elem;
      break;
    }
  }
  const bool ok = bad == ref.grid.size() && ref.r.iterations == got.r.iterations &&
                  sameResidual(ref.r.residual, got.r.residual);
  if (!ok) {
    ++failures;
    std::printf("FAIL %s: iterations %lld/%lld residual %.17g/%.17g first differing cell %lld\n", what,
                static_cast<long long>(ref.r.iterations), static_cast<long long>(got.r.iterations),
                ref.r.residual, got.r.residual, bad == ref.grid.size() ? -1 : static_cast<long long>(bad));
  }
}

static std::vector<Dtype> dtypes = {Dtype::Float32, Dtype::Float64};
static std::vector<int> wanted;  // --variants (each dtype has its own list of shapes)
static bool small = false;       // --small: grids up to 300 000 cells (for compute-sanitizer)
// --race: a handful of grids and sweep counts, few enough for racecheck, which did not finish --small
// in 150 s on the H100 (test-results/h100-2026-11-24/run12-6224db7): every kernel path still runs once.
static bool race = false;

static std::vector<int> variantsFor(Dtype dtype) {
  std::vector<int> v;
  // −1 in --variants: `fast` as the package runs it (prepareFast picks the entry).
  if (std::find(wanted.begin(), wanted.end(), -1) != wanted.end()) v.push_back(-1);
  for (int i = 0; i < cs::detail::fastVariantCount(dtype); ++i)
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), i) != wanted.end()) v.push_back(i);
  return v;
}

static void checkAll() {
  std::mt19937_64 rng(20261124);
  const long long shapes[][2] = {{1, 1},     {1, 9},    {9, 1},       {8, 8},      {16, 16},    {31, 17},
                                 {150, 301}, {97, 276}, {257, 263},   {100, 1024}, {81, 80},    {79, 84},
                                 {64, 128},  {65, 129}, {1000, 1000}, {513, 2049}, {2048, 2048},
                                 // A last tile column owning one column (odd) or four, for the sm_90
                                 // tiles (float 224 wide, double 104) and the others (112, 96).
                                 {97, 225},  {97, 449}, {97, 105},    {97, 209},   {130, 108},  {193, 233},
                                 {1, 225},   {97, 97}};
  for (Dtype dtype : dtypes) {
    const std::vector<int> variants = variantsFor(dtype);
    const char* dn = dtype == Dtype::Float32 ? "float32" : "float64";
    const size_t elem = dtype == Dtype::Float32 ? 4 : 8;
    for (auto& s : shapes) {
      for (int misalign : {0, 1}) {
        if (misalign && s[1] % 4 != 0) continue;  // only where the aligned case takes 16-byte loads
        const long long n = s[0] * s[1];
        if (small && n > 300000) continue;
        if (race && n > 40000) continue;
        Grids g(n, elem, misalign);
        fill(rng, dtype, g, n);
        for (int sweeps : {1, 5, 8, 13, 21}) {
          if (race && sweeps != 1 && sweeps != 13) continue;  // one pass and a partial pass after full ones
          cs::Problem pb;
          pb.rows = s[0], pb.cols = s[1];
          randomWeights(rng, pb.weights);
          pb.tolerance = 0;
          pb.maxIterations = sweeps;
          pb.checkEvery = 64;
          const Outcome ref = runOne(cs::Method::Tiled, -1, dtype, g, pb);
          for (int v : variants) {
            char what[160];
            std::snprintf(what, sizeof what, "%s %s %lldx%lld%s sweeps %d", dn,
                          cs::detail::fastVariantName(dtype, v), s[0], s[1], misalign ? " misaligned" : "",
                          sweeps);
            compare(what, ref, runOne(cs::Method::Fast, v, dtype, g, pb), dtype);
          }
          if (n > 300000) break;  // large grids: one sweep count
        }
        g.release(misalign, elem);
      }
    }
    // Convergence inside a pass, replay, host checks every 1, 3, 64 sweeps; a NaN never converges.
    for (auto& s : {std::array<long long, 2>{40, 52}, std::array<long long, 2>{150, 301},
                    std::array<long long, 2>{97, 276}}) {
      const long long n = s[0] * s[1];
      if (small && n > 3000) continue;
      if (race && s[0] != 40) continue;
      Grids g(n, elem);
      fill(rng, dtype, g, n);
      for (int weights = 0; weights < 2; ++weights) {
        for (int every : {1, 3, 64}) {
          if (race && (weights != 0 || every != 3)) continue;
          for (double tol : {1e-2, 3e-3, 1e-3}) {
            if (race && tol != 3e-3) continue;
            cs::Problem pb;
            pb.rows = s[0], pb.cols = s[1];
            if (weights == 0)
              std::memcpy(pb.weights, kBox9, sizeof kBox9);
            else
              randomWeights(rng, pb.weights);
            pb.tolerance = tol;
            pb.maxIterations = 500;
            pb.checkEvery = every;
            const Outcome ref = runOne(cs::Method::Tiled, -1, dtype, g, pb);
            if (ref.r.iterations < 3 || ref.r.iterations >= 500) {
              ++failures;
              std::printf("FAIL %s convergence case is vacuous: %lld sweeps\n", dn,
                          static_cast<long long>(ref.r.iterations));
            }
            for (int v : variants) {
              char what[160];
              std::snprintf(what, sizeof what, "%s %s %lldx%lld converge tol %g every %d", dn,
                            cs::detail::fastVariantName(dtype, v), s[0], s[1], tol, every);
              compare(what, ref, runOne(cs::Method::Fast, v, dtype, g, pb), dtype);
            }
          }
        }
      }
      fill(rng, dtype, g, n, n / 3);
      cs::Problem pb;
      pb.rows = s[0], pb.cols = s[1];
      std::memcpy(pb.weights, kBox9, sizeof kBox9);
      pb.tolerance = 1;
      pb.maxIterations = 11;
      const Outcome ref = runOne(cs::Method::Tiled, -1, dtype, g, pb);
      if (!std::isnan(ref.r.residual) || ref.r.iterations != 11) {
        ++failures;
        std::printf("FAIL %s NaN case: tiled gave %lld sweeps residual %g\n", dn,
                    static_cast<long long>(ref.r.iterations), ref.r.residual);
      }
      for (int v : variants) {
        char what[160];
        std::snprintf(what, sizeof what, "%s %s %lldx%lld NaN", dn, cs::detail::fastVariantName(dtype, v),
                      s[0], s[1]);
        compare(what, ref, runOne(cs::Method::Fast, v, dtype, g, pb), dtype);
      }
      g.release(0, elem);
    }
  }
  std::printf("checks: %d comparisons, %d failures\n", checks, failures);
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

static void timeAll(const std::vector<std::pair<long long, long long>>& sizes, int reps) {
  const int sweeps = 100;
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  // The copy reference: 1 GiB device to device, rate = bytes read + written.
  const size_t copyBytes = size_t(1) << 30;
  void *cs0 = nullptr, *cs1 = nullptr;
  CHECK_CUDA(cudaMalloc(&cs0, copyBytes));
  CHECK_CUDA(cudaMalloc(&cs1, copyBytes));
  CHECK_CUDA(cudaMemset(cs0, 1, copyBytes));
  std::mt19937_64 rng(7);
  for (Dtype dtype : dtypes) {
    const std::vector<int> variants = variantsFor(dtype);
    const char* dn = dtype == Dtype::Float32 ? "float32" : "float64";
    const size_t elem = dtype == Dtype::Float32 ? 4 : 8;
    for (const auto& [rowsT, colsT] : sizes) {
      const long long n = rowsT * colsT;
      Grids g(n, elem);
      fill(rng, dtype, g, n);
      cs::Problem pb;
      pb.rows = rowsT;
      pb.cols = colsT;
      std::memcpy(pb.weights, kBox9, sizeof kBox9);
      pb.tolerance = 0;
      pb.maxIterations = sweeps;
      pb.checkEvery = 64;
      std::vector<std::vector<double>> ms(variants.size());
      std::vector<double> copyMs;
      for (int rep = -1; rep < reps; ++rep) {  // rep −1 warms up
        CHECK_CUDA(cudaEventRecord(e0));
        CHECK_CUDA(cudaMemcpyAsync(cs1, cs0, copyBytes, cudaMemcpyDeviceToDevice));
        CHECK_CUDA(cudaEventRecord(e1));
        CHECK_CUDA(cudaEventSynchronize(e1));
        float t = 0;
        CHECK_CUDA(cudaEventElapsedTime(&t, e0, e1));
        if (rep >= 0) copyMs.push_back(t);
        // The variants' order rotates every repetition, so each follows each of the others.
        for (size_t j = 0; j < variants.size(); ++j) {
          const size_t i = (j + static_cast<size_t>(rep + 1)) % variants.size();
          cs::Result r;
          CHECK_CUDA(cudaEventRecord(e0));
          CHECK_CUDA(cs::detail::runFastVariant(variants[i], dtype, g.in, g.a, g.b, pb, 0, &r));
          CHECK_CUDA(cudaEventRecord(e1));
          CHECK_CUDA(cudaEventSynchronize(e1));
          CHECK_CUDA(cudaEventElapsedTime(&t, e0, e1));
          if (r.iterations != sweeps)
            std::printf("note: %lld sweeps\n", static_cast<long long>(r.iterations));
          if (rep >= 0) ms[i].push_back(t);
        }
      }
      const double copyRate = 2.0 * copyBytes / (median(copyMs) * 1e-3) / 1e9;
      std::printf("%s %lldx%lld: copy 1GiB %.1f GB/s (%.3f ms)\n", dn, rowsT, colsT, copyRate, median(copyMs));
      for (size_t i = 0; i < variants.size(); ++i) {
        const double med = median(ms[i]);
        const double lo = *std::min_element(ms[i].begin(), ms[i].end());
        const double hi = *std::max_element(ms[i].begin(), ms[i].end());
        const double rate = 2.0 * n * elem * sweeps / (med * 1e-3) / 1e9;
        std::printf("  %-24s %9.3f ms (%.3f–%.3f)  %7.0f GB/s  %.3fx copy\n",
                    cs::detail::fastVariantName(dtype, variants[i]), med, lo, hi, rate, rate / copyRate);
      }
      g.release(0, elem);
    }
  }
  cudaFree(cs0);
  cudaFree(cs1);
}

static std::vector<long long> parseList(const char* s) {
  std::vector<long long> v;
  for (const char* p = s; *p;) {
    v.push_back(std::strtoll(p, const_cast<char**>(&p), 10));
    if (*p == ',') ++p;
  }
  return v;
}

// --sizes: N (an N×N grid) or RxC (R rows, C columns), comma-separated.
static std::vector<std::pair<long long, long long>> parseShapes(const char* s) {
  std::vector<std::pair<long long, long long>> v;
  for (const char* p = s; *p;) {
    const long long r = std::strtoll(p, const_cast<char**>(&p), 10);
    long long c = r;
    if (*p == 'x') c = std::strtoll(p + 1, const_cast<char**>(&p), 10);
    v.emplace_back(r, c);
    if (*p == ',') ++p;
  }
  return v;
}

int main(int argc, char** argv) {
  bool time = true, check = true;
  int reps = 5;
  std::vector<std::pair<long long, long long>> sizes = {{4096, 4096}, {8192, 8192}, {16384, 16384}};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-time")
      time = false;
    else if (a == "--small")
      small = true;
    else if (a == "--race")
      race = small = true;
    else if (a == "--no-check")
      check = false;
    else if (a == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (a == "--sizes" && i + 1 < argc)
      sizes = parseShapes(argv[++i]);
    else if (a == "--dtype" && i + 1 < argc)
      dtypes = {std::string(argv[++i]) == "float64" ? Dtype::Float64 : Dtype::Float32};
    else if (a == "--variants" && i + 1 < argc)
      for (long long v : parseList(argv[++i])) wanted.push_back(static_cast<int>(v));
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  if (check) checkAll();
  if (time) timeAll(sizes, reps);
  return failures ? 1 : 0;
}
