// The sweep loop every stencil variant runs under (see stencil.h): enqueue passes of the chosen
// variant (1_basic.cu, 2_tiled.cu, 3_temporal.cu) between host checks every checkEvery sweeps,
// replay the pass that converged midway so the grid is exactly the converged one, and report the
// sweeps and the residual.
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/pool.h"
#include "stencil/stencil.h"
#include "stencil/sweep.cuh"
#include "stencil/variants.cuh"

namespace ck {
namespace stencil {
namespace detail {

static_assert(sizeof(State) <= kHostWaitBytes, "a HostWait block holds the whole State");

// Copies `bytes` from device `src` to host `dst` once the work queued so far on `stream` is done,
// waiting as `w` says (see HostWait).
static cudaError_t readBack(const HostWait& w, void* dst, const void* src, size_t bytes,
                            cudaStream_t stream) {
  if (w.pinned == nullptr) {
    cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream);
    return err == cudaSuccess ? cudaStreamSynchronize(stream) : err;
  }
  cudaError_t err = cudaMemcpyAsync(w.pinned, src, bytes, cudaMemcpyDeviceToHost, stream);
  if (err == cudaSuccess) err = cudaEventRecord(w.event, stream);
  if (err == cudaSuccess) err = cudaEventSynchronize(w.event);
  if (err == cudaSuccess) std::memcpy(dst, w.pinned, bytes);
  return err;
}

// Waits for the work queued so far on `stream`, as `w` says.
static cudaError_t drain(const HostWait& w, cudaStream_t stream) {
  if (w.pinned == nullptr) return cudaStreamSynchronize(stream);
  const cudaError_t err = cudaEventRecord(w.event, stream);
  return err == cudaSuccess ? cudaEventSynchronize(w.event) : err;
}

// ---------------------------------------------------------------------------------------------
// Host side: launch passes, check every checkEvery sweeps, replay a pass that converged midway.

template <typename T>
class Runner {
 public:
  // fastVariant: an entry of fastKernelAt (3_temporal.cu), or −1 for the shipped choice.
  Runner(Method method, const Problem& pb, cudaStream_t stream, const HostWait& wait, int fastVariant = -1)
      : method_(method), pb_(pb), stream_(stream), wait_(wait), fastVariant_(fastVariant) {
    for (int i = 0; i < 9; ++i) w_.w[i] = static_cast<T>(pb.weights[i]);
  }

  cudaError_t prepare(const T* in, const T* a, const T* b) {
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device);
    if (err != cudaSuccess) return err;
    if (method_ == Method::Tiled) {
      int perSm = 0;
      err = tiledBlocksPerSm<T>(&perSm);
      blocks_ = sms_ * (perSm > 0 ? perSm : 1);
    } else if (method_ == Method::Fast) {
      err = prepareFast<T>(device, sms_, pb_, in, a, b, fastVariant_, &fast_);
    }
    return err;
  }

  int sweepsPerPass() const { return method_ == Method::Fast ? kMaxPassSweeps : 1; }

  cudaError_t launch(const T* src, T* dst, State* st, const Pass& p) {
    const long long rows = pb_.rows, cols = pb_.cols;
    switch (method_) {
      case Method::Basic: return launchBasic<T>(src, dst, rows, cols, w_, st, p, pb_.tolerance, stream_);
      case Method::Tiled:
        return launchTiled<T>(src, dst, rows, cols, blocks_, w_, st, p, pb_.tolerance, stream_);
      case Method::Fast: return launchFast<T>(fast_, src, dst, rows, cols, w_, st, p, pb_.tolerance, stream_);
    }
    return cudaGetLastError();
  }

  cudaError_t finalResidual(const T* a, const T* b, State* st, double* out) {
    cudaError_t err = cudaMemsetAsync(&st->finalResidual, 0, sizeof st->finalResidual, stream_);
    const long long n = pb_.rows * pb_.cols;
    const long long want = (n + 255) / 256, cap = static_cast<long long>(sms_) * 8;
    if (err == cudaSuccess)
      err = launchMaxAbsDiff<T>(a, b, n, static_cast<unsigned>(want < cap ? want : cap), st, stream_);
    unsigned long long bits = 0;
    if (err == cudaSuccess) err = readBack(wait_, &bits, &st->finalResidual, sizeof bits, stream_);
    *out = static_cast<double>(fromBits<T>(bits));
    return err;
  }

 private:
  Method method_;
  Problem pb_;
  cudaStream_t stream_;
  HostWait wait_;
  int fastVariant_;
  Weights<T> w_;
  int sms_ = 1;
  long long blocks_ = 1;
  FastPlan<T> fast_;
};

template <typename T>
cudaError_t runTyped(Method method, int fastVariant, const T* in, T* a, T* b, const Problem& pb,
                     cudaStream_t stream, const HostWait& wait, State* st, Result* result) {
  Runner<T> runner(method, pb, stream, wait, fastVariant);
  cudaError_t err = runner.prepare(in, a, b);
  if (err == cudaSuccess) err = cudaMemsetAsync(st, 0, sizeof(State), stream);
  if (err != cudaSuccess) return err;

  const int S = runner.sweepsPerPass();
  // Pass 0 reads `in` itself (no copy); pass p writes bufs[p % 2] and pass p + 1 reads it back. The
  // order of a and b is chosen so that a run to maxIterations ends in `a`.
  const long long maxPasses = (pb.maxIterations + S - 1) / S;
  T* bufs[2] = {a, b};
  if ((maxPasses - 1) % 2 == 1) std::swap(bufs[0], bufs[1]);
  auto source = [&](long long p) -> const T* { return p == 0 ? in : bufs[(p + 1) % 2]; };
  auto dest = [&](long long p) -> T* { return bufs[p % 2]; };
  // Passes are full (S sweeps) except the one that reaches maxIterations, so pass p starts at p·S.
  const long long chunk = (pb.checkEvery + S - 1) / S * S;
  long long launched = 0, pass = 0;
  int prevSweeps = 0;
  for (;;) {
    const long long target = launched + chunk < pb.maxIterations ? launched + chunk : pb.maxIterations;
    while (launched < target) {
      const int n = static_cast<int>(target - launched < S ? target - launched : S);
      err = runner.launch(source(pass), dest(pass), st, Pass{pass, n, prevSweeps, launched, true});
      if (err != cudaSuccess) return err;
      prevSweeps = n;
      launched += n;
      ++pass;
    }
    State h;
    err = readBack(wait, &h, st, sizeof h, stream);
    if (err != cudaSuccess) return err;

    const long long last = pass - 1;
    long long done = -1, where = -1;
    if (h.converged) {
      done = h.iterations;
      where = h.convergedPass;
    } else {
      for (int j = 0; j < prevSweeps; ++j) {
        if (static_cast<double>(fromBits<T>(h.residual[last % 3][j])) <= pb.tolerance) {
          done = last * S + j + 1;
          where = last;
          break;
        }
      }
    }
    if (done < 0 && launched < pb.maxIterations) continue;
    if (done < 0) {
      done = launched;
      where = last;
    }
    // Sweeps of pass `where` up to the converged one; the later passes were skipped, so that pass's
    // input is intact and a shorter replay of it leaves exactly the converged grid.
    const long long passFirst = where * S;
    const int needed = static_cast<int>(done - passFirst);
    const int ran = where == last ? prevSweeps : S;
    if (needed < ran) {
      err = runner.launch(source(where), dest(where), st, Pass{where + 1, needed, 0, passFirst, false});
      if (err != cudaSuccess) return err;
    }
    result->iterations = done;
    result->finalBuffer = dest(where) == a ? 0 : 1;
    if (method == Method::Basic) {
      // The flag is not the residual's value: measure it between the last two grids.
      err = runner.finalResidual(dest(where), source(where), st, &result->residual);
    } else {
      // A replay still running is waited for (and its errors caught) by run()'s final wait.
      result->residual = static_cast<double>(fromBits<T>(h.residual[where % 3][needed - 1]));
    }
    return err;
  }
}

cudaError_t runWith(Method method, int fastVariant, Dtype dtype, const void* in, void* a, void* b,
                    const Problem& pb, cudaStream_t stream, const HostWait& wait, Result* result) {
  if (pb.rows < 1 || pb.cols < 1 || pb.maxIterations < 1 || pb.checkEvery < 1) return cudaErrorInvalidValue;
  State* st = nullptr;
  cudaError_t err = poolMalloc(&st, sizeof(State), stream);
  if (err != cudaSuccess) return err;
  switch (dtype) {
    case Dtype::Float32:
      err = runTyped(method, fastVariant, static_cast<const float*>(in), static_cast<float*>(a),
                     static_cast<float*>(b), pb, stream, wait, st, result);
      break;
    case Dtype::Float64:
      err = runTyped(method, fastVariant, static_cast<const double*>(in), static_cast<double*>(a),
                     static_cast<double*>(b), pb, stream, wait, st, result);
      break;
    default: err = cudaErrorInvalidValue;
  }
  const cudaError_t freed = poolFree(st, stream);
  const cudaError_t synced = drain(wait, stream);
  if (err != cudaSuccess) return err;
  return freed != cudaSuccess ? freed : synced;
}

#ifdef CK_TUNING_VARIANTS
// Tuning hook for bench/dev/stencil (not part of the addon's interface; 3_temporal.cu has the others).
cudaError_t runFastVariant(int variant, Dtype dtype, const void* in, void* a, void* b, const Problem& pb,
                           cudaStream_t stream, Result* result) {
  return runWith(Method::Fast, variant, dtype, in, a, b, pb, stream, HostWait{}, result);
}
#endif

}  // namespace detail

cudaError_t run(Method method, Dtype dtype, const void* in, void* a, void* b, const Problem& pb,
                cudaStream_t stream, Result* result, const HostWait& wait) {
  return detail::runWith(method, -1, dtype, in, a, b, pb, stream, wait, result);
}

}  // namespace stencil
}  // namespace ck
