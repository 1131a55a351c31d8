// Shared by the tests of inputs of tens of GB (atA's and gemm's long K, scans past 2^32 elements): when
// such a suite can run, and, for the long-K tests, matrices filled on the device with integers
// v(r, c) = (5r + 7c) mod 17 − 8, whose sums the tests know in closed form and which every method must
// give exactly (the sums stay integers below 2^53, and below 2^24 where float32 sums a zero-mean run).
import * as ck from '../../lib';
import { SANITIZER } from '../harness/families';
import { gpuCount } from './gpu';

/** The value at row r, column c; rows repeat every 17, and each column's 17 values sum to 0. */
export const periodic = (r: number, c: number): number => ((5 * r + 7 * c) % 17) - 8;

/** The same expression in C++, for the fill kernels (r and c are long long). */
export const PERIODIC_CXX = '(double)((5 * r + 7 * c) % 17) - 8.0';

/** Σ over r < count of f(r), for f that repeats every 17 rows: whole periods, then the rest. */
export function periodicSum(count: number, f: (r: number) => number): number {
  let period = 0;
  let rest = 0;
  for (let r = 0; r < 17; r++) {
    period += f(r);
    if (r < count % 17) rest += f(r);
  }
  return Math.floor(count / 17) * period + rest;
}

/**
 * Why a suite of huge inputs cannot run here (null: it can): it needs a GPU, NVRTC for its fill and
 * check kernels, no sanitizer (each method reads tens of GB) and `bytes` of device memory plus 1 GB. On the GPU runner
 * (CK_REQUIRE_GPU=1) a missing GPU is no reason: the suite runs and fails, as describeGpu's do.
 */
export function hugeInputMissing(bytes: number): string | null {
  if (gpuCount === 0) return process.env.CK_REQUIRE_GPU ? null : `no GPU — ${ck.runtimeInfo().noDeviceReason}`;
  const nvrtc = ck.nvrtcInfo();
  if (!nvrtc.available) return `no NVRTC — ${nvrtc.code}`;
  if (SANITIZER) return `under compute-sanitizer ${SANITIZER} (each method reads up to ${(bytes / 1e9).toFixed(1)} GB)`;
  const free = ck.memoryInfo(0).free;
  const need = bytes + 2 ** 30;
  if (free < need) return `needs ${(need / 1e9).toFixed(1)} GB free, device 0 has ${(free / 1e9).toFixed(1)}`;
  return null;
}
