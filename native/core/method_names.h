// The names of a family's method table in index order: what each `<family>Methods()` binding returns
// and lib/ops/<family>.ts checks its registry against (every table entry has a `name`).
#pragma once

#include <napi.h>

namespace ck {

template <class Entry>
Napi::Value methodNames(Napi::Env env, const Entry* table, int count) {
  auto names = Napi::Array::New(env, static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) names.Set(static_cast<uint32_t>(i), table[i].name);
  return names;
}

}  // namespace ck
