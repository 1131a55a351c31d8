// Handing outcomes of work that finishes on other threads to the JS thread, which settles the
// promises waiting for them: the pieces the copyFromAsync stager (core/buffer.cc) and the NCCL
// communicators (distributed/binding.cc) share. Each keeps its own state (its pending promises) behind a
// typed thread-safe function.
#pragma once

#include <napi.h>

#include <memory>
#include <mutex>

namespace ck {

// Posts outcomes from any thread until closed; after close() nothing more is queued, and outcomes
// already queued are still delivered, then the thread-safe function's state is finalized.
template <class Tsfn, class Outcome>
struct JsRelay {
  std::mutex mutex;
  bool open = true;
  Tsfn tsfn;

  void post(std::unique_ptr<Outcome> outcome) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!open) return;
    Outcome* raw = outcome.release();
    if (tsfn.NonBlockingCall(raw) != napi_ok) delete raw;
  }
  void close() {
    std::lock_guard<std::mutex> lock(mutex);
    if (!open) return;
    open = false;
    tsfn.Release();
  }
};

// Keeps the event loop alive while promises are pending, as a pending fs call would; with none, the
// process may exit. JS thread only; `open` goes false at the environment's cleanup.
template <class Tsfn>
struct PendingRef {
  bool referenced = false;
  bool open = true;

  void update(Napi::Env env, Tsfn& tsfn, bool pending) {
    if (!open || pending == referenced) return;
    if (pending)
      tsfn.Ref(env);
    else
      tsfn.Unref(env);
    referenced = pending;
  }
};

}  // namespace ck
