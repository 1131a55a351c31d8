#include "staged_upload.h"

// Types and enums of the driver API only: its functions come from driverEntryPoint.
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include "core/driver_entry.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ck {

namespace {

constexpr uint32_t kSlots = 8;
constexpr size_t kSlotBytes = size_t{4} << 20;
// Chunks small enough that an upload of a few MiB still spreads over several threads and overlaps
// its DMA, large enough that the three stream operations per chunk stay cheap.
constexpr size_t kMinChunk = size_t{256} << 10;

using Clock = std::chrono::steady_clock;
// A stalled upload (no chunk staged for this long) makes the watchdog ask the device why.
constexpr auto kStallCheck = std::chrono::milliseconds(1000);
// Idle pollers back off from kMinPoll to kMaxPoll while the GPU has not yet freed a slot.
constexpr auto kMinPoll = std::chrono::microseconds(20);
constexpr auto kMaxPoll = std::chrono::microseconds(1000);

using StreamValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

// The counters the GPU and our threads exchange: mapped, page-locked, cacheable host memory.
struct Flags {
  alignas(64) uint32_t ready[kSlots];  // written by our staging threads, waited on by the stream
  alignas(64) uint32_t done[kSlots];   // written by the stream, read by our staging threads
  alignas(64) uint32_t probe[2];
};

// Cyclic a >= b, the comparison CU_STREAM_WAIT_VALUE_GEQ makes.
inline bool reached(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(a - b) >= 0;
}

// Makes the slot's bytes visible to the device before the flag that says they are there. memcpy may
// use non-temporal stores, which an x86 release store does not order: a full fence does.
inline void publishFence() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_mfence();
#elif defined(__aarch64__)
  asm volatile("dmb sy" ::: "memory");
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

struct Ring {
  int device = 0;
  char* slots = nullptr;  // kSlots * kSlotBytes, page-locked (portable)
  Flags* flags = nullptr;
  CUdeviceptr flagsDevice = 0;
  uint64_t nextSeq = 0;    // the next chunk number (under the enqueue lock)
  bool held[kSlots] = {};  // a staging thread is writing the slot (under the stager's lock)
  bool poisoned = false;   // an enqueue failed or the device failed: no further uploads here

  char* slot(uint32_t s) const { return slots + static_cast<size_t>(s) * kSlotBytes; }
  CUdeviceptr readyAt(uint32_t s) const {
    return flagsDevice + offsetof(Flags, ready) + s * sizeof(uint32_t);
  }
  CUdeviceptr doneAt(uint32_t s) const { return flagsDevice + offsetof(Flags, done) + s * sizeof(uint32_t); }
  uint32_t done(uint32_t s) const { return __atomic_load_n(&flags->done[s], __ATOMIC_ACQUIRE); }
  // ready[s] only grows (cyclically): a release of an aborted upload never takes back a later one's.
  void publish(uint32_t s, uint32_t g) {
    if (reached(__atomic_load_n(&flags->ready[s], __ATOMIC_RELAXED), g)) return;
    publishFence();
    __atomic_store_n(&flags->ready[s], g, __ATOMIC_RELEASE);
  }
};

}  // namespace

struct StagedJob {
  Ring* ring = nullptr;
  int device = 0;
  cudaStream_t stream = nullptr;
  const char* src = nullptr;
  size_t bytes = 0;
  size_t chunk = 0;
  uint64_t base = 0;  // chunk k is number base + k of the ring
  uint32_t n = 0;     // chunks
  // Under the stager's lock:
  uint32_t next = 0;       // the next chunk to hand out
  uint32_t staged = 0;     // chunks published
  int active = 0;          // chunks a thread is copying now
  bool cancelled = false;  // the source is going away: chunks still pass in order, unread
  bool aborted = false;
  bool silent = false;  // `done` is not to be called (cancelled, or the enqueue failure was thrown)
  bool finished = false;
  Clock::time_point progress;
  std::unique_ptr<CudaFailure> failure;
  StagedDone done;

  uint32_t slotOf(uint32_t k) const { return static_cast<uint32_t>((base + k) % kSlots); }
  uint32_t genOf(uint32_t k) const { return static_cast<uint32_t>((base + k) / kSlots + 1); }
};

namespace {

struct DeviceEntry {
  bool probed = false;
  Ring* ring = nullptr;
  std::string reason;
  uint64_t uploads = 0;
  uint64_t fallbacks = 0;
};

// Process-wide, never destroyed: threads may still run while static destructors do.
struct Stager {
  std::mutex mutex;                            // everything below but `enqueue`
  std::condition_variable work;                // staging threads: new uploads, or another chunk may be free
  std::condition_variable left;                // an upload finished (no thread reads its source any more)
  std::condition_variable watch;               // the watchdog: uploads exist
  std::list<std::shared_ptr<StagedJob>> jobs;  // in the order of their chunks on each ring
  std::vector<DeviceEntry> devices;
  int pollers = 0;
  int threads = 0;
  bool started = false;
  bool shutdown = false;
  // Held across one upload's numbering and enqueuing, so that chunk numbers on a ring follow the
  // order of the waits on its stream (a chunk waits only for the ring's earlier chunks).
  std::mutex enqueue;
  StreamValue32 waitValue32 = nullptr;
  StreamValue32 writeValue32 = nullptr;
  std::string entryReason;  // why the entry points are missing; empty when found
  bool entriesLooked = false;
};

Stager& stager() {
  static Stager* s = new Stager();
  return *s;
}

DeviceEntry& entryOf(Stager& st, int device) {
  if (st.devices.size() <= static_cast<size_t>(device)) st.devices.resize(static_cast<size_t>(device) + 1);
  return st.devices[static_cast<size_t>(device)];
}

// Caller holds st.mutex. Ends the job when no thread copies for it and nothing is left to stage.
void maybeFinish(Stager& st, const std::shared_ptr<StagedJob>& job) {
  if (job->finished || job->active > 0 || !(job->aborted || job->staged == job->n)) return;
  job->finished = true;
  st.jobs.remove(job);
  st.left.notify_all();
  StagedDone done = std::move(job->done);
  job->done = nullptr;
  if (!job->silent && !st.shutdown && done) done(job->failure.get());
}

// Caller holds st.mutex. Stops handing out the job's chunks and releases every wait it left on the
// stream (the device then copies whatever the slots hold: undefined data, reported as a failure).
// Only for a ring that no upload can use any more (poison) or at exit: raising a slot's counter past
// an earlier upload's chunk would let that chunk's copy run before its data is staged.
void abortJob(Stager& st, const std::shared_ptr<StagedJob>& job, const CudaFailure* failure, bool silent) {
  if (job->finished) return;
  job->silent = job->silent || silent;
  if (!job->aborted) {
    job->aborted = true;
    if (failure != nullptr) job->failure = std::make_unique<CudaFailure>(*failure);
    // The last chunk of each slot carries the slot's highest generation.
    for (uint32_t k = job->n > kSlots ? job->n - kSlots : 0; k < job->n; ++k)
      job->ring->publish(job->slotOf(k), job->genOf(k));
  }
  maybeFinish(st, job);
}

// Caller holds st.mutex. No more uploads on the ring; all of its uploads fail with `failure`.
void poison(Stager& st, Ring* ring, const CudaFailure& failure) {
  ring->poisoned = true;
  std::vector<std::shared_ptr<StagedJob>> mine;
  for (auto& j : st.jobs)
    if (j->ring == ring) mine.push_back(j);
  for (auto& j : mine) abortJob(st, j, &failure, false);
}

void stagingThread() {
  Stager& st = stager();
  std::unique_lock<std::mutex> lock(st.mutex);
  auto poll = kMinPoll;
  for (;;) {
    if (st.shutdown) return;
    std::shared_ptr<StagedJob> job;
    uint32_t k = 0;
    bool pending = false;
    for (auto& j : st.jobs) {
      if (j->aborted || j->next >= j->n) continue;
      pending = true;
      const uint32_t s = j->slotOf(j->next);
      if (j->ring->held[s] || !reached(j->ring->done(s), j->genOf(j->next) - 1)) continue;
      job = j;
      k = j->next++;
      j->active++;
      j->ring->held[s] = true;
      break;
    }
    const bool read = job && !job->cancelled;
    if (!job) {
      // One thread polls the done counters while chunks wait for the GPU; the others sleep until it
      // finds work (it then wakes one of them to look for more).
      if (!pending || st.pollers > 0) {
        st.work.wait(lock);
      } else {
        st.pollers++;
        st.work.wait_for(lock, poll);
        st.pollers--;
        poll = std::min(poll * 2, kMaxPoll);
      }
      continue;
    }
    poll = kMinPoll;
    st.work.notify_one();
    lock.unlock();

    const uint32_t s = job->slotOf(k);
    const size_t off = static_cast<size_t>(k) * job->chunk;
    if (read) std::memcpy(job->ring->slot(s), job->src + off, std::min(job->chunk, job->bytes - off));

    lock.lock();
    job->ring->held[s] = false;
    if (!job->aborted) {
      // A cancelled job's chunk is published too, unread, in its turn: its slot's counter must pass
      // this generation before a later upload's can be reached.
      job->ring->publish(s, job->genOf(k));
      job->staged++;
      job->progress = Clock::now();
    }
    job->active--;
    if (job->cancelled) st.left.notify_all();
    maybeFinish(st, job);
  }
}

// Asks the device about uploads that have made no progress for a while: a device that has failed
// (a sticky error) never runs the waits' predecessors, and its uploads must fail rather than hang.
// The only thread of ours here that makes CUDA calls; the staging threads never wait for it.
void watchdogThread() {
  Stager& st = stager();
  std::unique_lock<std::mutex> lock(st.mutex);
  for (;;) {
    if (st.shutdown) return;
    if (st.jobs.empty()) {
      st.watch.wait(lock);
      continue;
    }
    st.watch.wait_for(lock, kStallCheck / 2);
    if (st.shutdown) return;
    const auto now = Clock::now();
    std::vector<std::shared_ptr<StagedJob>> stalled;
    for (auto& j : st.jobs)
      if (!j->aborted && now - j->progress > kStallCheck) stalled.push_back(j);
    if (stalled.empty()) continue;
    lock.unlock();
    std::vector<std::pair<std::shared_ptr<StagedJob>, cudaError_t>> failed;
    for (auto& j : stalled) {
      cudaError_t q = cudaSetDevice(j->device);
      if (q == cudaSuccess) q = cudaStreamQuery(j->stream);
      if (q != cudaSuccess && q != cudaErrorNotReady) failed.emplace_back(j, q);
      cudaGetLastError();
    }
    lock.lock();
    for (auto& [j, err] : failed) {
      if (j->finished || j->ring->poisoned) continue;
      poison(st, j->ring,
             CudaFailure(err, "copyFromAsync (the device failed while the upload waited for staging)"));
    }
  }
}

// At exit: stop staging and release every wait, so that neither a thread of ours writes into pinned
// memory the driver is tearing down nor the driver's teardown waits for a stream that waits for us.
// Registered after the CUDA runtime initialized, so it runs before the runtime's own exit handler.
void atExit() {
  Stager& st = stager();
  std::unique_lock<std::mutex> lock(st.mutex);
  st.shutdown = true;
  std::vector<std::shared_ptr<StagedJob>> all(st.jobs.begin(), st.jobs.end());
  for (auto& j : all) {
    j->silent = true;
    abortJob(st, j, nullptr, true);
  }
  st.work.notify_all();
  st.watch.notify_all();
  // Threads finish the chunk they are copying (a few MiB): never wait long at exit.
  st.left.wait_for(lock, std::chrono::seconds(2), [&] { return st.jobs.empty(); });
}

// Caller holds st.enqueue (not st.mutex).
bool startThreads(Stager& st, std::string* why) {
  if (st.started) return st.threads > 0;
  st.started = true;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int want = static_cast<int>(std::clamp(hw / 4, 1u, 4u));
  try {
    std::thread(watchdogThread).detach();
    for (int i = 0; i < want; ++i) {
      std::thread(stagingThread).detach();
      std::lock_guard<std::mutex> lock(st.mutex);
      st.threads++;
    }
  } catch (const std::system_error& e) {
    if (st.threads == 0) *why = std::string("no staging thread could be started: ") + e.what();
  }
  std::atexit(atExit);
  return st.threads > 0;
}

// Caller holds st.enqueue.
bool findEntryPoints(Stager& st, std::string* why) {
  if (!st.entriesLooked) {
    st.entriesLooked = true;
    const std::pair<const char*, StreamValue32*> wanted[] = {{"cuStreamWaitValue32", &st.waitValue32},
                                                             {"cuStreamWriteValue32", &st.writeValue32}};
    for (auto& [name, fn] : wanted) {
      cudaError_t err = cudaSuccess;
      void* p = driverEntryPoint(name, &err);
      if (p == nullptr) {
        st.entryReason = std::string("the driver has no ") + name +
                         (err != cudaSuccess ? std::string(" (") + cudaGetErrorName(err) + ")" : "");
        st.waitValue32 = st.writeValue32 = nullptr;
        break;
      }
      *fn = reinterpret_cast<StreamValue32>(p);
    }
  }
  *why = st.entryReason;
  return st.entryReason.empty();
}

std::string cuFailure(const char* call, CUresult r) {
  return std::string(call) + " returned CUresult " + std::to_string(static_cast<int>(r)) +
         (r == CUDA_ERROR_NOT_SUPPORTED ? " (not supported)" : "");
}

// The device's ring, after checking that the stream operations work on a stream of its own (they
// complete at once: the value waited for is written before the wait is enqueued). Caller holds
// st.enqueue; the device is current.
Ring* makeRing(Stager& st, int device, std::string* why) {
  if (const char* off = std::getenv("CK_NO_STREAM_STAGING"); off != nullptr && *off != '\0' && *off != '0') {
    *why = "disabled by CK_NO_STREAM_STAGING";
    return nullptr;
  }
  if (!findEntryPoints(st, why)) return nullptr;
  int canMap = 0, unified = 0;
  if (cudaDeviceGetAttribute(&canMap, cudaDevAttrCanMapHostMemory, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, device) != cudaSuccess || !canMap ||
      !unified) {
    cudaGetLastError();
    *why = "the device cannot map host memory";
    return nullptr;
  }
  auto* r = new Ring();
  r->device = device;
  cudaStream_t own = nullptr;
  auto fail = [&](std::string reason) -> Ring* {
    cudaGetLastError();
    if (own != nullptr) cudaStreamDestroy(own);
    if (r->slots != nullptr) cudaFreeHost(r->slots);
    if (r->flags != nullptr) cudaFreeHost(r->flags);
    cudaGetLastError();
    delete r;
    *why = std::move(reason);
    return nullptr;
  };
  if (cudaHostAlloc(reinterpret_cast<void**>(&r->slots), kSlots * kSlotBytes, cudaHostAllocPortable) !=
      cudaSuccess)
    return fail("no page-locked memory for the staging ring");
  if (cudaHostAlloc(reinterpret_cast<void**>(&r->flags), sizeof(Flags),
                    cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess)
    return fail("no mapped page-locked memory for the staging counters");
  std::memset(r->flags, 0, sizeof(Flags));
  void* mapped = nullptr;
  if (cudaHostGetDevicePointer(&mapped, r->flags, 0) != cudaSuccess)
    return fail("the staging counters have no device address");
  r->flagsDevice = reinterpret_cast<CUdeviceptr>(mapped);
  if (cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking) != cudaSuccess)
    return fail("no stream for the probe");
  const CUdeviceptr probe = r->flagsDevice + offsetof(Flags, probe);
  __atomic_store_n(&r->flags->probe[0], 1u, __ATOMIC_RELEASE);
  CUresult cr = st.waitValue32(reinterpret_cast<CUstream>(own), probe, 1, CU_STREAM_WAIT_VALUE_GEQ);
  if (cr != CUDA_SUCCESS) return fail(cuFailure("cuStreamWaitValue32", cr));
  cr = st.writeValue32(reinterpret_cast<CUstream>(own), probe + sizeof(uint32_t), 7,
                       CU_STREAM_WRITE_VALUE_DEFAULT);
  if (cr != CUDA_SUCCESS) return fail(cuFailure("cuStreamWriteValue32", cr));
  if (cudaStreamSynchronize(own) != cudaSuccess) return fail("the probe's stream failed");
  if (__atomic_load_n(&r->flags->probe[1], __ATOMIC_ACQUIRE) != 7)
    return fail("cuStreamWriteValue32 did not reach mapped host memory");
  cudaStreamDestroy(own);
  cudaGetLastError();
  return r;
}

size_t chunkFor(size_t bytes) {
  const size_t eighth = ((bytes + kSlots - 1) / kSlots + 65535) & ~size_t{65535};
  return std::clamp(eighth, kMinChunk, kSlotBytes);
}

// The driver's codes for the failures that can reach here (a lost context, invalid or unsupported
// values) are the runtime's codes as well.
void checkCu(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) throw CudaFailure(static_cast<cudaError_t>(r), call);
}

}  // namespace

std::shared_ptr<StagedJob> stagedUpload(int device, cudaStream_t stream, void* dst, const void* src,
                                        size_t bytes, StagedDone done) {
  Stager& st = stager();
  std::lock_guard<std::mutex> order(st.enqueue);
  Ring* ring = nullptr;
  {
    bool probed = false;
    {
      std::lock_guard<std::mutex> lock(st.mutex);
      DeviceEntry& e = entryOf(st, device);
      probed = e.probed;
      ring = e.ring;
      if (probed && (ring == nullptr || ring->poisoned)) return nullptr;
    }
    if (!probed) {
      std::string why;
      if (startThreads(st, &why)) ring = makeRing(st, device, &why);
      std::lock_guard<std::mutex> lock(st.mutex);
      DeviceEntry& e = entryOf(st, device);
      e.probed = true;
      e.ring = ring;
      e.reason = why;
      if (ring == nullptr) return nullptr;
    }
  }

  auto job = std::make_shared<StagedJob>();
  job->ring = ring;
  job->device = device;
  job->stream = stream;
  job->src = static_cast<const char*>(src);
  job->bytes = bytes;
  job->chunk = chunkFor(bytes);
  job->n = static_cast<uint32_t>((bytes + job->chunk - 1) / job->chunk);
  job->done = std::move(done);
  job->progress = Clock::now();
  // Submitted before it is enqueued: where an enqueue call waits for the stream (CUDA_LAUNCH_BLOCKING,
  // a sanitizer), the waits already enqueued must be able to pass.
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    job->base = ring->nextSeq;
    ring->nextSeq += job->n;
    st.jobs.push_back(job);
    entryOf(st, device).uploads++;
    st.work.notify_all();
    st.watch.notify_one();
  }
  auto s = reinterpret_cast<CUstream>(stream);
  try {
    for (uint32_t k = 0; k < job->n; ++k) {
      const uint32_t slot = job->slotOf(k), g = job->genOf(k);
      const size_t off = static_cast<size_t>(k) * job->chunk, len = std::min(job->chunk, bytes - off);
      checkCu(st.waitValue32(s, ring->readyAt(slot), g, CU_STREAM_WAIT_VALUE_GEQ), "cuStreamWaitValue32");
      CK_CUDA(cudaMemcpyAsync(static_cast<char*>(dst) + off, ring->slot(slot), len, cudaMemcpyHostToDevice,
                              stream));
      checkCu(st.writeValue32(s, ring->doneAt(slot), g, CU_STREAM_WRITE_VALUE_DEFAULT),
              "cuStreamWriteValue32");
    }
  } catch (const CudaFailure& f) {
    // The ring now has chunk numbers the device will never complete: no upload can use it again.
    std::unique_lock<std::mutex> lock(st.mutex);
    job->silent = true;
    poison(st, ring, f);
    st.left.wait(lock, [&] { return job->finished; });
    throw;
  }
  return job;
}

void cancelStagedUpload(const std::shared_ptr<StagedJob>& job) {
  if (!job) return;
  Stager& st = stager();
  std::unique_lock<std::mutex> lock(st.mutex);
  if (job->finished) return;
  // Not abortJob: the job's chunks keep their place in the ring's order (an earlier upload on the
  // device may still be staging), and the staging threads pass them without reading the source.
  job->cancelled = true;
  job->silent = true;
  st.work.notify_all();
  // Returns once no thread reads the source; the chunks left pass as their slots come free.
  st.left.wait(lock, [&] { return job->finished || job->active == 0; });
}

void countStagedFallback(int device) {
  Stager& st = stager();
  std::lock_guard<std::mutex> lock(st.mutex);
  entryOf(st, device).fallbacks++;
}

#ifdef CK_TEST_HOOKS
void debugFailStagedUploads(int device) {
  Stager& st = stager();
  std::lock_guard<std::mutex> lock(st.mutex);
  DeviceEntry& e = entryOf(st, device);
  if (e.ring != nullptr && !e.ring->poisoned)
    poison(st, e.ring,
           CudaFailure("ckInjectedFailure", "debugFailStagedUploads", "injected staging failure"));
}
#endif

StagedUploadInfo stagedUploadInfo(int device) {
  Stager& st = stager();
  std::lock_guard<std::mutex> lock(st.mutex);
  const DeviceEntry& e = entryOf(st, device);
  StagedUploadInfo info;
  info.probed = e.probed;
  info.available = e.ring != nullptr && !e.ring->poisoned;
  info.reason = e.ring != nullptr && e.ring->poisoned ? "a staged upload failed on this device" : e.reason;
  info.uploads = e.uploads;
  info.fallbacks = e.fallbacks;
  info.threads = st.threads;
  return info;
}

}  // namespace ck
