// Pageable host → device uploads that block neither the caller nor any CUDA thread (copyFromAsync).
//
// The copy engines read only page-locked memory, so a pageable source must first be copied into
// pinned memory by a CPU (about 10 GB/s per thread). On the calling thread that blocks JavaScript
// (~20 ms per 256 MiB). An earlier version gated the library stream with a host function
// (cudaLaunchHostFunc) that waited for a thread staging the data with CUDA calls; it hung on the
// H100 twice: a host function that blocks holds the driver's callback thread, and later CUDA calls
// waited behind it (test-results/h100-2026-11-24/run3*, run4*).
//
// Here the gate is a stream memory operation instead. Each device has a ring of kSlots pinned slots
// and, in mapped pinned memory, two counters per slot: ready[s], written by our staging threads, and
// done[s], written by the GPU. Chunk number q of the device (counted across uploads) uses slot
// q % kSlots with generation g = q / kSlots + 1. At call time the caller enqueues on the library
// stream, per chunk,
//     cuStreamWaitValue32(ready[s] >= g)  cudaMemcpyAsync(dst, slot s)  cuStreamWriteValue32(done[s] = g)
// and returns, so the copy is ordered before any work enqueued after the call. Our staging threads
// copy chunk q from the source into slot s once done[s] >= g - 1 (the slot's previous chunk has been
// copied out), then publish ready[s] = g. They make no CUDA calls, and take a chunk only when its slot
// is already free, so a staging thread never waits for the GPU while holding work another upload needs.
//
// Plain C++/CUDA, no N-API. Uses the driver API through driverEntryPoint, core/driver_entry.h (nothing links
// libcuda at build time); where the driver or device lacks stream memory operations, stagedUpload()
// returns null and the caller stages on its own thread as before.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "errors.h"

namespace ck {

// Called once per upload that stagedUpload() accepted, from a staging thread (or the watchdog, or a
// thread whose enqueue failed): with null once every chunk has been copied out of the source (the
// device copies complete in stream order), else with the failure. Runs under the stager's lock: it
// must only hand the outcome on (a thread-safe function call), never wait.
using StagedDone = std::function<void(const CudaFailure* failure)>;

struct StagedJob;

// Starts copying `bytes` (> 0) from pageable `src` to device memory `dst` on `stream`, the library
// stream of `device` (current on the calling thread): everything the device does is enqueued before
// it returns. `src` must stay valid until `done` has been called or cancelStagedUpload() returned.
// Returns null, having done nothing, where the path is unavailable (stagedUploadInfo() says why).
// Throws CudaFailure when enqueuing failed; `done` is then never called, every wait this or another
// upload left on the device's stream is released (their data is undefined and their `done` reports
// the failure), and the device's later uploads take the caller's path.
std::shared_ptr<StagedJob> stagedUpload(int device, cudaStream_t stream, void* dst, const void* src,
                                        size_t bytes, StagedDone done);

// The source of `job` is going away (its environment is being torn down): returns once no staging
// thread reads it any more. `done` is not called after this returns. The job's remaining chunks still
// pass through the ring in their order, unread (their device copies write undefined data into the
// job's destination), so the uploads before and after it on the device are untouched. No-op for a
// finished job.
void cancelStagedUpload(const std::shared_ptr<StagedJob>& job);

// A large pageable upload was staged on the calling thread instead (counted for stagedUploadInfo).
void countStagedFallback(int device);

struct StagedUploadInfo {
  bool probed = false;     // a large pageable copyFromAsync has asked for the path on this device
  bool available = false;  // the probe passed: stream memory operations work here
  std::string reason;      // why not, when probed and unavailable
  uint64_t uploads = 0;    // uploads that took the stream-ordered path
  uint64_t fallbacks = 0;  // large pageable uploads staged on the calling thread
  int threads = 0;         // staging threads running (process-wide)
};

StagedUploadInfo stagedUploadInfo(int device);

#ifdef CK_TEST_HOOKS
// Test-only: fails the device's staged uploads as the watchdog does when the device reports a failure
// (their waits released, their `done` called with the failure, later uploads on the calling thread).
void debugFailStagedUploads(int device);
#endif

}  // namespace ck
