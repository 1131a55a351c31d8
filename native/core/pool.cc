#include "pool.h"

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "device.h"
#include "errors.h"

namespace ck {

namespace {

struct Pools {
  std::mutex mutex;
  std::vector<cudaMemPool_t> byDevice;
  std::vector<size_t> oomRetries;          // by device
  std::vector<std::pair<int, int>> peers;  // (owner, peer) grants, applied to pools created later
};

// Never destroyed, like the library streams: arrays finalized at exit still free into it.
Pools& pools() {
  static Pools* p = new Pools();
  return *p;
}

cudaError_t grant(cudaMemPool_t pool, int peer) {
  cudaMemAccessDesc desc{};
  desc.location.type = cudaMemLocationTypeDevice;
  desc.location.id = peer;
  desc.flags = cudaMemAccessFlagsProtReadWrite;
  return cudaMemPoolSetAccess(pool, &desc, 1);
}

// The pool of `device`, created on first use. Caller holds pools().mutex.
cudaError_t poolLocked(Pools& p, int device, cudaMemPool_t* out) {
  if (device < 0) return cudaErrorInvalidDevice;
  if (p.byDevice.size() <= static_cast<size_t>(device))
    p.byDevice.resize(static_cast<size_t>(device) + 1, nullptr);
  cudaMemPool_t& pool = p.byDevice[static_cast<size_t>(device)];
  if (pool == nullptr) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t created = nullptr;
    cudaError_t err = cudaMemPoolCreate(&created, &props);
    if (err != cudaSuccess) return err;
    // Keep up to an eighth of the device's memory reserved across synchronizations (every workspace
    // and small array is reused from it); beyond that, freed memory goes back to the driver at the
    // next synchronization. Keeping everything starved other processes on the H100: after a test had
    // filled the device and freed it all, child processes could not even create a context
    // (cudaErrorMemoryAllocation in cudaSetDevice). The caller made `device` current.
    size_t freeBytes = 0, totalBytes = 0;
    uint64_t keep = uint64_t{1} << 30;
    if (cudaMemGetInfo(&freeBytes, &totalBytes) == cudaSuccess) keep = totalBytes / 8;
    cudaGetLastError();
    err = cudaMemPoolSetAttribute(created, cudaMemPoolAttrReleaseThreshold, &keep);
    for (const auto& g : p.peers)
      if (err == cudaSuccess && g.first == device) err = grant(created, g.second);
    if (err != cudaSuccess) {
      cudaMemPoolDestroy(created);
      return err;
    }
    pool = created;
  }
  *out = pool;
  return cudaSuccess;
}

cudaError_t poolOf(int device, cudaMemPool_t* out) {
  Pools& p = pools();
  std::lock_guard<std::mutex> lock(p.mutex);
  return poolLocked(p, device, out);
}

cudaMemPool_t poolOrThrow(int device) {
  useDevice(device);
  cudaMemPool_t pool = nullptr;
  check(poolOf(device, &pool), "cudaMemPoolCreate");
  return pool;
}

uint64_t attribute(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  uint64_t v = 0;
  check(cudaMemPoolGetAttribute(pool, attr, &v), "cudaMemPoolGetAttribute");
  return v;
}

}  // namespace

cudaError_t poolMalloc(void** ptr, size_t bytes, cudaStream_t stream) {
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  cudaMemPool_t pool = nullptr;
  if (err == cudaSuccess) err = poolOf(device, &pool);
  if (err != cudaSuccess) return err;
  err = cudaMallocFromPoolAsync(ptr, bytes, pool, stream);
  if (err != cudaErrorMemoryAllocation) return err;
  // Out of memory: memory freed in stream order is reusable (and releasable) only once the frees
  // have run, so wait for the device, hand the pool's unused memory back, and try once more.
  cudaGetLastError();
  {
    Pools& p = pools();
    std::lock_guard<std::mutex> lock(p.mutex);
    if (p.oomRetries.size() <= static_cast<size_t>(device))
      p.oomRetries.resize(static_cast<size_t>(device) + 1, 0);
    p.oomRetries[static_cast<size_t>(device)]++;
  }
  err = cudaDeviceSynchronize();
  if (err == cudaSuccess) err = cudaMemPoolTrimTo(pool, 0);
  if (err != cudaSuccess) return err;
  err = cudaMallocFromPoolAsync(ptr, bytes, pool, stream);
  if (err != cudaSuccess) {
    cudaGetLastError();  // not sticky; keep it from surfacing in a later, unrelated call
    *ptr = nullptr;
  }
  return err;
}

cudaError_t poolFree(void* ptr, cudaStream_t stream) {
  return ptr == nullptr ? cudaSuccess : cudaFreeAsync(ptr, stream);
}

PoolStats poolStats(int device) {
  cudaMemPool_t pool = poolOrThrow(device);
  PoolStats s;
  s.used = attribute(pool, cudaMemPoolAttrUsedMemCurrent);
  s.reserved = attribute(pool, cudaMemPoolAttrReservedMemCurrent);
  s.highWater = attribute(pool, cudaMemPoolAttrUsedMemHigh);
  Pools& p = pools();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (static_cast<size_t>(device) < p.oomRetries.size())
    s.oomRetries = p.oomRetries[static_cast<size_t>(device)];
  return s;
}

void poolTrim(int device, size_t keepBytes) {
  cudaMemPool_t pool = poolOrThrow(device);
  CK_CUDA(cudaDeviceSynchronize());
  CK_CUDA(cudaMemPoolTrimTo(pool, keepBytes));
}

void poolAllowPeer(int owner, int peer) {
  if (owner == peer) return;
  Pools& p = pools();
  std::lock_guard<std::mutex> lock(p.mutex);
  for (const auto& g : p.peers)
    if (g.first == owner && g.second == peer) return;
  if (static_cast<size_t>(owner) < p.byDevice.size() && p.byDevice[static_cast<size_t>(owner)] != nullptr)
    check(grant(p.byDevice[static_cast<size_t>(owner)], peer), "cudaMemPoolSetAccess");
  p.peers.emplace_back(owner, peer);
}

}  // namespace ck
