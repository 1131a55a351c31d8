import { atA as cpuAtA } from '../cpu/ata';
import { gemm as cpuGemm } from '../cpu/gemm';
import { randomArray, relativeError } from '../cpu/index';
import { makeTable } from './table';

import type { GemmOptions } from '../ops/gemm';

/** A rate with three significant digits where it is small: a CPU's 0.85 GFLOP/s is not "1". */
export function formatRate(rate: number): string {
  if (!Number.isFinite(rate)) return String(rate);
  return rate >= 100 ? rate.toFixed(0) : rate >= 10 ? rate.toFixed(1) : rate.toFixed(2);
}

const gflops = (rows: number, cols: number, ms: number) => formatRate((2 * rows * cols * cols) / ms / 1e6);

/** The GPU side of the demo, loaded only when it runs: loading it loads the native binary. */
async function gpuModules() {
  const [array, device, harness, ata, gemm] = await Promise.all([
    import('../array'),
    import('../device'),
    import('../bench/harness'),
    import('../ops/ata'),
    import('../ops/gemm'),
  ]);
  return { array, device, harness, ata, gemm };
}

type Gpu = Awaited<ReturnType<typeof gpuModules>>;

/**
 * `npx cuda-kernels demo`: C = AᵀA for a random float64 A with every method, timed with CUDA
 * events and checked — against the CPU reference on a small A, and against cuBLAS on a large one —
 * then SGEMM the same way. Without a GPU (no binary, no driver, no device) it runs the CPU
 * reference and says why there is no GPU. Returns the exit code: 1 only when a check failed (the
 * rule of every command, docs/cli.md: a missing GPU fails only the commands that need one).
 */
export async function demo(out: (line: string) => void = console.log): Promise<number> {
  const [rows, cols] = [2048, 512];
  const host = randomArray(Float64Array, rows * cols, (Date.now() & 0xffff) + 1);
  const t0 = process.hrtime.bigint();
  const ref = cpuAtA(host, rows, cols);
  const cpuMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const small = makeTable(['C = AᵀA', 'where', 'method', 'ms', 'GFLOP/s', '‖C−ref‖/‖ref‖', 'check']);
  small.push([
    `${rows}×${cols}`,
    'CPU',
    'cpu.atA (i-k-j)',
    cpuMs.toFixed(1),
    gflops(rows, cols, cpuMs),
    '—',
    'reference',
  ]);

  let gpu: Gpu;
  try {
    gpu = await gpuModules();
  } catch (e) {
    // No binary loads: the CPU reference needs none. What was tried: `npx cuda-kernels info`.
    const first = (e instanceof Error ? e.message : String(e)).split('\n')[0].replace(/^cuda-kernels: /, '');
    out(`No GPU: ${first} (npx cuda-kernels info lists what was tried and the possible solutions).`);
    out('Ran the CPU reference only.');
    out(small.toString());
    return 0;
  }
  const { cublasInfo, deviceCount, deviceProperties, runtimeInfo } = gpu.device;
  const { upload, empty, deviceRelativeError } = gpu.array;
  const { median, timeGpu } = gpu.harness;
  const { atA, ataMethods } = gpu.ata;
  if (deviceCount() === 0) {
    out(`No GPU: ${runtimeInfo().noDeviceReason}`);
    out('Ran the CPU reference only.');
    out(small.toString());
    return 0;
  }
  const name = deviceProperties(0).name;
  const methods = ataMethods.filter((m) => cublasInfo().available || !m.startsWith('cublas'));
  let failed = false;
  using a = upload(host);
  using c = empty('float64', cols * cols);
  for (const method of methods) {
    c.fill(NaN);
    const ms = median(timeGpu(() => atA(a, rows, cols, { method, out: c }), { device: 0, reps: 5, warmup: 1 }));
    const err = relativeError(c.toHostSync(), ref);
    failed ||= !(err < 1e-12);
    small.push([
      `${rows}×${cols}`,
      name,
      method,
      ms.toFixed(3),
      gflops(rows, cols, ms),
      err.toExponential(1),
      err < 1e-12 ? 'ok' : 'FAIL',
    ]);
  }
  out(small.toString());

  const n = 8192;
  const reference = methods.includes('cublas') ? 'cublas' : 'tiled';
  const large = makeTable(['C = AᵀA', 'method', 'ms', 'GFLOP/s (2n³/t)', `vs ${reference}`, 'check']);
  using big = empty('float64', n * n).fillRandom(Date.now() & 0xffff);
  using bigRef = atA(big, n, n, { method: reference });
  using bigOut = empty('float64', n * n);
  const times: Record<string, number> = {};
  for (const method of methods.filter((m) => m !== 'basic')) {
    bigOut.fill(NaN);
    times[method] = median(timeGpu(() => atA(big, n, n, { method, out: bigOut }), { device: 0, reps: 3, warmup: 1 }));
    const err = method === reference ? 0 : deviceRelativeError(bigOut, bigRef);
    failed ||= !(err < 1e-12);
    large.push([
      `${n}×${n}`,
      method,
      times[method].toFixed(2),
      gflops(n, n, times[method]),
      err.toExponential(1),
      err < 1e-12 ? 'ok' : 'FAIL',
    ]);
  }
  out(large.toString());
  failed = demoGemm(gpu, out) || failed;
  return failed ? 1 : 0;
}

/** SGEMM: every variant on a 512³ product checked against the CPU, then timed at 4096³. */
function demoGemm(gpu: Gpu, out: (line: string) => void): boolean {
  const { cublasInfo } = gpu.device;
  const { empty, deviceRelativeError } = gpu.array;
  const { median, timeGpu } = gpu.harness;
  const { gemm } = gpu.gemm;
  const variants: [string, GemmOptions][] = [
    ['naive', { method: 'naive' }],
    ['shared (tile 32)', { method: 'shared', tile: 32 }],
    ['fast', { method: 'fast' }],
    ...(cublasInfo().available ? [['cublas', { method: 'cublas' }] as [string, GemmOptions]] : []),
  ];
  let failed = false;
  const table = makeTable(['C = A·B (float32)', 'method', 'ms', 'GFLOP/s', '‖C−ref‖/‖ref‖', 'check']);
  for (const n of [512, 4096]) {
    const seed = Date.now() & 0xffff;
    using a = empty('float32', n * n).fillRandom(seed);
    using b = empty('float32', n * n).fillRandom(seed + 1);
    // The CPU checks the small product; the large one is checked against cuBLAS (or fast without it).
    const ref = n <= 512 ? cpuGemm(a.toHostSync(), b.toHostSync(), n, n, n) : undefined;
    using reference = gemm(a, b, n, n, n, variants[variants.length - 1][1]);
    using c = empty('float32', n * n);
    for (const [label, options] of variants) {
      c.fill(NaN);
      const ms = median(timeGpu(() => gemm(a, b, n, n, n, { ...options, out: c }), { device: 0, reps: 5, warmup: 1 }));
      const err = ref ? relativeError(c.toHostSync(), ref) : deviceRelativeError(c, reference);
      failed ||= !(err < 1e-5);
      const rate = formatRate((2 * n ** 3) / ms / 1e6);
      table.push([`${n}³`, label, ms.toFixed(3), rate, err.toExponential(1), err < 1e-5 ? 'ok' : 'FAIL']);
    }
  }
  out(table.toString());
  return failed;
}
