// Standalone correctness test and benchmark for the scans and reductions of native/scan/ (GPU host, no Node.js).
//   nvcc -std=c++17 -O3 -Inative -Xcompiler -fopenmp -gencode arch=compute_90,code=sm_90
//   \
//        native/scan/*.cu bench/dev/scan/fast_variants.cu bench/dev/scan/scan_harness.cu -o scan_harness
//   ./scan_harness            all checks, then timings
//   ./scan_harness --small    small sizes only, no timing (for compute-sanitizer)
//   ./scan_harness --san      fewer sizes, default methods only (for racecheck)
//   ./scan_harness --no-time  checks only
//   ./scan_harness --medium   small and medium sizes (up to 2^20+7 and the prime 1000003), no 2^31
//   ./scan_harness --time-only --no-check   timings only (CK_SCAN_TIME / _DTYPES / _ONLY / _REPS narrow)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "scan/scan.h"

#include "../harness_support.h"

namespace ck {
namespace scan {
namespace detail {
int fastVariantCount();
const char* fastVariantName(int v);
cudaError_t launchFastVariant(int variant, const void* in, void* out, Dtype dtype, size_t n, bool inclusive,
                              cudaStream_t stream);
}  // namespace detail
}  // namespace scan
}  // namespace ck

using ck::Dtype;
namespace cs = ck::scan;

static int g_failures = 0, g_checks = 0;

using ScanFn = std::function<cudaError_t(const void*, void*, Dtype, size_t, bool, cudaStream_t)>;
struct Method {
  std::string name;
  ScanFn fn;
  bool oneBlock;  // the warp method: one SM, only small sizes
};

static std::vector<Method> methods() {
  std::vector<Method> m = {
      {"warp", cs::launchWarp, true},
      {"blocks", cs::launchBlocks, false},
      {"cub", cs::launchCub, false},
      {"lookback", cs::launchLookback, false},
      {"fast", cs::launchFast, false},
  };
  for (int v = 0; v < cs::detail::fastVariantCount(); ++v) {
    m.push_back({std::string("fast[") + cs::detail::fastVariantName(v) + "]",
                 [v](const void* i, void* o, Dtype d, size_t n, bool inc, cudaStream_t s) {
                   return cs::detail::launchFastVariant(v, i, o, d, n, inc, s);
                 },
                 false});
  }
  return m;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline uint64_t nextRand() {  // splitmix64
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Host data for one dtype and size: raw bytes plus the references.
struct HostCase {
  Dtype dtype;
  size_t n;
  std::vector<unsigned char> bytes;
};

static size_t esize(Dtype d) {
  return ck::dtypeSize(d);
}

static void fillRandom(HostCase& c) {
  c.bytes.resize(std::max<size_t>(c.n, 1) * esize(c.dtype));
  switch (c.dtype) {
    case Dtype::Float32: {
      float* p = reinterpret_cast<float*>(c.bytes.data());
      for (size_t i = 0; i < c.n; ++i)
        p[i] = static_cast<float>((nextRand() >> 40) * (2.0 / 16777216.0) - 1.0);
      break;
    }
    case Dtype::Float64: {
      double* p = reinterpret_cast<double*>(c.bytes.data());
      for (size_t i = 0; i < c.n; ++i)
        p[i] = static_cast<double>(nextRand() >> 11) * (2.0 / 9007199254740992.0) - 1.0;
      break;
    }
    default: {
      uint32_t* p = reinterpret_cast<uint32_t*>(c.bytes.data());
      for (size_t i = 0; i < c.n; ++i) p[i] = static_cast<uint32_t>(nextRand() >> 17);
      break;
    }
  }
}

// Compares a device result against the CPU: integers exactly (mod 2^32), floats within
// tol * sum |in_0..i| of a double prefix. Returns the number of bad elements (first few printed).
static size_t checkScan(const HostCase& c, const unsigned char* out, bool inclusive,
                        const std::string& label) {
  const size_t n = c.n;
  size_t bad = 0;
  if (c.dtype == Dtype::Float32 || c.dtype == Dtype::Float64) {
    const double tol = c.dtype == Dtype::Float32 ? 1e-5 : 1e-12;
    // Serial double prefix (the reference) - cheap compared with the transfers.
    double sum = 0, abssum = 0;
    size_t firstBad = SIZE_MAX;
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
      const double x = c.dtype == Dtype::Float32 ? reinterpret_cast<const float*>(c.bytes.data())[i]
                                                 : reinterpret_cast<const double*>(c.bytes.data())[i];
      const double before = sum;
      sum += x;
      abssum += std::fabs(x);
      const double ref = inclusive ? sum : before;
      const double got = c.dtype == Dtype::Float32 ? reinterpret_cast<const float*>(out)[i]
                                                   : reinterpret_cast<const double*>(out)[i];
      const double err = std::fabs(got - ref);
      const double bound = tol * abssum + 1e-30;
      if (!(err <= bound)) {
        if (bad == 0) firstBad = i;
        ++bad;
      }
      worst = std::max(worst, err / bound);
    }
    if (bad) {
      const size_t i = firstBad;
      std::printf("  FAIL %s: %zu bad, first at %zu, worst err/bound %.3g\n", label.c_str(), bad, i, worst);
    }
  } else {
    const uint32_t* in = reinterpret_cast<const uint32_t*>(c.bytes.data());
    const uint32_t* got = reinterpret_cast<const uint32_t*>(out);
    uint32_t sum = 0;
    size_t firstBad = SIZE_MAX;
    uint32_t want0 = 0, got0 = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t before = sum;
      sum += in[i];
      const uint32_t ref = inclusive ? sum : before;
      if (got[i] != ref) {
        if (bad == 0) {
          firstBad = i;
          want0 = ref;
          got0 = got[i];
        }
        ++bad;
      }
    }
    if (bad)
      std::printf("  FAIL %s: %zu bad, first at %zu (want %u got %u)\n", label.c_str(), bad, firstBad, want0,
                  got0);
  }
  ++g_checks;
  if (bad) ++g_failures;
  return bad;
}

struct DeviceBuffers {
  unsigned char* in = nullptr;
  unsigned char* out = nullptr;
  size_t bytes = 0;
};

static unsigned char* g_hostOut = nullptr;
static size_t g_hostOutBytes = 0;
static unsigned char* hostOut(size_t bytes) {
  if (bytes > g_hostOutBytes) {
    if (g_hostOut) CHECK_CUDA(cudaFreeHost(g_hostOut));
    CHECK_CUDA(cudaMallocHost(&g_hostOut, bytes));
    g_hostOutBytes = bytes;
  }
  return g_hostOut;
}

static const char* dname(Dtype d) {
  return ck::dtypeName(d);
}

// One method on one case: out-of-place (poisoned output) and in-place, at element offsets inOff /
// outOff into the device buffers (to exercise the unaligned paths).
static void runScanCase(const HostCase& c, const Method& m, bool inclusive, DeviceBuffers& d, size_t inOff,
                        size_t outOff, bool inPlace, cudaStream_t s) {
  const size_t es = esize(c.dtype), n = c.n, bytes = n * es;
  char label[256];
  std::snprintf(label, sizeof label, "%s %s %s n=%zu%s off=%zu/%zu", m.name.c_str(), dname(c.dtype),
                inclusive ? "incl" : "excl", n, inPlace ? " in-place" : "", inOff, outOff);
  unsigned char* in = d.in + inOff * es;
  unsigned char* out = (inPlace ? d.in : d.out) + outOff * es;
  if (inPlace) {
    out = in;
    CHECK_CUDA(cudaMemcpyAsync(in, c.bytes.data(), bytes, cudaMemcpyHostToDevice, s));
  } else {
    CHECK_CUDA(cudaMemcpyAsync(in, c.bytes.data(), bytes, cudaMemcpyHostToDevice, s));
    CHECK_CUDA(cudaMemsetAsync(d.out, 0xFF, d.bytes, s));
  }
  cudaError_t err = m.fn(in, out, c.dtype, n, inclusive, s);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s);
  if (err != cudaSuccess) {
    std::printf("  FAIL %s: %s\n", label, cudaGetErrorString(err));
    ++g_failures;
    ++g_checks;
    std::exit(3);
  }
  unsigned char* h = hostOut(std::max<size_t>(bytes, 16) + 16);
  if (n == 0) {
    // Nothing may be written: the poisoned first bytes must survive.
    CHECK_CUDA(cudaMemcpy(h, out, 4, cudaMemcpyDeviceToHost));
    ++g_checks;
    if (!inPlace && (h[0] != 0xFF || h[3] != 0xFF)) {
      std::printf("  FAIL %s: wrote something for n == 0\n", label);
      ++g_failures;
    }
    return;
  }
  CHECK_CUDA(cudaMemcpy(h, out, bytes, cudaMemcpyDeviceToHost));
  checkScan(c, h, inclusive, label);
  if (!inPlace) {
    // The element just past the end must still be poison (out-of-place only).
    unsigned char tail[8];
    CHECK_CUDA(cudaMemcpy(tail, out + bytes, es, cudaMemcpyDeviceToHost));
    bool poisoned = true;
    for (size_t b = 0; b < es; ++b) poisoned &= tail[b] == 0xFF;
    ++g_checks;
    if (!poisoned) {
      std::printf("  FAIL %s: wrote past the end\n", label);
      ++g_failures;
    }
  }
}

static void checkReduce(const HostCase& c, DeviceBuffers& d, double* dResult, cudaStream_t s) {
  const size_t n = c.n;
  CHECK_CUDA(cudaMemcpy(d.in, c.bytes.data(), n * esize(c.dtype), cudaMemcpyHostToDevice));
  for (int op = 0; op < 3; ++op) {
    double want = op == 0 ? 0.0 : (op == 1 ? INFINITY : -INFINITY), absSum = 0;
    uint32_t wrapped = 0;
    for (size_t i = 0; i < n; ++i) {
      double x;
      switch (c.dtype) {
        case Dtype::Float32: x = reinterpret_cast<const float*>(c.bytes.data())[i]; break;
        case Dtype::Float64: x = reinterpret_cast<const double*>(c.bytes.data())[i]; break;
        case Dtype::Int32: x = reinterpret_cast<const int32_t*>(c.bytes.data())[i]; break;
        default: x = reinterpret_cast<const uint32_t*>(c.bytes.data())[i]; break;
      }
      if (c.dtype == Dtype::Int32 || c.dtype == Dtype::Uint32)
        wrapped += reinterpret_cast<const uint32_t*>(c.bytes.data())[i];
      if (op == 0) want += x, absSum += std::fabs(x);
      if (op == 1) want = std::min(want, x);
      if (op == 2) want = std::max(want, x);
    }
    if (op == 0 && c.dtype == Dtype::Int32) want = static_cast<int32_t>(wrapped);
    if (op == 0 && c.dtype == Dtype::Uint32) want = wrapped;
    const double poison = -12345.678;
    CHECK_CUDA(cudaMemcpy(dResult, &poison, sizeof poison, cudaMemcpyHostToDevice));
    CHECK_CUDA(cs::launchReduce(d.in, c.dtype, n, static_cast<cs::ReduceOp>(op), dResult, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    double got;
    CHECK_CUDA(cudaMemcpy(&got, dResult, sizeof got, cudaMemcpyDeviceToHost));
    const bool isFloatSum = op == 0 && (c.dtype == Dtype::Float32 || c.dtype == Dtype::Float64);
    const bool ok = isFloatSum ? std::fabs(got - want) <= 1e-12 * absSum + 1e-300 : got == want;
    ++g_checks;
    if (!ok) {
      ++g_failures;
      std::printf("  FAIL reduce %s %s n=%zu: want %.17g got %.17g\n",
                  op == 0   ? "sum"
                  : op == 1 ? "min"
                            : "max",
                  dname(c.dtype), n, want, got);
    }
  }
}

static bool methodKept(const std::string& name);

static void correctness(bool small, bool medium, bool sanitize, cudaStream_t s) {
  // Odd sizes, primes, 2^k +- 1, and both sides of the tile sizes (8192 / 7168 / 4096 4-byte items).
  std::vector<size_t> sizes = {0, 1, 2, 7, 17, 31, 32, 33, 257, 1023, 1024, 1025, 7167, 7169, 8191, 8193, 65537};
  if (sanitize) sizes = {0, 1, 33, 1025, 8193, 65537};  // sanitizers run each launch ~100x slower
  if (!small || medium) sizes.push_back((1u << 20) + 7);
  if (!small || medium) sizes.push_back(1000003);  // prime, ~130 tiles: look-backs past one window
  if (!small) sizes.push_back(100000003);
  const Dtype dtypes[] = {Dtype::Int32, Dtype::Uint32, Dtype::Float32, Dtype::Float64};
  const std::vector<Method> ms = methods();
  const size_t maxN = *std::max_element(sizes.begin(), sizes.end());
  DeviceBuffers d;
  d.bytes = (maxN + 8) * 8;
  CHECK_CUDA(cudaMalloc(&d.in, d.bytes));
  CHECK_CUDA(cudaMalloc(&d.out, d.bytes));
  double* dResult;
  CHECK_CUDA(cudaMalloc(&dResult, sizeof(double)));
  for (Dtype dt : dtypes) {
    for (size_t n : sizes) {
      HostCase c{dt, n, {}};
      fillRandom(c);
      const int before = g_failures;
      for (const Method& m : ms) {
        const bool variant = m.name.rfind("fast[", 0) == 0;
        if (m.name.find("diag") != std::string::npos) continue;  // timing bounds, wrong on purpose
        if (!methodKept(m.name)) continue;
        if (variant && n > (1u << 21)) continue;  // tuning variants: small and medium sizes only
        for (int inc = 1; inc >= 0; --inc) {
          runScanCase(c, m, inc, d, 0, 0, false, s);
          runScanCase(c, m, inc, d, 0, 0, true, s);
        }
        // Unaligned starts: same misalignment (vector body, scalar head) and different
        // misalignment (scalar throughout), plus in-place from an unaligned start.
        if (n == 33 || n == 1025 || n == 8193 || n == 65537 || n == (1u << 20) + 7) {
          runScanCase(c, m, true, d, 1, 1, false, s);
          runScanCase(c, m, false, d, 3, 3, false, s);
          runScanCase(c, m, true, d, 1, 2, false, s);
          runScanCase(c, m, false, d, 1, 1, true, s);
        }
      }
      checkReduce(c, d, dResult, s);
      HostCase shifted = c;  // reduce from an unaligned start (head and tail paths)
      if (n > 1) {
        shifted.n = n - 1;
        shifted.bytes.assign(c.bytes.begin() + esize(dt), c.bytes.end());
        checkReduce(shifted, d, dResult, s);
      }
      std::printf("checked %-7s n=%-10zu %s\n", dname(dt), n, g_failures == before ? "ok" : "FAILED");
      std::fflush(stdout);
    }
  }
  CHECK_CUDA(cudaFree(d.in));
  CHECK_CUDA(cudaFree(d.out));
  CHECK_CUDA(cudaFree(dResult));
}

// Past 2^31 elements (and 2^33 bytes): every method but warp on uint32, inclusive, against one
// reference prefix compared in parallel.
static void hugeCheck(cudaStream_t s) {
  const size_t n = (size_t(1) << 31) + 5;
  std::vector<uint32_t> in(n), ref(n);
#pragma omp parallel for
  for (long long i = 0; i < static_cast<long long>(n); ++i)
    in[i] = static_cast<uint32_t>(i * 2654435761u + 12345u);
  uint32_t sum = 0;
  for (size_t i = 0; i < n; ++i) ref[i] = (sum += in[i]);
  uint32_t *dIn, *dOut;
  CHECK_CUDA(cudaMalloc(&dIn, n * 4));
  CHECK_CUDA(cudaMalloc(&dOut, n * 4 + 64));
  CHECK_CUDA(cudaMemcpy(dIn, in.data(), n * 4, cudaMemcpyHostToDevice));
  uint32_t* h = reinterpret_cast<uint32_t*>(hostOut(n * 4 + 64));
  for (const Method& m : methods()) {
    if (m.oneBlock || m.name.find("diag") != std::string::npos || !methodKept(m.name)) continue;
    CHECK_CUDA(cudaMemsetAsync(dOut, 0xFF, n * 4 + 64, s));
    CHECK_CUDA(m.fn(dIn, dOut, Dtype::Uint32, n, true, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(h, dOut, n * 4 + 4, cudaMemcpyDeviceToHost));
    long long bad = 0;
#pragma omp parallel for reduction(+ : bad)
    for (long long i = 0; i < static_cast<long long>(n); ++i) bad += h[i] != ref[i];
    bad += h[n] != 0xFFFFFFFFu;
    ++g_checks;
    if (bad) ++g_failures;
    std::printf("checked uint32  n=2^31+5 %-22s inclusive: %s (%lld bad)\n", m.name.c_str(),
                bad ? "FAILED" : "ok", bad);
  }
  CHECK_CUDA(cudaFree(dIn));
  CHECK_CUDA(cudaFree(dOut));
}

// ---------------------------------------------------------------------------------------------
// timing

// The copy references: cudaMemcpyAsync device-to-device (what the bench's `copy` row measures) and a
// plain copy kernel (grid of 8 blocks of 256 per SM, 4 independent 16-byte loads in flight per
// thread), with and without streaming cache hints. The ratios quoted use the fastest of them.
template <bool STREAM>
__global__ void __launch_bounds__(256) copy_kernel(const uint4* __restrict__ in, uint4* __restrict__ out,
                                                   int64_t nvec) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < nvec; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = STREAM ? __ldcs(in + i + k * stride) : in[i + k * stride];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if (STREAM)
        __stcs(out + i + k * stride, v[k]);
      else
        out[i + k * stride] = v[k];
    }
  }
  for (; i < nvec; i += stride) out[i] = in[i];
}

static int g_sms = 132;
template <bool STREAM>
static cudaError_t copyKernel(const void* in, void* out, size_t bytes, cudaStream_t s) {
  copy_kernel<STREAM><<<g_sms * 8, 256, 0, s>>>(static_cast<const uint4*>(in), static_cast<uint4*>(out),
                                                static_cast<int64_t>(bytes / 16));
  return cudaGetLastError();
}

// CK_SCAN_TIME="28,30" limits the sizes (log2), CK_SCAN_DTYPES="int32,float32" the dtypes,
// CK_SCAN_ONLY="fast,S128" keeps methods whose name contains one of the words (plus copy and cub);
// a word that starts with '=' keeps the method of exactly that name ("=fast": not the fast[...] variants).
static bool listed(const char* env, const std::string& word) {
  const char* v = std::getenv(env);
  if (!v || !*v) return true;
  std::string list = std::string(",") + v + ",";
  return list.find("," + word + ",") != std::string::npos;
}
static bool methodKept(const std::string& name) {
  const char* v = std::getenv("CK_SCAN_ONLY");
  if (!v || !*v || name == "cub") return true;
  std::string list = v;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    const std::string w = list.substr(pos, comma - pos);
    if (!w.empty() && w[0] == '=' ? name == w.substr(1) : !w.empty() && name.find(w) != std::string::npos)
      return true;
    pos = comma + 1;
  }
  return false;
}

struct Row {
  std::string dtype, method;
  size_t n;
  double ms, gbs, vsCub, vsCopy;
};

static void timing(cudaStream_t s, std::vector<Row>& rows) {
  struct Plan {
    Dtype d;
    std::vector<int> log2n;
  };
  // 2^21-2^23: where the persistent kernel overtakes the one-tile-per-block one (NOTES.md).
  const Plan plans[] = {{Dtype::Int32, {20, 21, 22, 23, 24, 28, 30}},
                        {Dtype::Uint32, {20, 24, 28}},
                        {Dtype::Float32, {20, 21, 22, 23, 24, 28}},
                        {Dtype::Float64, {20, 21, 22, 23, 24, 28}}};
  const std::vector<Method> scanMethods = methods();
  constexpr int kWarm = 2;
  const int kReps = std::getenv("CK_SCAN_REPS") ? std::max(4, std::atoi(std::getenv("CK_SCAN_REPS"))) : 10;
  for (const Plan& p : plans) {
    if (!listed("CK_SCAN_DTYPES", dname(p.d))) continue;
    for (int lg : p.log2n) {
      if (!listed("CK_SCAN_TIME", std::to_string(lg))) continue;
      const size_t n = size_t(1) << lg, es = esize(p.d), bytes = n * es;
      unsigned char *in, *out;
      double* dRes;
      CHECK_CUDA(cudaMalloc(&in, bytes));
      CHECK_CUDA(cudaMalloc(&out, bytes));
      CHECK_CUDA(cudaMalloc(&dRes, sizeof(double)));
      {
        HostCase c{p.d, std::min<size_t>(n, size_t(1) << 24), {}};
        fillRandom(c);
        for (size_t off = 0; off < bytes; off += c.bytes.size())
          CHECK_CUDA(cudaMemcpy(in + off, c.bytes.data(), std::min(c.bytes.size(), bytes - off),
                           cudaMemcpyHostToDevice));
      }
      struct Timed {
        std::string name;
        std::function<cudaError_t()> fn;
        double bytesMoved;
      };
      std::vector<Timed> ts;
      ts.push_back({"copy", [=] { return cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, s); },
                    2.0 * bytes});
      ts.push_back({"copy kernel", [=] { return copyKernel<false>(in, out, bytes, s); }, 2.0 * bytes});
      ts.push_back({"copy kernel cs", [=] { return copyKernel<true>(in, out, bytes, s); }, 2.0 * bytes});
      for (const Method& m : scanMethods) {
        if (m.oneBlock && lg > 24) continue;
        if (!methodKept(m.name)) continue;
        ScanFn fn = m.fn;
        ts.push_back({m.name, [=] { return fn(in, out, p.d, n, true, s); }, 2.0 * bytes});
      }
      ts.push_back({"fast excl", [=] { return cs::launchFast(in, out, p.d, n, false, s); }, 2.0 * bytes});
      ts.push_back({"reduce sum", [=] { return cs::launchReduce(in, p.d, n, cs::ReduceOp::Sum, dRes, s); },
                    1.0 * bytes});
      ts.push_back({"reduce max", [=] { return cs::launchReduce(in, p.d, n, cs::ReduceOp::Max, dRes, s); },
                    1.0 * bytes});

      const int M = static_cast<int>(ts.size());
      std::vector<cudaEvent_t> ev(2 * M * kReps);
      for (auto& e : ev) CHECK_CUDA(cudaEventCreate(&e));
      for (int w = 0; w < kWarm; ++w)
        for (auto& t : ts) CHECK_CUDA(t.fn());
      CHECK_CUDA(cudaStreamSynchronize(s));
      for (int r = 0; r < kReps; ++r)  // round-robin: every method sees the same machine state
        for (int m = 0; m < M; ++m) {
          CHECK_CUDA(cudaEventRecord(ev[2 * (r * M + m)], s));
          CHECK_CUDA(ts[m].fn());
          CHECK_CUDA(cudaEventRecord(ev[2 * (r * M + m) + 1], s));
        }
      CHECK_CUDA(cudaStreamSynchronize(s));
      std::vector<double> med(M), lo(M), hi(M);
      for (int m = 0; m < M; ++m) {
        std::vector<float> t(kReps);
        for (int r = 0; r < kReps; ++r)
          CHECK_CUDA(cudaEventElapsedTime(&t[r], ev[2 * (r * M + m)], ev[2 * (r * M + m) + 1]));
        std::sort(t.begin(), t.end());
        med[m] = kReps % 2 ? t[kReps / 2] : 0.5 * (t[kReps / 2 - 1] + t[kReps / 2]);
        lo[m] = t.front();
        hi[m] = t.back();
      }
      double cubMs = 0, copyMs = med[0];
      for (int m = 0; m < M; ++m) {
        if (ts[m].name == "cub") cubMs = med[m];
        if (ts[m].name.rfind("copy", 0) == 0) copyMs = std::min(copyMs, med[m]);  // the fastest copy
      }
      for (int m = 0; m < M; ++m) {
        Row row{dname(p.d),     ts[m].name,     n, med[m], ts[m].bytesMoved / (med[m] * 1e6),
                cubMs / med[m], copyMs / med[m]};
        // For the reduce rows "vs copy" compares against half the copy time (a copy reads and
        // writes; a reduction only reads).
        if (ts[m].bytesMoved < 2.0 * bytes) row.vsCopy = 0.5 * copyMs / med[m];
        rows.push_back(row);
        std::printf("time %-8s 2^%d %-18s %9.4f ms %8.1f GB/s  x%.3f cub  x%.3f copy  [min %.4f max %.4f]\n",
                    row.dtype.c_str(), lg, row.method.c_str(), row.ms, row.gbs, row.vsCub, row.vsCopy, lo[m],
                    hi[m]);
      }
      std::fflush(stdout);
      for (auto& e : ev) CHECK_CUDA(cudaEventDestroy(e));
      CHECK_CUDA(cudaFree(in));
      CHECK_CUDA(cudaFree(out));
      CHECK_CUDA(cudaFree(dRes));
    }
  }
}

// --one METHOD LOG2N: runs one method (a name from methods(), e.g. cub or "fast[128x256B]") three
// times on 2^LOG2N int32, for ncu; plus a plain copy kernel-free cudaMemcpy for comparison.
static int runOne(const char* name, int lg) {
  const size_t n = size_t(1) << lg, bytes = n * 4;
  void *in, *out;
  CHECK_CUDA(cudaMalloc(&in, bytes));
  CHECK_CUDA(cudaMalloc(&out, bytes));
  CHECK_CUDA(cudaMemset(in, 1, bytes));
  for (const Method& m : methods()) {
    if (m.name != name) continue;
    for (int r = 0; r < 3; ++r) CHECK_CUDA(m.fn(in, out, Dtype::Int32, n, true, 0));
    CHECK_CUDA(cudaMemcpy(out, in, bytes, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaDeviceSynchronize());
    std::printf("ran %s 3x at 2^%d\n", name, lg);
    return 0;
  }
  std::printf("no method %s\n", name);
  return 1;
}

int main(int argc, char** argv) {
  bool small = false, medium = false, doTime = true, huge = true, sanitize = false, check = true;
  if (argc == 4 && !std::strcmp(argv[1], "--one")) return runOne(argv[2], std::atoi(argv[3]));
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--small")) small = true, doTime = false, huge = false;
    if (!std::strcmp(argv[i], "--san")) small = true, doTime = false, huge = false, sanitize = true;
    if (!std::strcmp(argv[i], "--no-time")) doTime = false;
    if (!std::strcmp(argv[i], "--no-huge")) huge = false;
    if (!std::strcmp(argv[i], "--time-only")) small = true, huge = false;
    if (!std::strcmp(argv[i], "--medium")) small = true, medium = true, huge = false;
    if (!std::strcmp(argv[i], "--no-check")) check = false, huge = false;
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  g_sms = prop.multiProcessorCount;
  if (check) correctness(small, medium, sanitize, s);
  if (huge) hugeCheck(s);
  std::printf("correctness: %d checks, %d failures\n", g_checks, g_failures);
  std::fflush(stdout);
  if (doTime) {
    std::vector<Row> rows;
    timing(s, rows);
    std::printf("\n| dtype | n | method | ms | GB/s | vs cub | vs copy |\n|---|---|---|---|---|---|---|\n");
    for (const Row& r : rows) {
      int lg = 0;
      while ((size_t(1) << lg) < r.n) ++lg;
      std::printf("| %s | 2^%d | %s | %.4f | %.0f | %.3f | %.3f |\n", r.dtype.c_str(), lg, r.method.c_str(),
                  r.ms, r.gbs, r.vsCub, r.vsCopy);
    }
  }
  CHECK_CUDA(cudaStreamDestroy(s));
  return g_failures ? 1 : 0;
}
