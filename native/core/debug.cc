// Test-only hooks on the raw binding (never exported by lib/, left out of release builds):
// `debugFault(kind)`, so the reliability tests can show how a kernel fault is reported, and
// `debugCurrentDevice()`, so they can show that every call leaves the current device as it was.
//
//   0 (invalid launch): a launch with more threads per block than any GPU allows. The runtime
//     rejects it before it reaches the device (cudaErrorInvalidConfiguration), a recoverable
//     error: the context and every live array stay usable.
//   1 (illegal address): a kernel that writes through a null pointer. cudaErrorIllegalAddress is
//     sticky: the context is lost for the rest of the process, so tests call it only in a child
//     process.
// `debugHostCopy(dst, src, parts)`, so the transfer tests can run the host side of every large copy,
// split into a forced number of parts, on machines with few cores or no GPU (CI).
// `debugCublasKChunk(rows)`, so the suites can run the cuBLAS methods' K chunks (core/cublas.h) at
// small sizes: every later cuBLAS call feeds K in chunks of at most `rows` (0: back to the default);
// returns the number of chunk calls made since the hook was last called, so a test can tell that K
// was split.
// `debugGemmSplits(pieces)`, so the suites can run gemm fast's split-K at small sizes: every later
// fast launch cuts k into that many pieces (0: its own plan); returns the pieces of the last fast
// launch since the hook was last called (0 if none).
#include <napi.h>

#include <cstring>

#include "args.h"
#include "cublas.h"
#include "debug_kernels.h"
#include "device.h"
#include "errors.h"
#include "gemm/gemm.h"
#include "transfer.h"

namespace ck {

namespace {

Napi::Value debugFault(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int kind = intArg(info, 0, "kind");
  const int device = info.Length() > 1 ? intArg(info, 1, "device") : 0;
  if (kind < 0 || kind > 1)
    throw Napi::RangeError::New(env, "kind must be 0 (invalid launch) or 1 (illegal address)");
  guard(env, [&] {
    cudaStream_t stream = libraryStream(device);
    if (kind == 0) {
      CK_CUDA(launchNullStore(4096, stream));
      throw CudaFailure("ckFaultNotRaised", "debug_null_store_kernel", "the invalid launch was not rejected");
    }
    CK_CUDA(launchNullStore(32, stream));
    CK_CUDA(cudaStreamSynchronize(stream));
  });
  return env.Undefined();
}

// debugCurrentDevice() -> the calling thread's current device (cudaGetDevice), for the tests that
// show the library puts it back (DeviceRestore).
Napi::Value debugCurrentDevice(const Napi::CallbackInfo& info) {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return info.Env().Null();
  }
  return Napi::Number::New(info.Env(), device);
}

// debugHostCopy(dst, src, parts): hostCopySplit of src into dst (Uint8Arrays of one length), or with
// parts 0 the part count hostCopy itself would use; returns that count.
Napi::Value debugHostCopy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsTypedArray() || !info[1].IsTypedArray())
    throw Napi::TypeError::New(env, "dst and src must be Uint8Arrays");
  auto dst = info[0].As<Napi::Uint8Array>(), src = info[1].As<Napi::Uint8Array>();
  if (dst.ByteLength() != src.ByteLength()) throw Napi::RangeError::New(env, "dst and src differ in length");
  const int64_t forced = countArg(info, 2, "parts");
  const size_t bytes = dst.ByteLength();
  const size_t parts = forced > 0 ? static_cast<size_t>(forced) : hostCopyParts(bytes);
  hostCopySplit(dst.Data(), src.Data(), bytes, parts);
  return Napi::Number::New(env, static_cast<double>(parts));
}

// debugCublasKChunk(rows) -> chunk calls since the last call; forces the chunk of K of every later
// cuBLAS call (0: none).
Napi::Value debugCublasKChunk(const Napi::CallbackInfo& info) {
  const int64_t rows = countArg(info, 0, "rows");
  cublas::setForcedKChunk(rows);
  return Napi::Number::New(info.Env(), static_cast<double>(cublas::takeKChunkCount()));
}

// debugGemmSplits(pieces) -> the pieces of the last gemm fast launch (0: none since the last call);
// forces the pieces of every later one (0: its own plan).
Napi::Value debugGemmSplits(const Napi::CallbackInfo& info) {
  const int64_t pieces = countArg(info, 0, "pieces");
  if (pieces > 65535) throw Napi::RangeError::New(info.Env(), "pieces must be at most 65535");
  gemm::setForcedSplits(static_cast<int>(pieces));
  return Napi::Number::New(info.Env(), static_cast<double>(gemm::takeLastSplits()));
}

}  // namespace

void registerDebug(Napi::Env env, Napi::Object exports) {
  exports.Set("debugFault", Napi::Function::New(env, debugFault, "debugFault"));
  exports.Set("debugCurrentDevice", Napi::Function::New(env, debugCurrentDevice, "debugCurrentDevice"));
  exports.Set("debugHostCopy", Napi::Function::New(env, debugHostCopy, "debugHostCopy"));
  exports.Set("debugCublasKChunk", Napi::Function::New(env, debugCublasKChunk, "debugCublasKChunk"));
  exports.Set("debugGemmSplits", Napi::Function::New(env, debugGemmSplits, "debugGemmSplits"));
}

}  // namespace ck
