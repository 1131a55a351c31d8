import { checkArray, type DeviceArray, empty } from '../array';
import { cublasInfo } from '../device';
import { checkInteger, rangeError, typeError, elements, inWords } from '../errors';
import { native } from '../native';

/**
 * The SGEMM variants, in the order of native/gemm/methods.cc (the test suite checks the two agree).
 *
 * - `naive`: one thread per element of C, global memory only (the report's first kernel).
 * - `shared`: tile×tile shared-memory tiles of A and B, `tile` 8, 16 or 32 (the report's kernel).
 * - `cublas`: cublasSgemm on the row-major buffers as Cᵀ = BᵀAᵀ, TF32 off.
 * - `fast`: block tiling, register tiles, float4 loads with a transposed A tile, warp tiling, and a
 *   software pipeline written out by hand (the next slab staged in registers, the next k's fragments
 *   read while the current k's FMAs run); plain float32 FMA, no tensor cores. A C of at most one
 *   128×128 tile per two SMs, with long k, runs in pieces of k summed in order by a second kernel
 *   (split-K).
 */
export const gemmMethods = ['naive', 'shared', 'cublas', 'fast'] as const;

/** A variant name, or `auto` for the fastest available on the device. */
export type GemmMethod = (typeof gemmMethods)[number] | 'auto';

/** Shared-memory tile sizes of the `shared` method. */
export const gemmTiles = [8, 16, 32] as const;

export interface GemmOptions {
  /** Variant (default `auto`). */
  method?: GemmMethod;
  /** Tile size of the `shared` method: 8, 16 or 32 (default 32). */
  tile?: 8 | 16 | 32;
  /** A float32 DeviceArray of m·n elements on the same device to write C into. */
  out?: DeviceArray<'float32'>;
}

/**
 * The variant `auto` runs: cuBLAS where it is available (on the H100 our `fast` comes close to it at
 * 4096³ and 8192³; bench/results/README.md has the pair-protocol ratio), otherwise `fast`.
 */
export function gemmAutoMethod(): (typeof gemmMethods)[number] {
  return cublasInfo().available ? 'cublas' : 'fast';
}

/**
 * C = A·B in float32 on the GPU for row-major A (m×k) and B (k×n): a new m×n DeviceArray (or
 * `options.out`). The work is queued on the device's stream; read it with `toHost()`.
 *
 * @example
 * ```ts
 * using c = gemm(a, b, m, k, n);                                 // method 'auto'
 * using d = gemm(a, b, m, k, n, { method: 'shared', tile: 16 });
 * ```
 */
export function gemm(
  dA: DeviceArray<'float32'>,
  dB: DeviceArray<'float32'>,
  m: number,
  k: number,
  n: number,
  options: GemmOptions = {},
): DeviceArray<'float32'> {
  checkArray('dA', dA, 'float32');
  checkArray('dB', dB, 'float32');
  checkInteger('m', m, 1);
  checkInteger('k', k, 1);
  checkInteger('n', n, 1);
  if (m * k !== dA.length) throw rangeError('dA', `m·k = ${m}·${k} = ${m * k} elements long`, elements(dA.length));
  if (k * n !== dB.length) throw rangeError('dB', `k·n = ${k}·${n} = ${k * n} elements long`, elements(dB.length));
  if (dB.device !== dA.device) throw rangeError('dB', `on device ${dA.device}`, inWords(`device ${dB.device}`));
  if (typeof options !== 'object' || options === null) throw typeError('options', 'an object', options);
  const method = options.method ?? 'auto';
  if (method !== 'auto' && !(gemmMethods as readonly string[]).includes(method)) {
    throw rangeError('options.method', `one of auto, ${gemmMethods.join(', ')}`, method);
  }
  const resolved = method === 'auto' ? gemmAutoMethod() : method;
  if (options.tile !== undefined && resolved !== 'shared') {
    throw new RangeError(`options.tile applies only to method 'shared', not '${resolved}'`);
  }
  const tile = options.tile ?? 32;
  if (!(gemmTiles as readonly number[]).includes(tile)) throw rangeError('options.tile', 'one of 8, 16, 32', tile);
  let out = options.out;
  if (out !== undefined) {
    checkArray('options.out', out, 'float32');
    if (out.length !== m * n) throw rangeError('options.out', `m·n = ${m * n} elements long`, elements(out.length));
    if (out.device !== dA.device)
      throw rangeError('options.out', `on device ${dA.device}`, inWords(`device ${out.device}`));
    if (out === dA || out === dB)
      throw new RangeError('options.out must not be dA or dB: C is written while they are read');
  }
  const owned = out === undefined;
  out ??= empty('float32', m * n, { device: dA.device, shape: [m, n] });
  try {
    native.gemmRun(
      dA.handle('dA'),
      dB.handle('dB'),
      out.handle('options.out'),
      m,
      k,
      n,
      gemmMethods.indexOf(resolved),
      tile,
    );
  } catch (e) {
    if (owned) out.free();
    throw e;
  }
  return out;
}
