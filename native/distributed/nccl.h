// NCCL, loaded at run time.
//
// Like cuBLAS (core/cublas.h): the build machines have no NCCL, and a user without it keeps every
// single-process feature, so the addon never links it. These declarations mirror the entry points we
// call; nccl_check.cc proves they match nccl.h wherever that header exists at build time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace ck {
namespace nccl {

enum Result : int {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
};
enum DataType : int { kInt32 = 2, kUint32 = 3, kFloat32 = 7, kFloat64 = 8 };
enum RedOp : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4 };

struct CommImpl;
using Comm = CommImpl*;

constexpr size_t kUniqueIdBytes = 128;
struct UniqueId {
  char internal[kUniqueIdBytes];
};

// The leading fields of ncclConfig_t. `version` tells NCCL which fields the caller knows: with 2.14
// it reads `blocking` and resets every later field to its default, so this prefix is a complete
// config for any NCCL from 2.14 on (nccl_check.cc checks the offsets against the real struct).
constexpr unsigned kConfigMagic = 0xcafebeef;
constexpr unsigned kConfigVersion = 21400;     // NCCL_VERSION(2, 14, 0)
constexpr int kConfigUndef = -2147483647 - 1;  // NCCL_CONFIG_UNDEF_INT
struct Config {
  size_t size = sizeof(Config);
  unsigned magic = kConfigMagic;
  unsigned version = kConfigVersion;
  int blocking = kConfigUndef;
  int cgaClusterSize = kConfigUndef;
};

using PFN_GetVersion = Result (*)(int*);
using PFN_GetUniqueId = Result (*)(UniqueId*);
using PFN_CommInitRankConfig = Result (*)(Comm*, int, UniqueId, int, Config*);
using PFN_CommFinalize = Result (*)(Comm);
using PFN_CommDestroy = Result (*)(Comm);
using PFN_CommAbort = Result (*)(Comm);
using PFN_CommGetAsyncError = Result (*)(Comm, Result*);
using PFN_GetErrorString = const char* (*)(Result);
using PFN_GetLastError = const char* (*)(Comm);
using PFN_AllReduce = Result (*)(const void*, void*, size_t, DataType, RedOp, Comm, cudaStream_t);
using PFN_Broadcast = Result (*)(const void*, void*, size_t, DataType, int, Comm, cudaStream_t);
using PFN_AllGather = Result (*)(const void*, void*, size_t, DataType, Comm, cudaStream_t);
using PFN_ReduceScatter = Result (*)(const void*, void*, size_t, DataType, RedOp, Comm, cudaStream_t);
using PFN_Send = Result (*)(const void*, size_t, DataType, int, Comm, cudaStream_t);
using PFN_Recv = Result (*)(void*, size_t, DataType, int, Comm, cudaStream_t);
using PFN_GroupStart = Result (*)();
using PFN_GroupEnd = Result (*)();

struct Api {
  std::string path;  // the library file that was loaded
  int version = 0;   // ncclGetVersion: 22803 for 2.28.3
  PFN_GetVersion getVersion = nullptr;
  PFN_GetUniqueId getUniqueId = nullptr;
  PFN_CommInitRankConfig commInitRankConfig = nullptr;
  PFN_CommFinalize commFinalize = nullptr;
  PFN_CommDestroy commDestroy = nullptr;
  PFN_CommAbort commAbort = nullptr;
  PFN_CommGetAsyncError commGetAsyncError = nullptr;
  PFN_GetErrorString getErrorString = nullptr;
  PFN_GetLastError getLastError = nullptr;
  PFN_AllReduce allReduce = nullptr;
  PFN_Broadcast broadcast = nullptr;
  PFN_AllGather allGather = nullptr;
  PFN_ReduceScatter reduceScatter = nullptr;
  PFN_Send send = nullptr;
  PFN_Recv recv = nullptr;
  PFN_GroupStart groupStart = nullptr;
  PFN_GroupEnd groupEnd = nullptr;
};

// The loaded library; throws CudaFailure "ncclLibraryNotFound" (saying what to install and naming
// every place tried) when it cannot be loaded. Loading is attempted once per process: the file named
// by CUDA_KERNELS_NCCL when that is set (and nothing else), else libnccl.so.2, then libnccl.so, from
// the dynamic loader's search path.
const Api& api();

// Before the first communicator: refuses the environment variables that would undo what the
// communicators promise (NCCL_COMM_ID: NCCL would bootstrap on that fixed address itself, with
// SO_REUSEPORT, where two jobs merge; NCCL_COMM_BLOCKING=0: every call would start a thread and
// return before it launched), by throwing CudaFailure "ncclInvalidUsage"; and sets
// NCCL_RUNTIME_CONNECT=0 for the process when it is unset, so that NCCL connects the collectives
// during initialisation (off the caller's thread) instead of in the first call that needs them.
// Returns true when the user set NCCL_RUNTIME_CONNECT to something else (the first collective of
// each algorithm then connects in the calling thread and may wait there for its peers).
bool prepareEnvironment();

// "ncclRemoteError" for kRemoteError, …
const char* resultName(Result r);

// "2.28.3" from 22803.
std::string versionString(int code);

}  // namespace nccl
}  // namespace ck
