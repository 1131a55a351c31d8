#include "errors.h"

#include "addon_data.h"

namespace ck {

// Errors after which the CUDA context is corrupted: every later CUDA call in the process fails
// with the same error, so the message has to say that nothing but a restart helps.
static bool isSticky(cudaError_t err) {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout:
    case cudaErrorContextIsDestroyed: return true;
    default: return false;
  }
}

static std::string describe(cudaError_t err, const std::string& call) {
  std::string m = std::string(cudaGetErrorString(err)) + " (" + cudaGetErrorName(err) + " in " + call + ")";
  if (isSticky(err)) {
    m += ": the CUDA context is lost; every further CUDA call in this process fails, so restart the process";
  }
  return m;
}

CudaFailure::CudaFailure(cudaError_t err, const std::string& call)
    : std::runtime_error(describe(err, call)), code_(cudaGetErrorName(err)), call_(call) {}

void check(cudaError_t err, const char* call) {
  if (err == cudaSuccess) return;
  cudaGetLastError();
  throw CudaFailure(err, call);
}

Napi::Error makeJsError(Napi::Env env, const CudaFailure& failure) {
  Napi::Object error;
  AddonData* data = AddonData::get(env);
  if (data != nullptr && !data->cudaErrorClass.IsEmpty()) {
    error = data->cudaErrorClass.New({Napi::String::New(env, failure.what()),
                                      Napi::String::New(env, failure.code()),
                                      Napi::String::New(env, failure.call())});
  } else {
    error = Napi::Error::New(env, failure.what()).Value();
    error.Set("name", "CudaError");
    error.Set("code", failure.code());
    error.Set("call", failure.call());
  }
  return Napi::Error(env, error);
}

static Napi::Value setErrorClass(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsFunction()) {
    throw Napi::TypeError::New(env, "setErrorClass(ctor): ctor must be a class");
  }
  AddonData::get(env)->cudaErrorClass = Napi::Persistent(info[0].As<Napi::Function>());
  return env.Undefined();
}

void registerErrors(Napi::Env env, Napi::Object exports) {
  exports.Set("setErrorClass", Napi::Function::New(env, setErrorClass, "setErrorClass"));
}

}  // namespace ck
