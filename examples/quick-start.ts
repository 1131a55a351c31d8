// The README's first example, run as a test. The lines between the region markers are the README's
// code block (test/readme.test.ts compares them, with `log` printed as `console.log`); what follows
// the region checks the result against the CPU.
import { upload, atA, timed } from 'cuda-kernels';

/** Needs a GPU. */
export const needsGpu = true;

export async function main(log: (line: string) => void = console.log): Promise<void> {
  // #region readme
  const [rows, cols] = [4000, 3000];
  const host = Float64Array.from({ length: rows * cols }, Math.random);
  using a = upload(host); // DeviceArray<'float64'> on device 0, freed at the end of the block
  const { ms, result } = timed(() => atA(a, rows, cols)); // method 'auto'; GPU time from CUDA events
  using c = result; // cols × cols, row-major, the full symmetric matrix
  const tflops = (2 * rows * cols * cols) / (ms / 1e3) / 1e12; // GEMM-equivalent flop count per second
  log(`AᵀA ${rows}×${cols}: ${ms.toFixed(2)} ms, ${tflops.toFixed(1)} TFLOP/s`);
  const gram = await c.toHost(); // Float64Array; the copy is waited for off the JS thread
  log(`C[0][0] = ${gram[0].toFixed(1)} (about rows / 3 for uniform [0, 1) data)`);
  // #endregion

  if (!(ms > 0 && Number.isFinite(tflops))) throw new Error(`timed() gave ${ms} ms`);
  // C[i][j] is the dot product of columns i and j of A: check a few entries, both triangles, on the CPU.
  const pairs = [
    [0, 0],
    [0, 1],
    [1, 0],
    [7, cols - 1],
    [cols - 1, 7],
    [1234, 2999],
  ];
  for (const [i, j] of pairs) {
    let ref = 0;
    for (let r = 0; r < rows; r++) ref += host[r * cols + i] * host[r * cols + j];
    const err = Math.abs(gram[i * cols + j] - ref) / Math.abs(ref);
    if (!(err < 1e-12)) throw new Error(`C[${i}][${j}] = ${gram[i * cols + j]}, CPU ${ref}: relative error ${err}`);
  }
}

if (require.main === module)
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  });
