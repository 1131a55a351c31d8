#include "transfer.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "errors.h"
#include "pool.h"

namespace ck {

// ---- Pinned host memory handed to users ------------------------------------------------------

namespace {

struct PinnedRegistry {
  std::mutex mutex;
  std::map<uintptr_t, PinnedBlock*> live;  // by start address
};

PinnedRegistry& registry() {
  static PinnedRegistry* r = new PinnedRegistry();
  return *r;
}

// Caller holds the registry's mutex.
void releaseLocked(PinnedRegistry& r, PinnedBlock* b) {
  if (b->released) return;
  b->released = true;
  r.live.erase(reinterpret_cast<uintptr_t>(b->ptr));
  // Errors cannot be reported from the places that get here (finalizers, the end of a transfer).
  if (cudaFreeHost(b->ptr) != cudaSuccess) cudaGetLastError();
}

}  // namespace

PinnedBlock* pinnedAllocate(size_t bytes) {
  void* p = nullptr;
  const cudaError_t err = cudaHostAlloc(&p, std::max<size_t>(bytes, 1), cudaHostAllocPortable);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw CudaFailure(err, "cudaHostAlloc(" + std::to_string(bytes) + " bytes)");
  }
  // cudaHostAlloc does not promise zeroed memory (the driver may hand back pages it had before;
  // seen under synccheck on the H100), and pinned() documents a zero-filled array, as JS's are.
  std::memset(p, 0, bytes);
  auto* b = new PinnedBlock();
  b->ptr = p;
  b->bytes = bytes;
  PinnedRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live[reinterpret_cast<uintptr_t>(p)] = b;
  return b;
}

void pinnedMarkFreed(PinnedBlock* b) {
  PinnedRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  b->freed = true;
  if (b->pending == 0) releaseLocked(r, b);
}

void pinnedRetain(PinnedBlock* b) {
  PinnedRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  b->pending++;
}

void pinnedRelease(PinnedBlock* b) {
  bool drop = false;
  {
    PinnedRegistry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (--b->pending == 0 && b->freed) releaseLocked(r, b);
    drop = b->pending == 0 && b->orphaned;
  }
  if (drop) delete b;
}

void pinnedDestroy(PinnedBlock* b) {
  {
    PinnedRegistry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    b->freed = true;
    // A detached buffer can be collected while a copy still writes its memory: the copy's end frees it.
    if (b->pending > 0) {
      b->orphaned = true;
      return;
    }
    releaseLocked(r, b);
  }
  delete b;
}

PinnedBlock* findPinned(const void* ptr, size_t bytes) {
  if (ptr == nullptr) return nullptr;
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  PinnedRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.live.upper_bound(p);
  if (it == r.live.begin()) return nullptr;
  --it;
  PinnedBlock* b = it->second;
  return !b->freed && p - it->first + bytes <= b->bytes ? b : nullptr;
}

// ---- Staging blocks --------------------------------------------------------------------------

namespace {

// Two classes: 64 KiB blocks (cut from 1 MiB slabs) and 1 MiB blocks (from 4 MiB slabs).
constexpr size_t kClassBytes[2] = {size_t{64} << 10, kStageMax};
constexpr size_t kSlabBytes[2] = {size_t{1} << 20, size_t{4} << 20};

struct StageCache {
  std::mutex mutex;
  std::vector<Staging*> free[2];
  std::vector<Staging*> waiting;  // recycled in stream order, their events not yet seen complete
};

// Never freed: pinned memory freed at exit would race the driver's teardown.
StageCache& stageCache() {
  static StageCache* c = new StageCache();
  return *c;
}

// An event on the current device for `s`, recreated when the block moves to another device.
void ensureEvent(cudaEvent_t* event, int* eventDevice) {
  int device = 0;
  CK_CUDA(cudaGetDevice(&device));
  if (*event != nullptr && *eventDevice == device) return;
  if (*event != nullptr) cudaEventDestroy(*event);
  *event = nullptr;
  CK_CUDA(cudaEventCreateWithFlags(event, cudaEventDisableTiming));
  *eventDevice = device;
}

}  // namespace

Staging* stagingAcquire(size_t bytes) {
  const int cls = bytes <= kClassBytes[0] ? 0 : 1;
  StageCache& c = stageCache();
  std::lock_guard<std::mutex> lock(c.mutex);
  // Blocks whose last transfer has finished go back on their free lists.
  for (size_t i = 0; i < c.waiting.size();) {
    Staging* s = c.waiting[i];
    const cudaError_t q = cudaEventQuery(s->event);
    if (q == cudaErrorNotReady) {
      ++i;
      continue;
    }
    if (q != cudaSuccess) cudaGetLastError();
    s->recorded = false;
    c.free[s->cls].push_back(s);
    c.waiting[i] = c.waiting.back();
    c.waiting.pop_back();
  }
  if (c.free[cls].empty()) {
    char* slab = nullptr;
    const cudaError_t err =
        cudaHostAlloc(reinterpret_cast<void**>(&slab), kSlabBytes[cls], cudaHostAllocPortable);
    if (err != cudaSuccess) {
      cudaGetLastError();
      throw CudaFailure(err, "cudaHostAlloc(staging)");
    }
    for (size_t off = 0; off < kSlabBytes[cls]; off += kClassBytes[cls]) {
      auto* s = new Staging();
      s->ptr = slab + off;
      s->capacity = kClassBytes[cls];
      s->cls = cls;
      c.free[cls].push_back(s);
    }
  }
  Staging* s = c.free[cls].back();
  c.free[cls].pop_back();
  return s;
}

void stagingRecord(Staging* s, cudaStream_t stream) {
  ensureEvent(&s->event, &s->eventDevice);
  CK_CUDA(cudaEventRecord(s->event, stream));
  s->recorded = true;
}

void stagingRecycle(Staging* s, cudaStream_t stream) {
  try {
    stagingRecord(s, stream);
  } catch (...) {
    // Without an event we cannot tell when the copy is done: wait for it here instead.
    cudaStreamSynchronize(stream);
    cudaGetLastError();
    stagingRelease(s);
    throw;
  }
  StageCache& c = stageCache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.waiting.push_back(s);
}

void stagingRelease(Staging* s) {
  StageCache& c = stageCache();
  std::lock_guard<std::mutex> lock(c.mutex);
  s->recorded = false;
  c.free[s->cls].push_back(s);
}

// ---- Host copies -----------------------------------------------------------------------------

void hostCopy(void* dst, const void* src, size_t bytes) {
  // Below a few MiB a thread's start costs more than it saves.
  constexpr size_t kPart = size_t{2} << 20;
  static const size_t kThreads = std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 1, 8);
  const size_t parts = std::min(kThreads, bytes / kPart);
  if (parts <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const size_t per = (bytes / parts + 4095) & ~size_t{4095};
  std::vector<std::thread> helpers;
  helpers.reserve(parts - 1);
  for (size_t i = 1; i < parts; ++i) {
    const size_t off = std::min(bytes, i * per), len = std::min(per, bytes - off);
    helpers.emplace_back(
        [=] { std::memcpy(static_cast<char*>(dst) + off, static_cast<const char*>(src) + off, len); });
  }
  std::memcpy(dst, src, std::min(per, bytes));
  for (auto& t : helpers) t.join();
}

// ---- Rings -----------------------------------------------------------------------------------

namespace {

constexpr int kSlots = 4;
constexpr size_t kSlotBytes = size_t{16} << 20;

struct Ring {
  char* base = nullptr;
  cudaEvent_t events[kSlots] = {};
  int eventDevice[kSlots] = {-1, -1, -1, -1};
  bool recorded[kSlots] = {};
  char* slot(int i) const { return base + static_cast<size_t>(i) * kSlotBytes; }
};

struct RingCache {
  std::mutex mutex;
  std::vector<Ring*> free;
};

RingCache& ringCache() {
  static RingCache* c = new RingCache();
  return *c;
}

// A ring for one transfer, returned on destruction. Not capped: a transfer never waits for another
// one's ring (that could deadlock behind a stream that waits for this thread), so concurrent large
// transfers each get their own 64 MiB, kept for reuse.
class RingLease {
 public:
  RingLease() {
    {
      RingCache& c = ringCache();
      std::lock_guard<std::mutex> lock(c.mutex);
      if (!c.free.empty()) {
        ring_ = c.free.back();
        c.free.pop_back();
      }
    }
    if (ring_ == nullptr) {
      auto* r = new Ring();
      const cudaError_t err =
          cudaHostAlloc(reinterpret_cast<void**>(&r->base), kSlots * kSlotBytes, cudaHostAllocPortable);
      if (err != cudaSuccess) {
        delete r;
        cudaGetLastError();
        throw CudaFailure(err, "cudaHostAlloc(transfer ring)");
      }
      ring_ = r;
    }
    // The previous transfer's last copies may still read the slots.
    for (int i = 0; i < kSlots; ++i) waitSlot(i);
  }
  ~RingLease() {
    RingCache& c = ringCache();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.free.push_back(ring_);
  }
  RingLease(const RingLease&) = delete;
  RingLease& operator=(const RingLease&) = delete;

  char* slot(int i) const { return ring_->slot(i); }
  void waitSlot(int i) {
    if (!ring_->recorded[i]) return;
    CK_CUDA(cudaEventSynchronize(ring_->events[i]));
    ring_->recorded[i] = false;
  }
  void record(int i, cudaStream_t stream) {
    ensureEvent(&ring_->events[i], &ring_->eventDevice[i]);
    CK_CUDA(cudaEventRecord(ring_->events[i], stream));
    ring_->recorded[i] = true;
  }

 private:
  Ring* ring_ = nullptr;
};

// Chunks small enough that a transfer of a few MiB still overlaps, large enough that the per-chunk
// cost (an event, a thread start) stays small.
size_t chunkFor(size_t bytes) {
  const size_t quarter = ((bytes + kSlots - 1) / kSlots + 65535) & ~size_t{65535};
  return std::clamp(quarter, size_t{1} << 20, kSlotBytes);
}

}  // namespace

void ringDownload(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  RingLease ring;
  const size_t chunk = chunkFor(bytes);
  const size_t n = (bytes + chunk - 1) / chunk;
  auto issue = [&](size_t k) {
    const int i = static_cast<int>(k % kSlots);
    const size_t off = k * chunk, len = std::min(chunk, bytes - off);
    CK_CUDA(cudaMemcpyAsync(ring.slot(i), static_cast<const char*>(src) + off, len, cudaMemcpyDeviceToHost,
                            stream));
    ring.record(i, stream);
  };
  for (size_t k = 0; k < std::min<size_t>(kSlots, n); ++k) issue(k);
  for (size_t j = 0; j < n; ++j) {
    const int i = static_cast<int>(j % kSlots);
    const size_t off = j * chunk, len = std::min(chunk, bytes - off);
    ring.waitSlot(i);
    hostCopy(static_cast<char*>(dst) + off, ring.slot(i), len);
    if (j + kSlots < n) issue(j + kSlots);
  }
}

void ringUpload(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  RingLease ring;
  const size_t chunk = chunkFor(bytes);
  const size_t n = (bytes + chunk - 1) / chunk;
  for (size_t k = 0; k < n; ++k) {
    const int i = static_cast<int>(k % kSlots);
    const size_t off = k * chunk, len = std::min(chunk, bytes - off);
    ring.waitSlot(i);  // drained by the copy of chunk k - kSlots
    hostCopy(ring.slot(i), static_cast<const char*>(src) + off, len);
    CK_CUDA(
        cudaMemcpyAsync(static_cast<char*>(dst) + off, ring.slot(i), len, cudaMemcpyHostToDevice, stream));
    ring.record(i, stream);
  }
}

// ---- Within a device -------------------------------------------------------------------------

void deviceCopyWithin(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return;
  if (!rangesOverlap(dst, src, bytes)) {
    CK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  void* temp = nullptr;
  CK_CUDA(poolMalloc(&temp, bytes, stream));
  cudaError_t err = cudaMemcpyAsync(temp, src, bytes, cudaMemcpyDeviceToDevice, stream);
  if (err == cudaSuccess) err = cudaMemcpyAsync(dst, temp, bytes, cudaMemcpyDeviceToDevice, stream);
  const cudaError_t freed = poolFree(temp, stream);
  check(err, "cudaMemcpyAsync(through a temporary: the ranges overlap)");
  check(freed, "cudaFreeAsync");
}

}  // namespace ck
