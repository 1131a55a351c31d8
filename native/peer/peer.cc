#include "peer/peer.h"

#include <mutex>
#include <utility>

#include "core/device.h"
#include "core/errors.h"
#include "core/pool.h"
#include "core/transfer.h"

namespace ck {
namespace peer {

namespace {

// An event created on (and recorded on streams of) the device current at construction.
struct Event {
  cudaEvent_t e = nullptr;
  Event() { CK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming)); }
  ~Event() {
    // Destroying an event whose record is still pending is allowed: CUDA releases it when it completes.
    if (e) cudaEventDestroy(e);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t release() { return std::exchange(e, nullptr); }
};

// `waiter` (a stream of any device) waits for the work queued so far on `stream` of `device`.
void streamAfter(cudaStream_t waiter, cudaStream_t stream, int device) {
  useDevice(device);
  Event ev;
  CK_CUDA(cudaEventRecord(ev.e, stream));
  CK_CUDA(cudaStreamWaitEvent(waiter, ev.e, 0));
}

struct HostRing {
  std::mutex mutex;
  char* base = nullptr;
  // When each chunk's last host → device copy is done (an event of that copy's device), or null.
  cudaEvent_t drained[kHostChunks] = {};
  int next = 0;
};

HostRing& hostRing() {
  // Never freed, like the library streams: pinned memory freed at exit would race the driver's teardown.
  static HostRing* ring = new HostRing();
  return *ring;
}

}  // namespace

bool canAccess(int a, int b) {
  useDevice(a);
  useDevice(b);
  if (a == b) return true;
  int can = 0;
  CK_CUDA(cudaDeviceCanAccessPeer(&can, a, b));
  return can != 0;
}

static void enableOneWay(int from, int to) {
  useDevice(from);
  const cudaError_t err = cudaDeviceEnablePeerAccess(to, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // not sticky, but it must not surface in a later call
    return;
  }
  CK_CUDA(err);
}

void enable(int a, int b) {
  static std::mutex mutex;
  if (a == b) {
    useDevice(a);
    return;
  }
  if (!canAccess(a, b) || !canAccess(b, a)) {
    throw CudaFailure("cudaErrorPeerAccessUnsupported", "cudaDeviceEnablePeerAccess",
                      "devices " + std::to_string(a) + " and " + std::to_string(b) +
                          " cannot access each other's memory (no peer path between them)");
  }
  std::lock_guard<std::mutex> lock(mutex);
  enableOneWay(a, b);
  enableOneWay(b, a);
  // Pool memory (every DeviceArray) does not follow cudaDeviceEnablePeerAccess.
  poolAllowPeer(a, b);
  poolAllowPeer(b, a);
}

void copyAsync(void* dst, int dstDevice, const void* src, int srcDevice, size_t bytes) {
  if (bytes == 0) return;
  cudaStream_t ss = libraryStream(srcDevice);
  cudaStream_t ds = libraryStream(dstDevice);
  if (srcDevice == dstDevice) {
    deviceCopyWithin(dst, src, bytes, ds);  // overlapping ranges of one array: through a temporary
    return;
  }
  streamAfter(ds, ss, srcDevice);  // the source's producers first
  useDevice(dstDevice);
  CK_CUDA(cudaMemcpyPeerAsync(dst, dstDevice, src, srcDevice, bytes, ds));
  streamAfter(ss, ds, dstDevice);  // the source's later writers after the copy has read it
}

void copyViaHostAsync(void* dst, int dstDevice, const void* src, int srcDevice, size_t bytes) {
  if (bytes == 0) return;
  cudaStream_t ss = libraryStream(srcDevice);
  cudaStream_t ds = libraryStream(dstDevice);
  if (srcDevice == dstDevice && rangesOverlap(dst, src, bytes)) {
    // Chunk by chunk, a later chunk would read what an earlier one already overwrote.
    deviceCopyWithin(dst, src, bytes, ds);
    return;
  }
  HostRing& ring = hostRing();
  std::lock_guard<std::mutex> lock(ring.mutex);
  if (!ring.base) {
    CK_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&ring.base), kHostChunks * kHostChunkBytes,
                          cudaHostAllocPortable));
  }
  // The source stream also waits for the destination's queued work, so that a timer on the
  // destination's stream sees the whole copy (and so that nothing reads ahead of a caller's order).
  if (srcDevice != dstDevice) streamAfter(ss, ds, dstDevice);
  for (size_t off = 0; off < bytes; off += kHostChunkBytes) {
    const size_t len = bytes - off < kHostChunkBytes ? bytes - off : kHostChunkBytes;
    const int c = ring.next;
    ring.next = (ring.next + 1) % kHostChunks;
    char* chunk = ring.base + static_cast<size_t>(c) * kHostChunkBytes;
    useDevice(srcDevice);
    if (ring.drained[c]) CK_CUDA(cudaStreamWaitEvent(ss, ring.drained[c], 0));
    CK_CUDA(cudaMemcpyAsync(chunk, static_cast<const char*>(src) + off, len, cudaMemcpyDeviceToHost, ss));
    Event full;
    CK_CUDA(cudaEventRecord(full.e, ss));
    useDevice(dstDevice);
    CK_CUDA(cudaStreamWaitEvent(ds, full.e, 0));
    CK_CUDA(cudaMemcpyAsync(static_cast<char*>(dst) + off, chunk, len, cudaMemcpyHostToDevice, ds));
    Event drained;
    CK_CUDA(cudaEventRecord(drained.e, ds));
    if (ring.drained[c]) cudaEventDestroy(ring.drained[c]);
    ring.drained[c] = drained.release();
  }
}

}  // namespace peer
}  // namespace ck
