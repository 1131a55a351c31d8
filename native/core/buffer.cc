#include "buffer.h"

#include <cmath>
#include <string>

#include "args.h"
#include "compare.h"
#include "device.h"
#include "errors.h"
#include "fill.h"

namespace ck {

// Distinguishes our handles from any other External, so a foreign object can never be read as a
// device pointer.
static const napi_type_tag kBufferTag = {0x6375646b65726e6cULL, 0x2e62756666657231ULL};

static void releaseMemory(Napi::Env env, DeviceBuffer& b, bool throwOnError) {
  if (b.released) return;
  b.released = true;
  if (b.ptr == nullptr) return;
  DeviceRestore restore;  // finalizers run outside guard()
  cudaError_t err = cudaSetDevice(b.device);
  if (err == cudaSuccess) err = cudaFree(b.ptr);
  b.ptr = nullptr;
  // The C call, not Napi::MemoryManagement: this also runs in finalizers and while a worker's
  // environment is torn down, where a failing status must not become a C++ exception.
  int64_t unused = 0;
  napi_adjust_external_memory(env, -static_cast<int64_t>(b.bytes), &unused);
  if (err != cudaSuccess) {
    cudaGetLastError();
    if (throwOnError) throw CudaFailure(err, "cudaFree");
  }
}

Napi::Value newBuffer(Napi::Env env, int device, Dtype dtype, size_t length) {
  useDevice(device);
  const size_t elem = dtypeSize(dtype);
  if (length > SIZE_MAX / elem) {
    throw CudaFailure("cudaErrorMemoryAllocation", "cudaMalloc",
                      "cannot allocate " + std::to_string(length) + " elements: size overflows");
  }
  auto* b = new DeviceBuffer();
  b->length = length;
  b->bytes = length * elem;
  b->dtype = dtype;
  b->device = device;
  if (b->bytes > 0) {
    cudaError_t err = cudaMalloc(&b->ptr, b->bytes);
    if (err != cudaSuccess) {
      delete b;
      cudaGetLastError();
      throw CudaFailure(err, "cudaMalloc(" + std::to_string(length * elem) + " bytes)");
    }
    Napi::MemoryManagement::AdjustExternalMemory(env, static_cast<int64_t>(length * elem));
  }
  auto handle = Napi::External<DeviceBuffer>::New(env, b, [](Napi::Env e, DeviceBuffer* buf) {
    // Safety net for arrays the user never freed; errors cannot be reported from here.
    releaseMemory(e, *buf, false);
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

// The host memory of a typed array that must match `b` exactly in element type and length.
static void* hostView(const Napi::Value& value, const DeviceBuffer& b, const char* name) {
  Napi::Env env = value.Env();
  if (!value.IsTypedArray()) throw Napi::TypeError::New(env, std::string(name) + " must be a typed array");
  auto ta = value.As<Napi::TypedArray>();
  if (ta.TypedArrayType() != typedArrayTypeOf(b.dtype)) {
    throw Napi::TypeError::New(env, std::string(name) + " must hold " + dtypeName(b.dtype) + " elements");
  }
  if (ta.ElementLength() != b.length) {
    throw Napi::RangeError::New(env, std::string(name) + " has " + std::to_string(ta.ElementLength()) +
                                         " elements, the device array " + std::to_string(b.length));
  }
  return static_cast<uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset();
}

// alloc(device, dtype, length) -> handle
static Napi::Value alloc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int device = intArg(info, 0, "device");
  int dtype = intArg(info, 1, "dtype");
  if (dtype < 0 || dtype >= kDtypeCount) throw Napi::RangeError::New(env, "dtype code out of range");
  int64_t length = countArg(info, 2, "length");
  return guard(
      env, [&] { return newBuffer(env, device, static_cast<Dtype>(dtype), static_cast<size_t>(length)); });
}

// free(handle): idempotent. Memory still being copied by toHost() is released when that finishes.
static Napi::Value freeBuffer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& b = unwrapAny(info[0], "array");
  if (!b.freed) {
    b.freed = true;
    if (b.pending == 0) guard(env, [&] { releaseMemory(env, b, true); });
  }
  return env.Undefined();
}

// upload(handle, typedArray): host -> device, synchronous.
static Napi::Value upload(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& b = unwrapOutput(info[0], "array");
  void* host = hostView(info[1], b, "source");
  guard(env, [&] {
    if (b.bytes == 0) return;
    cudaStream_t s = libraryStream(b.device);
    CK_CUDA(cudaMemcpyAsync(b.ptr, host, b.bytes, cudaMemcpyHostToDevice, s));
    // The JS memory may move or be collected once we return: wait until the copy has read it.
    CK_CUDA(cudaStreamSynchronize(s));
  });
  return env.Undefined();
}

// download(handle, typedArray): device -> host, synchronous (after all queued work on the array).
static Napi::Value download(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& b = unwrapBuffer(info[0], "array");
  void* host = hostView(info[1], b, "target");
  guard(env, [&] {
    if (b.bytes == 0) return;
    cudaStream_t s = libraryStream(b.device);
    CK_CUDA(cudaMemcpyAsync(host, b.ptr, b.bytes, cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
  });
  return env.Undefined();
}

// The copy and the wait run on a libuv worker thread so the event loop keeps turning.
class DownloadWorker : public Napi::AsyncWorker {
 public:
  DownloadWorker(Napi::Env env, DeviceBuffer& b, Napi::Value handle, Napi::Object target, void* host,
                 cudaStream_t stream)
      : Napi::AsyncWorker(env, "cuda-kernels.toHost"),
        buffer_(b),
        deferred_(Napi::Promise::Deferred::New(env)),
        host_(host),
        stream_(stream) {
    handle_ = Napi::Persistent(handle);
    target_ = Napi::Persistent(target);
    buffer_.pending++;
  }

  Napi::Promise promise() const { return deferred_.Promise(); }

  void Execute() override {
    DeviceRestore restore;  // a libuv pool thread, shared with other addons
    err_ = cudaSetDevice(buffer_.device);
    if (err_ != cudaSuccess) {
      call_ = "cudaSetDevice";
      return;
    }
    err_ = cudaMemcpyAsync(host_, buffer_.ptr, buffer_.bytes, cudaMemcpyDeviceToHost, stream_);
    if (err_ != cudaSuccess) {
      call_ = "cudaMemcpyAsync";
      return;
    }
    err_ = cudaStreamSynchronize(stream_);
    if (err_ != cudaSuccess) call_ = "cudaStreamSynchronize";
  }

  // Settling the promise fails (and node-addon-api throws) when the environment is going away, a
  // worker terminated with this copy in flight: there is no one left to tell, so that is ignored.
  void OnOK() override {
    Napi::Env env = Env();
    settleBuffer();
    try {
      if (err_ != cudaSuccess) {
        cudaGetLastError();
        deferred_.Reject(makeJsError(env, CudaFailure(err_, call_)).Value());
      } else {
        deferred_.Resolve(target_.Value());
      }
    } catch (const Napi::Error&) {
    }
  }

  void OnError(const Napi::Error& e) override {
    settleBuffer();
    try {
      deferred_.Reject(e.Value());
    } catch (const Napi::Error&) {
    }
  }

 private:
  void settleBuffer() {
    buffer_.pending--;
    if (buffer_.freed && buffer_.pending == 0) releaseMemory(Env(), buffer_, false);
  }

  DeviceBuffer& buffer_;
  Napi::Promise::Deferred deferred_;
  Napi::Reference<Napi::Value> handle_;  // keeps the buffer alive until the copy is done
  Napi::ObjectReference target_;
  void* host_;
  cudaStream_t stream_;
  cudaError_t err_ = cudaSuccess;
  std::string call_;
};

// downloadAsync(handle, typedArray) -> Promise<typedArray>
static Napi::Value downloadAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceBuffer& b = unwrapBuffer(info[0], "array");
  void* host = hostView(info[1], b, "target");
  if (b.bytes == 0) {
    auto d = Napi::Promise::Deferred::New(env);
    d.Resolve(info[1]);
    return d.Promise();
  }
  cudaStream_t stream = guard(env, [&] { return libraryStream(b.device); });
  auto* worker = new DownloadWorker(env, b, info[0], info[1].As<Napi::Object>(), host, stream);
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

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
      CK_CUDA(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice, libraryStream(src.device)));
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
    CK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&sums), 2 * sizeof(double), s));
    double host[2] = {0, 0};
    cudaError_t err = cudaMemsetAsync(sums, 0, 2 * sizeof(double), s);
    if (err == cudaSuccess) err = launchDiffNorms(a.ptr, b.ptr, a.dtype, a.length, sums, s);
    if (err == cudaSuccess) err = cudaMemcpyAsync(host, sums, sizeof host, cudaMemcpyDeviceToHost, s);
    cudaError_t freed = cudaFreeAsync(sums, s);
    if (err == cudaSuccess) err = cudaStreamSynchronize(s);
    check(err, "relativeError");
    check(freed, "cudaFreeAsync");
    const double r = host[1] > 0 ? std::sqrt(host[0] / host[1]) : std::sqrt(host[0]);
    return Napi::Number::New(env, r);
  });
}

void registerBuffers(Napi::Env env, Napi::Object exports) {
  exports.Set("relativeError", Napi::Function::New(env, relativeError, "relativeError"));
  exports.Set("alloc", Napi::Function::New(env, alloc, "alloc"));
  exports.Set("free", Napi::Function::New(env, freeBuffer, "free"));
  exports.Set("upload", Napi::Function::New(env, upload, "upload"));
  exports.Set("download", Napi::Function::New(env, download, "download"));
  exports.Set("downloadAsync", Napi::Function::New(env, downloadAsync, "downloadAsync"));
  exports.Set("fill", Napi::Function::New(env, fill, "fill"));
  exports.Set("fillRandom", Napi::Function::New(env, fillRandom, "fillRandom"));
  exports.Set("copy", Napi::Function::New(env, copy, "copy"));
}

}  // namespace ck
