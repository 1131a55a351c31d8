// Floors for the data path, measured in C++ with no binding in the way: what a pool allocation, a
// pinned staging hop, a pageable transfer through the driver and through our own pinned ring cost.
// Built on the dev machine (nvcc, static cudart) and run on the GPU host; prints one line per figure.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -o probe bench/dev/overhead/probe.cu -lpthread
#include <cuda_runtime_api.h>

#include "../cuda_check.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>


using Clock = std::chrono::steady_clock;
static double usSince(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

template <typename F>
static double medianUs(int reps, F&& f) {
  std::vector<double> v;
  for (int i = 0; i < 3; ++i) f();
  for (int i = 0; i < reps; ++i) {
    auto t = Clock::now();
    f();
    v.push_back(usSince(t));
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// memcpy split over `threads` threads.
static void parCopy(char* dst, const char* src, size_t bytes, int threads) {
  if (threads <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  std::vector<std::thread> ts;
  size_t per = (bytes + threads - 1) / threads;
  for (int t = 0; t < threads; ++t) {
    size_t off = std::min(bytes, per * t), len = std::min(per, bytes - off);
    ts.emplace_back([=] { std::memcpy(dst + off, src + off, len); });
  }
  for (auto& t : ts) t.join();
}

int main() {
  cudaStream_t s;
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t big = size_t{256} << 20;

  // Pool: a private pool that keeps its memory (release threshold = max) vs the default pool.
  cudaMemPool_t pool;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  CHECK_CUDA(cudaMemPoolCreate(&pool, &props));
  uint64_t keep = ~uint64_t{0};
  CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  std::printf("pool alloc+free 4 KiB (kept pool): %.2f us\n", medianUs(2000, [&] {
                void* p;
                CHECK_CUDA(cudaMallocFromPoolAsync(&p, 4096, pool, s));
                CHECK_CUDA(cudaFreeAsync(p, s));
              }));
  std::printf("pool alloc+free 4 KiB + stream sync (kept pool): %.2f us\n", medianUs(2000, [&] {
                void* p;
                CHECK_CUDA(cudaMallocFromPoolAsync(&p, 4096, pool, s));
                CHECK_CUDA(cudaFreeAsync(p, s));
                CHECK_CUDA(cudaStreamSynchronize(s));
              }));
  std::printf("default pool alloc+free 4 KiB + stream sync: %.2f us\n", medianUs(500, [&] {
                void* p;
                CHECK_CUDA(cudaMallocAsync(&p, 4096, s));
                CHECK_CUDA(cudaFreeAsync(p, s));
                CHECK_CUDA(cudaStreamSynchronize(s));
              }));
  std::printf("stream sync, idle: %.2f us\n", medianUs(2000, [&] { CHECK_CUDA(cudaStreamSynchronize(s)); }));
  cudaEvent_t ev;
  CHECK_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  std::printf("event record + event sync, idle: %.2f us\n", medianUs(2000, [&] {
                CHECK_CUDA(cudaEventRecord(ev, s));
                CHECK_CUDA(cudaEventSynchronize(ev));
              }));

  // Small staging hops.
  char* pin;
  CHECK_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&pin), big, cudaHostAllocPortable));
  void* dev;
  CHECK_CUDA(cudaMalloc(&dev, big));
  std::vector<char> host1k(1024, 1);
  std::printf("H2D 1 KiB memcpy to pinned + async, no wait: %.2f us\n", medianUs(2000, [&] {
                std::memcpy(pin, host1k.data(), 1024);
                CHECK_CUDA(cudaMemcpyAsync(dev, pin, 1024, cudaMemcpyHostToDevice, s));
              }));
  CHECK_CUDA(cudaStreamSynchronize(s));
  std::printf("H2D 1 KiB pageable + sync: %.2f us\n", medianUs(2000, [&] {
                CHECK_CUDA(cudaMemcpyAsync(dev, host1k.data(), 1024, cudaMemcpyHostToDevice, s));
                CHECK_CUDA(cudaStreamSynchronize(s));
              }));
  std::printf("D2H 8 B into pinned + sync: %.2f us\n", medianUs(2000, [&] {
                CHECK_CUDA(cudaMemcpyAsync(pin, dev, 8, cudaMemcpyDeviceToHost, s));
                CHECK_CUDA(cudaStreamSynchronize(s));
              }));
  std::printf("cudaHostAlloc+FreeHost 4 KiB: %.2f us\n", medianUs(200, [&] {
                void* p;
                CHECK_CUDA(cudaHostAlloc(&p, 4096, cudaHostAllocPortable));
                CHECK_CUDA(cudaFreeHost(p));
              }));
  std::printf("cudaHostAlloc+FreeHost 256 MiB: %.0f us\n", medianUs(3, [&] {
                void* p;
                CHECK_CUDA(cudaHostAlloc(&p, big, cudaHostAllocPortable));
                CHECK_CUDA(cudaFreeHost(p));
              }));

  // Large transfers: pageable, touched.
  char* page = static_cast<char*>(std::malloc(big));
  char* page2 = static_cast<char*>(std::malloc(big));
  std::memset(page, 1, big);
  std::memset(page2, 2, big);
  auto gbs = [&](double us) { return big / us / 1e3; };
  for (int t : {1, 2, 4, 8})
    std::printf("host memcpy 256 MiB, %d thread(s): %.1f GB/s\n", t,
                gbs(medianUs(5, [&] { parCopy(page2, page, big, t); })));
  std::printf("D2H 256 MiB pinned: %.1f GB/s\n", gbs(medianUs(5, [&] {
                CHECK_CUDA(cudaMemcpyAsync(pin, dev, big, cudaMemcpyDeviceToHost, s));
                CHECK_CUDA(cudaStreamSynchronize(s));
              })));
  std::printf("H2D 256 MiB pinned: %.1f GB/s\n", gbs(medianUs(5, [&] {
                CHECK_CUDA(cudaMemcpyAsync(dev, pin, big, cudaMemcpyHostToDevice, s));
                CHECK_CUDA(cudaStreamSynchronize(s));
              })));
  std::printf("D2H 256 MiB pageable (driver): %.1f GB/s\n", gbs(medianUs(5, [&] {
                CHECK_CUDA(cudaMemcpyAsync(page, dev, big, cudaMemcpyDeviceToHost, s));
                CHECK_CUDA(cudaStreamSynchronize(s));
              })));
  std::printf("H2D 256 MiB pageable (driver): %.1f GB/s\n", gbs(medianUs(5, [&] {
                CHECK_CUDA(cudaMemcpyAsync(dev, page, big, cudaMemcpyHostToDevice, s));
                CHECK_CUDA(cudaStreamSynchronize(s));
              })));
  std::printf("D2H 1 MiB pageable (driver): %.1f GB/s\n", (1 << 20) / medianUs(50, [&] {
                CHECK_CUDA(cudaMemcpyAsync(page, dev, 1 << 20, cudaMemcpyDeviceToHost, s));
                CHECK_CUDA(cudaStreamSynchronize(s));
              }) / 1e3);
  std::printf("H2D 1 MiB pageable (driver): %.1f GB/s\n", (1 << 20) / medianUs(50, [&] {
                CHECK_CUDA(cudaMemcpyAsync(dev, page, 1 << 20, cudaMemcpyHostToDevice, s));
                CHECK_CUDA(cudaStreamSynchronize(s));
              }) / 1e3);

  // Our ring: chunks of `chunk` bytes through `slots` pinned slots, host side split over `threads`.
  std::vector<cudaEvent_t> evs(8);
  for (auto& e : evs) CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  for (size_t chunk : {size_t{2} << 20, size_t{8} << 20, size_t{32} << 20}) {
    for (int threads : {1, 4}) {
      const int slots = 4;
      double d2h = medianUs(5, [&] {
        // D2H: enqueue slot copies ahead, copy each out once its event fires.
        size_t n = (big + chunk - 1) / chunk;
        for (size_t k = 0; k < n + slots; ++k) {
          if (k >= static_cast<size_t>(slots)) {
            size_t j = k - slots;
            CHECK_CUDA(cudaEventSynchronize(evs[j % slots]));
            size_t off = j * chunk, len = std::min(chunk, big - off);
            parCopy(page + off, pin + (j % slots) * chunk, len, threads);
          }
          if (k < n) {
            size_t off = k * chunk, len = std::min(chunk, big - off);
            CHECK_CUDA(cudaMemcpyAsync(pin + (k % slots) * chunk, static_cast<char*>(dev) + off, len,
                               cudaMemcpyDeviceToHost, s));
            CHECK_CUDA(cudaEventRecord(evs[k % slots], s));
          }
        }
      });
      double h2d = medianUs(5, [&] {
        size_t n = (big + chunk - 1) / chunk;
        for (size_t k = 0; k < n; ++k) {
          if (k >= static_cast<size_t>(slots)) CHECK_CUDA(cudaEventSynchronize(evs[k % slots]));
          size_t off = k * chunk, len = std::min(chunk, big - off);
          parCopy(pin + (k % slots) * chunk, page + off, len, threads);
          CHECK_CUDA(cudaMemcpyAsync(static_cast<char*>(dev) + off, pin + (k % slots) * chunk, len,
                             cudaMemcpyHostToDevice, s));
          CHECK_CUDA(cudaEventRecord(evs[k % slots], s));
        }
        CHECK_CUDA(cudaStreamSynchronize(s));
      });
      std::printf("ring %zu MiB x %d slots, %d host thread(s): D2H %.1f GB/s, H2D %.1f GB/s\n", chunk >> 20,
                  slots, threads, gbs(d2h), gbs(h2d));
    }
  }
  std::printf("done\n");
  return 0;
}
