// cuBLAS, loaded at run time.
//
// The build machines have no cuBLAS, and users without it should still get every non-cuBLAS
// method, so the addon never links it: these declarations mirror the few entry points we call, and
// cublas_check.cc proves they match cublas_v2.h wherever that header exists at build time.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>

namespace ck {
namespace cublas {

enum Status : int { kSuccess = 0 };
enum class Operation : int { N = 0, T = 1, C = 2 };
enum class FillMode : int { Lower = 0, Upper = 1, Full = 2 };
enum class Math : int { Default = 0, Pedantic = 2, TF32 = 3 };
enum class LibraryProperty : int { Major = 0, Minor = 1, Patch = 2 };
struct Context;
using Handle = Context*;

using PFN_Create = Status (*)(Handle*);
using PFN_Destroy = Status (*)(Handle);
using PFN_SetStream = Status (*)(Handle, cudaStream_t);
using PFN_SetMathMode = Status (*)(Handle, Math);
using PFN_GetProperty = Status (*)(LibraryProperty, int*);
using PFN_GetStatusName = const char* (*)(Status);
using PFN_GetStatusString = const char* (*)(Status);
using PFN_Dgemm = Status (*)(Handle, Operation, Operation, int, int, int, const double*, const double*, int,
                             const double*, int, const double*, double*, int);
using PFN_Sgemm = Status (*)(Handle, Operation, Operation, int, int, int, const float*, const float*, int,
                             const float*, int, const float*, float*, int);
using PFN_Dsyrk = Status (*)(Handle, FillMode, Operation, int, int, const double*, const double*, int,
                             const double*, double*, int);

struct Api {
  std::string path;  // the library file that was loaded
  int version[3] = {0, 0, 0};
  PFN_Create create = nullptr;
  PFN_Destroy destroy = nullptr;
  PFN_SetStream setStream = nullptr;
  PFN_SetMathMode setMathMode = nullptr;
  PFN_GetProperty getProperty = nullptr;
  PFN_GetStatusName getStatusName = nullptr;
  PFN_GetStatusString getStatusString = nullptr;
  PFN_Dgemm dgemm = nullptr;
  PFN_Sgemm sgemm = nullptr;
  PFN_Dsyrk dsyrk = nullptr;
};

// The loaded library; throws CudaFailure "cublasLibraryNotFound" (naming every place tried) when
// it cannot be loaded. Loading is attempted once per process.
const Api& api();

// The cuBLAS handle for `device`, bound to the library stream of that device (created on first
// use), held for one thread at a time: cuBLAS forbids using a handle from several host threads at
// once, and every worker_thread that loads the addon shares these handles. Keep the Session alive
// across the cuBLAS calls that use it.
class Session {
 public:
  explicit Session(int device);
  Handle handle() const { return handle_; }

 private:
  std::unique_lock<std::mutex> lock_;
  Handle handle_ = nullptr;
};

// Throws CudaFailure with the cuBLAS status name when `s` is not success.
void check(Status s, const char* call);

// Long K. cuBLAS 13.0's GEMM-class routines went wrong well inside their int range
// (bench/dev/ata/NOTES.md §12, cublas_k_probe.cu and its logs): SGEMM as gemm calls it, with
// m = n = 2 or 4 and k = INT_MAX, returned success and a C off by 17408 (H100); the package's DGEMM
// with n = 2 and k = INT_MAX left C wrong (H200) or untouched (H100), though the same call alone in
// a fresh process was exact; DSYRK, linear up to 2^31 elements of A, took 69 s at n = 2,
// k = 1.5·2^30 and over 45 s at n = 4, k = 2^30, and hit an illegal address at n = 2, k = INT_MAX.
// Every case that finished with k ≤ 2^30 and at most 2^31 elements of A was exact. So callers feed
// K in chunks of at most `limit` (≤ 2^30) and accumulate: f(k0, kc, beta) for each chunk, beta = 0
// for the first and 1 after; k = 0 is one call with kc = 0, as before (C = beta·C = 0). Every k up
// to the limit is one call.
constexpr int64_t kMaxKChunk = int64_t{1} << 30;
// The test hook debugCublasKChunk forces a smaller chunk (0 = none), so that the suites run every
// multi-chunk path at small sizes, and reads how many chunk calls were made since it was last called.
int64_t forcedKChunk();
void setForcedKChunk(int64_t rows);
void countKChunk();
int64_t takeKChunkCount();

template <class F>
void forEachKChunk(int64_t k, int64_t limit, F&& f) {
  int64_t chunk = std::max<int64_t>(1, std::min(limit, kMaxKChunk));
  if (const int64_t forced = forcedKChunk(); forced > 0) chunk = std::min(chunk, forced);
  if (k <= 0) {
    countKChunk();
    f(0, 0, 0.0);
    return;
  }
  for (int64_t k0 = 0; k0 < k; k0 += chunk) {
    countKChunk();
    f(k0, static_cast<int>(std::min(chunk, k - k0)), k0 == 0 ? 0.0 : 1.0);
  }
}

}  // namespace cublas
}  // namespace ck

#define CK_CUBLAS(expr) ::ck::cublas::check((expr), #expr)
