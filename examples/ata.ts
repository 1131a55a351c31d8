// C = AᵀA on the GPU with every method, timed with CUDA events and checked against the CPU.
import { atA, ataMethods, cpu, cublasInfo, timed, upload } from 'cuda-kernels';

/** Needs a GPU. */
export const needsGpu = true;

export async function main(log: (line: string) => void = console.log): Promise<void> {
  const [rows, cols] = [3000, 500];
  const host = cpu.randomArray(Float64Array, rows * cols, 42);
  const ref = cpu.atA(host, rows, cols);

  using a = upload(host); // freed at the end of the block
  for (const method of ataMethods) {
    if (method.startsWith('cublas') && !cublasInfo().available) continue;
    const { ms, result } = timed(() => atA(a, rows, cols, { method }));
    using c = result;
    const err = cpu.relativeError(await c.toHost(), ref);
    const gflops = (2 * rows * cols * cols) / ms / 1e6;
    log(`${method.padEnd(12)} ${ms.toFixed(3)} ms  ${gflops.toFixed(0)} GFLOP/s  error ${err.toExponential(1)}`);
    if (!(err < 1e-12)) throw new Error(`${method}: relative error ${err}`);
  }
}

if (require.main === module)
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  });
