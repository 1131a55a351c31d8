// Compile-time proof that nccl.h (ours) declares the NCCL entry points exactly as the real nccl.h
// does. Built only where the real header exists (CMakeLists.txt; scripts/gpu-run.sh also compiles it
// on the GPU host). Our stand-in types are mapped to the real ones and whole function types are
// compared, so a wrong parameter type, count or order fails the build; the config prefix is checked
// field by field.
#include <nccl.h>

#include <cstddef>
#include <type_traits>

#include "distributed/nccl.h"

namespace ck {
namespace nccl {
namespace verify {

template <typename T>
struct Real {
  using type = T;
};
template <typename T>
using real_t = typename Real<T>::type;
template <>
struct Real<Result> {
  using type = ncclResult_t;
};
template <>
struct Real<DataType> {
  using type = ncclDataType_t;
};
template <>
struct Real<RedOp> {
  using type = ncclRedOp_t;
};
template <>
struct Real<Comm> {
  using type = ncclComm_t;
};
template <>
struct Real<UniqueId> {
  using type = ncclUniqueId;
};
template <>
struct Real<Config> {
  using type = ncclConfig_t;
};
template <typename T>
struct Real<T*> {
  using type = real_t<T>*;
};
template <typename T>
struct Real<const T> {
  using type = const real_t<T>;
};
template <typename R, typename... A>
struct Real<R (*)(A...)> {
  using type = real_t<R> (*)(real_t<A>...);
};

#define CK_SAME(ours, theirs)                                    \
  static_assert(std::is_same_v<real_t<ours>, decltype(&theirs)>, \
                #ours " does not match " #theirs " in nccl.h")
CK_SAME(PFN_GetVersion, ncclGetVersion);
CK_SAME(PFN_GetUniqueId, ncclGetUniqueId);
CK_SAME(PFN_CommInitRankConfig, ncclCommInitRankConfig);
CK_SAME(PFN_CommFinalize, ncclCommFinalize);
CK_SAME(PFN_CommDestroy, ncclCommDestroy);
CK_SAME(PFN_CommAbort, ncclCommAbort);
CK_SAME(PFN_CommGetAsyncError, ncclCommGetAsyncError);
CK_SAME(PFN_GetErrorString, ncclGetErrorString);
CK_SAME(PFN_GetLastError, ncclGetLastError);
CK_SAME(PFN_AllReduce, ncclAllReduce);
CK_SAME(PFN_Broadcast, ncclBroadcast);
CK_SAME(PFN_AllGather, ncclAllGather);
CK_SAME(PFN_ReduceScatter, ncclReduceScatter);
CK_SAME(PFN_Send, ncclSend);
CK_SAME(PFN_Recv, ncclRecv);
CK_SAME(PFN_GroupStart, ncclGroupStart);
CK_SAME(PFN_GroupEnd, ncclGroupEnd);
#undef CK_SAME

#define CK_EQ(ours, theirs) (static_cast<int>(ours) == static_cast<int>(theirs))
static_assert(CK_EQ(kSuccess, ncclSuccess) && CK_EQ(kUnhandledCudaError, ncclUnhandledCudaError) &&
              CK_EQ(kSystemError, ncclSystemError) && CK_EQ(kInternalError, ncclInternalError) &&
              CK_EQ(kInvalidArgument, ncclInvalidArgument) && CK_EQ(kInvalidUsage, ncclInvalidUsage) &&
              CK_EQ(kRemoteError, ncclRemoteError) && CK_EQ(kInProgress, ncclInProgress));
static_assert(CK_EQ(kInt32, ncclInt32) && CK_EQ(kUint32, ncclUint32) && CK_EQ(kFloat32, ncclFloat32) &&
              CK_EQ(kFloat64, ncclFloat64));
static_assert(CK_EQ(kSum, ncclSum) && CK_EQ(kProd, ncclProd) && CK_EQ(kMax, ncclMax) &&
              CK_EQ(kMin, ncclMin) && CK_EQ(kAvg, ncclAvg));
#undef CK_EQ
static_assert(kUniqueIdBytes == NCCL_UNIQUE_ID_BYTES && sizeof(UniqueId) == sizeof(ncclUniqueId));
static_assert(sizeof(Result) == sizeof(ncclResult_t) && sizeof(DataType) == sizeof(ncclDataType_t) &&
              sizeof(RedOp) == sizeof(ncclRedOp_t));

// Our config is a prefix of the real one, with the initializer's magic and UNDEF value.
static_assert(offsetof(Config, size) == offsetof(ncclConfig_t, size) &&
              offsetof(Config, magic) == offsetof(ncclConfig_t, magic) &&
              offsetof(Config, version) == offsetof(ncclConfig_t, version) &&
              offsetof(Config, blocking) == offsetof(ncclConfig_t, blocking) &&
              offsetof(Config, cgaClusterSize) == offsetof(ncclConfig_t, cgaClusterSize));
static_assert(sizeof(Config) <= sizeof(ncclConfig_t));
static_assert(kConfigUndef == NCCL_CONFIG_UNDEF_INT);
static_assert(kConfigVersion == NCCL_VERSION(2, 14, 0));
constexpr ncclConfig_t kInitializer = NCCL_CONFIG_INITIALIZER;
static_assert(kInitializer.magic == kConfigMagic);

}  // namespace verify
}  // namespace nccl
}  // namespace ck
