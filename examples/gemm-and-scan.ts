// SGEMM into a preallocated output, then a prefix sum and a reduction of the result, all on the
// device: nothing is copied back until toHost().
import { cpu, empty, gemm, reduce, scan, upload } from 'cuda-kernels';

/** Needs a GPU. */
export const needsGpu = true;

export async function main(log: (line: string) => void = console.log): Promise<void> {
  const [m, k, n] = [257, 129, 65]; // not multiples of any tile
  const hostA = cpu.randomArray(Float32Array, m * k, 1);
  const hostB = cpu.randomArray(Float32Array, k * n, 2);

  using a = upload(hostA);
  using b = upload(hostB);
  using c = empty('float32', m * n);
  gemm(a, b, m, k, n, { method: 'fast', out: c });
  const gemmErr = cpu.relativeError(await c.toHost(), cpu.gemm(hostA, hostB, m, k, n));
  log(`gemm ${m}x${k}x${n} (fast): relative error ${gemmErr.toExponential(1)}`);

  using sums = scan(c); // inclusive prefix sum, float32
  const last = (await sums.toHost())[m * n - 1];
  log(`last prefix sum ${last.toFixed(3)}, reduce(sum) ${reduce(c, 'sum').toFixed(3)}`);
  log(`min ${reduce(c, 'min').toFixed(3)}, max ${reduce(c, 'max').toFixed(3)}`);
  if (!(gemmErr < 1e-5)) throw new Error(`gemm: relative error ${gemmErr}`);
}

if (require.main === module)
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  });
