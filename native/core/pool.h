// The library's stream-ordered memory pool, one per device, behind every device allocation:
// DeviceArrays and every launcher's workspace.
//
// Why a pool of our own: cudaMalloc/cudaFree cost tens of microseconds and cudaFree waits for the
// whole device; cudaMallocAsync on the device's default pool is cheap only while the pool keeps its
// memory, and the default pool gives it back to the driver at every synchronize (its release
// threshold is 0), so a workspace allocated per call cost ~130 µs on the H100. Our pool keeps what
// it reserved (release threshold = max) until trim() is asked for, and leaves the default pool, which
// a user's own CUDA code in the process may rely on, untouched.
//
// Ordering: an allocation is ready, and a free takes effect, in the order of `stream`. The library
// enqueues all work on an array's device's library stream (or joins its side streams back into it
// before returning), so freeing on that stream is ordered after the array's last use without
// waiting for anything on the host.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ck {

// Allocates `bytes` from the pool of the current device, ready in the order of `stream`. When the
// device is out of memory it waits for the library stream, returns the pool's unused memory to the
// driver and tries once more. Returns cudaErrorMemoryAllocation when it still does not fit; a
// 0-byte request gives a null pointer. For launchers (no exceptions): check the result.
cudaError_t poolMalloc(void** ptr, size_t bytes, cudaStream_t stream);

template <typename T>
cudaError_t poolMalloc(T** ptr, size_t bytes, cudaStream_t stream) {
  return poolMalloc(reinterpret_cast<void**>(ptr), bytes, stream);
}

// Returns memory from poolMalloc, in the order of `stream` (no host wait). Null is a no-op. Call it
// only after every operation that uses the memory has been enqueued, on any stream: the allocation
// is retired at the call, and later enqueues that name it are refused.
cudaError_t poolFree(void* ptr, cudaStream_t stream);

struct PoolStats {
  size_t used = 0;        // bytes handed out and not yet freed
  size_t reserved = 0;    // bytes the pool holds from the driver (used + cached for reuse)
  size_t highWater = 0;   // the most `used` has been since the process started
  size_t oomRetries = 0;  // allocations that found the device full and trimmed the pool to retry
};

// The pool of `device`; throws CudaFailure for a device that does not exist.
PoolStats poolStats(int device);

// Waits for the device's library stream (so that pending frees have taken effect), then gives the
// pool's unused memory back to the driver until at most `keepBytes` stay reserved.
void poolTrim(int device, size_t keepBytes);

// Lets `peer` read and write memory of `owner`'s pool (pool memory does not follow
// cudaDeviceEnablePeerAccess). Remembered for pools created later.
void poolAllowPeer(int owner, int peer);

}  // namespace ck
