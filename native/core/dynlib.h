// Libraries found at run time (cuBLAS, NCCL): the build machines have neither, so they are opened
// with dlopen and their functions bound one by one, each failure a CudaFailure that names it.
#pragma once

#include <dlfcn.h>

#include <functional>
#include <string>
#include <vector>

#include "errors.h"

namespace ck {

// The first of `candidates` that dlopen loads (its name in `opened`), or null with one line per
// failed attempt appended to `tried`. `before` runs ahead of each attempt (cuBLAS opens its
// cuBLASLt from the same folder first).
inline void* openFirst(const std::vector<std::string>& candidates, std::string* opened, std::string* tried,
                       const std::function<void(const std::string&)>& before = {}) {
  for (const auto& path : candidates) {
    if (before) before(path);
    if (void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *opened = path;
      return lib;
    }
    const char* e = dlerror();
    *tried += "\n  " + (e ? std::string(e) : path);
  }
  return nullptr;
}

// Binds `fn` to `symbol`, or throws CudaFailure(`code`): "<library> lacks <symbol><hint>".
template <typename F>
void bindSymbol(void* lib, F& fn, const char* symbol, const char* code, const std::string& library,
                const std::string& hint = "") {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
  if (fn == nullptr) throw CudaFailure(code, "dlsym", library + " lacks " + symbol + hint);
}

}  // namespace ck
