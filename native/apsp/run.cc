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

PaddedRun::PaddedRun(RoundFn round, int factor, int32_t* out, int32_t* nextOut, int64_t n,
                     cudaStream_t stream, bool sleep)
    : round_(round),
      factor_(factor),
      out_(out),
      nextOut_(nextOut),
      n_(n),
      np_(factor >= 1 ? ceilDiv(n, factor) * factor : n),
      stream_(stream),
      sleep_(sleep),
      d_(out),
      next_(nextOut) {}

// Frees the padded workspace and the progress events on every exit, exceptions from the progress
// callback included. Frees are stream-ordered, after the work already queued.
PaddedRun::~PaddedRun() {
  if (ownsD_ && d_) poolFree(d_, stream_);
  if (ownsNext_ && next_) poolFree(next_, stream_);
  if (hops_) poolFree(hops_, stream_);
  for (cudaEvent_t e : events_)
    if (e) cudaEventDestroy(e);
}

cudaError_t PaddedRun::pad(const int32_t* in) {
  if (n_ < 1 || n_ > kMaxN || factor_ < 1) return cudaErrorInvalidValue;
  const size_t bytes = static_cast<size_t>(np_) * np_ * sizeof(int32_t);
  if (np_ != n_) {
    cudaError_t err = poolMalloc(&d_, bytes, stream_);
    if (err != cudaSuccess) return err;
    ownsD_ = true;
    if (nextOut_) {
      err = poolMalloc(&next_, bytes, stream_);
      if (err != cudaSuccess) return err;
      ownsNext_ = true;
    }
  }
  if (nextOut_) {
    const cudaError_t err = poolMalloc(&hops_, bytes, stream_);
    if (err != cudaSuccess) return err;
  }
  return launchPad(in, d_, next_, hops_, n_, np_, stream_);
}

cudaError_t PaddedRun::rounds(const Progress& progress) {
  const int64_t rounds = np_ / factor_;
  cudaError_t err = cudaSuccess;
  if (progress) {
    const unsigned flags = cudaEventDisableTiming | (sleep_ ? cudaEventBlockingSync : 0u);
    for (cudaEvent_t& e : events_) {
      err = cudaEventCreateWithFlags(&e, flags);
      if (err != cudaSuccess) return err;
    }
  }
  for (int64_t r = 0; r < rounds; ++r) {
    err = round_(d_, next_, hops_, np_, factor_, r, stream_);
    if (err != cudaSuccess) return err;
    if (progress) {
      // Round r is queued behind round r − 1: wait for r − 1 only, so the GPU never runs dry.
      err = cudaEventRecord(events_[r % 2], stream_);
      if (err != cudaSuccess) return err;
      if (r > 0) {
        err = cudaEventSynchronize(events_[(r - 1) % 2]);
        if (err != cudaSuccess) return err;
        progress(static_cast<int>(r), static_cast<int>(rounds));
      }
    }
  }
  if (np_ != n_) {
    err = launchUnpad(d_, out_, n_, np_, stream_);
    if (err != cudaSuccess) return err;
    if (nextOut_) {
      err = launchUnpad(next_, nextOut_, n_, np_, stream_);
      if (err != cudaSuccess) return err;
    }
  }
  if (progress) {
    // The unpadding is queued after the last round's event: wait for all of it.
    err = cudaEventRecord(events_[(rounds - 1) % 2], stream_);
    if (err == cudaSuccess) err = cudaEventSynchronize(events_[(rounds - 1) % 2]);
    if (err != cudaSuccess) return err;
    progress(static_cast<int>(rounds), static_cast<int>(rounds));
  }
  return cudaSuccess;
}

cudaError_t run(RoundFn round, int factor, const int32_t* in, int32_t* out, int32_t* nextOut, int64_t n,
                cudaStream_t stream, const Progress& progress) {
  PaddedRun r(round, factor, out, nextOut, n, stream, false);
  const cudaError_t err = r.pad(in);
  return err == cudaSuccess ? r.rounds(progress) : err;
}

}  // namespace apsp
}  // namespace ck
