#include "distributed/nccl.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "core/dynlib.h"
#include "core/errors.h"

namespace ck {
namespace nccl {

namespace {

struct Loaded {
  Api api;
  bool ok = false;
  std::string code, message;
};

const char* const kTooOld = " (NCCL 2.14 or newer is needed)";

Loaded load() {
  Loaded r;
  std::vector<std::string> candidates;
  const char* named = std::getenv("CUDA_KERNELS_NCCL");
  const bool explicitFile = named != nullptr && named[0] != '\0';
  if (explicitFile)
    candidates.push_back(named);
  else
    candidates = {"libnccl.so.2", "libnccl.so"};
  std::string tried;
  void* lib = openFirst(candidates, &r.api.path, &tried);
  if (lib == nullptr) {
    r.code = "ncclLibraryNotFound";
    r.message = explicitFile
                    ? "NCCL could not be loaded from CUDA_KERNELS_NCCL=" + std::string(named) +
                          ", so the distributed calls (Communicator, apspDistributed, Mlp.train with comm) "
                          "are unavailable (everything else works). Point CUDA_KERNELS_NCCL at libnccl.so.2, "
                          "or unset it to search the loader path. Tried:" +
                          tried
                    : "NCCL could not be loaded, so the distributed calls (Communicator, apspDistributed, "
                      "Mlp.train with comm) are unavailable (everything else works). Install NCCL 2.14 or "
                      "newer for CUDA 13 (the libnccl2 system package, or the nvidia-nccl-cu13 Python wheel "
                      "with its lib folder on LD_LIBRARY_PATH), or set CUDA_KERNELS_NCCL to the path of "
                      "libnccl.so.2. Tried:" +
                          tried;
    return r;
  }
  try {
    Api& a = r.api;
    const auto bind = [&](auto& fn, const char* symbol) {
      bindSymbol(lib, fn, symbol, "ncclSymbolNotFound", "NCCL at " + a.path, kTooOld);
    };
    bind(a.getVersion, "ncclGetVersion");
    bind(a.getUniqueId, "ncclGetUniqueId");
    bind(a.commInitRankConfig, "ncclCommInitRankConfig");
    bind(a.commFinalize, "ncclCommFinalize");
    bind(a.commDestroy, "ncclCommDestroy");
    bind(a.commAbort, "ncclCommAbort");
    bind(a.commGetAsyncError, "ncclCommGetAsyncError");
    bind(a.getErrorString, "ncclGetErrorString");
    bind(a.getLastError, "ncclGetLastError");
    bind(a.allReduce, "ncclAllReduce");
    bind(a.broadcast, "ncclBroadcast");
    bind(a.allGather, "ncclAllGather");
    bind(a.reduceScatter, "ncclReduceScatter");
    bind(a.send, "ncclSend");
    bind(a.recv, "ncclRecv");
    bind(a.groupStart, "ncclGroupStart");
    bind(a.groupEnd, "ncclGroupEnd");
    if (a.getVersion(&a.version) != kSuccess) a.version = 0;
    if (a.version < 21400)
      throw CudaFailure("ncclVersionTooOld", "ncclGetVersion",
                        "NCCL at " + a.path + " is version " + versionString(a.version) +
                            "; non-blocking communicators need 2.14 or newer");
    r.ok = true;
  } catch (const CudaFailure& f) {
    r.code = f.code();
    r.message = f.what();
  }
  return r;
}

}  // namespace

const Api& api() {
  static const Loaded l = load();
  if (!l.ok) throw CudaFailure(l.code, "dlopen(libnccl)", l.message);
  return l.api;
}

bool prepareEnvironment() {
  const char* commId = std::getenv("NCCL_COMM_ID");
  if (commId != nullptr && commId[0] != '\0')
    throw CudaFailure(
        "ncclInvalidUsage", "Communicator.init",
        std::string("NCCL_COMM_ID is set (") + commId +
            "): NCCL would then bootstrap on that fixed address itself, where two jobs started "
            "with the same one join into one communicator. Unset it: rank 0's address comes from "
            "MASTER_ADDR and MASTER_PORT (or options.address), where rank 0's store checks the job");
  const char* blocking = std::getenv("NCCL_COMM_BLOCKING");
  if (blocking != nullptr && std::string(blocking) == "0")
    throw CudaFailure("ncclInvalidUsage", "Communicator.init",
                      "NCCL_COMM_BLOCKING=0 is set: the communicators launch in the calling thread and keep "
                      "every wait on a peer on their own thread; unset it");
  // Once per process, before NCCL reads it (it caches the value at the first initialisation), and only
  // where nobody chose otherwise: the environment is shared with everything else in the process.
  static const bool forced = [] {
    const char* v = std::getenv("NCCL_RUNTIME_CONNECT");
    if (v == nullptr || v[0] == '\0') {
      setenv("NCCL_RUNTIME_CONNECT", "0", 0);
      return false;
    }
    return std::string(v) != "0";
  }();
  return forced;
}

const char* resultName(Result r) {
  switch (r) {
    case kSuccess: return "ncclSuccess";
    case kUnhandledCudaError: return "ncclUnhandledCudaError";
    case kSystemError: return "ncclSystemError";
    case kInternalError: return "ncclInternalError";
    case kInvalidArgument: return "ncclInvalidArgument";
    case kInvalidUsage: return "ncclInvalidUsage";
    case kRemoteError: return "ncclRemoteError";
    case kInProgress: return "ncclInProgress";
  }
  return "ncclUnknownError";
}

std::string versionString(int code) {
  // NCCL_VERSION(X, Y, Z): X·1000 + Y·100 + Z up to 2.8, X·10000 + Y·100 + Z after.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? (code / 100) % 100 : (code / 100) % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

}  // namespace nccl
}  // namespace ck
