// Standalone correctness test and benchmark for gemm.cu, run on the GPU host (not part of the addon):
//   nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -Inative -Inative/gemm bench/dev/gemm/gemm_harness.cu \
//        native/gemm/*.cu bench/dev/gemm/fast_variants.cu -lcublas -o /tmp/g && /tmp/g            (full: tests, then benchmarks)
//   /tmp/g --small        only the small-shape correctness tests (for compute-sanitizer)
//   /tmp/g --quick        a third of those shapes (racecheck is slow)
//   /tmp/g --seed S       fixed seed instead of a fresh one
// Every run poisons C with NaN bytes first, so a kernel that skips an element fails the check.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gemm.h"

namespace ck {
namespace gemm {
namespace detail {
// The shapes timed beside launchFast (fast_variants.cu); variant 0 is launchFast's.
int fastVariantCount();
const char* fastVariantName(int variant);
cudaError_t launchFastVariant(int variant, const float* A, const float* B, float* C, int64_t m, int64_t k,
                              int64_t n, cudaStream_t stream);
}  // namespace detail
}  // namespace gemm
}  // namespace ck

#include "../harness_support.h"

namespace {

constexpr double kTol = 1e-5;
int gFailures = 0;

__global__ void fill_uniform_kernel(float* p, size_t len, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < len;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t x = seed ^ (i * 0x9E3779B97F4A7C15ull);  // splitmix64 finaliser
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    p[i] = static_cast<float>(static_cast<double>(x >> 40) * (1.0 / 8388608.0) - 1.0);  // 24 bits → [-1, 1)
  }
}

// sums[0] += Σ (a − b)², sums[1] += Σ b². A NaN in a makes sums[0] NaN.
__global__ void diff_norms_kernel(const float* a, const float* b, size_t len, double* sums) {
  double d = 0, r = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < len;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const double x = a[i], y = b[i];
    d += (x - y) * (x - y);
    r += y * y;
  }
  for (int o = 16; o > 0; o /= 2) {
    d += __shfl_down_sync(0xffffffffu, d, o);
    r += __shfl_down_sync(0xffffffffu, r, o);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&sums[0], d);
    atomicAdd(&sums[1], r);
  }
}

void fillUniform(float* p, size_t len, uint64_t seed) {
  fill_uniform_kernel<<<1024, 256>>>(p, len, seed);
  CHECK_CUDA(cudaGetLastError());
}

double deviceRelErr(const float* c, const float* ref, size_t len) {
  double* sums;
  CHECK_CUDA(cudaMalloc(&sums, 2 * sizeof(double)));
  CHECK_CUDA(cudaMemset(sums, 0, 2 * sizeof(double)));
  diff_norms_kernel<<<1024, 256>>>(c, ref, len, sums);
  CHECK_CUDA(cudaGetLastError());
  double h[2];
  CHECK_CUDA(cudaMemcpy(h, sums, sizeof(h), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(sums));
  return std::sqrt(h[0]) / std::sqrt(h[1]);
}

// float64 reference in the report's i-k-j order (unit stride over B and C rows).
std::vector<double> cpuGemm(const std::vector<float>& A, const std::vector<float>& B, int64_t m, int64_t k,
                            int64_t n) {
  std::vector<double> C(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    double* c = &C[i * n];
    for (int64_t p = 0; p < k; ++p) {
      const double a = A[i * k + p];
      const float* b = &B[p * n];
      for (int64_t j = 0; j < n; ++j) c[j] += a * b[j];
    }
  }
  return C;
}

double hostRelErr(const std::vector<float>& c, const std::vector<double>& ref) {
  double d = 0, r = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const double x = c[i];
    d += (x - ref[i]) * (x - ref[i]);
    r += ref[i] * ref[i];
  }
  return r == 0 ? std::sqrt(d) : std::sqrt(d) / std::sqrt(r);
}

cublasHandle_t gCublas = nullptr;
cublasHandle_t gCublasPedantic = nullptr;

// Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ, and a row-major X is a column-major Xᵀ: no transposes.
cudaError_t cublasRowMajor(cublasHandle_t h, const float* A, const float* B, float* C, int64_t m, int64_t k,
                           int64_t n) {
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t s =
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                  &one, B, static_cast<int>(n), A, static_cast<int>(k), &zero, C, static_cast<int>(n));
  return s == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
}

using Launch = std::function<cudaError_t(const float*, const float*, float*, int64_t, int64_t, int64_t)>;

struct Method {
  std::string name;
  Launch launch;
  int64_t maxN;  // benchmark sizes above this are skipped
};

std::vector<Method> allMethods(bool withVariants, bool withCublas) {
  std::vector<Method> v;
  v.push_back({"naive",
               [](auto A, auto B, auto C, auto m, auto k, auto n) {
                 return ck::gemm::launchNaive(A, B, C, m, k, n, 0);
               },
               4096});
  for (int t : {8, 16, 32})
    v.push_back({"shared" + std::to_string(t),
                 [t](auto A, auto B, auto C, auto m, auto k, auto n) {
                   return ck::gemm::launchShared(A, B, C, m, k, n, t, 0);
                 },
                 1 << 30});
  v.push_back({"fast",
               [](auto A, auto B, auto C, auto m, auto k, auto n) {
                 return ck::gemm::launchFast(A, B, C, m, k, n, 0);
               },
               1 << 30});
  if (withVariants) {
    for (int i = 0; i < ck::gemm::detail::fastVariantCount(); ++i)
      v.push_back({std::string("fast[") + ck::gemm::detail::fastVariantName(i) + "]",
                   [i](auto A, auto B, auto C, auto m, auto k, auto n) {
                     return ck::gemm::detail::launchFastVariant(i, A, B, C, m, k, n, 0);
                   },
                   1 << 30});
  }
  if (withCublas) {
    v.push_back({"cublas",
                 [](auto A, auto B, auto C, auto m, auto k, auto n) {
                   return cublasRowMajor(gCublas, A, B, C, m, k, n);
                 },
                 1 << 30});
    v.push_back({"cublas-pedantic",
                 [](auto A, auto B, auto C, auto m, auto k, auto n) {
                   return cublasRowMajor(gCublasPedantic, A, B, C, m, k, n);
                 },
                 1 << 30});
  }
  return v;
}

void report(const char* what, double err, bool ok) {
  std::printf("  %-58s rel err %.3e  %s\n", what, err, ok ? "ok" : "FAIL");
  if (!ok) ++gFailures;
}

// Small shapes against the float64 CPU reference. `offset` floats shift A, B and C off 16-byte
// alignment to exercise the fast kernel's scalar path.
void testShape(const std::vector<Method>& methods, int64_t m, int64_t k, int64_t n, uint64_t seed,
               int offset = 0) {
  const size_t sa = m * k, sb = k * n, sc = m * n;
  float *A, *B, *C;
  CHECK_CUDA(cudaMalloc(&A, (sa + 8) * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&B, (sb + 8) * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&C, (sc + 8) * sizeof(float)));
  fillUniform(A + offset, sa, seed);
  fillUniform(B + offset, sb, seed + 1);
  std::vector<float> hA(sa), hB(sb), hC(sc);
  CHECK_CUDA(cudaMemcpy(hA.data(), A + offset, sa * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hB.data(), B + offset, sb * sizeof(float), cudaMemcpyDeviceToHost));
  const std::vector<double> ref = cpuGemm(hA, hB, m, k, n);
  for (const Method& me : methods) {
    CHECK_CUDA(cudaMemset(C, 0xFF, (sc + 8) * sizeof(float)));
    cudaError_t e = me.launch(A + offset, B + offset, C + offset, m, k, n);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    char what[160];
    std::snprintf(what, sizeof(what), "%lldx%lldx%lld%s %s", (long long)m, (long long)k, (long long)n,
                  offset ? " (+1 float)" : "", me.name.c_str());
    if (e != cudaSuccess) {
      std::printf("  %-58s CUDA error %s  FAIL\n", what, cudaGetErrorString(e));
      ++gFailures;
      continue;
    }
    CHECK_CUDA(cudaMemcpy(hC.data(), C + offset, sc * sizeof(float), cudaMemcpyDeviceToHost));
    const double err = hostRelErr(hC, ref);
    // The floats just past C must still be the poison: nothing wrote out of bounds.
    float guard[4];
    CHECK_CUDA(cudaMemcpy(guard, C + offset + sc, sizeof(guard), cudaMemcpyDeviceToHost));
    bool guardOk = true;
    for (float g : guard) guardOk = guardOk && std::isnan(g);
    report(what, err, err < kTol && guardOk);
  }
  CHECK_CUDA(cudaFree(A));
  CHECK_CUDA(cudaFree(B));
  CHECK_CUDA(cudaFree(C));
}

void testArguments() {
  float* C;
  CHECK_CUDA(cudaMalloc(&C, 64 * sizeof(float)));
  auto expect = [](const char* what, cudaError_t got, cudaError_t want) {
    const bool ok = got == want;
    std::printf("  %-58s %s  %s\n", what, cudaGetErrorName(got), ok ? "ok" : "FAIL");
    if (!ok) ++gFailures;
  };
  expect("launchShared tile 12", ck::gemm::launchShared(C, C, C, 4, 4, 4, 12, 0), cudaErrorInvalidValue);
  expect("launchShared tile 0", ck::gemm::launchShared(C, C, C, 4, 4, 4, 0, 0), cudaErrorInvalidValue);
  expect("launchNaive m = -1", ck::gemm::launchNaive(C, C, C, -1, 4, 4, 0), cudaErrorInvalidValue);
  expect("launchFast n = -1", ck::gemm::launchFast(C, C, C, 4, 4, -1, 0), cudaErrorInvalidValue);
  expect("launchFast m = 0 (nothing to do)", ck::gemm::launchFast(nullptr, nullptr, nullptr, 0, 4, 4, 0),
         cudaSuccess);
  // k = 0: C = 0 without touching A or B.
  for (int which = 0; which < 3; ++which) {
    CHECK_CUDA(cudaMemset(C, 0xFF, 64 * sizeof(float)));
    cudaError_t e = which == 0   ? ck::gemm::launchNaive(nullptr, nullptr, C, 8, 0, 8, 0)
                    : which == 1 ? ck::gemm::launchShared(nullptr, nullptr, C, 8, 0, 8, 16, 0)
                                 : ck::gemm::launchFast(nullptr, nullptr, C, 8, 0, 8, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    float h[64];
    CHECK_CUDA(cudaMemcpy(h, C, sizeof(h), cudaMemcpyDeviceToHost));
    bool zero = e == cudaSuccess;
    for (float x : h) zero = zero && x == 0.0f;
    const char* names[] = {"launchNaive k = 0 gives zeros", "launchShared k = 0 gives zeros",
                           "launchFast k = 0 gives zeros"};
    std::printf("  %-58s %s\n", names[which], zero ? "ok" : "FAIL");
    if (!zero) ++gFailures;
  }
  CHECK_CUDA(cudaFree(C));
}

void runSmallTests(uint64_t seed, bool withCublas, bool quick) {
  std::printf("== correctness: small shapes vs float64 CPU reference (tolerance %.0e, C poisoned with NaN)\n",
              kTol);
  const std::vector<Method> methods = allMethods(true, withCublas);
  const int64_t shapes[][3] = {
      {1, 1, 1},    {7, 5, 3},       {17, 33, 9},    {129, 257, 65},  {1000, 1, 1000},
      {1, 1000, 1}, {128, 128, 128}, {130, 67, 131}, {255, 129, 260}, {64, 1023, 36},
      {3, 4099, 5}, {257, 31, 1028}, {300, 17, 2},   {2, 17, 300},    {513, 515, 517},
      {1, 8, 4},    {1025, 96, 127}, {131, 260, 70}, {77, 4, 129},    {200, 20, 200},
      // k % 4 == 0 and n % 4 == 0 (the vector paths) with partial tiles in m, n and the last k-slab.
      {129, 260, 132}, {1000, 36, 1004}, {257, 516, 260}, {33, 12, 4},   {130, 4, 256},
  };
  uint64_t s = seed;
  int idx = 0;
  for (auto& sh : shapes) {
    // --quick (racecheck is slow): every third shape still covers k = 1, odd n, partial tiles.
    if (!quick || idx++ % 3 == 0) testShape(methods, sh[0], sh[1], sh[2], s += 2);
  }
  testShape(methods, 129, 257, 68, s += 2, 1);  // n % 4 == 0 but unaligned pointers
  testShape(methods, 64, 64, 64, s += 2, 1);
  std::printf("== argument handling\n");
  testArguments();
}

double medianMs(const Launch& f, const float* A, const float* B, float* C, int64_t m, int64_t k, int64_t n) {
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  for (int i = 0; i < 2; ++i) CHECK_CUDA(f(A, B, C, m, k, n));
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<float> t;
  // Slow kernels get fewer repetitions (never under 5) to keep the whole run inside its time limit.
  float first = 0;
  for (int i = 0; i < 9; ++i) {
    CHECK_CUDA(cudaEventRecord(e0));
    CHECK_CUDA(f(A, B, C, m, k, n));
    CHECK_CUDA(cudaEventRecord(e1));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float ms;
    CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms);
    if (i == 0) first = ms;
    if (i >= 4 && first > 200.0f) break;
  }
  CHECK_CUDA(cudaEventDestroy(e0));
  CHECK_CUDA(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Result {
  std::string method;
  int64_t n;
  double ms, gflops, ratio, err;
  bool ok;
};
std::vector<Result> gResults;

// Square benchmark at size N for `methods`; checks each against the float64 CPU reference (N <= 512)
// or against cuBLAS (which is itself checked against the CPU at 1024). Returns cuBLAS's time.
void benchSize(const std::vector<Method>& methods, int64_t N, uint64_t seed, const char* table) {
  const size_t len = static_cast<size_t>(N) * N;
  float *A, *B, *C, *R;
  CHECK_CUDA(cudaMalloc(&A, len * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&B, len * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&C, len * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&R, len * sizeof(float)));
  fillUniform(A, len, seed);
  fillUniform(B, len, seed + 1);
  CHECK_CUDA(cudaMemset(R, 0xFF, len * sizeof(float)));
  CHECK_CUDA(cublasRowMajor(gCublas, A, B, R, N, N, N));
  const double cublasMs = medianMs([](auto a, auto b, auto c, auto m, auto k,
                                      auto n) { return cublasRowMajor(gCublas, a, b, c, m, k, n); },
                                   A, B, R, N, N, N);
  const bool cpuRef = N <= 1024;
  std::vector<double> ref;
  if (cpuRef) {
    std::vector<float> hA(len), hB(len);
    CHECK_CUDA(cudaMemcpy(hA.data(), A, len * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(hB.data(), B, len * sizeof(float), cudaMemcpyDeviceToHost));
    ref = cpuGemm(hA, hB, N, N, N);
  }
  const double flops = 2.0 * N * N * N;
  // Every kernel here accumulates each C element in k order with one fmaf per term, as cuBLAS's SIMT
  // kernel does, so on large sizes they usually match cuBLAS bit for bit (error 0). To show that the
  // device comparison can see a difference at all: A against B must come out near sqrt(2).
  std::printf("  [%s] N=%5lld comparison self-test: ||A - B|| / ||B|| = %.3f\n", table, (long long)N,
              deviceRelErr(A, B, len));
  for (const Method& me : methods) {
    if (N > me.maxN) continue;
    CHECK_CUDA(cudaMemset(C, 0xFF, len * sizeof(float)));
    CHECK_CUDA(me.launch(A, B, C, N, N, N));
    CHECK_CUDA(cudaDeviceSynchronize());
    double err;
    const char* against;
    if (cpuRef) {
      std::vector<float> h(len);
      CHECK_CUDA(cudaMemcpy(h.data(), C, len * sizeof(float), cudaMemcpyDeviceToHost));
      err = hostRelErr(h, ref);
      against = "cpu";
    } else {
      err = deviceRelErr(C, R, len);
      against = "cublas";
    }
    // cuBLAS compared with itself is trivially 0: it was checked against the CPU at N <= 1024.
    const bool ok = err < kTol;
    if (!ok) ++gFailures;
    const double ms = me.name == "cublas" ? cublasMs : medianMs(me.launch, A, B, C, N, N, N);
    const double gf = flops / (ms * 1e6);
    const double ratio = cublasMs / ms;
    std::printf("  [%s] N=%5lld %-30s %10.3f ms %9.0f GFLOP/s %6.3fx cuBLAS  err(%s) %.2e %s\n", table,
                (long long)N, me.name.c_str(), ms, gf, ratio, against, err, ok ? "ok" : "FAIL");
    std::fflush(stdout);
    gResults.push_back({me.name, N, ms, gf, ratio, err, ok});
  }
  CHECK_CUDA(cudaFree(A));
  CHECK_CUDA(cudaFree(B));
  CHECK_CUDA(cudaFree(C));
  CHECK_CUDA(cudaFree(R));
}

std::vector<Method> pick(const std::vector<Method>& all, std::initializer_list<const char*> names) {
  std::vector<Method> v;
  for (const Method& m : all)
    for (const char* n : names)
      if (m.name == n) v.push_back(m);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // keep stdout and stderr in order in the log
  bool small = false, quick = false, onlyFast = false, profile = false;
  uint64_t seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--small")) small = true;
    if (!std::strcmp(argv[i], "--quick")) small = quick = true;
    if (!std::strcmp(argv[i], "--only-fast")) onlyFast = true;  // tuning: fast variants and cuBLAS only
    if (!std::strcmp(argv[i], "--profile")) profile = true;     // one launch of each, N = 4096, for ncu
    if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 0);
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, sm_%d%d; seed 0x%llx\n", prop.name, prop.multiProcessorCount, prop.major,
              prop.minor, (unsigned long long)seed);
  const char* tf32 = std::getenv("NVIDIA_TF32_OVERRIDE");
  std::printf("NVIDIA_TF32_OVERRIDE=%s\n", tf32 ? tf32 : "(unset)");

  if (profile) {
    CHECK_CUBLAS(cublasCreate(&gCublas));
    const int64_t N = 4096;
    const size_t len = static_cast<size_t>(N) * N;
    float *A, *B, *C;
    CHECK_CUDA(cudaMalloc(&A, len * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&B, len * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&C, len * sizeof(float)));
    fillUniform(A, len, seed);
    fillUniform(B, len, seed + 1);
    for (const Method& me : allMethods(true, true))
      if (me.name.rfind("fast[", 0) == 0 || me.name == "cublas") {
        CHECK_CUDA(me.launch(A, B, C, N, N, N));
        CHECK_CUDA(cudaDeviceSynchronize());
        std::printf("profiled %s\n", me.name.c_str());
      }
    return 0;
  }
  if (!onlyFast) runSmallTests(seed, false, quick);
  if (small) {
    std::printf("\nsmall tests: %s (%d failures)\n", gFailures ? "FAIL" : "PASS", gFailures);
    return gFailures ? 1 : 0;
  }

  CHECK_CUBLAS(cublasCreate(&gCublas));
  // Default math never uses TF32 for SGEMM (that takes CUBLAS_TF32_TENSOR_OP_MATH); pedantic also
  // rules out any reduced-precision shortcut. Both are timed; the CPU check at N=1024 would show TF32
  // as a ~1e-3 error.
  CHECK_CUBLAS(cublasSetMathMode(gCublas, CUBLAS_DEFAULT_MATH));
  CHECK_CUBLAS(cublasCreate(&gCublasPedantic));
  CHECK_CUBLAS(cublasSetMathMode(gCublasPedantic, CUBLAS_PEDANTIC_MATH));

  if (!onlyFast) {
    std::printf("== cuBLAS on a few small shapes (checks the row-major mapping)\n");
    const std::vector<Method> cublasOnly = pick(allMethods(false, true), {"cublas", "cublas-pedantic"});
    testShape(cublasOnly, 17, 33, 9, seed + 50);
    testShape(cublasOnly, 129, 257, 65, seed + 52);
  }

  std::vector<Method> all = allMethods(true, true);
  if (onlyFast) {
    std::vector<Method> f;
    for (const Method& me : all)
      if (me.name.rfind("fast", 0) == 0 || me.name.rfind("cublas", 0) == 0) f.push_back(me);
    all = f;
  }
  if (!onlyFast) {
    std::printf("\n== table 1: shared tile 8 / 16 / 32 at N = 1024\n");
    benchSize(pick(all, {"naive", "shared8", "shared16", "shared32"}), 1024, seed + 100, "tile");
    std::printf("\n== table 2: naive and shared, N = 128 .. 2048\n");
    for (int64_t N : {128, 256, 512, 1024, 2048})
      benchSize(pick(all, {"naive", "shared8", "shared16", "shared32", "cublas"}), N, seed + 200 + N,
                "small");
  }
  std::printf("\n== table 3: every method, N = 1024 .. 8192\n");
  gResults.clear();
  for (int64_t N : {1024, 2048, 4096, 8192}) benchSize(all, N, seed + 300 + N, "main");

  // Compact summary last: the device tool returns only the tail of the output.
  std::printf("\n== summary (table 3; ms / GFLOP/s / ratio to cuBLAS default math, same run)\n");
  std::printf("%-30s", "method");
  for (int64_t N : {1024, 2048, 4096, 8192}) std::printf(" | %6lld:     ms  GFLOP/s  xcuB", (long long)N);
  std::printf("\n");
  std::vector<std::string> names;
  for (const Result& r : gResults)
    if (std::find(names.begin(), names.end(), r.method) == names.end()) names.push_back(r.method);
  for (const std::string& name : names) {
    std::printf("%-30s", name.c_str());
    for (int64_t N : {1024, 2048, 4096, 8192}) {
      bool found = false;
      for (const Result& r : gResults)
        if (r.method == name && r.n == N) {
          std::printf(" | %9.3f %8.0f %5.3f%s", r.ms, r.gflops, r.ratio, r.ok ? " " : "!");
          found = true;
        }
      if (!found) std::printf(" | %26s", "-");
    }
    std::printf("\n");
  }
  std::printf("\nall checks: %s (%d failures; '!' marks a failed accuracy check)\n",
              gFailures ? "FAIL" : "PASS", gFailures);
  cublasDestroy(gCublas);
  cublasDestroy(gCublasPedantic);
  return gFailures ? 1 : 0;
}
