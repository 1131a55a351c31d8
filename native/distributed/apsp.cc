// The band scheme over NCCL (see apsp.h). The rounds are apsp/multi.cc's, built from the same band
// steps (apsp::bandColumnPanel, bandPhase3, bandRowUpdate, bandPivotRow); only the transport differs:
// the panel of round k goes from its owner to every rank by ncclBroadcast on the high-priority
// stream, into one of two panel buffers that alternate between rounds.
#include "distributed/apsp.h"

#include <algorithm>
#include <string>
#include <thread>

#include "apsp/apsp.h"
#include "apsp/multi.h"
#include "core/device.h"
#include "core/errors.h"

namespace ck {
namespace dist {

namespace {

constexpr int64_t kT = apsp::kFastFactor;
// Panel broadcasts in flight at most: the host stays about two rounds ahead of the GPU, enough to
// keep it busy and little enough that a hung peer never leaves a thread blocked inside a launch.
constexpr size_t kMaxBroadcasts = 3;

// Everything one run allocates; the destructor waits for its streams (after an abort NCCL's kernels
// return, so they drain) and releases it all.
struct Resources {
  int device = 0;
  cudaStream_t main = nullptr, hi = nullptr;
  int32_t* band = nullptr;
  int32_t* pan[2] = {nullptr, nullptr};
  cudaEvent_t sent[2] = {nullptr, nullptr}, doneRead[2] = {nullptr, nullptr};
  cudaEvent_t padded = nullptr, col = nullptr, rowDone = nullptr, joined = nullptr, finished = nullptr;

  ~Resources() {
    if (cudaSetDevice(device) != cudaSuccess) return;
    if (hi) cudaStreamSynchronize(hi);
    if (main) cudaStreamSynchronize(main);
    for (int32_t* p : {band, pan[0], pan[1]})
      if (p) cudaFree(p);
    for (cudaEvent_t e : {sent[0], sent[1], doneRead[0], doneRead[1], padded, col, rowDone, joined, finished})
      if (e) cudaEventDestroy(e);
    if (hi) cudaStreamDestroy(hi);
    cudaGetLastError();
  }
};

cudaEvent_t newEvent() {
  cudaEvent_t e = nullptr;
  CK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

}  // namespace

void apspBandRows(int64_t n, int size, int rank, int64_t* row0, int64_t* rows) {
  const int64_t tiles = (n + kT - 1) / kT;
  int64_t first = 0, count = 0;
  apsp::bandOf(tiles, size, rank, &first, &count);
  *row0 = std::min(first * kT, n);
  *rows = std::max<int64_t>(0, std::min(count * kT, n - first * kT));
}

void apspDistributed(Comm& comm, const int32_t* in, int32_t* out, int64_t n,
                     const std::function<void(int done, int rounds)>& progress) {
  if (n < 1 || n > apsp::kMaxDistN)
    throw CudaFailure("cudaErrorInvalidValue", "apspDistributed", "n must be in [1, 262144]");
  const nccl::Api& api = nccl::api();
  const int size = comm.size(), rank = comm.rank();
  const int64_t np = (n + kT - 1) / kT * kT, T = np / kT;
  apsp::Band b;
  b.np = np;
  apsp::bandOf(T, size, rank, &b.tile0, &b.tiles);
  const int64_t row0 = b.tile0 * kT, valid = std::max<int64_t>(0, std::min(b.tiles * kT, n - row0));
  // The rank holding tile row k: the first T % size ranks hold one tile row more (apsp::bandOf).
  const int64_t base = T / size, extra = T % size;
  auto ownerOf = [&](int64_t k) {
    return static_cast<int>(k < extra * (base + 1) ? k / (base + 1)
                                                   : extra + (k - extra * (base + 1)) / base);
  };
  const size_t panelCount = static_cast<size_t>(kT * np);

  Resources r;
  r.device = comm.device();
  r.main = libraryStream(r.device);
  try {
    int least = 0, greatest = 0;
    CK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CK_CUDA(cudaStreamCreateWithPriority(&r.hi, cudaStreamNonBlocking, greatest));
    for (cudaEvent_t* e : {&r.sent[0], &r.sent[1], &r.doneRead[0], &r.doneRead[1], &r.padded, &r.col,
                           &r.rowDone, &r.joined, &r.finished})
      *e = newEvent();
    // Rows that need no padding (n a multiple of 128, whole tile rows here) are worked on in `out`
    // itself, copied there first unless they are there already: memory is then the band (and the
    // caller's input, when it is another array) and two panels, never a padded copy besides.
    const bool inPlace = b.tiles > 0 && np == n && valid == b.tiles * kT;
    if (b.tiles > 0 && !inPlace)
      CK_CUDA(cudaMalloc(reinterpret_cast<void**>(&r.band),
                         static_cast<size_t>(b.tiles * kT * np) * sizeof(int32_t)));
    for (int32_t*& p : r.pan) CK_CUDA(cudaMalloc(reinterpret_cast<void**>(&p), panelCount * sizeof(int32_t)));
    b.m = inPlace ? out : r.band;
    if (inPlace) {
      if (in != out)
        CK_CUDA(cudaMemcpyAsync(out, in, static_cast<size_t>(valid * n) * sizeof(int32_t),
                                cudaMemcpyDeviceToDevice, r.main));
      // Nothing to pad: only the diagonal becomes 0, one int32 every n + 1 elements from column row0.
      CK_CUDA(cudaMemset2DAsync(b.m + row0, static_cast<size_t>(n + 1) * sizeof(int32_t), 0, sizeof(int32_t),
                                static_cast<size_t>(valid), r.main));
    } else if (b.tiles > 0) {
      check(apsp::launchPadRows(valid > 0 ? in : nullptr, b.m, n, np, row0, b.tiles * kT, r.main),
            "apsp distributed pad");
    }
    CK_CUDA(cudaEventRecord(r.padded, r.main));
    CK_CUDA(cudaStreamWaitEvent(r.hi, r.padded, 0));

    std::vector<uint64_t> broadcast(static_cast<size_t>(T), 0);
    bool doneReadRecorded[2] = {false, false};
    // Round k's panel from its owner to every rank, on the high-priority stream: the owner sends
    // its own rows (in place), the others receive into panel slot k % 2 once its last reader is done.
    auto send = [&](int64_t k) {
      const int slot = static_cast<int>(k % 2);
      int32_t* buf = b.owns(k) ? b.tileRow(k) : r.pan[slot];
      if (!b.owns(k) && doneReadRecorded[slot]) CK_CUDA(cudaStreamWaitEvent(r.hi, r.doneRead[slot], 0));
      const int root = ownerOf(k);
      broadcast[static_cast<size_t>(k)] = comm.enqueue(
          "apsp panel broadcast", r.hi, false, kMaxBroadcasts,
          [&](nccl::Comm c) { return api.broadcast(buf, buf, panelCount, nccl::kInt32, root, c, r.hi); });
      CK_CUDA(cudaEventRecord(r.sent[slot], r.hi));
    };

    if (b.owns(0)) apsp::bandPivotRow(b, 0, r.hi);
    send(0);
    for (int64_t k = 0; k < T; ++k) {
      const int slot = static_cast<int>(k % 2);
      const bool ahead = k + 1 < T;
      const bool mineNext = ahead && b.owns(k + 1);
      const int32_t* panel = b.owns(k) ? b.tileRow(k) : r.pan[slot];
      CK_CUDA(cudaStreamWaitEvent(r.main, r.sent[slot], 0));
      if (b.tiles > 0) apsp::bandColumnPanel(b, k, panel, r.main);
      if (mineNext) CK_CUDA(cudaEventRecord(r.col, r.main));
      if (ahead) {
        // Look-ahead: the next owner's pivot row, pivot block and row panel, then the broadcast.
        if (mineNext) {
          CK_CUDA(cudaStreamWaitEvent(r.hi, r.col, 0));
          apsp::bandRowUpdate(b, k + 1, panel, r.hi);
          CK_CUDA(cudaEventRecord(r.rowDone, r.hi));
          apsp::bandPivotRow(b, k + 1, r.hi);
        }
        send(k + 1);
      }
      if (b.tiles > 0) apsp::bandPhase3(b, k, panel, mineNext ? k + 1 : apsp::kNoSkip, r.main);
      // The look-ahead on the high-priority stream read this round's panel too.
      if (mineNext) CK_CUDA(cudaStreamWaitEvent(r.main, r.rowDone, 0));
      CK_CUDA(cudaEventRecord(r.doneRead[slot], r.main));
      doneReadRecorded[slot] = true;
      if (progress && k >= 1) {
        comm.wait(broadcast[static_cast<size_t>(k - 1)]);
        progress(static_cast<int>(k - 1), static_cast<int>(T));
      }
    }
    if (valid > 0 && !inPlace)
      check(apsp::launchUnpadRows(b.m, out, n, np, valid, r.main), "apsp distributed unpad");
    CK_CUDA(cudaEventRecord(r.joined, r.hi));
    CK_CUDA(cudaStreamWaitEvent(r.main, r.joined, 0));
    CK_CUDA(cudaEventRecord(r.finished, r.main));
    // Poll rather than synchronize: should a peer hang, the watchdog aborts the communicator, NCCL's
    // kernels return and this notices the failure.
    for (auto pause = std::chrono::microseconds(20);;
         pause = std::min(pause * 2, std::chrono::microseconds(1000))) {
      const cudaError_t q = cudaEventQuery(r.finished);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) check(q, "apsp distributed");
      comm.throwIfFailed();
      std::this_thread::sleep_for(pause);
    }
    cudaGetLastError();
    comm.throwIfFailed();
    if (progress) progress(static_cast<int>(T), static_cast<int>(T));
  } catch (const CudaFailure& f) {
    // The ranks' sequences of NCCL calls no longer match: abort before waiting for the streams.
    comm.fail(f.code(),
              std::string("apspDistributed stopped on rank ") + std::to_string(rank) + ": " + f.what());
    throw;
  }
}

}  // namespace dist
}  // namespace ck
