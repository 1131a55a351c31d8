// The C++ floor under `bench kernels`' "saxpy launch+sync n=1024" row: one launch of the same saxpy and
// one wait, timed on the host's clock, for each way of waiting the package could use. Modes run in
// rounds, rotated, so that no mode always follows the same one.
//
//   nvcc -O2 -arch=sm_90 -o /tmp/launch_sync bench/dev/kernels/launch_sync.cu && /tmp/launch_sync
#include <cuda_runtime.h>

#include "../cuda_check.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>


__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
  const int n = 1024, reps = 2000, rounds = 6;
  float *x, *y;
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
  CHECK_CUDA(cudaMemset(x, 0, n * sizeof(float)));
  CHECK_CUDA(cudaMemset(y, 0, n * sizeof(float)));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t ev;
  CHECK_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  const char* names[] = {"launch + cudaStreamSynchronize(stream)", "launch + cudaDeviceSynchronize()",
                         "launch + cudaEventRecord + cudaEventSynchronize",
                         "cudaSetDevice + launch + cudaSetDevice + cudaDeviceSynchronize (the package's calls)"};
  const int modes = 4;
  std::vector<std::vector<double>> us(modes);
  auto once = [&](int mode) {
    if (mode == 3) CHECK_CUDA(cudaSetDevice(0));
    saxpy<<<(n + 255) / 256, 256, 0, s>>>(n, 2.0f, x, y);
    CHECK_CUDA(cudaGetLastError());
    switch (mode) {
      case 0: CHECK_CUDA(cudaStreamSynchronize(s)); break;
      case 1: CHECK_CUDA(cudaDeviceSynchronize()); break;
      case 2:
        CHECK_CUDA(cudaEventRecord(ev, s));
        CHECK_CUDA(cudaEventSynchronize(ev));
        break;
      default:
        CHECK_CUDA(cudaSetDevice(0));
        CHECK_CUDA(cudaDeviceSynchronize());
    }
  };
  for (int m = 0; m < modes; ++m)
    for (int i = 0; i < 500; ++i) once(m);
  for (int r = 0; r < rounds; ++r)
    for (int k = 0; k < modes; ++k) {
      const int m = (r + k) % modes;
      for (int i = 0; i < reps; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        once(m);
        us[m].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
    }
  for (int m = 0; m < modes; ++m) {
    std::vector<double>& v = us[m];
    std::sort(v.begin(), v.end());
    std::printf("%-84s median %.2f us, p10 %.2f, p90 %.2f (%zu calls)\n", names[m], v[v.size() / 2],
                v[v.size() / 10], v[v.size() * 9 / 10], v.size());
  }
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  return 0;
}
