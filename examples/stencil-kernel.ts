// The periodic 3×3 stencil's sweep written as your own kernel, iterated from JS, and checked against
// the package's own stencil(…, { method: 'basic' }), whose kernel it mirrors: the same neighbours by
// modular index arithmetic and the same fused multiply-adds in the same order, so the grids agree.
import { compile, cpu, deviceRelativeError, empty, nvrtcInfo, stencil, timed, upload } from 'cuda-kernels';

/** Needs a GPU (and NVRTC, which it reports the absence of). */
export const needsGpu = true;

const SWEEP = `
// One sweep of the torus: out = Σ w[3a + b] · in[(i + a − 1) mod rows][(j + b − 1) mod cols].
extern "C" __global__ void sweep(const double* __restrict__ in, double* __restrict__ out,
                                 long long rows, long long cols, const double* __restrict__ w) {
  for (long long i = blockIdx.y * (long long)blockDim.y + threadIdx.y; i < rows; i += (long long)gridDim.y * blockDim.y) {
    const long long up = (i + rows - 1) % rows, down = (i + 1) % rows;
    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < cols; j += (long long)gridDim.x * blockDim.x) {
      const long long l = (j + cols - 1) % cols, r = (j + 1) % cols;
      double v = w[0] * in[up * cols + l];
      v = fma(w[1], in[up * cols + j], v);
      v = fma(w[2], in[up * cols + r], v);
      v = fma(w[3], in[i * cols + l], v);
      v = fma(w[4], in[i * cols + j], v);
      v = fma(w[5], in[i * cols + r], v);
      v = fma(w[6], in[down * cols + l], v);
      v = fma(w[7], in[down * cols + j], v);
      out[i * cols + j] = fma(w[8], in[down * cols + r], v);
    }
  }
}
`;

export async function main(log: (line: string) => void = console.log): Promise<void> {
  if (!nvrtcInfo().available) {
    log(`NVRTC is not available, so user kernels are not: ${nvrtcInfo().reason}`);
    return;
  }
  const [rows, cols, sweeps] = [513, 1031, 50]; // odd sizes: the torus wraps in every block row and column
  const weights = [0.05, 0.2, 0.05, 0.2, 0.0, 0.2, 0.05, 0.2, 0.05];
  const host = cpu.randomArray(Float64Array, rows * cols, 7);
  using grid = upload(host, { shape: [rows, cols] });
  using w = upload(Float64Array.from(weights));
  const sweep = compile(SWEEP, { name: 'stencil-sweep.cu' }).kernel('sweep');

  // Ours: sweeps alternating between two buffers, queued back to back, no host wait in between.
  using a = grid.clone();
  using b = empty('float64', rows * cols);
  const launch = { grid: [Math.ceil(cols / 32), Math.ceil(rows / 16)], block: [32, 16] };
  const ours = timed(() => {
    for (let s = 0; s < sweeps; s++) sweep.launch(launch, s % 2 ? b : a, s % 2 ? a : b, rows, cols, w);
  });
  const result = sweeps % 2 ? b : a;

  // The package's: the report's basic kernel, with the convergence test that ours leaves out.
  const theirs = timed(() =>
    stencil(grid, rows, cols, { method: 'basic', weights, tolerance: 0, maxIterations: sweeps }),
  );
  using ref = theirs.result.grid;
  const err = deviceRelativeError(result, ref);
  log(
    `${sweeps} sweeps of ${rows}×${cols}: user kernel ${ours.ms.toFixed(2)} ms, stencil basic ${theirs.ms.toFixed(2)} ms`,
  );
  log(`relative difference ${err.toExponential(1)} after ${theirs.result.iterations} sweeps each`);
  if (!(err <= 1e-12) || theirs.result.iterations !== sweeps) throw new Error(`stencil-kernel: difference ${err}`);
}

if (require.main === module)
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  });
