#include "buffer.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "args.h"
#include "compare.h"
#include "device.h"
#include "errors.h"
#include "fill.h"
#include "js_relay.h"
#include "pool.h"
#include "staged_upload.h"
#include "transfer.h"

namespace ck {

// Distinguishes our handles from any other External, so a foreign object can never be read as a
// device pointer.
static const napi_type_tag kBufferTag = {0x6375646b65726e6cULL, 0x2e62756666657231ULL};

// Returns the memory to the device's pool on its library stream: after everything already queued
// there (the array's last use), without waiting on the host. `unheld`: without waiting for
// collectives deferred on the stream (core/device.h), for memory none of them can use: the garbage
// collector's finalizer (a collective keeps its arrays referenced until it is done, and a finalizer
// that waited would stop the event loop until a late peer came), and free(array, true).
static void releaseMemory(Napi::Env env, DeviceBuffer& b, bool throwOnError, bool unheld = false) {
  if (b.released) return;
  b.released = true;
  if (b.ptr == nullptr) return;
  DeviceRestore restore;  // finalizers run outside guard()
  cudaError_t err = cudaSuccess;
  try {
    err = poolFree(b.ptr, unheld ? libraryStreamUnheld(b.device) : libraryStream(b.device));
  } catch (const CudaFailure&) {
    err = cudaErrorInvalidDevice;  // the stream was never created: nothing can use the memory
  }
  b.ptr = nullptr;
  // The C call, not Napi::MemoryManagement: this also runs in finalizers and while a worker's
  // environment is torn down, where a failing status must not become a C++ exception.
  int64_t unused = 0;
  napi_adjust_external_memory(env, -static_cast<int64_t>(b.bytes), &unused);
  if (err != cudaSuccess) {
    cudaGetLastError();
    if (throwOnError) throw CudaFailure(err, "cudaFreeAsync");
  }
}

Napi::Value newBuffer(Napi::Env env, int device, Dtype dtype, size_t length) {
  const size_t elem = dtypeSize(dtype);
  if (length > SIZE_MAX / elem) {
    throw CudaFailure("cudaErrorMemoryAllocation", "cudaMallocFromPoolAsync",
                      "cannot allocate " + std::to_string(length) + " elements: size overflows");
  }
  auto* b = new DeviceBuffer();
  b->length = length;
  b->bytes = length * elem;
  b->dtype = dtype;
  b->device = device;
  if (b->bytes > 0) {
    cudaError_t err = cudaSuccess;
    try {
      // Unheld: an allocation may go ahead of collectives deferred on the stream (none of them can
      // use memory that is free now), so allocating an output never waits for them.
      err = poolMalloc(&b->ptr, b->bytes, libraryStreamUnheld(device));  // also checks the device
    } catch (...) {
      delete b;
      throw;
    }
    if (err != cudaSuccess) {
      delete b;
      cudaGetLastError();
      throw CudaFailure(err, "cudaMallocFromPoolAsync(" + std::to_string(length * elem) + " bytes)");
    }
    Napi::MemoryManagement::AdjustExternalMemory(env, static_cast<int64_t>(length * elem));
  } else {
    useDevice(device);  // a bad device index fails the same way for every length
  }
  auto handle = Napi::External<DeviceBuffer>::New(env, b, [](Napi::Env e, DeviceBuffer* buf) {
    // Safety net for arrays the user never freed; errors cannot be reported from here.
    releaseMemory(e, *buf, false, true);
    delete buf;
  });
  handle.TypeTag(&kBufferTag);
  return handle;
}

static DeviceBuffer& unwrapAny(Napi::Value value, const char* name) {
  Napi::Env env = value.Env();
  if (!value.IsExternal() || !value.As<Napi::External<DeviceBuffer>>().CheckTypeTag(&kBufferTag)) {
    throw Napi::TypeError::New(env, std::string(name) + " must be a device buffer handle");
  }
  return *value.As<Napi::External<DeviceBuffer>>().Data();
}

DeviceBuffer& unwrapBuffer(Napi::Value value, const char* name) {
  DeviceBuffer& b = unwrapAny(value, name);
  if (b.freed) throw Napi::TypeError::New(value.Env(), std::string(name) + " has been freed");
  return b;
}

DeviceBuffer& unwrapOutput(Napi::Value value, const char* name) {
  DeviceBuffer& b = unwrapBuffer(value, name);
  if (b.writeLocks > 0) {
    throw Napi::Error::New(value.Env(),
                           std::string(name) + " is still being written by a running " + b.lockedBy +
                               "(): its callback may read the arrays of that call, not write them");
  }
  return b;
}

CallLock::CallLock(Napi::Env env, const char* owner, std::initializer_list<DeviceBuffer*> read,
                   std::initializer_list<DeviceBuffer*> written)
    : env_(env) {
  for (DeviceBuffer* b : read)
    if (b) read_.push_back(b), b->pending++;
  for (DeviceBuffer* b : written) {
    if (!b) continue;
    written_.push_back(b);
    b->pending++;
    if (b->writeLocks++ == 0) b->lockedBy = owner;
  }
}

CallLock::~CallLock() {
  for (DeviceBuffer* b : written_)
    if (--b->writeLocks == 0) b->lockedBy = nullptr;
  for (auto* list : {&read_, &written_}) {
    for (DeviceBuffer* b : *list) {
      // Freed by the callback: the memory goes back now that no kernel of the call can touch it.
      if (--b->pending == 0 && b->freed) releaseMemory(env_, *b, false);
    }
  }
}

static napi_typedarray_type typedArrayTypeOf(Dtype d) {
  switch (d) {
    case Dtype::Float32: return napi_float32_array;
    case Dtype::Float64: return napi_float64_array;
    case Dtype::Int32: return napi_int32_array;
    case Dtype::Uint32: return napi_uint32_array;
  }
  return napi_int8_array;
}

static size_t typedArrayElementSize(napi_typedarray_type t) {
  switch (t) {
    case napi_int8_array:
    case napi_uint8_array:
    case napi_uint8_clamped_array: return 1;
    case napi_int16_array:
    case napi_uint16_array: return 2;
    case napi_int32_array:
    case napi_uint32_array:
    case napi_float32_array: return 4;
    default: return 8;
  }
}

// A host typed array's memory, after checking its element type against `dtype` and that its
// buffer is still attached (a transferred or freed pinned buffer has no memory behind it). Typed
// arrays over a SharedArrayBuffer are memory like any other (and cannot be detached).
struct HostSpan {
  void* data = nullptr;
  size_t length = 0;    // elements
  bool shared = false;  // over a SharedArrayBuffer
};

// The memory of the typed array `value` as it is now: false when its buffer is detached. Reads
// napi_get_typedarray_info directly, which (unlike the ArrayBuffer calls) also serves views of a
// SharedArrayBuffer.
static bool typedArrayNow(napi_env env, napi_value value, napi_typedarray_type* type, HostSpan* out) {
  size_t length = 0, offset = 0;
  void* data = nullptr;
  napi_value buffer = nullptr;
  if (napi_get_typedarray_info(env, value, type, &length, &data, &buffer, &offset) != napi_ok) return false;
  bool isArrayBuffer = false;
  if (napi_is_arraybuffer(env, buffer, &isArrayBuffer) != napi_ok) return false;
  if (isArrayBuffer) {
    bool detached = false;
    if (napi_is_detached_arraybuffer(env, buffer, &detached) != napi_ok || detached) return false;
  }
  out->data = data;
  out->length = length;
  out->shared = !isArrayBuffer;
  return true;
}

static HostSpan hostSpan(const Napi::Value& value, Dtype dtype, const char* name) {
  Napi::Env env = value.Env();
  if (!value.IsTypedArray()) throw Napi::TypeError::New(env, std::string(name) + " must be a typed array");
  napi_typedarray_type type = napi_int8_array;
  HostSpan h;
  if (!typedArrayNow(env, value, &type, &h)) {
    throw Napi::TypeError::New(env, std::string(name) + "'s buffer is detached (transferred or freed)");
  }
  if (type != typedArrayTypeOf(dtype)) {
    throw Napi::TypeError::New(env, std::string(name) + " must hold " + dtypeName(dtype) + " elements");
  }
  return h;
}

// A typed array that must match `b` exactly in element type and length.
static HostSpan hostView(const Napi::Value& value, const DeviceBuffer& b, const char* name) {
  HostSpan h = hostSpan(value, b.dtype, name);
  if (h.length != b.length) {
    throw Napi::RangeError::New(value.Env(), std::string(name) + " has " + std::to_string(h.length) +
                                                 " elements, the device array " + std::to_string(b.length));
  }
  return h;
}

// A source of at most length - offset elements, and the device address it goes to.
static HostSpan sourceView(const Napi::CallbackInfo& info, const DeviceBuffer& b, size_t argSource,
                           size_t argOffset, char** dst) {
  HostSpan h = hostSpan(info[argSource], b.dtype, "source");
  const uint64_t offset =
      info.Length() > argOffset ? static_cast<uint64_t>(countArg(info, argOffset, "offset")) : 0;
  if (offset > b.length || h.length > b.length - offset) {
    throw Napi::RangeError::New(info.Env(), "source (" + std::to_string(h.length) + " elements) at offset " +
                                                std::to_string(offset) + " does not fit the device array (" +
                                                std::to_string(b.length) + " elements)");
  }
  *dst = static_cast<char*>(b.ptr) + offset * dtypeSize(b.dtype);
  return h;
}

// Host → device, returning once the source has been read (the device copy may still be queued).
static void uploadNow(char* dst, const void* src, size_t bytes, cudaStream_t s) {
  if (bytes == 0) return;
  if (findPinned(src, bytes) != nullptr) {
    CK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
    // Page-locked memory is read by the copy engine itself: wait until it has been.
    CK_CUDA(cudaStreamSynchronize(s));
  } else if (bytes <= kStageMax) {
    Staging* st = stagingAcquire(bytes);
    std::memcpy(st->ptr, src, bytes);
    const cudaError_t err = cudaMemcpyAsync(dst, st->ptr, bytes, cudaMemcpyHostToDevice, s);
    if (err != cudaSuccess) stagingRelease(st);
    check(err, "cudaMemcpyAsync");
    stagingRecycle(st, s);
  } else {
    ringUpload(dst, src, bytes, s);
  }
}

// Device → host, returning when the host memory holds the data.
static void downloadNow(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  if (bytes == 0) return;
  if (findPinned(dst, bytes) != nullptr) {
    CK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
  } else if (bytes <= kStageMax) {
    Staging* st = stagingAcquire(bytes);
    cudaError_t err = cudaMemcpyAsync(st->ptr, src, bytes, cudaMemcpyDeviceToHost, s);
    if (err == cudaSuccess) err = cudaStreamSynchronize(s);
    if (err == cudaSuccess) std::memcpy(dst, st->ptr, bytes);
    stagingRelease(st);
    check(err, "cudaMemcpyAsync(device to host)");
  } else {
    ringDownload(dst, src, bytes, s);
  }
}

// alloc(device, dtype, length[, source]) -> handle; with `source` (a typed array of the dtype and
// length) also uploads it: one call for upload().
static Napi::Value alloc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int device = intArg(info, 0, "device");
  int dtype = intArg(info, 1, "dtype");
  if (dtype < 0 || dtype >= kDtypeCount) throw Napi::RangeError::New(env, "dtype code out of range");
  int64_t length = countArg(info, 2, "length");
  const bool withSource = info.Length() > 3 && !info[3].IsUndefined();
  HostSpan src;
  if (withSource) {
    src = hostSpan(info[3], static_cast<Dtype>(dtype), "source");
    if (src.length != static_cast<uint64_t>(length))
      throw Napi::RangeError::New(env, "source length differs");
  }
  return guard(env, [&] {
    Napi::Value handle = newBuffer(env, device, static_cast<Dtype>(dtype), static_cast<size_t>(length));
    if (withSource) {
      DeviceBuffer& b = *handle.As<Napi::External<DeviceBuffer>>().Data();
      try {
        uploadNow(static_cast<char*>(b.ptr), src.data, b.bytes, libraryStream(device));
      } catch (...) {
        b.freed = true;
        releaseMemory(env, b, false);
        throw;
      }
    }
    return handle;
  });
}

// free(handle, unheld?): idempotent; returns the memory to the pool in stream order (no host wait).
// `unheld`: the caller knows no deferred collective uses the array (releaseMemory).
static Napi::Value freeBuffer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& b = unwrapAny(info[0], "array");
  const bool unheld = info.Length() > 1 && info[1].IsBoolean() && info[1].As<Napi::Boolean>().Value();
  if (!b.freed) {
    b.freed = true;
    if (b.pending == 0) guard(env, [&] { releaseMemory(env, b, true, unheld); });
  }
  return env.Undefined();
}

// upload(handle, typedArray[, offset]): host -> device; returns once the source has been read.
static Napi::Value upload(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& b = unwrapOutput(info[0], "array");
  char* dst = nullptr;
  HostSpan src = sourceView(info, b, 1, 2, &dst);
  guard(env, [&] { uploadNow(dst, src.data, src.length * dtypeSize(b.dtype), libraryStream(b.device)); });
  return env.Undefined();
}

// download(handle, typedArray): device -> host, synchronous (after all queued work on the array).
static Napi::Value download(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& b = unwrapBuffer(info[0], "array");
  HostSpan host = hostView(info[1], b, "target");
  guard(env, [&] { downloadNow(host.data, b.ptr, b.bytes, libraryStream(b.device)); });
  return env.Undefined();
}

// ---- Asynchronous transfers ------------------------------------------------------------------
//
// Everything that touches the device array is enqueued on its library stream when the call is made,
// so later calls (fill, copyFrom, an op writing it, free) cannot change what a toHost() resolves to,
// and a copyFromAsync() lands before later work reads the array. What is left for a libuv worker
// is waiting and host-side copying.
//
// Who writes a toHost() target: a pool thread may write only memory whose lifetime we know — a
// target we made (toHost() without one), pinned memory (our own blocks, freed only when the copies
// are done) or a SharedArrayBuffer (never detached). A target the caller passed in may be
// transferred away (postMessage, structuredClone with `transfer`) while the copy runs, and its new
// owner garbage-collected: only the JS thread can see that, so only the JS thread writes it, after
// checking that it is still attached — whole for small arrays, chunk by chunk for large ones
// (ChunkedDownload) — and a detached target rejects the promise instead.

// Writes `bytes` from `data` into the typed array `target` as it is now (JS thread), or says why not.
static std::string writeTarget(Napi::Env env, Napi::Value target, size_t offset, const void* data,
                               size_t bytes, size_t total) {
  napi_typedarray_type type = napi_int8_array;
  HostSpan h;
  if (!typedArrayNow(env, target, &type, &h))
    return "toHost(): the target's buffer was detached (transferred) while the copy was in flight; "
           "nothing was written after that";
  const size_t have = h.length * typedArrayElementSize(type);
  if (have != total)
    return "toHost(): the target changed size while the copy was in flight (" + std::to_string(have) +
           " bytes, the array " + std::to_string(total) + ")";
  hostCopy(static_cast<char*>(h.data) + offset, data, bytes);
  return "";
}

// A toHost() snapshot back to the pool, in the transfer stream's order, from a destructor: never throws.
// transferStream() throws when the stream cannot be made (the device failed before its first use), and
// an exception leaving a destructor ends the process; the memory of a failed device is gone anyway.
static void freeSnapshot(int device, void* temp) {
  DeviceRestore restore;
  try {
    if (cudaSetDevice(device) == cudaSuccess) poolFree(temp, transferStream(device));
  } catch (const CudaFailure&) {
  }
  cudaGetLastError();
}

class TransferWorker : public Napi::AsyncWorker {
 public:
  enum class Mode {
    Event,          // wait for `event` (pinned host memory was read or written directly)
    Staged,         // wait for the staging block's event; the JS thread copies it into the target
    Snapshot,       // the array was copied into `temp` on the device; bring it down through a ring
    SnapshotOwned,  // the same, down into memory of ours; the JS thread copies it into the target
  };

  TransferWorker(Napi::Env env, Mode mode, Napi::Value resolveWith, Napi::Value keepAlive)
      : Napi::AsyncWorker(env, "cuda-kernels.transfer"),
        mode_(mode),
        deferred_(Napi::Promise::Deferred::New(env)) {
    // References hold objects only (N-API 8): undefined is resolved without one.
    if (resolveWith.IsObject()) resolve_ = Napi::Persistent(resolveWith);
    keep_ = Napi::Persistent(keepAlive);
  }
  ~TransferWorker() override {
    // Also reached when Queue() was never called (a failure while enqueuing).
    if (event_ != nullptr) cudaEventDestroy(event_);
    if (staging_ != nullptr) stagingRelease(staging_);
    if (pinned_ != nullptr) pinnedRelease(pinned_);
    if (temp != nullptr) freeSnapshot(device, temp);
  }

  Napi::Promise promise() const { return deferred_.Promise(); }

  int device = 0;
  void* host = nullptr;  // the target, written by this worker's thread (Snapshot only)
  size_t bytes = 0;
  void* temp = nullptr;

  // The event that says the enqueued work is done (created on the current device).
  cudaEvent_t recordOn(cudaStream_t s) {
    CK_CUDA(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    CK_CUDA(cudaEventRecord(event_, s));
    return event_;
  }
  void adoptEvent(cudaEvent_t e) { event_ = e; }
  void useStaging(Staging* s) { staging_ = s; }
  void usePinned(PinnedBlock* b) {
    pinnedRetain(b);
    pinned_ = b;
  }

  void Execute() override {
    DeviceRestore restore;  // a libuv pool thread, shared with other addons
    try {
      switch (mode_) {
        case Mode::Event: CK_CUDA(cudaEventSynchronize(event_)); break;
        case Mode::Staged: CK_CUDA(cudaEventSynchronize(staging_->event)); break;
        case Mode::Snapshot:
        case Mode::SnapshotOwned: {
          CK_CUDA(cudaSetDevice(device));
          cudaStream_t ts = transferStream(device);
          CK_CUDA(cudaStreamWaitEvent(ts, event_, 0));
          void* dst = host;
          if (mode_ == Mode::SnapshotOwned) {
            owned_.reset(new char[bytes]);
            dst = owned_.get();
          }
          try {
            downloadNow(dst, temp, bytes, ts);  // a staging block, or a ring above kStageMax
          } catch (...) {
            poolFree(temp, ts);
            temp = nullptr;
            throw;
          }
          CK_CUDA(poolFree(temp, ts));
          temp = nullptr;
          break;
        }
      }
    } catch (const CudaFailure& f) {
      failure_ = std::make_unique<CudaFailure>(f);
    } catch (const std::bad_alloc&) {
      failure_ = std::make_unique<CudaFailure>("ckHostOutOfMemory", "toHost",
                                               "no host memory for " + std::to_string(bytes) + " bytes");
    }
  }

  // Settling the promise fails (and node-addon-api throws) when the environment is going away, a
  // worker terminated with this copy in flight: there is no one left to tell, so that is ignored.
  void OnOK() override {
    Napi::Env env = Env();
    try {
      if (failure_) {
        cudaGetLastError();
        deferred_.Reject(makeJsError(env, *failure_).Value());
        return;
      }
      // The small modes' last step, on this thread: into the target as it is now.
      const void* from = mode_ == Mode::Staged ? staging_->ptr : owned_.get();
      if (mode_ == Mode::Staged || mode_ == Mode::SnapshotOwned) {
        const std::string why = writeTarget(env, resolve_.Value(), 0, from, bytes, bytes);
        if (mode_ == Mode::Staged) {
          stagingRelease(staging_);
          staging_ = nullptr;
        }
        owned_.reset();
        if (!why.empty()) {
          deferred_.Reject(Napi::TypeError::New(env, why).Value());
          return;
        }
      }
      deferred_.Resolve(resolve_.IsEmpty() ? env.Undefined() : resolve_.Value());
    } catch (const Napi::Error&) {
    }
  }

  void OnError(const Napi::Error& e) override {
    try {
      deferred_.Reject(e.Value());
    } catch (const Napi::Error&) {
    }
  }

 private:
  Mode mode_;
  Napi::Promise::Deferred deferred_;
  Napi::Reference<Napi::Value> resolve_;  // what the promise resolves to
  Napi::Reference<Napi::Value> keep_;     // host memory the transfer uses, alive until it is done
  cudaEvent_t event_ = nullptr;
  Staging* staging_ = nullptr;
  PinnedBlock* pinned_ = nullptr;
  std::unique_ptr<char[]> owned_;  // SnapshotOwned: the data on its way to the target
  std::unique_ptr<CudaFailure> failure_;
};

// A large toHost() into a pageable target the caller passed in: the device snapshot comes down
// through a pinned ring on pool threads (one worker per chunk: its copy and the wait for it), and
// the JS thread copies each chunk into the target, checking first that the target is still there;
// then the chunk's slot takes the next chunk. No pool thread ever waits for the JS thread.
class ChunkedDownload : public std::enable_shared_from_this<ChunkedDownload> {
 public:
  // A chunked download holds its 64 MiB ring until the JS thread has copied its last chunk, which a
  // busy JS thread can put off indefinitely: beyond this many at once (process-wide), a large
  // toHost(target) comes down into memory of ours on a pool thread instead (SnapshotOwned), and the
  // JS thread copies it whole at the end.
  static constexpr int kMaxInFlight = 2;
  static std::atomic<int>& inFlight() {
    static std::atomic<int> n{0};
    return n;
  }

  ChunkedDownload(Napi::Env env, Napi::Value target, int device, void* temp, cudaEvent_t snapshot,
                  size_t bytes)
      : deferred_(Napi::Promise::Deferred::New(env)),
        target_(Napi::Persistent(target)),
        device_(device),
        temp_(temp),
        snapshot_(snapshot),
        bytes_(bytes),
        chunk_(ringChunk(bytes)),
        chunks_((bytes + chunk_ - 1) / chunk_) {
    inFlight()++;
  }

  ~ChunkedDownload() {
    inFlight()--;
    // Every chunk worker has waited for its copy: nothing reads the snapshot any more.
    freeSnapshot(device_, temp_);
    DeviceRestore restore;
    if (cudaSetDevice(device_) == cudaSuccess) cudaEventDestroy(snapshot_);
    cudaGetLastError();
  }

  Napi::Promise promise() const { return deferred_.Promise(); }

  // JS thread: the first chunks, one per ring slot.
  void start(Napi::Env env) {
    for (size_t k = 0; k < std::min<size_t>(kRingSlots, chunks_); ++k) issue(env, k);
  }

 private:
  class ChunkWorker : public Napi::AsyncWorker {
   public:
    ChunkWorker(Napi::Env env, std::shared_ptr<ChunkedDownload> d, size_t k)
        : Napi::AsyncWorker(env, "cuda-kernels.toHost"), d_(std::move(d)), k_(k) {}
    void Execute() override {
      DeviceRestore restore;
      try {
        d_->copyDown(k_);
      } catch (const CudaFailure& f) {
        failure_ = std::make_unique<CudaFailure>(f);
      }
    }
    void OnOK() override { d_->arrived(Env(), k_, failure_.get()); }
    void OnError(const Napi::Error&) override { d_->arrived(Env(), k_, nullptr, true); }

   private:
    std::shared_ptr<ChunkedDownload> d_;
    size_t k_;
    std::unique_ptr<CudaFailure> failure_;
  };

  int slotOf(size_t k) const { return static_cast<int>(k % kRingSlots); }

  void issue(Napi::Env env, size_t k) {
    inFlight_++;
    (new ChunkWorker(env, shared_from_this(), k))->Queue();
  }

  // Pool thread: chunk k from the snapshot into its slot, and the wait for it. The ring is leased by
  // the first chunk to get here (its allocation, when there is no free ring, stays off the JS thread).
  void copyDown(size_t k) {
    CK_CUDA(cudaSetDevice(device_));
    cudaStream_t ts = transferStream(device_);
    {
      std::lock_guard<std::mutex> lock(ringMutex_);
      if (!ring_) ring_ = std::make_unique<RingLease>();
    }
    const int i = slotOf(k);
    const size_t off = k * chunk_, len = std::min(chunk_, bytes_ - off);
    CK_CUDA(cudaStreamWaitEvent(ts, snapshot_, 0));
    CK_CUDA(cudaMemcpyAsync(ring_->slot(i), static_cast<const char*>(temp_) + off, len,
                            cudaMemcpyDeviceToHost, ts));
    ring_->record(i, ts);
    ring_->waitSlot(i);
  }

  // JS thread: chunk k is in its slot (or failed).
  void arrived(Napi::Env env, size_t k, const CudaFailure* failure, bool workerFailed = false) {
    inFlight_--;
    try {
      if (settled_) return;
      if (failure != nullptr || workerFailed) {
        settled_ = true;
        cudaGetLastError();
        deferred_.Reject(failure != nullptr
                             ? makeJsError(env, *failure).Value()
                             : Napi::Error::New(env, "toHost(): a copy worker failed").Value());
        return;
      }
      const size_t off = k * chunk_, len = std::min(chunk_, bytes_ - off);
      const std::string why = writeTarget(env, target_.Value(), off, ring_->slot(slotOf(k)), len, bytes_);
      if (!why.empty()) {
        settled_ = true;
        deferred_.Reject(Napi::TypeError::New(env, why).Value());
        return;
      }
      if (++done_ == chunks_) {
        settled_ = true;
        deferred_.Resolve(target_.Value());
        return;
      }
      // The slot just emptied takes its next chunk (k + kRingSlots, its own sequence): not the next
      // chunk in order, whose slot may still hold a chunk that has not arrived.
      if (k + kRingSlots < chunks_) issue(env, k + kRingSlots);
    } catch (const Napi::Error&) {
      settled_ = true;  // the environment is going away: nobody is left to tell
    }
  }

  Napi::Promise::Deferred deferred_;
  Napi::Reference<Napi::Value> target_;  // keeps the target (and, while attached, its memory) alive
  int device_;
  void* temp_;
  cudaEvent_t snapshot_;
  size_t bytes_, chunk_, chunks_;
  size_t done_ = 0;       // JS thread
  int inFlight_ = 0;      // JS thread
  bool settled_ = false;  // JS thread
  std::mutex ringMutex_;
  std::unique_ptr<RingLease> ring_;
};

static Napi::Promise resolved(Napi::Env env, Napi::Value v) {
  auto d = Napi::Promise::Deferred::New(env);
  d.Resolve(v);
  return d.Promise();
}

// downloadAsync(handle, typedArray[, fresh]) -> Promise<typedArray>; a snapshot of the array at call
// time. `fresh`: the caller made the typed array for this call and nobody else holds it (toHost()
// without a target), so a pool thread may write it.
static Napi::Value downloadAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& b = unwrapBuffer(info[0], "array");
  HostSpan host = hostView(info[1], b, "target");
  const bool fresh = info.Length() > 2 && info[2].ToBoolean().Value();
  if (b.bytes == 0) return resolved(env, info[1]);
  return guard(env, [&]() -> Napi::Value {
    cudaStream_t s = libraryStream(b.device);
    using Mode = TransferWorker::Mode;
    if (PinnedBlock* pin = findPinned(host.data, b.bytes)) {
      auto* w = new TransferWorker(env, Mode::Event, info[1], info[1]);
      try {
        w->usePinned(pin);
        CK_CUDA(cudaMemcpyAsync(host.data, b.ptr, b.bytes, cudaMemcpyDeviceToHost, s));
        w->recordOn(s);
      } catch (...) {
        delete w;
        throw;
      }
      w->Queue();
      return w->promise();
    }
    // Small: through a staging block held until the promise settles, while the blocks so held stay
    // within the staging budget; past it (thousands of calls in flight) like a large array, from a
    // snapshot on the device, so pinned memory does not grow with the number of calls.
    if (b.bytes <= kStageMax) {
      if (Staging* st = stagingTryAcquire(b.bytes)) {
        auto* w = new TransferWorker(env, Mode::Staged, info[1], info[1]);
        try {
          w->useStaging(st);
          CK_CUDA(cudaMemcpyAsync(st->ptr, b.ptr, b.bytes, cudaMemcpyDeviceToHost, s));
          stagingRecord(st, s);
        } catch (...) {
          delete w;
          throw;
        }
        w->bytes = b.bytes;
        w->Queue();
        return w->promise();
      }
    }
    // A snapshot on the device (3 TB/s), brought down off the library stream.
    void* temp = nullptr;
    const cudaError_t err = poolMalloc(&temp, b.bytes, s);
    if (err == cudaErrorMemoryAllocation) {
      // No room for the snapshot: copy now, on this thread (correct, but it blocks; docs/api.md).
      cudaGetLastError();
      downloadNow(host.data, b.ptr, b.bytes, s);
      return resolved(env, info[1]);
    }
    check(err, "cudaMallocFromPoolAsync(toHost snapshot)");
    cudaEvent_t snapshot = nullptr;
    cudaError_t e = cudaMemcpyAsync(temp, b.ptr, b.bytes, cudaMemcpyDeviceToDevice, s);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&snapshot, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventRecord(snapshot, s);
    if (e != cudaSuccess) {
      if (snapshot != nullptr) cudaEventDestroy(snapshot);
      poolFree(temp, s);
      check(e, "toHost snapshot");
    }
    // Who may write the target (see above): a pool thread only where its lifetime is known.
    const bool poolWrites = b.bytes > kStageMax && (fresh || host.shared);
    if (b.bytes > kStageMax && !poolWrites && ChunkedDownload::inFlight() < ChunkedDownload::kMaxInFlight) {
      auto d = std::make_shared<ChunkedDownload>(env, info[1], b.device, temp, snapshot, b.bytes);
      d->start(env);
      return d->promise();
    }
    auto* w = new TransferWorker(env, poolWrites ? Mode::Snapshot : Mode::SnapshotOwned, info[1], info[1]);
    w->adoptEvent(snapshot);
    w->device = b.device;
    w->host = host.data;
    w->bytes = b.bytes;
    w->temp = temp;
    w->Queue();
    return w->promise();
  });
}

// ---- copyFromAsync of large pageable sources: staged by our threads (staged_upload.h) -----------
//
// The promise is settled on the JS thread through one thread-safe function per environment, which
// keeps the event loop alive while uploads are pending (as a pending fs call would).

namespace {

struct UploadOutcome {
  uint64_t id = 0;
  std::unique_ptr<CudaFailure> failure;
};

struct UploadEnv;
void deliverUpload(Napi::Env env, Napi::Function, UploadEnv* state, UploadOutcome* outcome);
using UploadTsfn = Napi::TypedThreadSafeFunction<UploadEnv, UploadOutcome, deliverUpload>;

using UploadNotifier = JsRelay<UploadTsfn, UploadOutcome>;

struct PendingUpload {
  Napi::Promise::Deferred deferred;
  Napi::Reference<Napi::Value> source;  // keeps the source's buffer alive while threads read it
  std::shared_ptr<StagedJob> job;
  bool readsSource = true;  // the staging threads read the caller's memory (not a copy of ours)
};

// One per environment (the main thread, each worker). Owned by the thread-safe function, deleted by
// its finalizer.
struct UploadEnv {
  UploadTsfn tsfn;
  std::shared_ptr<UploadNotifier> notifier;
  std::unordered_map<uint64_t, PendingUpload> pending;  // JS thread only
  uint64_t nextId = 1;
  PendingRef<UploadTsfn> ref;

  void updateRef(Napi::Env env) { ref.update(env, tsfn, !pending.empty()); }
};

std::mutex uploadEnvsMutex;
std::unordered_map<napi_env, UploadEnv*> uploadEnvs;

void deliverUpload(Napi::Env env, Napi::Function, UploadEnv* state, UploadOutcome* outcome) {
  std::unique_ptr<UploadOutcome> o(outcome);
  if (env == nullptr || state == nullptr) return;  // torn down with outcomes still queued
  auto it = state->pending.find(o->id);
  if (it == state->pending.end()) return;
  Napi::Promise::Deferred d = it->second.deferred;
  try {
    // A source transferred away while the staging threads read it (documented as not allowed) was
    // read from memory that its new owner may have freed meanwhile: what reached the device is not
    // known to be the data, so say so rather than resolve.
    napi_typedarray_type type = napi_int8_array;
    HostSpan now;
    const bool detached =
        !o->failure && it->second.readsSource && !typedArrayNow(env, it->second.source.Value(), &type, &now);
    state->pending.erase(it);  // lets go of the source
    if (o->failure)
      d.Reject(makeJsError(env, *o->failure).Value());
    else if (detached)
      d.Reject(
          Napi::TypeError::New(env,
                               "copyFromAsync(): the source's buffer was detached (transferred) while it "
                               "was being read; the device array's contents are undefined")
              .Value());
    else
      d.Resolve(env.Undefined());
  } catch (const Napi::Error&) {
    // The environment is going away: nobody is left to tell.
  }
  state->updateRef(env);
}

// The environment is being torn down (a worker terminated, or the process exiting with uploads in
// flight): stop the staging threads reading its memory before V8 frees it, then close.
void uploadEnvCleanup(void* arg) {
  auto* state = static_cast<UploadEnv*>(arg);
  for (auto& [id, p] : state->pending) cancelStagedUpload(p.job);
  state->pending.clear();
  state->ref.open = false;
  state->notifier->close();
  std::lock_guard<std::mutex> lock(uploadEnvsMutex);
  for (auto it = uploadEnvs.begin(); it != uploadEnvs.end(); ++it) {
    if (it->second == state) {
      uploadEnvs.erase(it);
      break;
    }
  }
}

UploadEnv& uploadEnv(Napi::Env env) {
  {
    std::lock_guard<std::mutex> lock(uploadEnvsMutex);
    auto it = uploadEnvs.find(env);
    if (it != uploadEnvs.end()) return *it->second;
  }
  auto* state = new UploadEnv();
  state->tsfn = UploadTsfn::New(env, "cuda-kernels.copyFromAsync", 0, 1, state,
                                [](Napi::Env, void*, UploadEnv* s) { delete s; });
  state->tsfn.Unref(env);
  state->notifier = std::make_shared<UploadNotifier>();
  state->notifier->tsfn = state->tsfn;
  // After the thread-safe function's own hook, so it runs first (hooks run in reverse order).
  if (napi_add_env_cleanup_hook(env, uploadEnvCleanup, state) != napi_ok) {
    state->notifier->close();
    throw Napi::Error::New(env, "copyFromAsync: could not register the environment's cleanup");
  }
  std::lock_guard<std::mutex> lock(uploadEnvsMutex);
  uploadEnvs[env] = state;
  return *state;
}

}  // namespace

// uploadAsync(handle, typedArray[, offset]) -> Promise<undefined>. Everything the device does is
// enqueued on the library stream at the call. The promise resolves once the source may be reused:
// pinned, when the copy engine has read it; pageable, once it has been copied into pinned staging.
static Napi::Value uploadAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& b = unwrapOutput(info[0], "array");
  char* dst = nullptr;
  HostSpan src = sourceView(info, b, 1, 2, &dst);
  const size_t bytes = src.length * dtypeSize(b.dtype);
  if (bytes == 0) return resolved(env, env.Undefined());
  return guard(env, [&]() -> Napi::Value {
    cudaStream_t s = libraryStream(b.device);
    using Mode = TransferWorker::Mode;
    if (PinnedBlock* pin = findPinned(src.data, bytes)) {
      auto* w = new TransferWorker(env, Mode::Event, env.Undefined(), info[1]);
      try {
        w->usePinned(pin);
        CK_CUDA(cudaMemcpyAsync(dst, src.data, bytes, cudaMemcpyHostToDevice, s));
        w->recordOn(s);
      } catch (...) {
        delete w;
        throw;
      }
      w->Queue();
      return w->promise();
    }
    // Small: into a staging block now (the source is read during the call), while the blocks whose
    // copies are still queued stay within the staging budget.
    const bool small = bytes <= kStageMax;
    if (small) {
      if (Staging* st = stagingTryAcquire(bytes)) {
        std::memcpy(st->ptr, src.data, bytes);
        const cudaError_t err = cudaMemcpyAsync(dst, st->ptr, bytes, cudaMemcpyHostToDevice, s);
        if (err != cudaSuccess) stagingRelease(st);
        check(err, "cudaMemcpyAsync");
        stagingRecycle(st, s);
        return resolved(env, env.Undefined());
      }
    }
    // Large and pageable, or small past the budget: our staging threads copy it into the device's
    // pinned ring while the stream waits for each chunk (staged_upload.h); neither this thread nor a
    // CUDA thread blocks. (Small past the budget used to wait here for earlier blocks, which sit behind
    // whatever GPU work is queued: the event loop stopped for as long.) A small source is still read
    // during the call: into memory of ours, which the staging threads read and the job then frees.
    std::shared_ptr<char[]> copy;
    const void* from = src.data;
    if (small) {
      copy.reset(new char[bytes]);
      std::memcpy(copy.get(), src.data, bytes);
      from = copy.get();
    }
    {
      UploadEnv& ue = uploadEnv(env);
      const uint64_t id = ue.nextId++;
      PendingUpload& p = ue.pending
                             .emplace(id, PendingUpload{Napi::Promise::Deferred::New(env),
                                                        Napi::Persistent(info[1]), nullptr, !small})
                             .first->second;
      Napi::Promise promise = p.deferred.Promise();
      std::shared_ptr<UploadNotifier> notifier = ue.notifier;
      try {
        p.job = stagedUpload(b.device, s, dst, from, bytes, [notifier, id, copy](const CudaFailure* f) {
          auto o = std::make_unique<UploadOutcome>();
          o->id = id;
          if (f != nullptr) o->failure = std::make_unique<CudaFailure>(*f);
          notifier->post(std::move(o));
        });
      } catch (...) {
        ue.pending.erase(id);
        throw;
      }
      if (p.job) {
        ue.updateRef(env);
        return promise;
      }
      ue.pending.erase(id);
      if (!small) countStagedFallback(b.device);
    }
    // The stream-ordered path is unavailable here (stagedUploadInfo says why): through staging (and,
    // above kStageMax, the pinned ring) now, on this thread, in the library stream's order; the source
    // has been read on return.
    uploadNow(dst, from, bytes, s);
    return resolved(env, env.Undefined());
  });
}

// uploadPath(device) -> how large pageable copyFromAsync() calls are staged on the device.
static Napi::Value uploadPath(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = intArg(info, 0, "device");
  if (device < 0) throw Napi::RangeError::New(env, "device must be a non-negative integer");
  const StagedUploadInfo i = stagedUploadInfo(device);
  auto o = Napi::Object::New(env);
  o.Set("path", !i.probed ? "not yet used" : i.available ? "stream-ordered" : "calling thread");
  o.Set("reason", i.probed && !i.available ? Napi::Value(Napi::String::New(env, i.reason)) : env.Null());
  o.Set("streamOrdered", static_cast<double>(i.uploads));
  o.Set("callingThread", static_cast<double>(i.fallbacks));
  o.Set("threads", i.threads);
  return o;
}

#ifdef CK_TEST_HOOKS
// debugFailStagedUploads(device): test-only, see staged_upload.h.
static Napi::Value debugFailStagedUploadsBinding(const Napi::CallbackInfo& info) {
  debugFailStagedUploads(intArg(info, 0, "device"));
  return info.Env().Undefined();
}
#endif

// fill(handle, value)
static Napi::Value fill(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& b = unwrapOutput(info[0], "array");
  double value = numberArg(info, 1, "value");
  guard(env, [&] {
    cudaStream_t s = libraryStream(b.device);
    if (value == 0) {
      if (b.bytes > 0) CK_CUDA(cudaMemsetAsync(b.ptr, 0, b.bytes, s));
    } else {
      check(launchFill(b.ptr, b.dtype, b.length, value, s), "fill_kernel");
    }
  });
  return env.Undefined();
}

// fillRandom(handle, seed): seed a non-negative integer below 2^53.
static Napi::Value fillRandom(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& b = unwrapOutput(info[0], "array");
  const uint64_t seed = static_cast<uint64_t>(countArg(info, 1, "seed"));
  guard(env, [&] {
    check(launchFillRandom(b.ptr, b.dtype, b.length, seed, libraryStream(b.device)), "fill_random_kernel");
  });
  return env.Undefined();
}

// copy(dst, src, dstOffset, srcOffset, count): elements, same dtype; devices may differ.
static Napi::Value copy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& dst = unwrapOutput(info[0], "dst");
  DeviceBuffer& src = unwrapBuffer(info[1], "src");
  if (dst.dtype != src.dtype) throw Napi::TypeError::New(env, "dst and src must have the same dtype");
  int64_t dOff = countArg(info, 2, "dstOffset"), sOff = countArg(info, 3, "srcOffset");
  int64_t count = countArg(info, 4, "count");
  if (static_cast<uint64_t>(dOff) + count > dst.length || static_cast<uint64_t>(sOff) + count > src.length) {
    throw Napi::RangeError::New(env, "copy range exceeds an array's length");
  }
  guard(env, [&] {
    if (count == 0) return;
    const size_t elem = dtypeSize(src.dtype);
    char* d = static_cast<char*>(dst.ptr) + dOff * elem;
    const char* s = static_cast<const char*>(src.ptr) + sOff * elem;
    const size_t bytes = static_cast<size_t>(count) * elem;
    if (dst.device == src.device) {
      // One array with overlapping ranges is a memmove: through a temporary (cudaMemcpy's result
      // is undefined for overlap).
      deviceCopyWithin(d, s, bytes, libraryStream(src.device));
    } else {
      // Across devices: order after both devices' queued work, copy, and finish before returning.
      CK_CUDA(cudaStreamSynchronize(libraryStream(dst.device)));
      cudaStream_t stream = libraryStream(src.device);
      CK_CUDA(cudaMemcpyPeerAsync(d, dst.device, s, src.device, bytes, stream));
      CK_CUDA(cudaStreamSynchronize(stream));
    }
  });
  return env.Undefined();
}

// relativeError(out, ref) -> ‖out − ref‖₂ / ‖ref‖₂ (‖out − ref‖₂ when ref is zero), on the device.
static Napi::Value relativeError(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& a = unwrapBuffer(info[0], "out");
  DeviceBuffer& b = unwrapBuffer(info[1], "ref");
  if (a.dtype != b.dtype) throw Napi::TypeError::New(env, "out and ref must have the same dtype");
  if (a.length != b.length) throw Napi::RangeError::New(env, "out and ref must have the same length");
  if (a.device != b.device) throw Napi::RangeError::New(env, "out and ref must be on the same device");
  return guard(env, [&] {
    cudaStream_t s = libraryStream(a.device);
    double* sums = nullptr;
    CK_CUDA(poolMalloc(&sums, 2 * sizeof(double), s));
    Staging* host = stagingAcquire(2 * sizeof(double));
    cudaError_t err = cudaMemsetAsync(sums, 0, 2 * sizeof(double), s);
    if (err == cudaSuccess) err = launchDiffNorms(a.ptr, b.ptr, a.dtype, a.length, sums, s);
    if (err == cudaSuccess)
      err = cudaMemcpyAsync(host->ptr, sums, 2 * sizeof(double), cudaMemcpyDeviceToHost, s);
    cudaError_t freed = poolFree(sums, s);
    if (err == cudaSuccess) err = cudaStreamSynchronize(s);
    double sq[2] = {0, 0};
    std::memcpy(sq, host->ptr, sizeof sq);
    stagingRelease(host);
    check(err, "relativeError");
    check(freed, "cudaFreeAsync");
    const double r = sq[1] > 0 ? std::sqrt(sq[0] / sq[1]) : std::sqrt(sq[0]);
    return Napi::Number::New(env, r);
  });
}

void registerMemory(Napi::Env env, Napi::Object exports);

void registerBuffers(Napi::Env env, Napi::Object exports) {
  registerMemory(env, exports);
  exports.Set("relativeError", Napi::Function::New(env, relativeError, "relativeError"));
  exports.Set("alloc", Napi::Function::New(env, alloc, "alloc"));
  exports.Set("free", Napi::Function::New(env, freeBuffer, "free"));
  exports.Set("upload", Napi::Function::New(env, upload, "upload"));
  exports.Set("download", Napi::Function::New(env, download, "download"));
  exports.Set("downloadAsync", Napi::Function::New(env, downloadAsync, "downloadAsync"));
  exports.Set("uploadAsync", Napi::Function::New(env, uploadAsync, "uploadAsync"));
  exports.Set("uploadPath", Napi::Function::New(env, uploadPath, "uploadPath"));
#ifdef CK_TEST_HOOKS
  exports.Set("debugFailStagedUploads",
              Napi::Function::New(env, debugFailStagedUploadsBinding, "debugFailStagedUploads"));
#endif
  exports.Set("fill", Napi::Function::New(env, fill, "fill"));
  exports.Set("fillRandom", Napi::Function::New(env, fillRandom, "fillRandom"));
  exports.Set("copy", Napi::Function::New(env, copy, "copy"));
}

}  // namespace ck
