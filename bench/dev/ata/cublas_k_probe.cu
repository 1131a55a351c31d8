// Where cuBLAS's DGEMM, DSYRK and SGEMM stop computing C = AᵀA (and C = A·B) for a tall, skinny A
// (long K). The package fed cuBLAS K in chunks of up to INT_MAX; with n = 2 and 2^31 + 77 rows its
// DGEMM left C untouched on an H100 and wrong on an H200 (bench/dev/ata/NOTES.md §12). This probe
// runs each routine for one n and K per process, on integer data v(r, c) = (5r + 7c) mod 17 − 8 whose
// sums are exact in float64, and prints the status, the CUDA error after the call, and the largest
// difference from the closed form. The first form ran every case in one process
// (logs/h200-cublas-k-probe-one-process.log); cublas_k_probe.sh runs the cases of the other logs.
//
//   nvcc -std=c++17 -O2 -o /tmp/probe bench/dev/ata/cublas_k_probe.cu -lcublas && /tmp/probe dgemm 2 2147483647
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                         \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

__global__ void fill(double* a, int64_t len, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < len; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / n, c = i % n;
    a[i] = static_cast<double>((5 * r + 7 * c) % 17) - 8.0;
  }
}

// Row-major A (n×k): A[i][r] = v(r, i); B (k×n) all ones.
__global__ void fillSgemm(float* A, float* B, int64_t k, int64_t n) {
  for (int64_t x = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; x < n * k; x += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = x / k, r = x % k;
    A[x] = static_cast<float>((5 * r + 7 * i) % 17 - 8);
    B[x] = 1.0f;
  }
}

// Σ over r < k of v(r, p)·v(r, q), by whole periods of 17 rows.
double exact(int64_t k, int64_t p, int64_t q) {
  auto v = [](int64_t r, int64_t c) { return ((5 * r + 7 * c) % 17) - 8; };
  int64_t period = 0, rest = 0;
  for (int64_t r = 0; r < 17; ++r) {
    period += v(r, p) * v(r, q);
    if (r < k % 17) rest += v(r, p) * v(r, q);
  }
  return static_cast<double>((k / 17) * period + rest);
}

// SGEMM as native/gemm/cublas.cc calls it for row-major C = A·B (m = n = N, long K): A[i][r] =
// v(r, i), B = 1, so C[i][j] = Σ_r v(r, i). Each row sums to 0 over every 17 columns, so sums over
// contiguous runs, and over strided runs whose stride is coprime to 17 (any power of 2), stay within
// a few hundred, and sums of those are exact in float32: the blocked and split orders GEMMs use.
int sgemmCase(int64_t n, int64_t k) {
  float* A = nullptr;
  float* B = nullptr;
  float* C = nullptr;
  CHECK(cudaMalloc(&A, n * k * sizeof(float)));
  CHECK(cudaMalloc(&B, n * k * sizeof(float)));
  CHECK(cudaMalloc(&C, n * n * sizeof(float)));
  fillSgemm<<<4096, 256>>>(A, B, k, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemset(C, 0xFF, n * n * sizeof(float)));  // NaN
  CHECK(cudaDeviceSynchronize());
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  const float one = 1.0f, zero = 0.0f;
  const int ni = static_cast<int>(n), ki = static_cast<int>(k);
  const cublasStatus_t st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ki, &one, B, ni, A, ki, &zero, C, ni);
  const cudaError_t launch = cudaGetLastError();
  const cudaError_t sync = cudaDeviceSynchronize();
  std::vector<float> hc(n * n);
  const cudaError_t copy = cudaMemcpy(hc.data(), C, n * n * sizeof(float), cudaMemcpyDeviceToHost);
  double worst = 0;
  int64_t nan = 0;
  if (copy == cudaSuccess)
    for (int64_t i = 0; i < n; ++i) {
      int64_t want = 0;
      for (int64_t r = 0; r < k % 17; ++r) want += (5 * r + 7 * i) % 17 - 8;  // whole periods sum to 0
      for (int64_t j = 0; j < n; ++j) {
        const float got = hc[i * n + j];
        if (std::isnan(got)) ++nan;
        else worst = std::fmax(worst, std::fabs(got - static_cast<double>(want)));
      }
    }
  const bool ok = st == CUBLAS_STATUS_SUCCESS && launch == cudaSuccess && sync == cudaSuccess && copy == cudaSuccess &&
                  nan == 0 && worst == 0;
  std::printf("sgemm  n=%-5lld k=%-11lld status=%d launch=%s sync=%s nan=%lld maxdiff=%g %s\n",
              static_cast<long long>(n), static_cast<long long>(k), static_cast<int>(st), cudaGetErrorName(launch),
              cudaGetErrorName(sync), static_cast<long long>(nan), worst, ok ? "OK" : "WRONG");
  return ok ? 0 : 3;
}

// Long M (Mlp's forward pass and backward deltas, whose M is the batch's rows): row-major C (m×2) =
// A (m×2) · B (2×2) with A[i][c] = v(i, c) and B all ones, so C[i][j] = v(i, 0) + v(i, 1); checked on
// the device (count of wrong elements).
__global__ void fillLongM(float* A, int64_t m) {
  for (int64_t x = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; x < 2 * m; x += int64_t{gridDim.x} * blockDim.x)
    A[x] = static_cast<float>((5 * (x / 2) + 7 * (x % 2)) % 17 - 8);
}
__global__ void checkLongM(const float* C, int64_t m, unsigned long long* wrong) {
  for (int64_t x = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; x < 2 * m; x += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = x / 2;
    const float want = static_cast<float>((5 * i) % 17 - 8 + (5 * i + 7) % 17 - 8);
    if (!(C[x] == want)) atomicAdd(wrong, 1ull);
  }
}
int sgemmLongM(int64_t m) {
  float *A = nullptr, *B = nullptr, *C = nullptr;
  unsigned long long* wrong = nullptr;
  CHECK(cudaMalloc(&A, 2 * m * sizeof(float)));
  CHECK(cudaMalloc(&C, 2 * m * sizeof(float)));
  CHECK(cudaMalloc(&B, 4 * sizeof(float)));
  CHECK(cudaMalloc(&wrong, sizeof(unsigned long long)));
  const float ones[4] = {1, 1, 1, 1};
  CHECK(cudaMemcpy(B, ones, sizeof ones, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(wrong, 0, sizeof(unsigned long long)));
  fillLongM<<<4096, 256>>>(A, m);
  CHECK(cudaMemset(C, 0xFF, 2 * m * sizeof(float)));  // NaN
  CHECK(cudaDeviceSynchronize());
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  const float one = 1.0f, zero = 0.0f;
  // Row-major C = A·B as column-major Cᵀ (2×m) = Bᵀ (2×2) · Aᵀ (2×m): n = 2, m, k = 2.
  const cublasStatus_t st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, static_cast<int>(m), 2, &one, B, 2, A, 2,
                                        &zero, C, 2);
  const cudaError_t launch = cudaGetLastError();
  const cudaError_t sync = cudaDeviceSynchronize();
  checkLongM<<<4096, 256>>>(C, m, wrong);
  unsigned long long bad = 0;
  const cudaError_t copy = cudaMemcpy(&bad, wrong, sizeof bad, cudaMemcpyDeviceToHost);
  const bool ok = st == CUBLAS_STATUS_SUCCESS && launch == cudaSuccess && sync == cudaSuccess && copy == cudaSuccess &&
                  bad == 0;
  std::printf("sgemm-m m=%-11lld n=2 k=2 status=%d launch=%s sync=%s wrong=%llu %s\n", static_cast<long long>(m),
              static_cast<int>(st), cudaGetErrorName(launch), cudaGetErrorName(sync), bad, ok ? "OK" : "WRONG");
  return ok ? 0 : 3;
}

// One case per process (a failed call can leave an illegal-address error that ends the context):
//   probe dgemm|dsyrk|sgemm N K, or probe sgemm-m 2 M
int main(int argc, char** argv) {
  if (argc != 4) {
    std::printf("usage: probe dgemm|dsyrk|sgemm N K, or probe sgemm-m 2 M\n");
    return 2;
  }
  const bool gemm = argv[1][1] == 'g';
  const int64_t n = std::atoll(argv[2]), k = std::atoll(argv[3]);
  if (n < 1 || n > 4096 || k < 1 || k > INT32_MAX) return 2;
  if (!std::strcmp(argv[1], "sgemm-m")) return sgemmLongM(k);
  if (argv[1][0] == 's' && argv[1][1] == 'g') return sgemmCase(n, k);
  double* A = nullptr;
  double* C = nullptr;
  CHECK(cudaMalloc(&A, n * k * sizeof(double)));
  CHECK(cudaMalloc(&C, n * n * sizeof(double)));
  fill<<<4096, 256>>>(A, n * k, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemset(C, 0xFF, n * n * sizeof(double)));  // NaN
  CHECK(cudaDeviceSynchronize());
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  const double one = 1.0, zero = 0.0;
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  CHECK(cudaEventRecord(e0));
  const int ni = static_cast<int>(n), ki = static_cast<int>(k);
  const cublasStatus_t st = gemm ? cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, ni, ni, ki, &one, A, ni, A, ni, &zero, C, ni)
                                 : cublasDsyrk(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, ni, ki, &one, A, ni, &zero, C, ni);
  const cudaError_t launch = cudaGetLastError();
  CHECK(cudaEventRecord(e1));
  const cudaError_t sync = cudaDeviceSynchronize();
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  std::vector<double> hc(n * n);
  const cudaError_t copy = cudaMemcpy(hc.data(), C, n * n * sizeof(double), cudaMemcpyDeviceToHost);
  // Column-major C = X·Xᵀ with X = Aᵀ; DSYRK fills the lower triangle (row ≥ col) only.
  double worst = 0;
  int64_t nan = 0;
  if (copy == cudaSuccess)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = gemm ? 0 : j; i < n; ++i) {
        const double got = hc[j * n + i];
        if (std::isnan(got)) ++nan;
        else worst = std::fmax(worst, std::fabs(got - exact(k, i, j)));
      }
  const bool ok = st == CUBLAS_STATUS_SUCCESS && launch == cudaSuccess && sync == cudaSuccess && copy == cudaSuccess &&
                  nan == 0 && worst == 0;
  std::printf("%-6s n=%-5lld k=%-11lld n*k=%-11lld status=%d launch=%s sync=%s nan=%lld maxdiff=%g %.3f ms %s\n",
              gemm ? "dgemm" : "dsyrk", static_cast<long long>(n), static_cast<long long>(k),
              static_cast<long long>(n * k), static_cast<int>(st), cudaGetErrorName(launch), cudaGetErrorName(sync),
              static_cast<long long>(nan), worst, ms, ok ? "OK" : "WRONG");
  return ok ? 0 : 3;
}
