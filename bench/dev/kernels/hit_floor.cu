// The C++ floor under `bench kernels`' "disk-cache hit in a new process: after its first kernel" row:
// in a fresh process whose CUDA context is made and whose first kernel came from a cubin file, a
// second cubin file is read, loaded (cudaLibraryLoadData), its kernel looked up, used once for its
// attributes (with lazy loading, the driver's default, this is where the code reaches the GPU),
// launched and waited for; each step timed on the host's clock. Prints one JSON line. Run it in many
// processes (the package's row is a median over processes too), with CUDA_MODULE_LOADING=EAGER to
// see the load move into cudaLibraryLoadData.
//
//   nvcc -O2 -arch=sm_90 -o /tmp/hit_floor bench/dev/kernels/hit_floor.cu
//   (two saxpy sources differing in a comment, as lib/bench/kernels.ts writes them)
//   nvcc -cubin -arch=sm_90 -o /tmp/a.cubin a.cu; nvcc -cubin -arch=sm_90 -o /tmp/b.cubin b.cu
//   /tmp/hit_floor /tmp/a.cubin /tmp/b.cubin
#include <cuda_runtime.h>

#include "../cuda_check.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>


using Clock = std::chrono::steady_clock;
static double us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

static std::vector<char> readFile(const char* path) {
  std::vector<char> data;
  FILE* f = std::fopen(path, "rb");
  if (!f) {
    std::fprintf(stderr, "cannot open %s\n", path);
    std::exit(1);
  }
  char buf[65536];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) data.insert(data.end(), buf, buf + got);
  std::fclose(f);
  return data;
}

struct Steps {
  double read, load, lookup, attributes, params, launch, sync;
};

// One hit: the steps the package's compile() + kernel() + launch + synchronize() make natively.
static Steps hit(const char* path, int n, float* x, float* y, cudaStream_t stream) {
  Steps s{};
  auto t0 = Clock::now();
  std::vector<char> image = readFile(path);
  auto t1 = Clock::now();
  cudaLibrary_t lib;
  CHECK_CUDA(cudaLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  auto t2 = Clock::now();
  cudaKernel_t k;
  CHECK_CUDA(cudaLibraryGetKernel(&k, lib, "saxpy"));
  auto t3 = Clock::now();
  cudaFuncAttributes a;
  CHECK_CUDA(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(k)));
  auto t4 = Clock::now();
  // What the package also asks before a first launch: each parameter's size, to check the layout it
  // packs against the compiled one (asking past the last is how the count is found).
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    if (cudaFuncGetParamInfo(reinterpret_cast<const void*>(k), i, &offset, &size) != cudaSuccess) {
      cudaGetLastError();
      break;
    }
  }
  auto t4b = Clock::now();
  float alpha = 2;
  void* args[] = {&n, &alpha, &x, &y};
  CHECK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(k), dim3((n + 255) / 256), dim3(256), args, 0, stream));
  auto t5 = Clock::now();
  CHECK_CUDA(cudaStreamSynchronize(stream));
  auto t6 = Clock::now();
  s.read = us(t0, t1);
  s.load = us(t1, t2);
  s.lookup = us(t2, t3);
  s.attributes = us(t3, t4);
  s.params = us(t4, t4b);
  s.launch = us(t4b, t5);
  s.sync = us(t5, t6);
  return s;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s first.cubin second.cubin\n", argv[0]);
    return 2;
  }
  const int n = 1024;
  CHECK_CUDA(cudaFree(nullptr));  // the context, as the package's child makes it before timing
  float *x, *y;
  CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
  CHECK_CUDA(cudaMemset(x, 0, n * sizeof(float)));
  CHECK_CUDA(cudaMemset(y, 0, n * sizeof(float)));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK_CUDA(cudaDeviceSynchronize());
  const Steps first = hit(argv[1], n, x, y, stream);
  const Steps second = hit(argv[2], n, x, y, stream);
  // The floor leaves out the parameter query (the package's own check), reported beside it.
  auto total = [](const Steps& s) { return s.read + s.load + s.lookup + s.attributes + s.launch + s.sync; };
  std::printf(
      "{\"loading\": \"%s\", \"first\": %.1f, \"second\": %.1f, \"read\": %.1f, \"load\": %.1f, \"lookup\": %.1f, "
      "\"attributes\": %.1f, \"params\": %.1f, \"launch\": %.1f, \"sync\": %.1f}\n",
      std::getenv("CUDA_MODULE_LOADING") ? std::getenv("CUDA_MODULE_LOADING") : "default", total(first),
      total(second), second.read, second.load, second.lookup, second.attributes, second.params, second.launch, second.sync);
  return 0;
}
