// The round loop every variant runs under (see apsp.h): pad the matrix to the variant's block factor,
// enqueue its rounds in order, report progress between them, and unpad the result.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "apsp/apsp.h"
#include "apsp/padding.h"
#include "core/math.h"
#include "core/pool.h"

namespace ck {
namespace apsp {
namespace {

// Frees the padded workspace and the progress events on every exit, exceptions from the progress
// callback included. Frees are stream-ordered, after the work already queued.
struct RunResources {
  cudaStream_t stream = nullptr;
  int32_t* d = nullptr;
  int32_t* next = nullptr;
  int32_t* hops = nullptr;
  bool ownsD = false, ownsNext = false;
  cudaEvent_t events[2] = {nullptr, nullptr};
  ~RunResources() {
    if (ownsD && d) poolFree(d, stream);
    if (ownsNext && next) poolFree(next, stream);
    if (hops) poolFree(hops, stream);
    for (cudaEvent_t e : events)
      if (e) cudaEventDestroy(e);
  }
};

}  // namespace

cudaError_t run(RoundFn round, int factor, const int32_t* in, int32_t* out, int32_t* nextOut, int64_t n,
                cudaStream_t stream, const Progress& progress) {
  if (n < 1 || n > kMaxN || factor < 1) return cudaErrorInvalidValue;
  const int64_t np = ceilDiv(n, factor) * factor;
  const int64_t rounds = np / factor;
  RunResources res;
  res.stream = stream;
  res.d = out;
  res.next = nextOut;
  const size_t bytes = static_cast<size_t>(np) * np * sizeof(int32_t);
  if (np != n) {
    cudaError_t err = poolMalloc(&res.d, bytes, stream);
    if (err != cudaSuccess) return err;
    res.ownsD = true;
    if (nextOut) {
      err = poolMalloc(&res.next, bytes, stream);
      if (err != cudaSuccess) return err;
      res.ownsNext = true;
    }
  }
  if (nextOut) {
    const cudaError_t err = poolMalloc(&res.hops, bytes, stream);
    if (err != cudaSuccess) return err;
  }
  cudaError_t err = launchPad(in, res.d, res.next, res.hops, n, np, stream);
  if (err != cudaSuccess) return err;

  if (progress) {
    for (cudaEvent_t& e : res.events) {
      err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
      if (err != cudaSuccess) return err;
    }
  }
  for (int64_t r = 0; r < rounds; ++r) {
    err = round(res.d, res.next, res.hops, np, factor, r, stream);
    if (err != cudaSuccess) return err;
    if (progress) {
      // Round r is queued behind round r − 1: wait for r − 1 only, so the GPU never runs dry.
      err = cudaEventRecord(res.events[r % 2], stream);
      if (err != cudaSuccess) return err;
      if (r > 0) {
        err = cudaEventSynchronize(res.events[(r - 1) % 2]);
        if (err != cudaSuccess) return err;
        progress(static_cast<int>(r), static_cast<int>(rounds));
      }
    }
  }
  if (np != n) {
    err = launchUnpad(res.d, out, n, np, stream);
    if (err != cudaSuccess) return err;
    if (nextOut) {
      err = launchUnpad(res.next, nextOut, n, np, stream);
      if (err != cudaSuccess) return err;
    }
  }
  if (progress) {
    err = cudaEventSynchronize(res.events[(rounds - 1) % 2]);
    if (err != cudaSuccess) return err;
    progress(static_cast<int>(rounds), static_cast<int>(rounds));
  }
  return cudaSuccess;
}

}  // namespace apsp
}  // namespace ck
