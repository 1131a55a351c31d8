// Checking a launch before anything is queued: the launch shape against the device's and the kernel's
// limits, and each argument against its parameter's type, written straight into the packed buffer the
// native launch reads (one N-API call per launch, whatever the number of arguments).
import type { BufferHandle } from '../../binding';
import { DeviceArray } from '../array';
import { rangeError, typeError } from '../errors';
import type { ParamType, ScalarKind } from './ctypes';

/** How a kernel is launched: `kernel.launch({ grid, block, sharedMem, device }, ...args)`. */
export interface LaunchConfig {
  /** Blocks: a count, or [x], [x, y] or [x, y, z]. */
  grid: number | readonly number[];
  /** Threads per block: a count, or [x], [x, y] or [x, y, z]. */
  block: number | readonly number[];
  /** Bytes of dynamic shared memory per block (default 0). */
  sharedMem?: number;
  /** The device (default: that of the first DeviceArray argument, else the module's device). */
  device?: number;
}

/** A value a kernel parameter takes: a DeviceArray (or null) for a pointer, a number, bigint or boolean for a scalar. */
export type KernelArg = DeviceArray | null | number | bigint | boolean;

/** The limits a launch is checked against (device properties and the kernel's attributes). */
export interface LaunchLimits {
  device: number;
  maxGridDim: readonly [number, number, number];
  maxBlockDim: readonly [number, number, number];
  /** The smaller of the device's limit and the kernel's (which its register use lowers). */
  maxThreadsPerBlock: number;
  /** Whether the kernel, rather than the device, sets maxThreadsPerBlock. */
  kernelLimitsThreads: boolean;
  /** The most dynamic shared memory a block may ask for: the device's opt-in limit less the kernel's static shared memory. */
  maxDynamicSharedMem: number;
}

/** Checks one dimension `v` (the i-th of `what`, or `what` itself when i < 0). */
function dim(what: string, i: number, v: unknown): number {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 1) return v;
  const name = i < 0 ? what : `${what}[${i}]`;
  if (typeof v !== 'number') throw typeError(name, 'a number', v);
  throw rangeError(name, 'an integer ≥ 1', v);
}

/** A grid or block (a number, or an array of 1 to 3) checked and written into `out` at `at`, 1 for absent axes. */
function dims(what: string, value: unknown, out: number[], at: number): void {
  if (typeof value === 'number') {
    out[at] = dim(what, -1, value);
    out[at + 1] = 1;
    out[at + 2] = 1;
    return;
  }
  if (!Array.isArray(value) || value.length < 1 || value.length > 3)
    throw typeError(what, 'a number or an array of 1 to 3 numbers', value);
  for (let i = 0; i < 3; i++) out[at + i] = i < value.length ? dim(what, i, value[i]) : 1;
}

const AXES = ['x', 'y', 'z'];

/** [gx, gy, gz, bx, by, bz] of the launch being checked: numbers, so that nothing wraps before the checks. */
const scratch = [1, 1, 1, 1, 1, 1];
/** Whether `scratch` is in use: a getter or Proxy in a config may check another launch meanwhile. */
let checking = false;

/**
 * Checks a launch shape against `limits` and writes it into `out` ([gx, gy, gz, bx, by, bz, sharedMem]).
 *
 * @throws TypeError for a malformed config; RangeError naming the limit a dimension or the shared
 *   memory exceeds.
 */
export function checkLaunchConfig(config: LaunchConfig, limits: LaunchLimits, out: Uint32Array): void {
  if (typeof config !== 'object' || config === null) throw typeError('config', 'an object { grid, block }', config);
  // A nested check (from the user's getters) gets its own array, or it would leave its shape, perhaps
  // refused, in ours after our checks.
  const outer = checking;
  checking = true;
  try {
    checkShape(config, limits, out, outer ? [1, 1, 1, 1, 1, 1] : scratch);
  } finally {
    checking = outer;
  }
}

function checkShape(config: LaunchConfig, limits: LaunchLimits, out: Uint32Array, shape: number[]): void {
  dims('config.grid', config.grid, shape, 0);
  dims('config.block', config.block, shape, 3);
  for (let i = 0; i < 3; i++) {
    if (shape[i] > limits.maxGridDim[i])
      throw new RangeError(
        `config.grid: ${shape[i]} blocks along ${AXES[i]} is more than ${limits.maxGridDim[i]}, the most device ${limits.device} allows (maxGridDim[${i}])`,
      );
    if (shape[3 + i] > limits.maxBlockDim[i])
      throw new RangeError(
        `config.block: ${shape[3 + i]} threads along ${AXES[i]} is more than ${limits.maxBlockDim[i]}, the most device ${limits.device} allows (maxBlockDim[${i}])`,
      );
  }
  const threads = shape[3] * shape[4] * shape[5];
  if (threads > limits.maxThreadsPerBlock)
    throw new RangeError(
      `config.block: ${threads} threads per block is more than ${limits.maxThreadsPerBlock}, the most ` +
        (limits.kernelLimitsThreads
          ? `this kernel allows (its maxThreadsPerBlock, lowered by its register use)`
          : `device ${limits.device} allows (maxThreadsPerBlock)`),
    );
  const shared = config.sharedMem ?? 0;
  if (typeof shared !== 'number') throw typeError('config.sharedMem', 'a number of bytes', shared);
  if (!Number.isInteger(shared) || shared < 0) throw rangeError('config.sharedMem', 'an integer ≥ 0', shared);
  if (shared > limits.maxDynamicSharedMem)
    throw new RangeError(
      `config.sharedMem: ${shared} bytes is more than ${limits.maxDynamicSharedMem}, the most dynamic shared memory ` +
        `a block of this kernel can have on device ${limits.device} (sharedMemPerBlockOptin less the kernel's static shared memory)`,
    );
  for (let i = 0; i < 6; i++) out[i] = shape[i];
  out[6] = shared;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/**
 * Which way rounding `v` to float32 went: +1 when it lost magnitude (|v| > |f32|), −1 when it gained,
 * 0 when exact. A float32 that lands exactly half-way between two 16-bit values has lost that bit
 * (the sticky bit), so the 16-bit rounding breaks the tie by it, not to even: otherwise `v` would be
 * rounded twice.
 */
function lostToFloat32(v: number): number {
  const r = f32[0];
  return r === v || Number.isNaN(v) ? 0 : Math.abs(v) > Math.abs(r) ? 1 : -1;
}

/** IEEE half-precision bits of `v`, rounded to nearest even (through float32, ties decided by `v`). */
export function toHalfBits(v: number): number {
  f32[0] = v;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  const lost = lostToFloat32(v);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (lost > 0 || (lost === 0 && (h & 1) !== 0)))) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  // A carry out of the mantissa moves into the exponent, which is the right rounding (up to infinity).
  if (rem > 0x1000 || (rem === 0x1000 && (lost > 0 || (lost === 0 && (h & 1) !== 0)))) h++;
  return sign | h;
}

/** bfloat16 bits of `v`, rounded to nearest even (through float32, ties decided by `v`). */
export function toBfloat16Bits(v: number): number {
  f32[0] = v;
  const x = u32[0];
  if (Number.isNaN(v)) return ((x >>> 16) & 0x8000) | 0x7fc0;
  if ((x & 0xffff) === 0x8000) {
    const lost = lostToFloat32(v);
    if (lost !== 0) return ((x >>> 16) + (lost > 0 ? 1 : 0)) & 0xffff;
  }
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

const INT_RANGES: Partial<Record<ScalarKind, [bigint, bigint]>> = {
  int8: [-128n, 127n],
  uint8: [0n, 255n],
  int16: [-32768n, 32767n],
  uint16: [0n, 65535n],
  int32: [-2147483648n, 2147483647n],
  uint32: [0n, 4294967295n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
};

/** The DataView write of an integer scalar of kind `s` at `offset` (one closure, made when the kernel is first launched). */
function intSetter(s: ScalarKind, offset: number): (view: DataView, v: number | bigint) => void {
  switch (s) {
    case 'int8':
      return (view, v) => view.setInt8(offset, Number(v));
    case 'uint8':
      return (view, v) => view.setUint8(offset, Number(v));
    case 'int16':
      return (view, v) => view.setInt16(offset, Number(v), true);
    case 'uint16':
      return (view, v) => view.setUint16(offset, Number(v), true);
    case 'int32':
      return (view, v) => view.setInt32(offset, Number(v), true);
    case 'uint32':
      return (view, v) => view.setUint32(offset, Number(v), true);
    case 'int64':
      return (view, v) => view.setBigInt64(offset, BigInt(v), true);
    case 'uint64':
      return (view, v) => view.setBigUint64(offset, BigInt(v), true);
    default:
      throw new TypeError(`no integer writer for ${s}`);
  }
}

/** Writes one argument into the packed buffer, or pushes an array's handle. */
export type ArgWriter = (view: DataView, value: unknown, handles: (BufferHandle | null)[]) => void;

/**
 * The writer of parameter `name` of type `type` at byte `offset`: it checks the value (TypeError for the
 * wrong kind of value, RangeError for a number out of the type's range or a DeviceArray on another
 * device) and writes it. `where` prefixes the messages (`saxpy: parameter x (const float*)`).
 */
export function argWriter(where: string, name: string, type: ParamType, offset: number, device: number): ArgWriter {
  const label = `${where}: parameter ${name} (${type.text})`;
  if (type.kind === 'pointer') {
    const dtype = type.dtype;
    const expected = dtype === null ? 'a DeviceArray or null' : `a DeviceArray of ${dtype} or null`;
    return (_view, value, handles) => {
      if (value === null) {
        handles.push(null);
        return;
      }
      if (!(value instanceof DeviceArray)) throw typeError(label, expected, value);
      if (value.freed) throw new TypeError(`${label} has been freed`);
      if (dtype !== null && value.dtype !== dtype)
        throw new TypeError(`${label} must be a DeviceArray of ${dtype}, got a DeviceArray of ${value.dtype}`);
      if (value.device !== device)
        throw new RangeError(
          `${label} must be on device ${device} (the launch's), got an array on device ${value.device}`,
        );
      handles.push(value.handle(name));
    };
  }
  const s = type.scalar;
  if (s === 'float32' || s === 'float64' || s === 'float16' || s === 'bfloat16') {
    const write =
      s === 'float32'
        ? (view: DataView, v: number) => view.setFloat32(offset, v, true)
        : s === 'float64'
          ? (view: DataView, v: number) => view.setFloat64(offset, v, true)
          : s === 'float16'
            ? (view: DataView, v: number) => view.setUint16(offset, toHalfBits(v), true)
            : (view: DataView, v: number) => view.setUint16(offset, toBfloat16Bits(v), true);
    return (view, value) => {
      if (typeof value !== 'number') throw typeError(label, 'a number', value);
      write(view, value);
    };
  }
  if (s === 'bool') {
    return (view, value) => {
      if (typeof value === 'boolean') view.setUint8(offset, value ? 1 : 0);
      else if (value === 0 || value === 1) view.setUint8(offset, value);
      else throw typeError(label, 'a boolean (or 0 or 1)', value);
    };
  }
  const [lo, hi] = INT_RANGES[s]!;
  const loN = Number(lo);
  const hiN = Number(hi);
  // Made only for an error: bigints' text is not free, and a kernel's first launch is timed.
  const bounds = () => `an integer in [${lo}, ${hi}]`;
  const set = intSetter(s, offset);
  return (view, value) => {
    if (typeof value === 'number') {
      // Numbers beyond 2^53 are not exact integers any more: those take a bigint.
      if (!Number.isInteger(value) || value < loN || value > hiN || !Number.isSafeInteger(value))
        throw rangeError(label, Number.isSafeInteger(hiN) ? bounds() : `${bounds()} (a bigint beyond 2^53)`, value);
      set(view, value);
    } else if (typeof value === 'bigint') {
      if (value < lo || value > hi) throw rangeError(label, bounds(), value);
      set(view, value);
    } else {
      throw typeError(label, 'an integer (number or bigint)', value);
    }
  };
}
