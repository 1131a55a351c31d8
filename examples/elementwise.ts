// Element-wise and reduction kernels from one-line bodies, as CuPy's ElementwiseKernel and
// ReductionKernel: saxpy for any dtype (T), a norm, and sums along each axis of a matrix.
import { cpu, elementwise, nvrtcInfo, reduction, type DeviceArray, upload } from 'cuda-kernels';

/** Needs a GPU (and NVRTC, which it reports the absence of). */
export const needsGpu = true;

export async function main(log: (line: string) => void = console.log): Promise<void> {
  if (!nvrtcInfo().available) {
    log(`NVRTC is not available, so elementwise() and reduction() are not: ${nvrtcInfo().reason}`);
    return;
  }
  // T is the dtype of the arrays passed: one definition, an instance compiled per dtype on first use.
  const axpy = elementwise({ in: 'T x, T y, T a', out: 'T z', body: 'z = a * x + y', name: 'axpy' });
  const norm = reduction({
    in: 'T x',
    out: 'double s',
    map: '(double)x * x',
    reduce: 'a + b',
    post: 'sqrt(a)',
    identity: '0',
    name: 'norm',
  });
  const sum = reduction({ in: 'T x', out: 'T s', map: 'x', reduce: 'a + b', identity: '0', name: 'sum' });

  const n = 100_003;
  const hx = cpu.randomArray(Float64Array, n, 3);
  const hy = cpu.randomArray(Float64Array, n, 4);
  using x = upload(hx);
  using y = upload(hy);
  using z = axpy(x, y, -0.5) as DeviceArray; // a scalar is the same for every element
  const want = hx.map((v, i) => -0.5 * v + hy[i]);
  const err = cpu.relativeError(await z.toHost(), want);
  log(`axpy float64 over ${n}: relative error ${err.toExponential(1)}`);

  using nz = norm(z);
  const ref = Math.sqrt(want.reduce((s, v) => s + v * v, 0));
  const normErr = Math.abs((await nz.toHost())[0] - ref) / ref;
  log(`‖z‖ = ${(await nz.toHost())[0].toFixed(6)} (CPU ${ref.toFixed(6)})`);

  // int32 this time, in place, then per-row and per-column sums of a 300×7 matrix.
  const [rows, cols] = [300, 7];
  const hm = Int32Array.from({ length: rows * cols }, (_, i) => (i * 7) % 23);
  using m = upload(hm, { shape: [rows, cols] });
  axpy(m, m, 2, { out: m }); // m = 2m + m
  using perRow = sum(m, { axis: 1 });
  using perCol = sum(m, { axis: 0 });
  const rowRef = Array.from(
    { length: rows },
    (_, r) => 3 * hm.slice(r * cols, (r + 1) * cols).reduce((s, v) => s + v, 0),
  );
  const colRef = Array.from({ length: cols }, (_, c) => {
    let s = 0;
    for (let r = 0; r < rows; r++) s += 3 * hm[r * cols + c];
    return s;
  });
  const rowsOk = cpu.firstMismatch(await perRow.toHost(), rowRef) === -1;
  const colsOk = cpu.firstMismatch(await perCol.toHost(), colRef) === -1;
  log(`int32 ${rows}×${cols}: row sums ${rowsOk ? 'match' : 'DIFFER'}, column sums ${colsOk ? 'match' : 'DIFFER'}`);
  if (!(err < 1e-14 && normErr < 1e-12 && rowsOk && colsOk)) throw new Error('elementwise example: mismatch');
}

if (require.main === module)
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  });
