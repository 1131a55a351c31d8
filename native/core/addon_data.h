// Per-environment state (one per main thread or worker thread that loads the addon).
#pragma once

#include <napi.h>

namespace ck {

struct AddonData {
  Napi::FunctionReference cudaErrorClass;

  static AddonData* get(Napi::Env env) { return env.GetInstanceData<AddonData>(); }
};

}  // namespace ck
