// The options of compile() and compileAsync(): what they mean, their checks, and the NVRTC options they
// become. No binary is loaded here.
import * as fs from 'node:fs';
import * as path from 'node:path';

import { checkInteger, rangeError, typeError } from '../errors';

/** C++ dialects NVRTC accepts through `options.std`. */
export const cxxStandards = ['c++14', 'c++17', 'c++20'] as const;
export type CxxStandard = (typeof cxxStandards)[number];

/** Options of {@link compile} and {@link compileAsync}. */
export interface CompileOptions {
  /** The source's file name, as errors show it (default `kernel.cu`). */
  name?: string;
  /** Headers the source may `#include`, by name → source text (found before any include path). */
  headers?: Readonly<Record<string, string>>;
  /** Folders searched for `#include`d files, after `headers` and before the toolkit's own headers. */
  includePaths?: readonly string[];
  /** Preprocessor macros: `{ N: 256, USE_FAST: true, NAME: 'x' }` (true is 1, false is 0, null defines it empty). */
  defines?: Readonly<Record<string, string | number | boolean | null>>;
  /** The C++ dialect (default `c++17`). */
  std?: CxxStandard;
  /**
   * Further NVRTC options, e.g. `['--use_fast_math', '-maxrregcount=64', '-lineinfo']`. The
   * architecture is chosen for the device, and include paths go in `includePaths` (so that the cache
   * sees the headers), so `-arch`, `-I` and `-include` are refused here.
   */
  flags?: readonly string[];
  /**
   * C++ names to look up after compiling (templates such as `scale<float, 4>`, namespaced kernels such
   * as `ns::k`), each then usable as `module.kernel(expression)`. The keys of `signatures` are added.
   */
  nameExpressions?: readonly string[];
  /**
   * Parameter lists by kernel name or name expression, for kernels whose declaration the scan cannot
   * read (made by macros, overloaded): `{ 'scale<float, 4>': 'float* x, float a, int n' }`.
   */
  signatures?: Readonly<Record<string, string>>;
  /** Compile for this device's architecture first (default 0); other devices get their own on first launch. */
  device?: number;
  /** Keep the compiled code in the disk cache, and look there first (default true). */
  cache?: boolean;
}

/** The checked options, in the fixed order the cache key and NVRTC use. */
export interface ResolvedOptions {
  name: string;
  headers: [string, string][];
  includePaths: string[];
  defines: [string, string | null][];
  std: CxxStandard;
  flags: string[];
  nameExpressions: string[];
  signatures: Record<string, string>;
  device: number;
  cache: boolean;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

function plainObject(name: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw typeError(name, 'an object', value);
  return value as Record<string, unknown>;
}

function stringList(name: string, value: unknown): string[] {
  if (!Array.isArray(value)) throw typeError(name, 'an array of strings', value);
  return value.map((v, i) => {
    if (typeof v !== 'string') throw typeError(`${name}[${i}]`, 'a string', v);
    return v;
  });
}

/** Refused in `flags`, with what to use instead. */
const RESERVED_FLAGS: [RegExp, string][] = [
  [/^(-arch|--gpu-architecture|-code)\b/, 'the architecture is chosen for the device'],
  [/^(-I|--include-path)/, 'use options.includePaths (the cache then keys on those headers)'],
  [/^(-include|--pre-include)/, 'use options.headers or an #include (the cache then keys on that header)'],
  [/^(-std|--std)\b/, 'use options.std'],
  [/^(-D|--define-macro)/, 'use options.defines'],
  [/^(-pch|--pch|--create-pch|--use-pch)/, 'precompiled headers are not supported here'],
];

/** Checks every option (TypeError/RangeError naming it) and applies the defaults. */
export function resolveCompileOptions(options: unknown): ResolvedOptions {
  const o = plainObject('options', options ?? {});
  const name = o.name ?? 'kernel.cu';
  if (typeof name !== 'string') throw typeError('options.name', 'a string', name);
  // includes(), not a regex: a regex's second run compiles it to machine code (~60 µs), and the second
  // compile() of a process is the disk hit that bench kernels times.
  if (name.length === 0 || name.includes('\n') || name.includes('"'))
    throw rangeError('options.name', 'a file name without quotes or newlines', name);

  const headers: [string, string][] = [];
  if (o.headers !== undefined) {
    for (const [k, v] of Object.entries(plainObject('options.headers', o.headers))) {
      if (k.length === 0 || /[\n"<>]/.test(k)) throw rangeError('options.headers', 'names usable in #include', k);
      if (typeof v !== 'string') throw typeError(`options.headers['${k}']`, 'a string (the header source)', v);
      headers.push([k, v]);
    }
    headers.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }

  // Absent options cost no allocation or closure: a process's second compile() is the disk hit that
  // bench kernels times, and this code then runs interpreted.
  const includePaths: string[] = [];
  if (o.includePaths !== undefined) {
    stringList('options.includePaths', o.includePaths).forEach((p, i) => {
      const abs = path.resolve(p);
      let isDir: boolean;
      try {
        isDir = fs.statSync(abs).isDirectory();
      } catch {
        isDir = false;
      }
      if (!isDir) throw rangeError(`options.includePaths[${i}]`, 'an existing folder', p);
      includePaths.push(abs);
    });
  }

  const defines: [string, string | null][] = [];
  if (o.defines !== undefined) {
    for (const [k, v] of Object.entries(plainObject('options.defines', o.defines))) {
      if (!IDENT.test(k)) throw rangeError('options.defines', 'macro names that are identifiers', k);
      let text: string | null;
      if (v === null) text = null;
      else if (typeof v === 'boolean') text = v ? '1' : '0';
      else if (typeof v === 'number') {
        if (!Number.isFinite(v)) throw rangeError(`options.defines.${k}`, 'a finite number', v);
        text = String(v);
      } else if (typeof v === 'string') {
        if (/[\r\n]/.test(v)) throw rangeError(`options.defines.${k}`, 'a single line', v);
        text = v;
      } else throw typeError(`options.defines.${k}`, 'a string, number, boolean or null', v);
      defines.push([k, text]);
    }
    defines.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }

  const std = o.std ?? 'c++17';
  if (!(cxxStandards as readonly unknown[]).includes(std))
    throw rangeError('options.std', `one of ${cxxStandards.join(', ')}`, std);

  const flags = o.flags === undefined ? [] : stringList('options.flags', o.flags);
  for (let i = 0; i < flags.length; i++) {
    const f = flags[i];
    if (!f.startsWith('-') || /\s/.test(f))
      throw rangeError(`options.flags[${i}]`, 'one NVRTC option (e.g. -lineinfo)', f);
    for (const [re, why] of RESERVED_FLAGS) if (re.test(f)) throw new RangeError(`options.flags[${i}] (${f}): ${why}`);
  }

  const signatures: Record<string, string> = {};
  const expressions = o.nameExpressions === undefined ? [] : stringList('options.nameExpressions', o.nameExpressions);
  if (o.signatures !== undefined) {
    for (const [k, v] of Object.entries(plainObject('options.signatures', o.signatures))) {
      if (typeof v !== 'string') throw typeError(`options.signatures['${k}']`, 'a parameter list string', v);
      signatures[k] = v;
    }
    // Signatures of C++ names (templates, namespaces) are name expressions too; extern "C" names are not.
    for (const k of Object.keys(signatures)) if (/[<:]/.test(k) && !expressions.includes(k)) expressions.push(k);
  }
  for (let i = 0; i < expressions.length; i++)
    if (expressions[i].trim().length === 0)
      throw rangeError(`options.nameExpressions[${i}]`, 'a C++ name', expressions[i]);

  const device = checkInteger('options.device', o.device ?? 0, 0, 1 << 20);
  const cache = o.cache ?? true;
  if (typeof cache !== 'boolean') throw typeError('options.cache', 'a boolean', cache);

  return {
    name,
    headers,
    includePaths,
    defines,
    std: std as CxxStandard,
    flags,
    nameExpressions: expressions.length < 2 ? expressions : [...new Set(expressions)],
    signatures,
    device,
    cache,
  };
}

/**
 * The NVRTC options of a compilation, the architecture left out (the target adds it): the dialect,
 * the macros, the include paths (the user's, then the toolkit's), then the flags, as given.
 */
export function nvrtcOptions(o: ResolvedOptions, toolkitIncludeDirs: readonly string[]): string[] {
  const out = [`--std=${o.std}`];
  for (const [k, v] of o.defines) out.push(v === null ? `-D${k}=` : `-D${k}=${v}`);
  for (const p of o.includePaths) out.push(`-I${p}`);
  for (const p of toolkitIncludeDirs) out.push(`-I${p}`);
  for (const f of o.flags) out.push(f);
  return out;
}
