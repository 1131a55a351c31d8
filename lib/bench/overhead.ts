// Per-call overhead and host ↔ device transfers, timed by the wall clock from JavaScript as a user
// sees them: allocation, small uploads, a small scan and reduce, a small GEMM, and transfers of
// 1 MiB and 256 MiB between existing device arrays and existing (touched) pageable or pinned host
// arrays. bench/dev/overhead/torch_cupy_overhead.py times the same calls in PyTorch and CuPy on the
// same GPU (rows `pytorch` and `cupy`, merged by bench/dev/merge-python-rows.js overhead).
import { execFileSync } from 'node:child_process';

import { type DeviceArray, empty, type HostArray, upload } from '../array';
import { gemm as cpuGemm, firstMismatch, relativeError } from '../cpu/index';
import { synchronize } from '../device';
import { gemm } from '../ops/gemm';
import { reduce, scan } from '../ops/scan';
import { native } from '../native';
import { pinned } from '../pinned';
import { type BenchContext, type BenchFamily, median } from './harness';
import type { BenchRow } from './results';

const MiB = 1 << 20;

/** What one call costs with no binding in the way (C++, CUDA 13, H100; /work/shared/GPU-FACTS.md and bench/dev/overhead/probe.cu). */
const FLOORS: Record<string, string> = {
  'empty+free float32x1024': 'C++ floor: pool alloc+free 1.3 µs',
  'upload+free 1KiB': 'C++ floor: 1 KiB H2D + sync 7.2 µs',
  'scan int32x4096 in place+sync': 'C++ floor: CUB InclusiveSum 4096 + sync 16.5 µs',
  'reduce sum float32x4096': 'C++ floor: CUB Reduce 4096 + 4 B into pinned 12.0 µs',
  'gemm 64x64x64 into out+sync': 'C++ floor: cuBLAS SGEMM 64³ + sync 18.0 µs',
};

/** SM clock, memory clock, power, temperature from nvidia-smi, or why not. */
export function gpuClocks(): string {
  try {
    return execFileSync(
      'nvidia-smi',
      ['--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu', '--format=csv,noheader'],
      { encoding: 'utf8', timeout: 20_000, stdio: ['ignore', 'pipe', 'ignore'] },
    )
      .trim()
      .split('\n')[0];
  } catch {
    return 'nvidia-smi unavailable';
  }
}

/** Wall-clock microseconds of each call, the calls interleaved round-robin after `warmup` runs each. */
function timeCalls(calls: readonly (() => void)[], reps: number, warmup: number): number[][] {
  for (const f of calls) for (let i = 0; i < warmup; i++) f();
  synchronize();
  const samples: number[][] = calls.map(() => []);
  for (let r = 0; r < reps; r++) {
    calls.forEach((f, i) => {
      const t = process.hrtime.bigint();
      f();
      samples[i].push(Number(process.hrtime.bigint() - t) / 1e3);
    });
  }
  return samples;
}

interface Call {
  size: string;
  run(): void;
  /** Bytes moved per call, for transfers (the rate is then GB/s). */
  bytes?: number;
  /** Whether the result is right, checked after timing. */
  check(): boolean;
  what: string;
  /** More for the note, read after timing. */
  extra?: () => string;
}

function row(call: Call, us: number[], clocks: string): BenchRow {
  const med = median(us);
  const floor = FLOORS[call.size];
  return {
    op: 'overhead',
    method: 'cuda-kernels',
    size: call.size,
    ms: med / 1e3,
    rate: call.bytes ? call.bytes / (med * 1e-6) / 1e9 : 1e6 / med,
    unit: call.bytes ? 'GB/s' : 'calls/s',
    reps: us.length,
    check: call.check() ? 'ok' : 'fail',
    note:
      `${Math.min(...us).toFixed(1)}–${Math.max(...us).toFixed(1)} µs; wall clock per call, median; ${call.what}` +
      `${floor ? `; ${floor}` : ''}${call.extra ? `; ${call.extra()}` : ''}; interleaved; GPU clocks ${clocks}`,
  };
}

/** The small calls of the issue's table. */
function smallCalls(device: number, hold: DeviceArray[]): Call[] {
  const h1k = new Float32Array(256).map((_, i) => i * 0.5);
  const scanHost = new Int32Array(4096).map((_, i) => (i * 7) % 13);
  const s = upload(scanHost, { device });
  const r = upload(
    new Float32Array(4096).map((_, i) => (i % 17) - 8),
    { device },
  );
  const ga = new Float32Array(64 * 64).map((_, i) => ((i * 37) % 101) / 101 - 0.5);
  const gb = new Float32Array(64 * 64).map((_, i) => ((i * 53) % 97) / 97 - 0.5);
  const [a, b] = [upload(ga, { device }), upload(gb, { device })];
  const c = empty('float32', 64 * 64, { device });
  hold.push(s, r, a, b, c);
  let reduced = NaN;
  return [
    {
      size: 'empty+free float32x1024',
      run: () => empty('float32', 1024, { device }).free(),
      check: () => true,
      what: "empty('float32', 1024).free()",
    },
    {
      size: 'upload+free 1KiB',
      run: () => upload(h1k, { device }).free(),
      check: () => {
        using u = upload(h1k, { device });
        return firstMismatch(u.toHostSync(), h1k) === -1;
      },
      what: 'upload(Float32Array(256)).free()',
    },
    {
      size: 'scan int32x4096 in place+sync',
      run: () => {
        scan(s, { out: s });
        synchronize(device);
      },
      check: () => {
        s.copyFrom(scanHost);
        scan(s, { out: s });
        let acc = 0;
        const want = scanHost.map((v) => (acc += v));
        return firstMismatch(s.toHostSync(), want) === -1;
      },
      what: "scan(a, { out: a }) ('fast') + synchronize()",
    },
    {
      size: 'reduce sum float32x4096',
      run: () => {
        reduced = reduce(r, 'sum');
      },
      check: () => reduced === r.toHostSync().reduce((x, y) => x + y, 0),
      what: "reduce(a, 'sum') → number",
    },
    {
      size: 'gemm 64x64x64 into out+sync',
      run: () => {
        gemm(a, b, 64, 64, 64, { out: c });
        synchronize(device);
      },
      check: () => relativeError(c.toHostSync(), cpuGemm(ga, gb, 64, 64, 64)) < 1e-5,
      what: "gemm(a, b, 64, 64, 64, { out: c }) (method 'auto') + synchronize()",
    },
  ];
}

/** Transfers of `bytes` between an existing device array and existing pageable / pinned host arrays. */
function transferCalls(device: number, bytes: number, hold: DeviceArray[], free: (() => void)[]): Call[] {
  const n = bytes / 4;
  const label = bytes >= MiB ? `${bytes / MiB}MiB` : `${bytes}B`;
  const src = new Float32Array(n);
  for (let i = 0; i < n; i++) src[i] = (i % 1021) - 510;
  const dev = upload(src, { device });
  hold.push(dev);
  // Touched, so that the copies measure the link and not first-touch page faults.
  const pageable = new Float32Array(n).fill(1);
  const pin = pinned('float32', n).fill(1);
  free.push(() => pin.free());
  const same = (host: HostArray) => firstMismatch(host, src) === -1;
  // copyFromAsync: how long the call holds the JS thread, and whether a promise rejected.
  const callUs: number[] = [];
  let rejected = 0;
  const copyAsync = () => {
    const t = process.hrtime.bigint();
    const p = dev.copyFromAsync(pageable);
    callUs.push(Number(process.hrtime.bigint() - t) / 1e3);
    p.catch(() => rejected++);
  };
  return [
    {
      size: `D2H ${label} pageable existing`,
      bytes,
      run: () => dev.toHostSync(pageable),
      check: () => same(dev.toHostSync(pageable.fill(0))),
      what: 'a.toHostSync(existingFloat32Array)',
    },
    {
      size: `D2H ${label} pinned`,
      bytes,
      run: () => dev.toHostSync(pin),
      check: () => same(dev.toHostSync(pin.fill(0))),
      what: 'a.toHostSync(pinnedArray)',
    },
    {
      size: `H2D ${label} pageable existing`,
      bytes,
      run: () => {
        dev.copyFrom(pageable);
        synchronize(device);
      },
      check: () => {
        pageable.set(src);
        dev.fill(0).copyFrom(pageable);
        return same(dev.toHostSync());
      },
      what: 'a.copyFrom(existingFloat32Array) + synchronize()',
    },
    {
      size: `H2D ${label} pageable async`,
      bytes,
      run: () => {
        copyAsync();
        // The stream waits for the staging threads' blocks: done when the copy has landed.
        synchronize(device);
      },
      check: () => {
        pageable.set(src);
        dev.fill(0);
        copyAsync();
        synchronize(device);
        return rejected === 0 && same(dev.toHostSync());
      },
      what: 'a.copyFromAsync(existingFloat32Array) + synchronize()',
      extra: () => {
        const path = native.uploadPath(device);
        // The first call of the process also allocates the device's staging ring and starts the threads.
        const later = callUs.slice(1);
        return (
          `the call held the JS thread ${median(later).toFixed(1)} µs (median; max ${Math.max(...later).toFixed(1)} µs; ` +
          `the first call ${callUs[0].toFixed(1)} µs: in a new process it also sets up the staging ring); ` +
          (bytes > MiB
            ? `path: ${path.path}${path.reason ? ` (${path.reason})` : ''}, ${path.threads} staging threads`
            : 'sources up to 1 MiB are staged on the calling thread')
        );
      },
    },
    {
      size: `H2D ${label} pinned`,
      bytes,
      run: () => {
        dev.copyFrom(pin);
        synchronize(device);
      },
      check: () => {
        pin.set(src);
        dev.fill(0).copyFrom(pin);
        return same(dev.toHostSync());
      },
      what: 'a.copyFrom(pinnedArray) + synchronize()',
    },
  ];
}

function plan(ctx: BenchContext): number {
  return 1 + (ctx.sizes ?? [1, 256]).length;
}

export const overheadFamily: BenchFamily = {
  op: 'overhead',
  description: 'per-call wall clock from JS (calls/s) and host ↔ device transfers (GB/s), beside PyTorch and CuPy',
  reference: 'pytorch',
  // Transfers of `--sizes` MiB between existing host and device arrays.
  maxSize: { value: 4096, what: 'MiB' },
  plan,
  run(ctx: BenchContext): BenchRow[] {
    const rows: BenchRow[] = [];
    const hold: DeviceArray[] = [];
    const free: (() => void)[] = [];
    const start = gpuClocks();
    try {
      ctx.progress('small calls');
      const small = smallCalls(ctx.device, hold);
      const reps = ctx.quick ? 60 : Math.max(300, ctx.reps);
      const samples = timeCalls(
        small.map((c) => c.run),
        reps,
        20,
      );
      const clocks = `start ${start}, end ${gpuClocks()}`;
      small.forEach((c, i) => rows.push(row(c, samples[i], clocks)));
      for (const mib of ctx.sizes ?? [1, 256]) {
        ctx.progress(`transfers ${mib} MiB`);
        const calls = transferCalls(ctx.device, mib * MiB, hold, free);
        const t = timeCalls(
          calls.map((c) => c.run),
          mib >= 64 ? (ctx.quick ? 4 : 12) : ctx.quick ? 20 : 100,
          2,
        );
        const clocksT = `start ${start}, end ${gpuClocks()}`;
        calls.forEach((c, i) => rows.push(row(c, t[i], clocksT)));
      }
    } finally {
      for (const a of hold) a.free();
      for (const f of free) f();
    }
    return rows;
  },
};
