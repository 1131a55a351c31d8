// Blocked Floyd–Warshall on several GPUs (see multi.h). Host code only: the kernels are `fast`'s,
// given band pointers and leading dimensions through TileJob.
//
// Band scheme, round K with owner o (the GPU whose band holds tile row K), p0 = 128K:
//   o:      pivot block (K, K), then the row panel (K, ·) — both already done by the look-ahead — and
//           the panel (128 × np, contiguous in o's band) sent to every other GPU's panel buffer;
//   all g:  column panel (I, K) for the band's rows I ≠ K (through the pivot block, in the panel),
//           then phase 3 (I, J), J ≠ K, through the column panel and the row panel.
// Look-ahead: the owner o' of round K + 1 updates its tile row K + 1 for round K as soon as its column
// panel K is done, then closes pivot K + 1, computes row panel K + 1 and sends it — on a high-priority
// stream, while the rest of its phase 3 of round K runs on the library stream. Panel buffers alternate
// between two slots; a sender waits until each receiver is done reading the slot it overwrites.
#include "apsp/multi.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>

#include "apsp/apsp.h"
#include "core/device.h"
#include "core/errors.h"
#include "core/pool.h"
#include "peer/peer.h"

namespace ck {
namespace apsp {

namespace {

constexpr int64_t kT = kFastFactor;

struct Gpu {
  int dev = 0;
  int64_t tile0 = 0, tiles = 0;  // band: tile rows [tile0, tile0 + tiles)
  cudaStream_t main = nullptr;   // the library stream of dev
  cudaStream_t hi = nullptr;     // high priority: look-ahead and panel sends
  int32_t* m = nullptr;          // band (tiles·128 × np), or the whole padded matrix (replicated)
  int32_t* pan[2] = {nullptr, nullptr};
  int32_t* tmp = nullptr;  // scatter / gather staging on this device
  cudaEvent_t sent[2] = {nullptr, nullptr};
  cudaEvent_t doneRead[2] = {nullptr, nullptr};
  bool doneReadRecorded[2] = {false, false};
  cudaEvent_t col = nullptr, rowDone = nullptr, padded = nullptr, computed = nullptr, recv = nullptr;
  cudaEvent_t round[2] = {nullptr, nullptr};  // end of a round on `main` (progress only)

  Band band(int64_t np) const { return Band{m, tile0, tiles, np}; }
};

// `sleep`: an event a host thread waits on asleep (cudaEventBlockingSync) rather than spinning.
cudaEvent_t newEvent(bool sleep = false) {
  cudaEvent_t e = nullptr;
  CK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | (sleep ? cudaEventBlockingSync : 0u)));
  return e;
}

// Everything a run allocates; the destructor waits for the queued work (also after a failure) and
// releases it all.
struct Run {
  std::vector<Gpu> gpus;
  int32_t* stage = nullptr;  // pinned host staging (viaHost)
  int64_t n = 0, np = 0, tiles = 0;
  bool viaHost = false;
  bool sleep = false;  // host waits asleep (apspAsync's pool thread) rather than spinning
  const Progress* progress = nullptr;

  ~Run() {
    for (Gpu& g : gpus) {
      if (cudaSetDevice(g.dev) != cudaSuccess) continue;
      if (g.main) cudaStreamSynchronize(g.main);
      if (g.hi) cudaStreamSynchronize(g.hi);
    }
    for (Gpu& g : gpus) {
      if (cudaSetDevice(g.dev) != cudaSuccess) continue;
      for (int32_t* p : {g.m, g.pan[0], g.pan[1], g.tmp})
        if (p) poolFree(p, g.main);  // after the waits above
      for (cudaEvent_t e : {g.sent[0], g.sent[1], g.doneRead[0], g.doneRead[1], g.col, g.rowDone, g.padded,
                            g.computed, g.recv, g.round[0], g.round[1]})
        if (e) cudaEventDestroy(e);
      if (g.hi) cudaStreamDestroy(g.hi);
    }
    if (stage) cudaFreeHost(stage);
    cudaGetLastError();
  }

  Gpu& owner(int64_t k) {
    for (Gpu& g : gpus)
      if (k >= g.tile0 && k < g.tile0 + g.tiles) return g;
    throw CudaFailure("cudaErrorInvalidValue", "apsp multi", "no band holds tile row " + std::to_string(k));
  }

  // The row panel of round k as GPU g sees it: its own rows, or its panel buffer.
  const int32_t* panelOn(Gpu& g, int64_t k) {
    if (k >= g.tile0 && k < g.tile0 + g.tiles) return g.m + (k - g.tile0) * kT * np;
    return g.pan[k % 2];
  }

  size_t panelBytes() const { return static_cast<size_t>(kT * np) * sizeof(int32_t); }

  // Round k is queued on every GPU: with progress, wait for round k − 1 (round k keeps the GPUs busy
  // meanwhile) and report it.
  void roundQueued(int64_t k);
};

void Run::roundQueued(int64_t k) {
  if (progress == nullptr || !*progress) return;
  const int slot = static_cast<int>(k % 2);
  for (Gpu& g : gpus) {
    if (g.tiles == 0) continue;
    useDevice(g.dev);
    if (g.round[slot] == nullptr) g.round[slot] = newEvent(sleep);
    CK_CUDA(cudaEventRecord(g.round[slot], g.main));
  }
  if (k == 0) return;
  for (Gpu& g : gpus)
    if (g.tiles > 0) CK_CUDA(cudaEventSynchronize(g.round[1 - slot]));
  (*progress)(static_cast<int>(k), static_cast<int>(tiles));
}

void launch(const TileJob& job, const TileJob* second, cudaStream_t s, const char* what) {
  check(launchFastMinPlus(job, second, s), what);
}

}  // namespace

void bandRowUpdate(const Band& b, int64_t k, const int32_t* prevPanel, cudaStream_t s) {
  int32_t* rows = b.tileRow(k);
  const int t = static_cast<int>(b.np / kT);
  const TileJob row{rows + (k - 1) * kT,    prevPanel, rows, b.np, 1, kNoSkip, kNoSkip, t,
                    static_cast<int>(k - 1)};
  launch(row, nullptr, s, "apsp band look-ahead row");
}

void bandPivotRow(const Band& b, int64_t k, cudaStream_t s) {
  int32_t* rows = b.tileRow(k);
  const int64_t p0 = k * kT;
  const int t = static_cast<int>(b.np / kT);
  check(launchFastPivot(rows + p0, b.np, s), "apsp band pivot");
  const TileJob panel{rows + p0, rows, rows, b.np, 1, kNoSkip, kNoSkip, t, static_cast<int>(k)};
  launch(panel, nullptr, s, "apsp band row panel");
}

void bandColumnPanel(const Band& b, int64_t k, const int32_t* panel, cudaStream_t s) {
  const int64_t p0 = k * kT;
  const int skip = b.owns(k) ? static_cast<int>(k - b.tile0) : kNoSkip;
  const TileJob colPanel{b.m + p0, panel + p0, b.m + p0, b.np,   static_cast<int>(b.tiles),
                         skip,     kNoSkip,    1,        kNoSkip};
  launch(colPanel, nullptr, s, "apsp band column panel");
}

void bandPhase3(const Band& b, int64_t k, const int32_t* panel, int64_t aheadRow, cudaStream_t s) {
  const int64_t p0 = k * kT;
  const int t = static_cast<int>(b.np / kT);
  const int skip0 = b.owns(k) ? static_cast<int>(k - b.tile0) : kNoSkip;
  const int skip1 = aheadRow != kNoSkip && b.owns(aheadRow) ? static_cast<int>(aheadRow - b.tile0) : kNoSkip;
  const TileJob rest{b.m + p0,           panel, b.m, b.np, static_cast<int>(b.tiles), skip0, skip1, t,
                     static_cast<int>(k)};
  launch(rest, nullptr, s, "apsp band phase 3");
}

namespace {

// Owner of round k: [row k's phase 3 of round k − 1], pivot k, row panel k, send the panel.
void prepare(Run& r, int64_t k, bool rowUpdate) {
  Gpu& o = r.owner(k);
  const Band b = o.band(r.np);
  int32_t* rows = b.tileRow(k);
  useDevice(o.dev);
  if (rowUpdate) {
    CK_CUDA(cudaStreamWaitEvent(o.hi, o.col, 0));
    bandRowUpdate(b, k, r.panelOn(o, k - 1), o.hi);
    CK_CUDA(cudaEventRecord(o.rowDone, o.hi));
  }
  bandPivotRow(b, k, o.hi);
  const int slot = static_cast<int>(k % 2);
  bool staged = false;
  for (Gpu& g : r.gpus) {
    if (&g == &o || g.tiles == 0) continue;
    if (g.doneReadRecorded[slot]) CK_CUDA(cudaStreamWaitEvent(o.hi, g.doneRead[slot], 0));
    if (!r.viaHost) CK_CUDA(cudaMemcpyPeerAsync(g.pan[slot], g.dev, rows, o.dev, r.panelBytes(), o.hi));
    staged = true;
  }
  if (r.viaHost && staged) {
    CK_CUDA(cudaMemcpyAsync(r.stage + slot * kT * r.np, rows, r.panelBytes(), cudaMemcpyDeviceToHost, o.hi));
  }
  CK_CUDA(cudaEventRecord(o.sent[slot], o.hi));
}

void runBand(Run& r) {
  const int64_t np = r.np, T = r.tiles;
  for (Gpu& g : r.gpus) {
    if (g.tiles == 0) continue;
    useDevice(g.dev);
    CK_CUDA(poolMalloc(&g.pan[0], r.panelBytes(), g.main));
    CK_CUDA(poolMalloc(&g.pan[1], r.panelBytes(), g.main));
    for (cudaEvent_t* e : {&g.sent[0], &g.sent[1], &g.doneRead[0], &g.doneRead[1], &g.col, &g.rowDone})
      *e = newEvent();
  }
  if (r.viaHost)
    CK_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&r.stage), 2 * r.panelBytes(), cudaHostAllocPortable));

  {
    Gpu& o = r.owner(0);
    useDevice(o.dev);
    CK_CUDA(cudaStreamWaitEvent(o.hi, o.padded, 0));
    prepare(r, 0, false);
  }
  for (int64_t k = 0; k < T; ++k) {
    Gpu& o = r.owner(k);
    const int slot = static_cast<int>(k % 2);
    const bool ahead = k + 1 < T;
    Gpu* o2 = ahead ? &r.owner(k + 1) : nullptr;
    for (Gpu& g : r.gpus) {
      if (g.tiles == 0) continue;
      useDevice(g.dev);
      CK_CUDA(cudaStreamWaitEvent(g.main, o.sent[slot], 0));
      if (r.viaHost && &g != &o) {
        CK_CUDA(cudaMemcpyAsync(g.pan[slot], r.stage + slot * kT * np, r.panelBytes(), cudaMemcpyHostToDevice,
                                g.main));
      }
      bandColumnPanel(g.band(np), k, r.panelOn(g, k), g.main);
      if (&g == o2) CK_CUDA(cudaEventRecord(g.col, g.main));
    }
    if (ahead) prepare(r, k + 1, true);
    for (Gpu& g : r.gpus) {
      if (g.tiles == 0) continue;
      useDevice(g.dev);
      bandPhase3(g.band(np), k, r.panelOn(g, k), &g == o2 ? k + 1 : kNoSkip, g.main);
      // The look-ahead on the high-priority stream read this round's panel too.
      if (&g == o2) CK_CUDA(cudaStreamWaitEvent(g.main, g.rowDone, 0));
      CK_CUDA(cudaEventRecord(g.doneRead[slot], g.main));
      g.doneReadRecorded[slot] = true;
    }
    r.roundQueued(k);
  }
}

void runReplicated(Run& r) {
  const int64_t np = r.np, T = r.tiles;
  const int t = static_cast<int>(T);
  for (Gpu& g : r.gpus) {
    if (g.tiles == 0) continue;
    useDevice(g.dev);
    g.computed = newEvent();
    g.sent[0] = newEvent();
    g.recv = newEvent();
  }
  if (r.viaHost) {
    CK_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&r.stage), static_cast<size_t>(np * np) * sizeof(int32_t),
                          cudaHostAllocPortable));
  }
  for (int64_t k = 0; k < T; ++k) {
    const int64_t p0 = k * kT;
    for (Gpu& g : r.gpus) {
      if (g.tiles == 0) continue;
      useDevice(g.dev);
      int32_t* d = g.m;
      check(launchFastPivot(d + p0 * np + p0, np, g.main), "apsp replicated pivot");
      if (T > 1) {
        const int kk = static_cast<int>(k);
        const TileJob rowPanel{d + p0 * np + p0, d + p0 * np, d + p0 * np, np, 1, kNoSkip, kNoSkip, t, kk};
        const TileJob colPanel{d + p0, d + p0 * np + p0, d + p0, np, t, kk, kNoSkip, 1, kNoSkip};
        launch(rowPanel, &colPanel, g.main, "apsp replicated panels");
        int32_t* band = d + g.tile0 * kT * np;
        const int skip = k >= g.tile0 && k < g.tile0 + g.tiles ? static_cast<int>(k - g.tile0) : kNoSkip;
        const TileJob rest{band + p0, d + p0 * np, band, np, static_cast<int>(g.tiles), skip, kNoSkip, t, kk};
        launch(rest, nullptr, g.main, "apsp replicated phase 3");
      }
      CK_CUDA(cudaEventRecord(g.computed, g.main));
    }
    // Exchange the bands: every GPU's copy of every other band is rewritten with the owner's.
    for (Gpu& g : r.gpus) {
      if (g.tiles == 0) continue;
      useDevice(g.dev);
      const size_t off = static_cast<size_t>(g.tile0 * kT * np);
      const size_t bytes = static_cast<size_t>(g.tiles * kT * np) * sizeof(int32_t);
      if (r.viaHost) {
        // The staging rows of this band are free once every receiver has copied last round's.
        if (k > 0)
          for (Gpu& h : r.gpus)
            if (&h != &g && h.tiles > 0) CK_CUDA(cudaStreamWaitEvent(g.main, h.recv, 0));
        CK_CUDA(cudaMemcpyAsync(r.stage + off, g.m + off, bytes, cudaMemcpyDeviceToHost, g.main));
      } else {
        // A receiver reads and writes these rows in its own phases 1–3: overwrite them only after.
        for (Gpu& h : r.gpus)
          if (&h != &g && h.tiles > 0) CK_CUDA(cudaStreamWaitEvent(g.main, h.computed, 0));
        for (Gpu& h : r.gpus)
          if (&h != &g && h.tiles > 0)
            CK_CUDA(cudaMemcpyPeerAsync(h.m + off, h.dev, g.m + off, g.dev, bytes, g.main));
      }
      CK_CUDA(cudaEventRecord(g.sent[0], g.main));
    }
    for (Gpu& h : r.gpus) {
      if (h.tiles == 0) continue;
      useDevice(h.dev);
      for (Gpu& g : r.gpus) {
        if (&g == &h || g.tiles == 0) continue;
        CK_CUDA(cudaStreamWaitEvent(h.main, g.sent[0], 0));
        if (r.viaHost) {
          const size_t off = static_cast<size_t>(g.tile0 * kT * np);
          const size_t bytes = static_cast<size_t>(g.tiles * kT * np) * sizeof(int32_t);
          CK_CUDA(cudaMemcpyAsync(h.m + off, r.stage + off, bytes, cudaMemcpyHostToDevice, h.main));
        }
      }
      if (r.viaHost) CK_CUDA(cudaEventRecord(h.recv, h.main));
    }
    r.roundQueued(k);
  }
}

}  // namespace

void bandOf(int64_t tiles, int gpus, int index, int64_t* first, int64_t* count) {
  const int64_t base = tiles / gpus, extra = tiles % gpus;
  *count = base + (index < extra ? 1 : 0);
  *first = index * base + std::min<int64_t>(index, extra);
}

// Waits on the host for the work queued so far on `stream` (of the current device), asleep with `sleep`.
static void waitFor(cudaStream_t stream, bool sleep) {
  if (!sleep) {
    CK_CUDA(cudaStreamSynchronize(stream));
    return;
  }
  struct Event {
    cudaEvent_t e = newEvent(true);
    ~Event() { cudaEventDestroy(e); }
  } ev;
  CK_CUDA(cudaEventRecord(ev.e, stream));
  CK_CUDA(cudaEventSynchronize(ev.e));
}

struct MultiRun::State {
  Run r;
  MultiScheme scheme = MultiScheme::Band;
  int32_t* out = nullptr;
  int outDevice = 0;
  bool finished = false;
};

MultiRun::MultiRun(MultiScheme scheme, const int32_t* in, int inDevice, int32_t* out, int64_t n,
                   const std::vector<int>& devices, bool viaHost, bool sleep)
    : s_(std::make_unique<State>()) {
  if (devices.empty() || n < 1 || n > kMaxN)
    throw CudaFailure("cudaErrorInvalidValue", "apsp multi", "need at least one device and 1 <= n <= 131072");
  Run& r = s_->r;
  s_->scheme = scheme;
  s_->out = out;
  s_->outDevice = devices[0];
  r.n = n;
  r.np = (n + kT - 1) / kT * kT;
  r.tiles = r.np / kT;
  r.viaHost = viaHost;
  r.sleep = sleep;
  const int64_t np = r.np;
  const bool replicated = scheme == MultiScheme::Replicated;
  const int outDevice = devices[0];
  r.gpus.resize(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    Gpu& g = r.gpus[i];
    g.dev = devices[i];
    bandOf(r.tiles, static_cast<int>(devices.size()), static_cast<int>(i), &g.tile0, &g.tiles);
  }
  if (!viaHost) {
    for (size_t i = 0; i < devices.size(); ++i) {
      if (devices[i] != inDevice) peer::enable(devices[i], inDevice);
      for (size_t j = i + 1; j < devices.size(); ++j) peer::enable(devices[i], devices[j]);
    }
  }

  // Input and output ordered after what is queued on their devices' library streams.
  cudaEvent_t inReady = nullptr, outReady = nullptr;
  cudaStream_t inStream = libraryStream(inDevice);
  inReady = newEvent();
  CK_CUDA(cudaEventRecord(inReady, inStream));
  cudaStream_t outStream = libraryStream(outDevice);
  outReady = newEvent();
  CK_CUDA(cudaEventRecord(outReady, outStream));
  struct Events {
    cudaEvent_t a, b;
    ~Events() {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  } keep{inReady, outReady};

  for (Gpu& g : r.gpus) {
    if (g.tiles == 0) continue;
    g.main = libraryStream(g.dev);
    int least = 0, greatest = 0;
    CK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CK_CUDA(cudaStreamCreateWithPriority(&g.hi, cudaStreamNonBlocking, greatest));
    g.padded = newEvent();
    CK_CUDA(cudaStreamWaitEvent(g.main, inReady, 0));
    CK_CUDA(cudaStreamWaitEvent(g.main, outReady, 0));
    // Replicated: the whole matrix; band: the band's rows.
    const int64_t row0 = replicated ? 0 : g.tile0 * kT;
    const int64_t rows = replicated ? np : g.tiles * kT;
    const int64_t valid = std::max<int64_t>(0, std::min(rows, n - row0));
    CK_CUDA(poolMalloc(&g.m, static_cast<size_t>(rows * np) * sizeof(int32_t), g.main));
    const int32_t* src = valid > 0 ? in + row0 * n : nullptr;
    if (valid > 0 && g.dev != inDevice) {
      const size_t bytes = static_cast<size_t>(valid * n) * sizeof(int32_t);
      CK_CUDA(poolMalloc(&g.tmp, bytes, g.main));
      CK_CUDA(cudaMemcpyPeerAsync(g.tmp, g.dev, src, inDevice, bytes, g.main));
      src = g.tmp;
    }
    check(launchPadRows(src, g.m, n, np, row0, rows, g.main), "apsp multi pad");
    CK_CUDA(cudaEventRecord(g.padded, g.main));
  }
  // Later writers of `in` (queued on its stream after this call) wait until every band has read it.
  useDevice(inDevice);
  for (Gpu& g : r.gpus)
    if (g.tiles > 0) CK_CUDA(cudaStreamWaitEvent(inStream, g.padded, 0));
}

MultiRun::~MultiRun() = default;

void MultiRun::finish(const Progress& progress) {
  if (s_->finished) throw CudaFailure("cudaErrorInvalidValue", "apsp multi", "the run was finished already");
  s_->finished = true;
  Run& r = s_->r;
  r.progress = &progress;
  const int64_t n = r.n, np = r.np;
  const bool replicated = s_->scheme == MultiScheme::Replicated;
  const int outDevice = s_->outDevice;
  int32_t* out = s_->out;

  if (replicated)
    runReplicated(r);
  else
    runBand(r);

  // Gather: each band's first n rows and columns into out (replicated: devices[0] has them all).
  for (Gpu& g : r.gpus) {
    if (g.tiles == 0) continue;
    if (replicated && g.dev != outDevice) continue;
    useDevice(g.dev);
    const int64_t row0 = replicated ? 0 : g.tile0 * kT;
    const int64_t valid = std::max<int64_t>(0, std::min(replicated ? n : g.tiles * kT, n - row0));
    if (valid == 0) continue;
    const int32_t* band = g.m;
    int32_t* dst = out + row0 * n;
    const size_t bytes = static_cast<size_t>(valid * n) * sizeof(int32_t);
    if (g.dev == outDevice) {
      check(launchUnpadRows(band, dst, n, np, valid, g.main), "apsp multi unpad");
    } else if (np == n) {
      CK_CUDA(cudaMemcpyPeerAsync(dst, outDevice, band, g.dev, bytes, g.main));
    } else {
      if (!g.tmp) CK_CUDA(poolMalloc(&g.tmp, bytes, g.main));
      check(launchUnpadRows(band, g.tmp, n, np, valid, g.main), "apsp multi unpad");
      CK_CUDA(cudaMemcpyPeerAsync(dst, outDevice, g.tmp, g.dev, bytes, g.main));
    }
  }
  for (Gpu& g : r.gpus) {
    if (g.tiles == 0) continue;
    useDevice(g.dev);
    waitFor(g.hi, r.sleep);
    waitFor(g.main, r.sleep);
  }
  r.progress = nullptr;
  if (progress) progress(static_cast<int>(r.tiles), static_cast<int>(r.tiles));
  // The input's and output's library streams: nothing of this run is left on them after the waits above.
}

void runMulti(MultiScheme scheme, const int32_t* in, int inDevice, int32_t* out, int64_t n,
              const std::vector<int>& devices, bool viaHost, const Progress& progress) {
  MultiRun run(scheme, in, inDevice, out, n, devices, viaHost, false);
  run.finish(progress);
}

}  // namespace apsp
}  // namespace ck
