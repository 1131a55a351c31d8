// Your own CUDA C++ kernel from a string: compiled by NVRTC on first use (cached on disk after that),
// launched on DeviceArrays on the same stream as every built-in op, checked against the CPU.
import { compile, cpu, nvrtcInfo, synchronize, timed, upload } from 'cuda-kernels';

/** Needs a GPU (and NVRTC, which it reports the absence of). */
export const needsGpu = true;

const SOURCE = `
extern "C" __global__ void saxpy(long long n, float a, const float* __restrict__ x, float* __restrict__ y) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}
`;

export async function main(log: (line: string) => void = console.log): Promise<void> {
  const nvrtc = nvrtcInfo();
  if (!nvrtc.available) {
    log(`NVRTC is not available, so user kernels are not: ${nvrtc.reason}`);
    return;
  }
  const n = 1_000_003; // not a multiple of the block
  const hostX = cpu.randomArray(Float32Array, n, 1);
  const hostY = cpu.randomArray(Float32Array, n, 2);
  using x = upload(hostX);
  using y = upload(hostY);

  const t0 = performance.now();
  const mod = compile(SOURCE, { name: 'saxpy.cu' });
  const saxpy = mod.kernel('saxpy');
  log(
    `compiled for ${mod.target} in ${(performance.now() - t0).toFixed(1)} ms (from ${mod.from}; NVRTC ${nvrtc.version})`,
  );
  log(`saxpy(${saxpy.params.map((p) => `${p.type} ${p.name}`).join(', ')})`);

  const { ms } = timed(() => saxpy.launch({ grid: 1024, block: 256 }, n, 2.5, x, y));
  synchronize();
  log(`one launch over ${n} elements: ${ms.toFixed(3)} ms of GPU time`);

  const want = hostX.map((v, i) => 2.5 * v + hostY[i]);
  const err = cpu.relativeError(await y.toHost(), want);
  log(`relative error against the CPU: ${err.toExponential(1)}`);
  if (!(err < 1e-6)) throw new Error(`saxpy: relative error ${err}`);

  // Arguments are checked before anything is queued: a float64 array for `const float* x` is a TypeError.
  using wrong = upload(new Float64Array(4));
  try {
    saxpy.launch({ grid: 1, block: 32 }, 4, 1, wrong, y);
  } catch (e) {
    log(`refused: ${(e as Error).message}`);
  }
}

if (require.main === module)
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  });
