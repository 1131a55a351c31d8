// Compile-time proof that nvrtc.h (ours) declares the NVRTC entry points exactly as the real nvrtc.h
// does. Built only where the real header exists (CMakeLists.txt; scripts/gpu-run.sh also compiles it
// on the GPU host). Our stand-in types are mapped to the real ones and whole function types are
// compared, so a wrong parameter type, count or order fails the build.
#include <nvrtc.h>

#include <type_traits>

#include "nvrtc/nvrtc.h"

namespace ck {
namespace nvrtc {
namespace verify {

template <typename T>
struct Real {
  using type = T;
};
template <typename T>
using real_t = typename Real<T>::type;
template <>
struct Real<Result> {
  using type = nvrtcResult;
};
template <>
struct Real<Program> {
  using type = nvrtcProgram;
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
                #ours " does not match " #theirs " in nvrtc.h")
CK_SAME(PFN_GetErrorString, nvrtcGetErrorString);
CK_SAME(PFN_Version, nvrtcVersion);
CK_SAME(PFN_GetNumSupportedArchs, nvrtcGetNumSupportedArchs);
CK_SAME(PFN_GetSupportedArchs, nvrtcGetSupportedArchs);
CK_SAME(PFN_CreateProgram, nvrtcCreateProgram);
CK_SAME(PFN_DestroyProgram, nvrtcDestroyProgram);
CK_SAME(PFN_CompileProgram, nvrtcCompileProgram);
CK_SAME(PFN_GetPTXSize, nvrtcGetPTXSize);
CK_SAME(PFN_GetPTX, nvrtcGetPTX);
CK_SAME(PFN_GetCUBINSize, nvrtcGetCUBINSize);
CK_SAME(PFN_GetCUBIN, nvrtcGetCUBIN);
CK_SAME(PFN_GetProgramLogSize, nvrtcGetProgramLogSize);
CK_SAME(PFN_GetProgramLog, nvrtcGetProgramLog);
CK_SAME(PFN_AddNameExpression, nvrtcAddNameExpression);
CK_SAME(PFN_GetLoweredName, nvrtcGetLoweredName);
#undef CK_SAME

#define CK_EQ(ours, theirs) (static_cast<int>(ours) == static_cast<int>(theirs))
static_assert(CK_EQ(kSuccess, NVRTC_SUCCESS) && CK_EQ(kOutOfMemory, NVRTC_ERROR_OUT_OF_MEMORY) &&
              CK_EQ(kProgramCreationFailure, NVRTC_ERROR_PROGRAM_CREATION_FAILURE) &&
              CK_EQ(kInvalidInput, NVRTC_ERROR_INVALID_INPUT) &&
              CK_EQ(kInvalidProgram, NVRTC_ERROR_INVALID_PROGRAM) &&
              CK_EQ(kInvalidOption, NVRTC_ERROR_INVALID_OPTION) &&
              CK_EQ(kCompilation, NVRTC_ERROR_COMPILATION) &&
              CK_EQ(kBuiltinOperationFailure, NVRTC_ERROR_BUILTIN_OPERATION_FAILURE) &&
              CK_EQ(kNoNameExpressionsAfterCompilation, NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION) &&
              CK_EQ(kNoLoweredNamesBeforeCompilation, NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION) &&
              CK_EQ(kNameExpressionNotValid, NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID) &&
              CK_EQ(kInternalError, NVRTC_ERROR_INTERNAL_ERROR));
#undef CK_EQ
static_assert(sizeof(Result) == sizeof(nvrtcResult));

}  // namespace verify
}  // namespace nvrtc
}  // namespace ck
