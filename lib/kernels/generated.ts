// What elementwise() and reduction() share: their parameter specs ('float32 x, T y, raw float64 z'),
// resolving type placeholders from the arguments of a call, and building a kernel source whose user
// parts are marked with #line, so that NVRTC's errors name the user's own strings and lines.
import { type Dtype, DeviceArray, dtypes } from '../array';
import { rangeError, typeError } from '../errors';
import { C_TYPE_OF } from './ctypes';
import { CompileError, compileErrorFromLog } from './compile-error';
import type { CompileOptions } from './options';

/** One parameter of a spec: its type (a dtype, or a placeholder such as T) and name. */
export interface SpecParam {
  name: string;
  /** A dtype, or a placeholder name resolved from each call's arrays. */
  type: Dtype | string;
  placeholder: boolean;
  /** `raw`: the whole array as a pointer, indexed by the body itself, not one element per thread. */
  raw: boolean;
}

const C_NAMES: Record<string, Dtype> = {
  float: 'float32',
  double: 'float64',
  int: 'int32',
  unsigned: 'uint32',
  'unsigned int': 'uint32',
  int32_t: 'int32',
  uint32_t: 'uint32',
};

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Parses a spec such as `float32 x, float32 y, T a, raw float64 z` (dtype names, their C names
 * `float`/`double`/`int`/`unsigned int`, or placeholders: any other identifier). Names must be C
 * identifiers, distinct from `reserved` and from each other (`taken` holds names already used).
 */
export function parseSpec(what: string, spec: unknown, reserved: ReadonlySet<string>, taken: Set<string>): SpecParam[] {
  if (typeof spec !== 'string') throw typeError(what, "a parameter list such as 'float32 x, float32 y'", spec);
  const parts = spec.split(',').map((p) => p.trim());
  if (parts.length === 1 && parts[0] === '') return [];
  return parts.map((part, i) => {
    const words = part.split(/\s+/).filter((w) => w.length > 0);
    const raw = words[0] === 'raw';
    if (raw) words.shift();
    if (words.length < 2) throw rangeError(`${what} (parameter ${i})`, "'type name', e.g. 'float32 x'", part);
    const name = words.pop()!;
    const typeText = words.join(' ');
    if (!IDENT.test(name)) throw rangeError(`${what} (parameter ${i})`, 'a name that is a C identifier', name);
    if (reserved.has(name) || name.startsWith('ck_'))
      throw new RangeError(
        `${what}: the name ${name} is reserved (${[...reserved].join(', ')} and names starting with ck_)`,
      );
    if (taken.has(name)) throw new RangeError(`${what}: the name ${name} is used twice`);
    taken.add(name);
    if ((dtypes as readonly string[]).includes(typeText))
      return { name, type: typeText as Dtype, placeholder: false, raw };
    if (C_NAMES[typeText] !== undefined) return { name, type: C_NAMES[typeText], placeholder: false, raw };
    if (!IDENT.test(typeText))
      throw rangeError(
        `${what} (parameter ${name})`,
        `a dtype (${dtypes.join(', ')}) or a placeholder name such as T`,
        typeText,
      );
    return { name, type: typeText, placeholder: true, raw };
  });
}

/** Binds placeholders to dtypes from a call's arrays; a mismatch is a TypeError naming the parameter. */
export class TypeBinding {
  readonly #bound = new Map<string, { dtype: Dtype; from: string }>();

  /** Binds `param`'s placeholder to `dtype` (from an array), or checks a concrete type against it. */
  bind(where: string, param: SpecParam, dtype: Dtype): void {
    if (!param.placeholder) {
      if (param.type !== dtype)
        throw new TypeError(`${where}: ${param.name} must be a DeviceArray of ${param.type}, got ${dtype}`);
      return;
    }
    const known = this.#bound.get(param.type);
    if (known === undefined) this.#bound.set(param.type, { dtype, from: param.name });
    else if (known.dtype !== dtype)
      throw new TypeError(
        `${where}: ${param.name} is a DeviceArray of ${dtype}, but ${param.type} is ${known.dtype} (from ${known.from})`,
      );
  }

  /** Binds a placeholder directly (reduceType, an out array). */
  set(placeholder: string, dtype: Dtype, from: string): void {
    if (!this.#bound.has(placeholder)) this.#bound.set(placeholder, { dtype, from });
  }

  /** The dtype of `param`; a TypeError when its placeholder was bound by no array. */
  resolve(where: string, param: SpecParam): Dtype {
    if (!param.placeholder) return param.type as Dtype;
    const b = this.#bound.get(param.type);
    if (b === undefined)
      throw new TypeError(
        `${where}: cannot tell the type ${param.type} of ${param.name}: no DeviceArray argument has type ${param.type}`,
      );
    return b.dtype;
  }

  has(placeholder: string): boolean {
    return this.#bound.has(placeholder);
  }
}

/** Checks a scalar argument for a parameter of `dtype` (TypeError, RangeError naming it). */
export function checkScalar(where: string, name: string, dtype: Dtype, value: unknown): number {
  if (typeof value !== 'number') throw typeError(`${where}: ${name}`, `a number or a DeviceArray`, value);
  if (dtype === 'int32' && !(Number.isInteger(value) && value >= -0x80000000 && value <= 0x7fffffff))
    throw rangeError(`${where}: ${name}`, 'an int32 (an integer in [-2147483648, 2147483647])', value);
  if (dtype === 'uint32' && !(Number.isInteger(value) && value >= 0 && value <= 0xffffffff))
    throw rangeError(`${where}: ${name}`, 'a uint32 (an integer in [0, 4294967295])', value);
  return value;
}

/** The C++ type of a dtype. */
export function cType(d: Dtype): string {
  return C_TYPE_OF[d];
}

/**
 * A kernel source being written line by line, with the user's strings placed under `#line 1 "<file>"`
 * and the generated code after them put back under its own line numbers.
 */
export class SourceBuilder {
  readonly program: string;
  readonly #lines: string[] = [];
  readonly #user = new Map<string, string>();

  constructor(program: string) {
    this.program = program;
  }

  line(text = ''): this {
    for (const l of text.split('\n')) this.#lines.push(l);
    return this;
  }

  /** The user's `text` as file `file` (errors in it say `file(line)`), then back to the generated lines. */
  user(file: string, text: string): this {
    this.#user.set(file, text);
    this.#lines.push(`#line 1 "${file}"`);
    for (const l of text.split(/\r?\n/)) this.#lines.push(l);
    // The next line is the directive's own, so the one after it is number length + 2.
    this.#lines.push(`#line ${this.#lines.length + 2} "${this.program}"`);
    return this;
  }

  get source(): string {
    return this.#lines.join('\n') + '\n';
  }

  /** Every text NVRTC may name in an error: the generated source and the user's parts. */
  get sources(): Map<string, string> {
    return new Map([[this.program, this.source], ...this.#user]);
  }
}

/** Rebuilds a CompileError so that it points into the user's strings (the generated source's parts). */
export function mapCompileError(e: unknown, sources: ReadonlyMap<string, string>, what: string): unknown {
  if (!(e instanceof CompileError) || e.log === '') return e;
  return compileErrorFromLog(e.log, e.code, sources, what);
}

/** The compile options elementwise() and reduction() pass through to compile(). */
export type GeneratedCompileOptions = Pick<
  CompileOptions,
  'headers' | 'includePaths' | 'defines' | 'std' | 'flags' | 'cache'
>;

/** Checks that `v` is a live DeviceArray on `device` (RangeError otherwise) and returns its dtype. */
export function arrayOn(where: string, name: string, v: DeviceArray, device: number): Dtype {
  if (v.freed) throw new TypeError(`${where}: ${name} has been freed`);
  if (v.device !== device)
    throw new RangeError(`${where}: ${name} is on device ${v.device}, the other arrays on device ${device}`);
  return v.dtype;
}

/** A preamble for the generated kernels: INFINITY and NAN, which NVRTC's built-in headers lack, for identities. */
export const PRELUDE = [
  '#ifndef INFINITY',
  '#define INFINITY __int_as_float(0x7f800000)',
  '#endif',
  '#ifndef NAN',
  '#define NAN __int_as_float(0x7fffffff)',
  '#endif',
].join('\n');
