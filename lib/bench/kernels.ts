// `bench kernels`: users' own kernels (lib/kernels) against CuPy's RawKernel/ElementwiseKernel/
// ReductionKernel and torch.cuda._compile_kernel, which bench/dev/kernels/cupy_kernels.py times on the
// same kernels in the same GPU session (rows `cupy` and `pytorch`, merged by bench/dev/merge-python-rows.js kernels).
//
//   cold        saxpy's first call: compile (NVRTC, a source never seen) + load + launch + synchronize
//   disk hit    saxpy from the disk cache in a new process (NVRTC not loaded at all): the process's
//               first kernel, and a second one (the hit's own cost, the package's code run once before)
//   launch      a cached saxpy (n = 1024) launched and synchronized from JS, wall clock
//   elementwise saxpy through elementwise() at 2^28 float32 (3 arrays moved), event-timed, vs copy
//   reduction   sum of squares of 2^28 float32 through reduction(), event-timed
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';

import { deviceRelativeError, empty, upload } from '../array';
import { synchronize } from '../device';
import { clearKernelCache, compile } from '../kernels/module';
import { elementwise } from '../kernels/elementwise';
import { nvrtcInfo } from '../kernels/nvrtc';
import { reduction } from '../kernels/reduction';
import { benchCopy } from './copy';
import { type BenchContext, type BenchFamily, median, timeGpu } from './harness';
import type { BenchRow } from './results';

/** The saxpy every row uses (and cupy_kernels.py, word for word); `salt` makes a source never compiled before. */
export function saxpySource(salt: string): string {
  return `// ${salt}
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
`;
}

/** Sizes of the rows, shared with cupy_kernels.py so that the rows line up. */
export const KERNEL_ROWS = {
  cold: 'saxpy cold: compile+load+launch+sync',
  hit: 'saxpy disk-cache hit in a new process: first call',
  hitSecond: 'saxpy disk-cache hit in a new process: after its first kernel',
  launch: 'saxpy launch+sync n=1024',
  elementwiseCall: 'elementwise saxpy call+sync n=1024',
  elementwise: 'elementwise saxpy float32',
  reduction: 'reduction sum of squares float32',
} as const;

const SMALL = 1024;
/** The least warm-up before a latency row is timed (timeCalls), in ms. */
const WARM_MS = 500;

function latencyRow(size: string, samplesUs: number[], check: boolean, note: string): BenchRow {
  const us = median(samplesUs);
  return {
    op: 'kernels',
    method: 'cuda-kernels',
    size,
    ms: us / 1e3,
    rate: 1e6 / us,
    unit: 'calls/s',
    reps: samplesUs.length,
    check: check ? 'ok' : 'fail',
    note: `${Math.min(...samplesUs).toFixed(1)}–${Math.max(...samplesUs).toFixed(1)} µs; wall clock, median; ${note}`,
  };
}

function smallArrays(device: number) {
  const x = Float32Array.from({ length: SMALL }, (_, i) => (i % 17) - 8);
  const y = Float32Array.from({ length: SMALL }, (_, i) => (i % 5) * 0.25);
  const want = x.map((v, i) => Math.fround(2 * v + y[i]));
  return { x, y, want, dx: upload(x, { device }), dy: upload(y, { device }) };
}

const sameValues = (a: ArrayLike<number>, b: ArrayLike<number>) =>
  a.length === b.length && Array.from(a).every((v, i) => v === b[i]);

function coldRow(ctx: BenchContext, run: string): BenchRow {
  ctx.progress('cold compile');
  const { dx, dy, y, want } = smallArrays(ctx.device);
  const samples: number[] = [];
  let ok = true;
  try {
    const reps = ctx.quick ? 3 : 7;
    for (let r = 0; r < reps; r++) {
      dy.copyFrom(y);
      synchronize(ctx.device);
      const t0 = process.hrtime.bigint();
      const k = compile(saxpySource(`cold ${run} ${r}`), { name: 'saxpy.cu', device: ctx.device }).kernel('saxpy');
      k.launch({ grid: Math.ceil(SMALL / 256), block: 256 }, SMALL, 2, dx, dy);
      synchronize(ctx.device);
      samples.push(Number(process.hrtime.bigint() - t0) / 1e3);
      ok &&= sameValues(dy.toHostSync(), want);
    }
  } finally {
    dx.free();
    dy.free();
  }
  return latencyRow(
    KERNEL_ROWS.cold,
    samples,
    ok,
    `a source never compiled before each time (NVRTC ${nvrtcInfo().version} already loaded, as CuPy's import loads it); CuPy 14 on an H100: 37–42 ms (GPU-FACTS.md)`,
  );
}

/** The child that times a first call in a fresh process (lib/bench/kernels-child.ts). */
function childCommand(): string[] {
  const file = path.join(__dirname, `kernels-child${path.extname(__filename)}`);
  return __filename.endsWith('.ts')
    ? ['-r', path.join(__dirname, '..', '..', 'test', 'harness', 'ts-register.js'), file]
    : [file];
}

function hitRows(ctx: BenchContext, run: string): BenchRow[] {
  ctx.progress('disk-cache hit in a new process');
  const first = saxpySource(`hit ${run}`);
  const second = saxpySource(`hit second ${run}`);
  // The entries the children read.
  for (const source of [first, second]) compile(source, { name: 'saxpy.cu', device: ctx.device });
  type Call = { us: number; compileUs: number; from: string; ok: boolean };
  const calls: { first: Call[]; second: Call[] } = { first: [], second: [] };
  let nvrtcLoaded = false;
  const reps = ctx.quick ? 3 : 7;
  for (let r = 0; r < reps; r++) {
    const child = spawnSync(process.execPath, [...childCommand(), String(ctx.device), first, second], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    if (child.status !== 0) throw new Error(`kernels-child failed: ${child.stderr || child.stdout}`);
    const got = JSON.parse(child.stdout.trim().split('\n').pop()!) as {
      first: Call;
      second: Call;
      nvrtcLoaded: boolean;
    };
    calls.first.push(got.first);
    calls.second.push(got.second);
    nvrtcLoaded ||= got.nvrtcLoaded;
  }
  const row = (size: string, list: Call[], what: string) =>
    latencyRow(
      size,
      list.map((c) => c.us),
      list.every((c) => c.ok && c.from === 'disk'),
      `${what}: compile() from disk + load + kernel() + launch + synchronize, after the process made its CUDA context; ` +
        `compile() alone ${median(list.map((c) => c.compileUs)).toFixed(0)} µs; NVRTC ${nvrtcLoaded ? 'was' : 'was not'} loaded; ` +
        `CuPy 14 on an H100: 0.39–0.58 ms (GPU-FACTS.md, how it was timed not recorded)`,
    );
  return [
    row(KERNEL_ROWS.hit, calls.first, "the process's first kernel (the package's code runs for the first time)"),
    row(KERNEL_ROWS.hitSecond, calls.second, 'a second kernel from the disk cache in the same new process'),
  ];
}

/**
 * Per-call wall times of `fn`, after `warmup` calls and at least WARM_MS of calls: a GPU that idled
 * (between the bench's rows, or in a fresh process) takes a moment to reach its working clocks, and a
 * launch+sync timed meanwhile measures that ramp, not the call (the CuPy script warms up alike).
 */
function timeCalls(fn: () => void, reps: number, warmup: number): number[] {
  const warmUntil = process.hrtime.bigint() + BigInt(WARM_MS * 1e6);
  for (let i = 0; i < warmup || process.hrtime.bigint() < warmUntil; i++) fn();
  const out: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    out.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  return out;
}

function launchRows(ctx: BenchContext, run: string): BenchRow[] {
  ctx.progress('launch + synchronize');
  const { dx, dy, y, want } = smallArrays(ctx.device);
  const dz = empty('float32', SMALL, { device: ctx.device });
  try {
    const k = compile(saxpySource(`launch ${run}`), { name: 'saxpy.cu', device: ctx.device }).kernel('saxpy');
    const cfg = { grid: Math.ceil(SMALL / 256), block: 256 };
    const reps = ctx.quick ? 300 : 2000;
    const launch = timeCalls(
      () => {
        k.launch(cfg, SMALL, 2, dx, dy);
        synchronize(ctx.device);
      },
      reps,
      100,
    );
    dy.copyFrom(y);
    k.launch(cfg, SMALL, 2, dx, dy);
    const launchOk = sameValues(dy.toHostSync(), want);
    const saxpy = elementwise({
      in: 'float32 x, float32 y, float32 a',
      out: 'float32 z',
      body: 'z = a * x + y',
      name: 'saxpy',
    });
    dy.copyFrom(y);
    const call = timeCalls(
      () => {
        saxpy(dx, dy, 2, { out: dz });
        synchronize(ctx.device);
      },
      reps,
      100,
    );
    const callOk = sameValues(dz.toHostSync(), want);
    return [
      latencyRow(
        KERNEL_ROWS.launch,
        launch,
        launchOk,
        'kernel.launch(cfg, n, a, x, y) + synchronize(); C++ floor on an H100: 10.7 µs (bench/dev/kernels/launch_sync.cu, 2db7da1)',
      ),
      latencyRow(KERNEL_ROWS.elementwiseCall, call, callOk, 'saxpy(x, y, 2, { out: z }) + synchronize()'),
    ];
  } finally {
    dx.free();
    dy.free();
    dz.free();
  }
}

function bandwidthRows(ctx: BenchContext, run: string): BenchRow[] {
  const n = ctx.sizes?.[0] ?? (ctx.quick ? 1 << 24 : 1 << 28);
  const label = `2^${Math.log2(n)}`;
  ctx.progress(`elementwise saxpy ${label}`);
  const device = ctx.device;
  const copy = benchCopy(ctx, Math.min(n * 4, 1 << 30));
  const x = empty('float32', n, { device }).fillRandom(1);
  const y = empty('float32', n, { device }).fillRandom(2);
  const z = empty('float32', n, { device }).fill(NaN);
  const ref = empty('float32', n, { device }).fill(NaN);
  const rows: BenchRow[] = [];
  try {
    const saxpy = elementwise({
      in: 'float32 x, float32 y, float32 a',
      out: 'float32 z',
      body: 'z = a * x + y',
      name: 'saxpy',
    });
    const samples = timeGpu(() => saxpy(x, y, 2, { out: z }), ctx);
    // The reference: the same formula in a raw kernel (both contract it to one fma).
    const raw = compile(
      `// ${run}\nextern "C" __global__ void axpy(long long n, float a, const float* x, const float* y, float* z) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    z[i] = a * x[i] + y[i];
}`,
      { device },
    ).kernel('axpy');
    raw.launch({ grid: 4096, block: 256 }, n, 2, x, y, ref);
    const err = deviceRelativeError(z, ref);
    const ms = median(samples);
    const rate = (3 * 4 * n) / (ms * 1e-3) / 1e9;
    // What a hand-written kernel moves on the same three arrays: tells the generator's share of a gap
    // to the copy from the hardware's (two reads per write is not a copy's one).
    const rawMs = median(timeGpu(() => raw.launch({ grid: 4096, block: 256 }, n, 2, x, y, ref), ctx));
    const rawRate = (3 * 4 * n) / (rawMs * 1e-3) / 1e9;
    rows.push({
      op: 'kernels',
      method: 'cuda-kernels',
      size: `${KERNEL_ROWS.elementwise} ${label}`,
      ms,
      rate,
      unit: 'GB/s',
      reps: samples.length,
      check: err === 0 ? 'ok' : 'fail',
      note:
        `${Math.min(...samples).toFixed(3)}–${Math.max(...samples).toFixed(3)} ms; CUDA events; rate counts 3 arrays ` +
        `(2 read, 1 written); ${(rate / copy.rate).toFixed(3)}× this run's device copy (${copy.rate.toFixed(0)} GB/s at ` +
        `${copy.size}); a raw grid-stride kernel of the same formula ${rawRate.toFixed(0)} GB/s ` +
        `(${(rate / rawRate).toFixed(3)}× it), relative error ${err}`,
    });

    ctx.progress(`reduction sum of squares ${label}`);
    const sumsq = reduction({
      in: 'float32 x',
      out: 'float32 s',
      map: 'x * x',
      reduce: 'a + b',
      identity: '0',
      name: 'sumsq',
    });
    const sumsq64 = reduction({
      in: 'float32 x',
      out: 'float64 s',
      map: '(double)x * x',
      reduce: 'a + b',
      identity: '0',
      name: 'sumsq64',
    });
    const out = empty('float32', 1, { device });
    try {
      const rs = timeGpu(() => sumsq(x, { out }), ctx);
      using exact = sumsq64(x);
      const want = exact.toHostSync()[0];
      const got = out.toHostSync()[0];
      const relErr = Math.abs(got - want) / want;
      const rms = median(rs);
      const rrate = (4 * n) / (rms * 1e-3) / 1e9;
      rows.push({
        op: 'kernels',
        method: 'cuda-kernels',
        size: `${KERNEL_ROWS.reduction} ${label}`,
        ms: rms,
        rate: rrate,
        unit: 'GB/s',
        reps: rs.length,
        check: relErr < 1e-5 ? 'ok' : 'fail',
        note:
          `${Math.min(...rs).toFixed(3)}–${Math.max(...rs).toFixed(3)} ms; CUDA events; rate counts the array read once; ` +
          `${(rrate / copy.rate).toFixed(3)}× the device copy; two passes, no atomics; vs a float64 reduction: ` +
          `relative error ${relErr.toExponential(2)}`,
      });
    } finally {
      out.free();
    }
  } finally {
    for (const a of [x, y, z, ref]) a.free();
  }
  return rows;
}

export const kernelsFamily: BenchFamily = {
  op: 'kernels',
  description:
    "users' own kernels: NVRTC compile (cold), disk-cache hit in a new process, launch+sync, elementwise saxpy and a reduction at 2^28",
  bandwidth: true,
  // One progress step each: cold compile, cache hit, launch latencies (two rows), saxpy, reduction.
  plan: () => 5,
  run(ctx: BenchContext): BenchRow[] {
    const info = nvrtcInfo();
    if (!info.available) {
      // `bench all` goes on without these rows; the reason is what the progress line shows.
      ctx.progress(`kernels skipped: no NVRTC (${info.code})`);
      return [];
    }
    const run = `${process.pid}-${Date.now()}`;
    // The cold row must compile: sources of earlier runs stay in the cache, these never were.
    clearKernelCache();
    return [coldRow(ctx, run), ...hitRows(ctx, run), ...launchRows(ctx, run), ...bandwidthRows(ctx, run)];
  },
};
