// Host ↔ device transfers: page-locked (pinned) host memory, the staging blocks and rings that let
// pageable transfers run at the link's rate, and copies within one device array.
//
// Why staging: the copy engines read and write only page-locked memory. Given pageable memory the
// driver stages it through a small buffer of its own and returns only when done (9.8 GB/s down,
// 5.5 GB/s up for 256 MiB on the H100), so a copy cannot be enqueued now and finished later. We copy
// through our own pinned blocks instead: small transfers through one block (enqueued at call time,
// the host copy after), large ones through a ring of 4 blocks, the host copies of one block
// overlapping the DMA of the next and split over a few threads (host memcpy alone reaches ~9 GB/s
// on one thread, ~27 GB/s on eight).
//
// Plain C++/CUDA, no N-API. Functions throw CudaFailure unless they return cudaError_t.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ck {

// ---- Pinned host memory handed to users (pinned(dtype, n)) -----------------------------------

// One cudaHostAlloc'd block. `pending` counts asynchronous transfers still using it: free() then
// only marks it, and the last transfer to finish releases it.
struct PinnedBlock {
  void* ptr = nullptr;
  size_t bytes = 0;
  int pending = 0;
  bool freed = false;     // the user freed it (its ArrayBuffer is detached)
  bool released = false;  // cudaFreeHost done
  bool orphaned = false;  // its ArrayBuffer is gone: the last transfer deletes the record
};

// Page-locked, portable (usable from every device) memory of `bytes` (at least 1), registered so that
// findPinned() recognises it.
PinnedBlock* pinnedAllocate(size_t bytes);
// Marks the block freed; releases it now unless transfers are pending. Idempotent.
void pinnedMarkFreed(PinnedBlock* block);
// A transfer using the block started / ended (the end releases a freed block).
void pinnedRetain(PinnedBlock* block);
void pinnedRelease(PinnedBlock* block);
// The ArrayBuffer's finalizer: releases the block (once no transfer uses it) and forgets it.
void pinnedDestroy(PinnedBlock* block);
// The live block holding [ptr, ptr + bytes), or null: memory that transfers can use directly.
PinnedBlock* findPinned(const void* ptr, size_t bytes);

// ---- Staging ---------------------------------------------------------------------------------

// Transfers up to this size go through one staging block; larger ones through a ring.
constexpr size_t kStageMax = size_t{1} << 20;

// A pinned block of at least the asked size, from a cache that keeps what it allocated
// (cudaHostAlloc costs ~1 ms even for 4 KiB, so it must not happen per call). Blocks are cut from
// slabs; trimHostStaging() gives back the slabs none of whose blocks is in use.
struct Staging {
  char* ptr = nullptr;
  size_t capacity = 0;
  int cls = 0;
  cudaEvent_t event = nullptr;  // when recycled in stream order: the point after its last use
  int eventDevice = -1;
  bool recorded = false;
  struct StageSlab* slab = nullptr;
};

// The pinned bytes that staging blocks handed out may hold at once. Past it, stagingAcquire first
// waits for blocks recycled in stream order, and stagingTryAcquire refuses (toHost() of a small
// array then snapshots on the device instead of holding a block until its promise settles).
constexpr size_t kStageBudget = size_t{64} << 20;

// bytes <= kStageMax. The block is free to write on the host (its last use has finished). Over the
// budget it waits for recycled blocks (the oldest first) before taking more memory.
Staging* stagingAcquire(size_t bytes);
// The same, or null instead of going over the budget.
Staging* stagingTryAcquire(size_t bytes);
// The same, never waiting and never refusing: for the few bytes of results a Promise form copies back
// at the call and holds until it settles (reduceAsync, evaluateAsync). Waiting here would block the
// event loop behind GPU work queued by others. Up to kStageSmall bytes come from blocks of that size,
// so each call in flight pins that little.
Staging* stagingAcquireNoWait(size_t bytes);
// The smallest block class: result words, the stencil's wait block.
constexpr size_t kStageSmall = 256;
// Back to the cache once the work queued so far on `stream` (of the current device) is done.
void stagingRecycle(Staging* s, cudaStream_t stream);
// Back to the cache now (the caller has waited for every use of it).
void stagingRelease(Staging* s);
// Records the block's event on `stream` (current device) so that a thread can wait for it.
void stagingRecord(Staging* s, cudaStream_t stream);

// Pinned host memory the transfers keep for reuse (staging slabs and rings), process-wide.
struct HostStagingStats {
  size_t reserved = 0;   // page-locked bytes held: slabs and rings
  size_t used = 0;       // of which handed out now (blocks in use, rings leased)
  size_t highWater = 0;  // the most `used` has been
};
HostStagingStats hostStagingStats();
// Gives back the slabs and rings not in use (after reaping blocks whose transfers have finished).
// cudaFreeHost may wait for the device: callers are the explicit trims (trimMemoryPool).
void trimHostStaging();

// A ring of kRingSlots pinned blocks for one large transfer, from a cache (allocated on first use,
// ~64 MiB). Not capped: a transfer never waits for another one's ring (that could deadlock behind a
// stream that waits for this thread). The lease waits for the previous transfer's last copies.
constexpr int kRingSlots = 4;
constexpr size_t kRingSlotBytes = size_t{16} << 20;
class RingLease {
 public:
  RingLease();
  ~RingLease();
  RingLease(const RingLease&) = delete;
  RingLease& operator=(const RingLease&) = delete;

  char* slot(int i) const;
  // Waits for the copy last recorded on slot i (a no-op when none is).
  void waitSlot(int i);
  // Records slot i's event on `stream` (current device): the point after its copy.
  void record(int i, cudaStream_t stream);

 private:
  void giveBack();
  struct TransferRing* ring_ = nullptr;
};

// The chunk a ring transfer of `bytes` is cut into (a transfer of a few MiB still overlaps).
size_t ringChunk(size_t bytes);

// Device → pageable host through a ring, on `stream` of the current device. Returns when `dst`
// holds the data. Ordered after the work queued so far on `stream`.
void ringDownload(void* dst, const void* src, size_t bytes, cudaStream_t stream);
// Pageable host → device through a ring, on `stream` of the current device. Returns as soon as
// `src` has been read; the device copies complete in the order of `stream`.
void ringUpload(void* dst, const void* src, size_t bytes, cudaStream_t stream);

// memcpy split over a few host threads for large sizes: hostCopySplit(…, hostCopyParts(bytes)).
void hostCopy(void* dst, const void* src, size_t bytes);
// The parts hostCopy splits `bytes` into: one per 2 MiB, at most half the hardware threads (≤ 8),
// or CK_HOST_COPY_THREADS (a test knob).
size_t hostCopyParts(size_t bytes);
// memcpy in `parts` page-aligned pieces, each but the first on a thread of its own.
void hostCopySplit(void* dst, const void* src, size_t bytes, size_t parts);

// ---- Within a device -------------------------------------------------------------------------

// Whether [a, a + bytes) and [b, b + bytes) share a byte (pointers of one device).
inline bool rangesOverlap(const void* a, const void* b, size_t bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return bytes > 0 && x < y + bytes && y < x + bytes;
}

// Device-to-device copy on `stream` (current device) that is correct when the ranges overlap
// (memmove): cudaMemcpyAsync's result is undefined for overlap, so it copies through a temporary
// from the pool then. Identical ranges copy nothing.
void deviceCopyWithin(void* dst, const void* src, size_t bytes, cudaStream_t stream);

}  // namespace ck
