#include "transfer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <system_error>
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

// A cudaHostAlloc'd slab cut into blocks of one class; given back when none of them is in use.
struct StageSlab {
  char* base = nullptr;
  size_t bytes = 0;
  int out = 0;  // its blocks not on a free list (handed out, or waiting for their stream)
};

namespace {

// Three classes: 256-byte blocks (cut from 64 KiB slabs), 64 KiB blocks (from 1 MiB slabs) and 1 MiB
// blocks (from 4 MiB slabs). The smallest serve the result words that Promise forms hold until they
// settle: a 64 KiB block each pinned 64 KiB per call in flight (190 MiB for 3,000 reduceAsync calls).
constexpr int kClasses = 3;
constexpr size_t kClassBytes[kClasses] = {kStageSmall, size_t{64} << 10, kStageMax};
constexpr size_t kSlabBytes[kClasses] = {size_t{64} << 10, size_t{1} << 20, size_t{4} << 20};

struct StageCache {
  std::mutex mutex;
  std::vector<Staging*> free[kClasses];
  std::vector<Staging*> waiting;  // recycled in stream order, their events not yet seen complete
  std::vector<StageSlab*> slabs;
  size_t reserved = 0;  // bytes of every slab
  size_t used = 0;      // bytes of the blocks not on a free list
  size_t highWater = 0;
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

// Caller holds c.mutex. A block back on its free list.
void putBack(StageCache& c, Staging* s) {
  s->recorded = false;
  c.used -= s->capacity;
  s->slab->out--;
  c.free[s->cls].push_back(s);
}

// Caller holds c.mutex. Blocks whose last transfer has finished go back on their free lists.
void reap(StageCache& c) {
  for (size_t i = 0; i < c.waiting.size();) {
    Staging* s = c.waiting[i];
    const cudaError_t q = cudaEventQuery(s->event);
    if (q == cudaErrorNotReady) {
      ++i;
      continue;
    }
    if (q != cudaSuccess) cudaGetLastError();
    c.waiting.erase(c.waiting.begin() + static_cast<std::ptrdiff_t>(i));  // keeps the oldest first
    putBack(c, s);
  }
}

// Caller holds c.mutex. A free block of class `cls`, cutting a new slab when there is none.
Staging* take(StageCache& c, int cls) {
  if (c.free[cls].empty()) {
    char* base = nullptr;
    const cudaError_t err =
        cudaHostAlloc(reinterpret_cast<void**>(&base), kSlabBytes[cls], cudaHostAllocPortable);
    if (err != cudaSuccess) {
      cudaGetLastError();
      throw CudaFailure(err, "cudaHostAlloc(staging)");
    }
    auto* slab = new StageSlab();
    slab->base = base;
    slab->bytes = kSlabBytes[cls];
    c.slabs.push_back(slab);
    c.reserved += slab->bytes;
    for (size_t off = 0; off < kSlabBytes[cls]; off += kClassBytes[cls]) {
      auto* s = new Staging();
      s->ptr = base + off;
      s->capacity = kClassBytes[cls];
      s->cls = cls;
      s->slab = slab;
      c.free[cls].push_back(s);
    }
  }
  Staging* s = c.free[cls].back();
  c.free[cls].pop_back();
  s->slab->out++;
  c.used += s->capacity;
  c.highWater = std::max(c.highWater, c.used);
  return s;
}

int classOf(size_t bytes) {
  for (int cls = 0; cls < kClasses - 1; ++cls)
    if (bytes <= kClassBytes[cls]) return cls;
  return kClasses - 1;
}

}  // namespace

Staging* stagingAcquire(size_t bytes) {
  const int cls = classOf(bytes);
  StageCache& c = stageCache();
  std::unique_lock<std::mutex> lock(c.mutex);
  reap(c);
  // Over the budget, wait for the oldest recycled blocks (their copies are queued on a stream) rather
  // than pin more memory: a loop of small uploads ahead of a busy GPU must not pin without bound.
  while (c.used + kClassBytes[cls] > kStageBudget && !c.waiting.empty()) {
    Staging* oldest = c.waiting.front();
    c.waiting.erase(c.waiting.begin());  // ours while we wait: nobody else reaps or reuses it
    lock.unlock();
    const cudaError_t err = cudaEventSynchronize(oldest->event);
    lock.lock();
    putBack(c, oldest);
    if (err != cudaSuccess) {
      cudaGetLastError();
      break;  // the device failed: the caller's own calls will say so
    }
    reap(c);
  }
  return take(c, cls);
}

Staging* stagingTryAcquire(size_t bytes) {
  const int cls = classOf(bytes);
  StageCache& c = stageCache();
  std::lock_guard<std::mutex> lock(c.mutex);
  reap(c);
  if (c.used + kClassBytes[cls] > kStageBudget) return nullptr;
  return take(c, cls);
}

Staging* stagingAcquireNoWait(size_t bytes) {
  StageCache& c = stageCache();
  std::lock_guard<std::mutex> lock(c.mutex);
  reap(c);
  return take(c, classOf(bytes));
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
  putBack(c, s);
}

namespace {

// Caller holds c.mutex. Frees the slabs none of whose blocks is out.
void trimSlabs(StageCache& c) {
  reap(c);
  std::vector<StageSlab*> keep;
  for (StageSlab* slab : c.slabs) {
    if (slab->out > 0) {
      keep.push_back(slab);
      continue;
    }
    for (auto& list : c.free) {
      for (size_t i = 0; i < list.size();) {
        Staging* s = list[i];
        if (s->slab != slab) {
          ++i;
          continue;
        }
        if (s->event != nullptr) cudaEventDestroy(s->event);
        delete s;
        list[i] = list.back();
        list.pop_back();
      }
    }
    if (cudaFreeHost(slab->base) != cudaSuccess) cudaGetLastError();
    c.reserved -= slab->bytes;
    delete slab;
  }
  c.slabs = std::move(keep);
}

}  // namespace

// ---- Host copies -----------------------------------------------------------------------------

namespace {

// Below a few MiB a part's thread costs more than it saves.
constexpr size_t kHostCopyPart = size_t{2} << 20;

size_t hostCopyThreads() {
  static const size_t threads = [] {
    // CK_HOST_COPY_THREADS: the tests force the part count the GPU hosts' core count gives.
    if (const char* forced = std::getenv("CK_HOST_COPY_THREADS"); forced != nullptr && *forced != '\0') {
      const long n = std::strtol(forced, nullptr, 10);
      if (n >= 1 && n <= 64) return static_cast<size_t>(n);
    }
    return std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 1, 8);
  }();
  return threads;
}

}  // namespace

size_t hostCopyParts(size_t bytes) {
  return std::max<size_t>(1, std::min(hostCopyThreads(), bytes / kHostCopyPart));
}

void hostCopySplit(void* dst, const void* src, size_t bytes, size_t parts) {
  if (parts <= 1 || bytes == 0) {
    std::memcpy(dst, src, bytes);
    return;
  }
  // The ceiling of bytes / parts, then up to a whole page: parts × per covers every byte. (Rounding
  // the floor up to a page lost the last bytes % parts bytes whenever the floor was already a
  // whole number of pages.) Parts past the end are empty.
  const size_t per = ((bytes + parts - 1) / parts + 4095) & ~size_t{4095};
  auto part = [=](size_t i) {
    const size_t off = std::min(bytes, i * per), len = std::min(per, bytes - off);
    if (len > 0) std::memcpy(static_cast<char*>(dst) + off, static_cast<const char*>(src) + off, len);
  };
  std::vector<std::thread> helpers;
  helpers.reserve(parts - 1);
  try {
    for (size_t i = 1; i < parts; ++i) helpers.emplace_back(part, i);
  } catch (const std::system_error&) {
    // No thread to be had: this thread copies the parts that have none.
    for (size_t i = helpers.size() + 1; i < parts; ++i) part(i);
  }
  part(0);
  for (auto& t : helpers) t.join();
}

void hostCopy(void* dst, const void* src, size_t bytes) {
  hostCopySplit(dst, src, bytes, hostCopyParts(bytes));
}

// ---- Rings -----------------------------------------------------------------------------------

struct TransferRing {
  char* base = nullptr;
  cudaEvent_t events[kRingSlots] = {};
  int eventDevice[kRingSlots] = {-1, -1, -1, -1};
  bool recorded[kRingSlots] = {};
};

namespace {

struct RingCache {
  std::mutex mutex;
  std::vector<TransferRing*> free;
  size_t rings = 0;   // every ring allocated and not trimmed
  size_t leased = 0;  // of which in use
  size_t highWater = 0;
};

RingCache& ringCache() {
  static RingCache* c = new RingCache();
  return *c;
}

constexpr size_t kRingBytes = kRingSlots * kRingSlotBytes;

}  // namespace

RingLease::RingLease() {
  RingCache& c = ringCache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (!c.free.empty()) {
      ring_ = c.free.back();
      c.free.pop_back();
      c.leased++;
    }
  }
  if (ring_ == nullptr) {
    auto* r = new TransferRing();
    const cudaError_t err =
        cudaHostAlloc(reinterpret_cast<void**>(&r->base), kRingBytes, cudaHostAllocPortable);
    if (err != cudaSuccess) {
      delete r;
      cudaGetLastError();
      throw CudaFailure(err, "cudaHostAlloc(transfer ring)");
    }
    ring_ = r;
    std::lock_guard<std::mutex> lock(c.mutex);
    c.rings++;
    c.leased++;
  }
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.highWater = std::max(c.highWater, c.leased);
  }
  // The previous transfer's last copies may still read the slots. A wait that fails is that transfer's
  // device failing (its copies will not run any more), not this transfer's, which may be on another
  // device: the slots are free either way. (Throwing here left the slots marked, so that every later
  // lease of the ring failed too, on every device.)
  for (int i = 0; i < kRingSlots; ++i) {
    if (ring_->recorded[i] && cudaEventSynchronize(ring_->events[i]) != cudaSuccess) cudaGetLastError();
    ring_->recorded[i] = false;
  }
}

RingLease::~RingLease() {
  giveBack();
}

void RingLease::giveBack() {
  if (ring_ == nullptr) return;
  RingCache& c = ringCache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.free.push_back(ring_);
  c.leased--;
  ring_ = nullptr;
}

char* RingLease::slot(int i) const {
  return ring_->base + static_cast<size_t>(i) * kRingSlotBytes;
}

void RingLease::waitSlot(int i) {
  if (!ring_->recorded[i]) return;
  // Unmarked first: after a failure the copy will not run either, and the next lease must not wait
  // for it again.
  ring_->recorded[i] = false;
  CK_CUDA(cudaEventSynchronize(ring_->events[i]));
}

void RingLease::record(int i, cudaStream_t stream) {
  ensureEvent(&ring_->events[i], &ring_->eventDevice[i]);
  CK_CUDA(cudaEventRecord(ring_->events[i], stream));
  ring_->recorded[i] = true;
}

size_t ringChunk(size_t bytes) {
  // Chunks small enough that a transfer of a few MiB still overlaps, large enough that the
  // per-chunk cost (an event, a thread start) stays small.
  const size_t quarter = ((bytes + kRingSlots - 1) / kRingSlots + 65535) & ~size_t{65535};
  return std::clamp(quarter, size_t{1} << 20, kRingSlotBytes);
}

// ---- Statistics and trimming -------------------------------------------------------------------

HostStagingStats hostStagingStats() {
  HostStagingStats out;
  {
    StageCache& c = stageCache();
    std::lock_guard<std::mutex> lock(c.mutex);
    reap(c);
    out.reserved = c.reserved;
    out.used = c.used;
    out.highWater = c.highWater;
  }
  RingCache& r = ringCache();
  std::lock_guard<std::mutex> lock(r.mutex);
  out.reserved += r.rings * kRingBytes;
  out.used += r.leased * kRingBytes;
  out.highWater += r.highWater * kRingBytes;
  return out;
}

void trimHostStaging() {
  {
    StageCache& c = stageCache();
    std::lock_guard<std::mutex> lock(c.mutex);
    trimSlabs(c);
  }
  RingCache& r = ringCache();
  std::vector<TransferRing*> drop;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    drop.swap(r.free);
    r.rings -= drop.size();
  }
  for (TransferRing* ring : drop) {
    for (int i = 0; i < kRingSlots; ++i) {
      // A ring goes back only after its copies were waited for; this wait is for safety's sake.
      if (ring->recorded[i]) cudaEventSynchronize(ring->events[i]);
      if (ring->events[i] != nullptr) cudaEventDestroy(ring->events[i]);
    }
    if (cudaFreeHost(ring->base) != cudaSuccess) cudaGetLastError();
    delete ring;
  }
  cudaGetLastError();
}

void ringDownload(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  RingLease ring;
  const size_t chunk = ringChunk(bytes);
  const size_t n = (bytes + chunk - 1) / chunk;
  auto issue = [&](size_t k) {
    const int i = static_cast<int>(k % kRingSlots);
    const size_t off = k * chunk, len = std::min(chunk, bytes - off);
    CK_CUDA(cudaMemcpyAsync(ring.slot(i), static_cast<const char*>(src) + off, len, cudaMemcpyDeviceToHost,
                            stream));
    ring.record(i, stream);
  };
  for (size_t k = 0; k < std::min<size_t>(kRingSlots, n); ++k) issue(k);
  for (size_t j = 0; j < n; ++j) {
    const int i = static_cast<int>(j % kRingSlots);
    const size_t off = j * chunk, len = std::min(chunk, bytes - off);
    ring.waitSlot(i);
    hostCopy(static_cast<char*>(dst) + off, ring.slot(i), len);
    if (j + kRingSlots < n) issue(j + kRingSlots);
  }
}

void ringUpload(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  RingLease ring;
  const size_t chunk = ringChunk(bytes);
  const size_t n = (bytes + chunk - 1) / chunk;
  for (size_t k = 0; k < n; ++k) {
    const int i = static_cast<int>(k % kRingSlots);
    const size_t off = k * chunk, len = std::min(chunk, bytes - off);
    ring.waitSlot(i);  // drained by the copy of chunk k - kRingSlots
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
