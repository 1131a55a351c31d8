// Peer access between devices and copies between them, on the library's streams.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ck {
namespace peer {

// Whether device `a` can map device `b`'s memory (cudaDeviceCanAccessPeer). Throws CudaFailure for a
// device that does not exist.
bool canAccess(int a, int b);

// Lets `a` access `b`'s memory and `b` access `a`'s. Idempotent: a pair already enabled (by this
// library or by anyone else in the process) is not an error. A no-op when a == b. Throws CudaFailure
// (cudaErrorPeerAccessUnsupported) when the hardware cannot.
void enable(int a, int b);

// Copies `bytes` from `src` (on srcDevice) to `dst` (on dstDevice), enqueued without waiting: on the
// destination's library stream after the work already queued on both devices' library streams, and
// later work on the source's library stream waits for it (it may overwrite the source). Uses the
// direct path where peer access is enabled; cudaMemcpyPeerAsync stages through the host otherwise.
// Overlapping ranges on one device (one array) are copied as by memmove, through a temporary.
void copyAsync(void* dst, int dstDevice, const void* src, int srcDevice, size_t bytes);

// The same copy through pinned host memory (a process-wide ring of kHostChunks chunks of
// kHostChunkBytes, allocated on first use): device → host on the source's stream, host → device on the
// destination's, chunk by chunk so the two directions overlap. For comparison with copyAsync, and
// where peer access is impossible. Overlapping ranges on one device go through a device temporary.
void copyViaHostAsync(void* dst, int dstDevice, const void* src, int srcDevice, size_t bytes);

constexpr int kHostChunks = 4;
constexpr size_t kHostChunkBytes = size_t{32} << 20;

}  // namespace peer
}  // namespace ck
