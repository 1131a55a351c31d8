// The CPU references (`cpu.*`): no GPU needed. They are what the GPU methods are checked against,
// and a plain-JavaScript fallback where no GPU is present.
import { cpu } from 'cuda-kernels';

/** Runs without a GPU. */
export const needsGpu = false;

export function main(log: (line: string) => void = console.log): void {
  // AᵀA of a 3×2 matrix, row-major: the 2×2 Gram matrix of its columns.
  const a = Float64Array.from([1, 2, 3, 4, 5, 6]);
  log(`AᵀA = [${Array.from(cpu.atA(a, 3, 2)).join(', ')}]`); // [35, 44, 44, 56]

  // C = A·B for random 64×32 and 32×16 matrices, against a naive triple loop.
  const [m, k, n] = [64, 32, 16];
  const x = cpu.randomArray(Float32Array, m * k, 1);
  const y = cpu.randomArray(Float32Array, k * n, 2);
  const c = cpu.gemm(x, y, m, k, n);
  const naive = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) for (let p = 0; p < k; p++) naive[i * n + j] += x[i * k + p] * y[p * n + j];
  log(`gemm ${m}x${k}x${n}: relative error vs a triple loop ${cpu.relativeError(c, naive).toExponential(1)}`);

  // Inclusive prefix sums and reductions; integer sums wrap modulo 2^32 like the GPU's.
  const v = Int32Array.from([3, 1, 4, 1, 5, 9, 2, 6]);
  log(`scan [${Array.from(v).join(', ')}] = [${Array.from(cpu.scan(v)).join(', ')}]`);
  log(`sum ${cpu.reduce(v, 'sum')}, min ${cpu.reduce(v, 'min')}, max ${cpu.reduce(v, 'max')}`);
}

if (require.main === module) main();
