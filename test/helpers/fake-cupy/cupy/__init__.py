"""A host-only stand-in for CuPy, for test/cupy-kernels-script.test.ts: runs the child of
bench/dev/kernels/cupy_kernels.py without a GPU and logs to $FAKE_CUPY_LOG what would reach the GPU
(a kernel, a copy, a synchronize). It knows only what that child uses; anything else raises, so a
change to the child shows up in the test instead of passing unseen."""
import os

import numpy as np


def _log(event):
    with open(os.environ["FAKE_CUPY_LOG"], "a") as f:
        f.write(event + "\n")


class ndarray:
    def __init__(self, host):
        self._host = host

    def copy(self):
        # CuPy's copy() on one device is astype(), which launches its elementwise `cupy_copy` kernel
        # (cupy/_core/core.pyx): the module is loaded like any other kernel's.
        _log("kernel cupy_copy")
        return ndarray(self._host.copy())


def asarray(a):
    a = np.asarray(a)
    if not a.flags.c_contiguous:
        raise NotImplementedError("fake cupy: asarray of a non-contiguous array")
    _log("copy host-to-device")  # a contiguous NumPy array: a memcpy, no kernel
    return ndarray(a.copy())


def asnumpy(a):
    _log("copy device-to-host")
    return a._host.copy()


class RawKernel:
    def __init__(self, source, name):
        self.first_line = source.splitlines()[0]
        if name != "saxpy" or "void saxpy(" not in source:
            raise NotImplementedError(f"fake cupy: only saxpy runs, not {name}")

    def __call__(self, grid, block, args):
        _log(f"kernel saxpy {self.first_line}")
        n, a, x, y = args
        # One rounding of the exact a*x + y, as the GPU's fused multiply-add gives.
        m = min(int(n), grid[0] * block[0])
        y._host[:m] = (np.float64(a) * x._host[:m].astype(np.float64) + y._host[:m]).astype(np.float32)


class _Device:
    def synchronize(self):
        _log("synchronize")


class cuda:
    Device = _Device
