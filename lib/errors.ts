/**
 * A failure reported by CUDA, cuBLAS, or the library's device layer.
 *
 * @example
 * ```ts
 * try { empty('float64', 1e12); } catch (e) {
 *   if (e instanceof CudaError && e.code === 'cudaErrorMemoryAllocation') { ... }
 * }
 * ```
 */
export class CudaError extends Error {
  /** Symbolic code, e.g. `cudaErrorMemoryAllocation`, `cudaErrorNoDevice`, `cublasLibraryNotFound`. */
  readonly code: string;
  /** The API call that failed, e.g. `cudaMalloc(8000000 bytes)`. */
  readonly call: string;

  constructor(message: string, code: string, call: string) {
    super(message);
    this.name = 'CudaError';
    this.code = code;
    this.call = call;
  }
}

/**
 * What was given, already in words (`3 elements`, `device 1`): printed as it is, where a string
 * argument would read as the value a user passed (`got the string "3 elements"`).
 */
class InWords {
  constructor(readonly text: string) {}
}

/** Wraps a description of what was given, for {@link typeError} and {@link rangeError}. */
export function inWords(text: string): InWords {
  return new InWords(text);
}

/** `got 3 elements` in a length error. */
export function elements(count: number): InWords {
  return new InWords(`${count} element${count === 1 ? '' : 's'}`);
}

/** `a` or `an` before a type name: an Int32Array, an Object, a Uint8Array (said "you-int"). */
function article(word: string): string {
  return /^[aeio]|^u(?!int)/i.test(word) ? `an ${word}` : `a ${word}`;
}

function describe(value: unknown): string {
  if (value instanceof InWords) return value.text;
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  if (ArrayBuffer.isView(value)) return article(value.constructor.name);
  if (typeof value === 'object') return article((value as object).constructor?.name ?? 'object');
  if (typeof value === 'string')
    return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)}`;
  return `${typeof value} ${String(value)}`;
}

/** TypeError naming the argument, what was expected and what was given. */
export function typeError(name: string, expected: string, got: unknown): TypeError {
  return new TypeError(`${name} must be ${expected}, got ${describe(got)}`);
}

/** RangeError naming the argument, what was expected and what was given. */
export function rangeError(name: string, expected: string, got: unknown): RangeError {
  return new RangeError(`${name} must be ${expected}, got ${describe(got)}`);
}

/** Checks that `value` is an integer in [min, max]; returns it. */
export function checkInteger(name: string, value: unknown, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number') throw typeError(name, 'a number', value);
  if (!Number.isInteger(value) || value < min || value > max) {
    const bounds = max === Number.MAX_SAFE_INTEGER ? `an integer ≥ ${min}` : `an integer in [${min}, ${max}]`;
    throw rangeError(name, bounds, value);
  }
  return value;
}
