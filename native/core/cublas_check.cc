// Compile-time proof that cublas.h declares the cuBLAS entry points exactly as cublas_v2.h does.
// Built only where the real header exists (CMakeLists.txt; scripts/gpu-run.sh also compiles it on
// the GPU host). Each of our stand-in types is mapped to the real one, then whole function types
// are compared, so a wrong parameter type, count or order fails the build.
#include <cublas_v2.h>

#include <type_traits>

#include "cublas.h"

namespace ck {
namespace cublas {
namespace verify {

template <typename T>
struct Real {
  using type = T;
};
template <typename T>
using real_t = typename Real<T>::type;
template <>
struct Real<Status> {
  using type = cublasStatus_t;
};
template <>
struct Real<Operation> {
  using type = cublasOperation_t;
};
template <>
struct Real<FillMode> {
  using type = cublasFillMode_t;
};
template <>
struct Real<Math> {
  using type = cublasMath_t;
};
template <>
struct Real<LibraryProperty> {
  using type = libraryPropertyType;
};
template <>
struct Real<Handle> {
  using type = cublasHandle_t;
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
                #ours " does not match " #theirs " in cublas_v2.h")
CK_SAME(PFN_Create, cublasCreate_v2);
CK_SAME(PFN_Destroy, cublasDestroy_v2);
CK_SAME(PFN_SetStream, cublasSetStream_v2);
CK_SAME(PFN_SetMathMode, cublasSetMathMode);
CK_SAME(PFN_GetProperty, cublasGetProperty);
CK_SAME(PFN_GetStatusName, cublasGetStatusName);
CK_SAME(PFN_GetStatusString, cublasGetStatusString);
CK_SAME(PFN_Dgemm, cublasDgemm_v2);
CK_SAME(PFN_Sgemm, cublasSgemm_v2);
CK_SAME(PFN_Dsyrk, cublasDsyrk_v2);
#undef CK_SAME

static_assert(static_cast<int>(kSuccess) == CUBLAS_STATUS_SUCCESS);
static_assert(static_cast<int>(Operation::N) == CUBLAS_OP_N &&
              static_cast<int>(Operation::T) == CUBLAS_OP_T && static_cast<int>(Operation::C) == CUBLAS_OP_C);
static_assert(static_cast<int>(FillMode::Lower) == CUBLAS_FILL_MODE_LOWER &&
              static_cast<int>(FillMode::Upper) == CUBLAS_FILL_MODE_UPPER &&
              static_cast<int>(FillMode::Full) == CUBLAS_FILL_MODE_FULL);
static_assert(static_cast<int>(Math::Default) == CUBLAS_DEFAULT_MATH &&
              static_cast<int>(Math::Pedantic) == CUBLAS_PEDANTIC_MATH &&
              static_cast<int>(Math::TF32) == CUBLAS_TF32_TENSOR_OP_MATH);
static_assert(static_cast<int>(LibraryProperty::Major) == MAJOR_VERSION &&
              static_cast<int>(LibraryProperty::Minor) == MINOR_VERSION &&
              static_cast<int>(LibraryProperty::Patch) == PATCH_LEVEL);
static_assert(sizeof(Status) == sizeof(cublasStatus_t) && sizeof(Operation) == sizeof(cublasOperation_t));

}  // namespace verify
}  // namespace cublas
}  // namespace ck
