import { checkArray, type DeviceArray, empty } from '../array';
import { cublasInfo, deviceProperties } from '../device';
import { checkInteger, rangeError, typeError, elements, inWords } from '../errors';
import { native } from '../native';

/**
 * The AᵀA variants, in the order of native/ata/methods.cc (the test suite checks the two agree).
 *
 * - `cublas`: cublasDgemm reading the row-major buffer as its column-major transpose (the report).
 * - `cublas-syrk`: cublasDsyrk on one triangle, then a mirror kernel.
 * - `basic`: one thread per element of C, reading two columns of A (the report's first kernel).
 * - `tiled`: shared-memory tiles, only tiles on or above the diagonal computed, then mirrored.
 * - `fast`: FP64 tensor cores (mma.sync), a pipeline of K-slabs loaded by tensor copies (TMA) on
 *   sm_90 and cp.async before, upper tiles only, split-K for tall inputs; `tiled` on GPUs older than
 *   sm_80.
 */
export const ataMethods = ['cublas', 'cublas-syrk', 'basic', 'tiled', 'fast'] as const;

/** A variant name, or `auto` for the fastest available on the device. */
export type AtaMethod = (typeof ataMethods)[number] | 'auto';

export interface AtaOptions {
  /** Variant (default `auto`). */
  method?: AtaMethod;
  /** A float64 DeviceArray of cols·cols elements on the same device to write C into. */
  out?: DeviceArray<'float64'>;
}

const majorCache = new Map<number, number>();

/**
 * The variant `auto` runs for a rows×cols A on `device`: the fastest measured on an H100 and an
 * H200 (bench/results/), falling back to our kernels where cuBLAS is missing. cuBLAS DGEMM wins on
 * very skinny A (few output tiles), cuBLAS DSYRK below 4000 columns (at 2000² the two are level on
 * the H100 since the 64×64 config's tensor copies, 0.197-0.205 ms against 0.194-0.225 in four
 * package runs; at 3000² DSYRK is ahead back to back, 0.559 against 0.580 ms, and level with idle
 * time before each run), `fast` from 4000 columns up
 * (faster in the package benchmark's balanced order from 4000² to 18000² and at 200000×2000; under
 * the pair protocol ahead at 4000² and 16000², 1-8% behind at 8000², 10000² and 20000×8000:
 * bench/results/README.md).
 */
export function ataAutoMethod(rows: number, cols: number, device = 0): (typeof ataMethods)[number] {
  let major = majorCache.get(device);
  if (major === undefined) {
    major = deviceProperties(device).major;
    majorCache.set(device, major);
  }
  const ours = major >= 8 ? 'fast' : 'tiled';
  if (!cublasInfo().available) return ours;
  if (cols <= 128) return 'cublas';
  return ours === 'fast' && cols >= 4000 ? 'fast' : 'cublas-syrk';
}

/**
 * C = AᵀA for a row-major rows×cols float64 matrix on the GPU: the full symmetric cols×cols
 * matrix, row-major, as a new DeviceArray (or in `options.out`). The work is queued on the device's
 * stream; read the result with `toHost()`.
 *
 * @example
 * ```ts
 * using a = upload(new Float64Array(rows * cols).map(Math.random));
 * using c = atA(a, rows, cols);               // method 'auto'
 * using d = atA(a, rows, cols, { method: 'cublas-syrk' });
 * ```
 */
export function atA(
  dA: DeviceArray<'float64'>,
  rows: number,
  cols: number,
  options: AtaOptions = {},
): DeviceArray<'float64'> {
  checkArray('dA', dA, 'float64');
  checkInteger('rows', rows, 1);
  checkInteger('cols', cols, 1);
  if (rows * cols !== dA.length) {
    throw rangeError('dA', `rows·cols = ${rows}·${cols} = ${rows * cols} elements long`, elements(dA.length));
  }
  if (typeof options !== 'object' || options === null) throw typeError('options', 'an object', options);
  const method = options.method ?? 'auto';
  if (method !== 'auto' && !(ataMethods as readonly string[]).includes(method)) {
    throw rangeError('options.method', `one of auto, ${ataMethods.join(', ')}`, method);
  }
  const resolved = method === 'auto' ? ataAutoMethod(rows, cols, dA.device) : method;
  let out = options.out;
  if (out !== undefined) {
    checkArray('options.out', out, 'float64');
    if (out.length !== cols * cols) {
      throw rangeError('options.out', `cols·cols = ${cols * cols} elements long`, elements(out.length));
    }
    if (out.device !== dA.device)
      throw rangeError('options.out', `on device ${dA.device}`, inWords(`device ${out.device}`));
    if (out === dA) throw new RangeError('options.out must not be dA: C is written while A is still being read');
  }
  const owned = out === undefined;
  out ??= empty('float64', cols * cols, { device: dA.device, shape: [cols, cols] });
  try {
    native.ataRun(dA.handle('dA'), out.handle('options.out'), rows, cols, ataMethods.indexOf(resolved));
  } catch (e) {
    if (owned) out.free();
    throw e;
  }
  return out;
}
