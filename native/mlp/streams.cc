// The side streams of each device (streams.h).
#include "mlp/streams.h"

#include <memory>
#include <mutex>
#include <vector>

#include "core/errors.h"

namespace ck {
namespace mlp {

SideResources& side(int device) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<SideResources>> all;
  std::lock_guard<std::mutex> lock(mutex);
  if (all.size() <= static_cast<size_t>(device)) all.resize(static_cast<size_t>(device) + 1);
  auto& r = all[static_cast<size_t>(device)];
  if (!r) {
    auto fresh = std::make_unique<SideResources>();
    for (auto& s : fresh->streams) CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    r = std::move(fresh);
  }
  return *r;
}

}  // namespace mlp
}  // namespace ck
