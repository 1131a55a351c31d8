// Module init: each part registers its functions; nothing else lives here.
#include <napi.h>

#include "core/addon_data.h"
#include "core/errors.h"

namespace ck {
void registerDevices(Napi::Env env, Napi::Object exports);
void registerBuffers(Napi::Env env, Napi::Object exports);
void registerEvents(Napi::Env env, Napi::Object exports);
void registerAsync(Napi::Env env, Napi::Object exports);
void registerCublas(Napi::Env env, Napi::Object exports);
void registerAta(Napi::Env env, Napi::Object exports);
void registerGemm(Napi::Env env, Napi::Object exports);
void registerScan(Napi::Env env, Napi::Object exports);
void registerStencil(Napi::Env env, Napi::Object exports);
void registerApsp(Napi::Env env, Napi::Object exports);
void registerMlp(Napi::Env env, Napi::Object exports);
void registerPeer(Napi::Env env, Napi::Object exports);
void registerDist(Napi::Env env, Napi::Object exports);
void registerNvrtc(Napi::Env env, Napi::Object exports);
void registerNvml(Napi::Env env, Napi::Object exports);
#ifdef CK_TEST_HOOKS
void registerDebug(Napi::Env env, Napi::Object exports);
#endif
}  // namespace ck

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData(new ck::AddonData());
  ck::registerErrors(env, exports);
  ck::registerDevices(env, exports);
  ck::registerBuffers(env, exports);
  ck::registerEvents(env, exports);
  ck::registerAsync(env, exports);
  ck::registerCublas(env, exports);
  ck::registerAta(env, exports);
  ck::registerGemm(env, exports);
  ck::registerScan(env, exports);
  ck::registerStencil(env, exports);
  ck::registerApsp(env, exports);
  ck::registerMlp(env, exports);
  ck::registerPeer(env, exports);
  ck::registerDist(env, exports);
  ck::registerNvrtc(env, exports);
  ck::registerNvml(env, exports);
#ifdef CK_TEST_HOOKS
  ck::registerDebug(env, exports);  // fault injection for the tests; not in release builds
#endif
  return exports;
}

NODE_API_MODULE(cuda_kernels, Init)
