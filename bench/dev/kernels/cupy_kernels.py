"""CuPy's and PyTorch's run-time compiled kernels, timed the way `bench kernels` times ours (lib/bench/kernels.ts).

The same saxpy source (a comment line, then the kernel) and the same calls:

  cold         RawKernel's first call of a source never compiled before: compile + load + launch + synchronize
               (CuPy already imported, its NVRTC loaded); torch.cuda._compile_kernel + launch + sync (it has no cache)
  disk hit     RawKernel in a new Python process, the source in CuPy's disk cache (CUPY_CACHE_DIR, a fresh
               folder of this run), after that process made its CUDA context: its first kernel, then a second
  launch       a compiled saxpy (n = 1024) launched and synchronized, wall clock; also _compile_kernel's kernel
  elementwise  ElementwiseKernel saxpy: call + synchronize at n = 1024 (wall clock), and at 2^28 float32 (CUDA events)
  reduction    ReductionKernel sum of squares of 2^28 float32 (CUDA events)

Prints one JSON line per row in the result file's format (op `kernels`, method `cupy` or `pytorch`, the sizes of
lib/bench/kernels.ts), plus `{"clocks": ...}` lines at start and end. `node bench/dev/merge-python-rows.js kernels`
merges the rows into bench/results/<gpu>.json. `--quick`: fewer repetitions and 2^24 elements.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

QUICK = "--quick" in sys.argv
N_BIG = 1 << 24 if QUICK else 1 << 28
LABEL = f"2^{N_BIG.bit_length() - 1}"
SMALL = 1024
REPS = 300 if QUICK else 2000
COLD_REPS = 3 if QUICK else 7
EVENT_REPS = 5 if QUICK else 20

# Before CuPy is imported: its disk cache in a folder of this run, so `cold` and `disk hit` are what they say.
CACHE = tempfile.mkdtemp(prefix="cupy-kernel-cache-")
os.environ["CUPY_CACHE_DIR"] = CACHE

import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

ROWS = {
    "cold": "saxpy cold: compile+load+launch+sync",
    "hit": "saxpy disk-cache hit in a new process: first call",
    "hitSecond": "saxpy disk-cache hit in a new process: after its first kernel",
    "launch": "saxpy launch+sync n=1024",
    "elementwiseCall": "elementwise saxpy call+sync n=1024",
    "elementwise": f"elementwise saxpy float32 {LABEL}",
    "reduction": f"reduction sum of squares float32 {LABEL}",
}


def saxpy_source(salt, a_type="float"):
    return f"""// {salt}
extern "C" __global__ void saxpy(int n, {a_type} a, const float* __restrict__ x, float* __restrict__ y) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}}
"""


def clocks(when):
    try:
        q = subprocess.run(
            ["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001 - a missing nvidia-smi must not stop the timings
        q = f"unavailable: {e}"
    print(json.dumps({"clocks": when, "query": q}), flush=True)


def sync():
    cp.cuda.Device().synchronize()


def nvrtc_version():
    try:
        return ".".join(map(str, cp.cuda.nvrtc.getVersion()))
    except Exception:  # noqa: BLE001 - only for the note
        return "?"


def emit(method, size, samples_us=None, ms=None, rate=None, unit="calls/s", reps=None, ok=None, note=""):
    if samples_us is not None:
        us = statistics.median(samples_us)
        ms = us / 1e3
        rate = 1e6 / us
        reps = len(samples_us)
        note = f"{min(samples_us):.1f}–{max(samples_us):.1f} µs; wall clock, median; {note}"
    row = {
        "op": "kernels",
        "method": method,
        "size": size,
        "ms": ms,
        "rate": rate,
        "unit": unit,
        "reps": reps,
        "check": "skipped" if ok is None else ("ok" if ok else "fail"),
        "note": f"{note}; CuPy {cp.__version__}, NVRTC {nvrtc_version()} (bench/dev/kernels/cupy_kernels.py)",
    }
    print(json.dumps(row), flush=True)


def small_arrays():
    x = cp.asarray(np.arange(SMALL, dtype=np.float32) % 17 - 8)
    y0 = cp.asarray((np.arange(SMALL) % 5).astype(np.float32) * 0.25)
    want = 2 * cp.asnumpy(x).astype(np.float64) + cp.asnumpy(y0)
    return x, y0, want.astype(np.float32)


def event_ms(fn, reps):
    fn()
    sync()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    out = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, end))
    return out


# At least WARM_S of calls before timing, as the package's bench does (lib/bench/kernels.ts timeCalls):
# a GPU that idled takes a moment to reach its working clocks.
WARM_S = 0.5


def timed_calls(fn, reps, warmup=100):
    warm_until = time.perf_counter() + WARM_S
    i = 0
    while i < warmup or time.perf_counter() < warm_until:
        fn()
        i += 1
    sync()
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e6)
    return out


CHILD = r"""
import json, sys, time
import cupy as cp, numpy as np
first, second = json.loads(sys.stdin.read())
n = 1024
x = cp.asarray(np.arange(n, dtype=np.float32) % 17 - 8)
# y from the host each time: y0.copy() on the device is a CuPy kernel, which would run before the
# process's first timed one.
y0 = (np.arange(n) % 5).astype(np.float32) * 0.25
want = (2 * cp.asnumpy(x).astype(np.float64) + y0).astype(np.float32)
def call(src):
    y = cp.asarray(y0)
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    k = cp.RawKernel(src, "saxpy")
    k(((n + 255) // 256,), (256,), (np.int32(n), np.float32(2), x, y))
    cp.cuda.Device().synchronize()
    us = (time.perf_counter() - t) * 1e6
    return {"us": us, "ok": bool((cp.asnumpy(y) == want).all())}
print(json.dumps({"first": call(first), "second": call(second)}))
"""


def main():
    run = f"{os.getpid()}-{time.time()}"
    clocks("start")
    x, y0, want = small_arrays()
    grid, block = ((SMALL + 255) // 256,), (256,)

    # cold: a source never compiled before, each time
    samples, ok = [], True
    for r in range(COLD_REPS):
        y = y0.copy()
        sync()
        t = time.perf_counter()
        k = cp.RawKernel(saxpy_source(f"cold {run} {r}"), "saxpy")
        k(grid, block, (np.int32(SMALL), np.float32(2), x, y))
        sync()
        samples.append((time.perf_counter() - t) * 1e6)
        ok = ok and bool((cp.asnumpy(y) == want).all())
    emit("cupy", ROWS["cold"], samples, ok=ok, note="RawKernel first call of a new source (compile, disk cache write, load, launch, sync)")

    # disk hit in a new process: its first kernel, then a second one (the hit's own cost)
    srcs = [saxpy_source(f"hit {run}"), saxpy_source(f"hit second {run}")]
    for src in srcs:
        y = y0.copy()
        cp.RawKernel(src, "saxpy")(grid, block, (np.int32(SMALL), np.float32(2), x, y))
    sync()
    calls = {"first": [], "second": []}
    for _ in range(COLD_REPS):
        p = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(srcs), capture_output=True, text=True,
                           timeout=300, env={**os.environ, "CUPY_CACHE_DIR": CACHE})
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
        got = json.loads(p.stdout.strip().splitlines()[-1])
        for which in calls:
            calls[which].append(got[which])
    emit("cupy", ROWS["hit"], [c["us"] for c in calls["first"]], ok=all(c["ok"] for c in calls["first"]),
         note="RawKernel: the new process's first kernel after its CUDA context, from CuPy's disk cache")
    emit("cupy", ROWS["hitSecond"], [c["us"] for c in calls["second"]], ok=all(c["ok"] for c in calls["second"]),
         note="RawKernel: a second kernel from CuPy's disk cache in the same new process")

    # launch + sync of a compiled kernel
    k = cp.RawKernel(saxpy_source(f"launch {run}"), "saxpy")
    y = y0.copy()

    def launch():
        k(grid, block, (np.int32(SMALL), np.float32(2), x, y))
        sync()

    samples = timed_calls(launch, REPS)
    y = y0.copy()
    k(grid, block, (np.int32(SMALL), np.float32(2), x, y))
    emit("cupy", ROWS["launch"], samples, ok=bool((cp.asnumpy(y) == want).all()), note="RawKernel call + Device.synchronize()")

    saxpy = cp.ElementwiseKernel("float32 x, float32 y, float32 a", "float32 z", "z = a * x + y", "saxpy")
    z = cp.empty(SMALL, dtype=cp.float32)

    def ew_call():
        saxpy(x, y0, np.float32(2), z)
        sync()

    samples = timed_calls(ew_call, REPS)
    emit("cupy", ROWS["elementwiseCall"], samples, ok=bool((cp.asnumpy(z) == want).all()),
         note="ElementwiseKernel call into z + Device.synchronize()")

    # bandwidth rows
    bx = cp.random.uniform(-1, 1, N_BIG, dtype=cp.float32)
    by = cp.random.uniform(-1, 1, N_BIG, dtype=cp.float32)
    bz = cp.empty(N_BIG, dtype=cp.float32)
    ms = event_ms(lambda: saxpy(bx, by, np.float32(2), bz), EVENT_REPS)
    med = statistics.median(ms)
    ok = bool(cp.allclose(bz[:1 << 20], 2 * bx[:1 << 20] + by[:1 << 20], rtol=1e-6, atol=1e-6))
    emit("cupy", ROWS["elementwise"], ms=med, rate=12 * N_BIG / (med * 1e-3) / 1e9, unit="GB/s", reps=len(ms), ok=ok,
         note=f"{min(ms):.3f}–{max(ms):.3f} ms; CUDA events; ElementwiseKernel saxpy, rate counts 3 arrays")
    del bz, by

    sumsq = cp.ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = a", "0", "sumsq")
    ms = event_ms(lambda: sumsq(bx), EVENT_REPS)
    med = statistics.median(ms)
    got = float(sumsq(bx))
    exact = float(cp.sum(bx.astype(cp.float64) ** 2))
    emit("cupy", ROWS["reduction"], ms=med, rate=4 * N_BIG / (med * 1e-3) / 1e9, unit="GB/s", reps=len(ms),
         ok=abs(got - exact) / exact < 1e-5,
         note=f"{min(ms):.3f}–{max(ms):.3f} ms; CUDA events; ReductionKernel, rate counts the array read once")
    del bx

    # PyTorch's _compile_kernel (no cache: every call compiles). How it passes a Python float (as a C
    # float or a double) is not documented: one probe launch with each parameter type picks the one
    # whose result is right, and the note says which; the timed runs use that one.
    try:
        import torch
        tx = torch.as_tensor(cp.asnumpy(x), device="cuda")
        ty0 = torch.as_tensor(cp.asnumpy(y0), device="cuda")
        a_type, tried = None, []
        for t in ("float", "double"):
            probe = torch.cuda._compile_kernel(saxpy_source(f"torch probe {run}", a_type=t), "saxpy")
            ty = ty0.clone()
            probe(grid=(grid[0], 1, 1), block=(256, 1, 1), args=[SMALL, 2.0, tx, ty])
            torch.cuda.synchronize()
            right = bool((ty.cpu().numpy() == want).all())
            tried.append(f"{t} a: {'right' if right else 'wrong'}")
            if right:
                a_type = t
                break
        passing = f"a Python float reaches `{a_type or 'float'} a` ({'; '.join(tried)})"
        samples, ok = [], a_type is not None
        for r in range(COLD_REPS):
            ty = ty0.clone()
            torch.cuda.synchronize()
            t = time.perf_counter()
            tk = torch.cuda._compile_kernel(saxpy_source(f"torch {run} {r}", a_type=a_type or "float"), "saxpy")
            tk(grid=(grid[0], 1, 1), block=(256, 1, 1), args=[SMALL, 2.0, tx, ty])
            torch.cuda.synchronize()
            samples.append((time.perf_counter() - t) * 1e6)
            ok = ok and bool((ty.cpu().numpy() == want).all())
        emit("pytorch", ROWS["cold"], samples, ok=ok,
             note=f"torch.cuda._compile_kernel + launch + sync (PyTorch {torch.__version__}; it has no cache); {passing}")
        ty = ty0.clone()

        def tlaunch():
            tk(grid=(grid[0], 1, 1), block=(256, 1, 1), args=[SMALL, 2.0, tx, ty])
            torch.cuda.synchronize()

        samples = timed_calls(tlaunch, REPS)
        ty = ty0.clone()
        tk(grid=(grid[0], 1, 1), block=(256, 1, 1), args=[SMALL, 2.0, tx, ty])
        torch.cuda.synchronize()
        emit("pytorch", ROWS["launch"], samples, ok=bool((ty.cpu().numpy() == want).all()),
             note=f"_compile_kernel's kernel call + torch.cuda.synchronize() (PyTorch {torch.__version__}); {passing}")
    except Exception as e:  # noqa: BLE001 - PyTorch's rows are optional; CuPy's stand alone
        print(json.dumps({"pytorch": f"skipped: {type(e).__name__}: {e}"}), flush=True)
    clocks("end")


if __name__ == "__main__":
    main()
