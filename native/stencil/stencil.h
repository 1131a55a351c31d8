// Periodic 3×3 stencil on a rows×cols grid (a torus), iterated until the largest change of a sweep
// is within a tolerance or a sweep limit is reached.
//
// The files, in study order: 1_basic.cu, 2_tiled.cu, 3_temporal.cu (each method's kernel and
// launchers); run.cu (the sweep loop, host checks and replay every method runs under), sweep.cuh
// (the weights and the device-side convergence state the kernels share), variants.cuh (the
// launchers run.cu calls); methods.cc (the table of methods); binding.cc (N-API).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace ck {
namespace stencil {

// The variants; stencil/methods.h has their names.
enum class Method : int { Basic = 0, Tiled = 1, Fast = 2 };

struct Problem {
  int64_t rows = 0, cols = 0;  // both >= 1
  // new[i][j] = Σ w[3a+b] · old[(i+a−1) mod rows][(j+b−1) mod cols], summed in the order a, b =
  // 0..2 (row-major), in the grid's own precision.
  double weights[9] = {};
  double tolerance = 0;       // stop after the first sweep whose residual is <= tolerance
  int64_t maxIterations = 1;  // >= 1
  int64_t checkEvery = 64;    // sweeps enqueued between host checks (>= 1); never changes results
};

struct Result {
  int64_t iterations = 0;  // sweeps done
  double residual = 0;     // max |new − old| of the last sweep (NaN if the grid holds NaN)
  int finalBuffer = 0;     // 0: the grid is in `a`, 1: in `b`
};

// Sweeps `in` → a/b → b/a … on `stream` (the first sweep reads `in`, which is never written) and
// waits for the GPU every `checkEvery` sweeps to decide whether to go on. The kernels themselves
// skip every sweep after the one that met the tolerance, so the sweep count never depends on
// checkEvery. A run to maxIterations ends in `a`; one that converges earlier may end in either
// (see Result::finalBuffer). a and b hold rows·cols elements of `dtype` (float32 or float64) and
// must not overlap `in` or each other. Returns the first CUDA error; on error a and b are undefined.
//
// Methods: Basic (the report's kernel: one thread per cell, modular indices, a shared "some cell
// changed by more than the tolerance" flag; the residual's value is reduced once at the end),
// Tiled (shared-memory tile with a one-cell halo, persistent blocks sized from the device's
// occupancy, exact residual by block reduction), Fast (temporal blocking: each block loads a tile
// with an 8-cell halo once, runs up to 8 sweeps in shared memory with a register sliding window,
// and keeps every sweep's residual exact, so convergence inside a pass is found and replayed).
//
// `wait` says how the host waits for the GPU at each check. By default it spins on the stream and reads
// the counters through pageable memory: the blocking stencil on the JS thread, the shortest wait.
// stencilAsync's pool thread passes a pinned block and a cudaEventBlockingSync event: it sleeps (no core
// busy for a run of seconds), and each wait covers only this run's work, not what other threads queue
// on the stream meanwhile.
struct HostWait {
  void* pinned = nullptr;  // page-locked, at least kHostWaitBytes; null: spin on the stream
  cudaEvent_t event = nullptr;
};
constexpr size_t kHostWaitBytes = 256;

cudaError_t run(Method method, Dtype dtype, const void* in, void* a, void* b, const Problem& problem,
                cudaStream_t stream, Result* result, const HostWait& wait = HostWait{});

}  // namespace stencil
}  // namespace ck
