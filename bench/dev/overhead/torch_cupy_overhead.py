"""PyTorch's and CuPy's per-call cost for the calls of the `overhead` bench family, on the same GPU.

Each row is the wall-clock time of one call (median over many, after warm-up), PyTorch and CuPy
interleaved call by call so that clock drift affects both alike. The calls mirror lib/bench/overhead.ts:

  empty+free      a 1024-element float32 array from the library's allocator, dropped at once
  upload+free     1 KiB from a host array into a new device array (waits for the copy), dropped
  scan+sync       inclusive prefix sum of 4096 int32 in place, then a device synchronize
  reduce          sum of 4096 float32 returned as a host number
  gemm+sync       64×64×64 float32 into an existing output, then a device synchronize
  D2H/H2D         1 MiB and 256 MiB between an existing device array and an existing host array,
                  pageable (already touched) or pinned, each call complete when it returns; H2D
                  pageable also with non_blocking=True / on a stream (beside our copyFromAsync)

Prints one JSON line per (call, library) in the result file's row format (op `overhead`, method
`pytorch` or `cupy`), plus `{"clocks": ...}` lines at start and end. bench/dev/overhead/merge.js
merges the rows into bench/results/<gpu>.json.
"""
import json
import statistics
import subprocess
import sys
import time

import cupy as cp
import numpy as np
import torch

torch.backends.cuda.matmul.allow_tf32 = False
dev = torch.device("cuda")
QUICK = "--quick" in sys.argv
REPS = 60 if QUICK else 300
BIG_REPS = 4 if QUICK else 12
MiB = 1 << 20


def clocks(when):
    try:
        q = subprocess.run(
            ["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001 - a missing nvidia-smi must not stop the timings
        q = f"unavailable: {e}"
    print(json.dumps({"clocks": when, "query": q}), flush=True)


def sync():
    torch.cuda.synchronize()
    cp.cuda.Device().synchronize()


def interleaved(fns, reps, warmup=20):
    """Wall-clock µs samples per library, one call of each per repetition."""
    for f in fns.values():
        for _ in range(warmup):
            f()
    sync()
    out = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            out[k].append((time.perf_counter() - t) * 1e6)
    return out


def emit(size, samples, nbytes=None, what=""):
    for lib, s in samples.items():
        us = statistics.median(s)
        row = {
            "op": "overhead",
            "method": "pytorch" if lib == "torch" else "cupy",
            "size": size,
            "ms": us / 1e3,
            "rate": (nbytes / (us * 1e-6) / 1e9) if nbytes else 1e6 / us,
            "unit": "GB/s" if nbytes else "calls/s",
            "reps": len(s),
            "check": "skipped",
            "note": f"{min(s):.1f}–{max(s):.1f} µs; wall clock per call, median; {what[lib]}; "
                    f"PyTorch {torch.__version__}, CuPy {cp.__version__}, interleaved (bench/dev/overhead)",
        }
        print(json.dumps(row), flush=True)


clocks("start")

# empty + free
emit("empty+free float32x1024", interleaved({
    "torch": lambda: torch.empty(1024, dtype=torch.float32, device=dev),
    "cupy": lambda: cp.empty(1024, dtype=cp.float32),
}, REPS), what={"torch": "torch.empty (caching allocator)", "cupy": "cupy.empty (memory pool)"})

# upload 1 KiB + free
h1k = np.random.rand(256).astype(np.float32)
emit("upload+free 1KiB", interleaved({
    "torch": lambda: torch.from_numpy(h1k).to(dev),
    "cupy": lambda: cp.asarray(h1k),
}, REPS), what={"torch": "torch.from_numpy(x).to('cuda')", "cupy": "cupy.asarray(x)"})

# scan 4096 int32 in place + synchronize
ts = torch.randint(0, 100, (4096,), dtype=torch.int32, device=dev)
cs = cp.random.randint(0, 100, 4096, dtype=cp.int32)


def torch_scan():
    ts.cumsum_(0)
    torch.cuda.synchronize()


def cupy_scan():
    cp.cumsum(cs, out=cs)
    cp.cuda.Device().synchronize()


emit("scan int32x4096 in place+sync", interleaved({"torch": torch_scan, "cupy": cupy_scan}, REPS),
     what={"torch": "t.cumsum_(0) + torch.cuda.synchronize()", "cupy": "cupy.cumsum(a, out=a) + Device.synchronize()"})

# reduce sum 4096 float32 -> number
tr = torch.rand(4096, dtype=torch.float32, device=dev)
cr = cp.random.rand(4096, dtype=cp.float32)
emit("reduce sum float32x4096", interleaved({
    "torch": lambda: tr.sum().item(),
    "cupy": lambda: float(cr.sum()),
}, REPS), what={"torch": "t.sum().item()", "cupy": "float(a.sum())"})

# gemm 64^3 into out + synchronize
ta, tb, tc = (torch.rand(64, 64, device=dev) for _ in range(3))
ca, cb, cc = (cp.random.rand(64, 64, dtype=cp.float32) for _ in range(3))


def torch_mm():
    torch.mm(ta, tb, out=tc)
    torch.cuda.synchronize()


def cupy_mm():
    cp.matmul(ca, cb, out=cc)
    cp.cuda.Device().synchronize()


emit("gemm 64x64x64 into out+sync", interleaved({"torch": torch_mm, "cupy": cupy_mm}, REPS),
     what={"torch": "torch.mm(a, b, out=c) + synchronize", "cupy": "cupy.matmul(a, b, out=c) + synchronize"})

# transfers
for nbytes, label in ((MiB, "1MiB"), (256 * MiB, "256MiB")):
    n = nbytes // 4
    reps = REPS // 3 if nbytes == MiB else BIG_REPS
    tdev = torch.rand(n, device=dev)
    cdev = cp.random.rand(n, dtype=cp.float32)
    thost = torch.empty(n, dtype=torch.float32)
    thost.fill_(1)  # touched: page faults are not the link
    chost = np.ones(n, dtype=np.float32)
    tpin = torch.empty(n, dtype=torch.float32, pin_memory=True)
    tpin.fill_(1)
    cpin = cp.cuda.alloc_pinned_memory(nbytes)
    cpin_np = np.frombuffer(cpin, dtype=np.float32, count=n)
    cpin_np.fill(1)

    def cupy_h2d(src):
        cdev.set(src)
        cp.cuda.Device().synchronize()

    def torch_h2d(src):
        tdev.copy_(src)
        torch.cuda.synchronize()

    emit(f"D2H {label} pageable existing", interleaved({
        "torch": lambda: thost.copy_(tdev),
        "cupy": lambda: cdev.get(out=chost),
    }, reps, warmup=2), nbytes, what={"torch": "host.copy_(dev)", "cupy": "dev.get(out=host)"})
    emit(f"D2H {label} pinned", interleaved({
        "torch": lambda: tpin.copy_(tdev),
        "cupy": lambda: cdev.get(out=cpin_np),
    }, reps, warmup=2), nbytes, what={"torch": "pinned.copy_(dev)", "cupy": "dev.get(out=pinned)"})
    emit(f"H2D {label} pageable existing", interleaved({
        "torch": lambda: torch_h2d(thost),
        "cupy": lambda: cupy_h2d(chost),
    }, reps, warmup=2), nbytes, what={"torch": "dev.copy_(host) + synchronize", "cupy": "dev.set(host) + synchronize"})
    # What our copyFromAsync row is compared with: neither library overlaps a pageable source with
    # anything (the driver stages it), so non_blocking / a stream change nothing here.
    cstream = cp.cuda.Stream(non_blocking=True)

    def cupy_h2d_async(src):
        cdev.set(src, stream=cstream)
        cstream.synchronize()

    emit(f"H2D {label} pageable async", interleaved({
        "torch": lambda: (tdev.copy_(thost, non_blocking=True), torch.cuda.synchronize()),
        "cupy": lambda: cupy_h2d_async(chost),
    }, reps, warmup=2), nbytes, what={"torch": "dev.copy_(host, non_blocking=True) + synchronize",
                                      "cupy": "dev.set(host, stream) + stream.synchronize"})
    emit(f"H2D {label} pinned", interleaved({
        "torch": lambda: torch_h2d(tpin),
        "cupy": lambda: cupy_h2d(cpin_np),
    }, reps, warmup=2), nbytes, what={"torch": "dev.copy_(pinned) + synchronize", "cupy": "dev.set(pinned) + synchronize"})
    del tdev, cdev, thost, chost, tpin, cpin, cpin_np, cstream
    torch.cuda.empty_cache()
    cp.get_default_memory_pool().free_all_blocks()

clocks("end")
