// The C++ types a kernel parameter may have, as far as a launch from JavaScript is concerned: scalars
// (how many bytes, and how a JS number or bigint becomes them) and pointers (which DeviceArray dtype
// they take). No binary is loaded here, so the parsing is tested without a GPU.
import type { Dtype } from '../array';

/** How a scalar parameter's bytes are written from a JS value. */
export type ScalarKind =
  | 'bool'
  | 'int8'
  | 'uint8'
  | 'int16'
  | 'uint16'
  | 'int32'
  | 'uint32'
  | 'int64'
  | 'uint64'
  | 'float16'
  | 'bfloat16'
  | 'float32'
  | 'float64';

/** A kernel parameter's type, as a launch sees it. */
export type ParamType =
  | { kind: 'scalar'; scalar: ScalarKind; size: 1 | 2 | 4 | 8; text: string }
  | {
      kind: 'pointer';
      size: 8;
      /** The DeviceArray dtype it must be; null for pointees whose bytes the kernel reinterprets (any array). */
      dtype: Dtype | null;
      /** `const T*`: the kernel only reads through it. */
      readOnly: boolean;
      text: string;
    };

const SCALAR_SIZES: Record<ScalarKind, 1 | 2 | 4 | 8> = {
  bool: 1,
  int8: 1,
  uint8: 1,
  int16: 2,
  uint16: 2,
  int32: 4,
  uint32: 4,
  int64: 8,
  uint64: 8,
  float16: 2,
  bfloat16: 2,
  float32: 4,
  float64: 8,
};

/**
 * @internal Whether `t` is a ParamType as this module makes them (for parameter lists read back from
 * the kernel cache, see lib/kernels/module.ts).
 */
export function isParamType(t: unknown): t is ParamType {
  if (typeof t !== 'object' || t === null) return false;
  const p = t as Record<string, unknown>;
  if (typeof p.text !== 'string') return false;
  if (p.kind === 'scalar')
    return (
      typeof p.scalar === 'string' &&
      Object.hasOwn(SCALAR_SIZES, p.scalar) &&
      p.size === SCALAR_SIZES[p.scalar as ScalarKind]
    );
  return (
    p.kind === 'pointer' &&
    p.size === 8 &&
    (p.dtype === null || typeof p.dtype === 'string') &&
    typeof p.readOnly === 'boolean'
  );
}

/** Names a type can go by (after qualifiers are dropped and spelling is normalised) → its scalar kind. */
const SCALARS: Record<string, ScalarKind> = {
  bool: 'bool',
  char: 'int8', // signed on every platform CUDA supports
  'signed char': 'int8',
  'unsigned char': 'uint8',
  short: 'int16',
  'unsigned short': 'uint16',
  int: 'int32',
  'unsigned int': 'uint32',
  long: 'int64', // LP64: Linux is the only platform the package builds for
  'unsigned long': 'uint64',
  'long long': 'int64',
  'unsigned long long': 'uint64',
  float: 'float32',
  double: 'float64',
  int8_t: 'int8',
  uint8_t: 'uint8',
  int16_t: 'int16',
  uint16_t: 'uint16',
  int32_t: 'int32',
  uint32_t: 'uint32',
  int64_t: 'int64',
  uint64_t: 'uint64',
  size_t: 'uint64',
  ptrdiff_t: 'int64',
  ssize_t: 'int64',
  intptr_t: 'int64',
  uintptr_t: 'uint64',
  __half: 'float16',
  half: 'float16',
  __nv_bfloat16: 'bfloat16',
  nv_bfloat16: 'bfloat16',
};

/** Pointees whose arrays have a dtype here: the pointer takes only arrays of it. */
const POINTEE_DTYPES: Record<string, Dtype> = {
  float: 'float32',
  double: 'float64',
  int: 'int32',
  int32_t: 'int32',
  'unsigned int': 'uint32',
  uint32_t: 'uint32',
};
// CUDA's vector types of those (float1 … float4, double1 … double4 and CUDA 13's aligned double4_16a
// and double4_32a, int1 … int4, uint1 … uint4) take the arrays of their element's dtype.
for (const [prefix, dtype] of [
  ['float', 'float32'],
  ['double', 'float64'],
  ['int', 'int32'],
  ['uint', 'uint32'],
] as const) {
  for (const w of [1, 2, 3, 4]) POINTEE_DTYPES[`${prefix}${w}`] = dtype;
}
POINTEE_DTYPES.double4_16a = POINTEE_DTYPES.double4_32a = 'float64';

/**
 * What the compile options tell about type names, for the parameters of a source's kernels: the
 * `options.defines` the source does not redefine (see signature.ts typeContext), each to the text it
 * stands for.
 */
export interface TypeContext {
  aliases: ReadonlyMap<string, string>;
}

export const NO_TYPE_CONTEXT: TypeContext = { aliases: new Map() };

/** The C++ spelling of each dtype (used by the generated kernels). */
export const C_TYPE_OF: Record<Dtype, string> = {
  float32: 'float',
  float64: 'double',
  int32: 'int',
  uint32: 'unsigned int',
};

/** Words that qualify a declaration without changing what a launch passes. */
const QUALIFIERS = new Set([
  'const',
  'volatile',
  '__restrict__',
  '__restrict',
  'restrict',
  'register',
  '__grid_constant__',
  'struct',
  'class',
  'typename',
]);

/** Namespaces the fixed-width names may be spelled with. */
const NAMESPACE_PREFIX = /^(?:::)?(?:cuda::)?(?:std::)?/;

/**
 * The canonical spelling of a base type: `unsigned` → `unsigned int`, `long int unsigned` →
 * `unsigned long`, `std::int32_t` → `int32_t`; other names unchanged.
 */
export function canonicalType(words: readonly string[]): string {
  const ws = words.filter((w) => !QUALIFIERS.has(w));
  if (ws.length === 1 && !['unsigned', 'signed', 'long', 'short', 'int', 'char'].includes(ws[0]))
    return ws[0].replace(NAMESPACE_PREFIX, '');
  const longs = ws.filter((w) => w === 'long').length;
  const unsigned = ws.includes('unsigned');
  const signed = ws.includes('signed');
  const rest = ws.filter((w) => !['long', 'unsigned', 'signed', 'int'].includes(w));
  if (rest.length > 1 || longs > 2) return ws.join(' ');
  const base = rest[0];
  if (base === 'char') return unsigned ? 'unsigned char' : signed ? 'signed char' : 'char';
  if (base === 'short') return unsigned ? 'unsigned short' : 'short';
  if (base === 'double' && longs === 1) return 'long double';
  if (base !== undefined) return ws.join(' ');
  const core = longs === 2 ? 'long long' : longs === 1 ? 'long' : 'int';
  return unsigned ? `unsigned ${core}` : core;
}

/** A parameter declaration split into its name and type. */
export interface ParsedParam {
  name: string;
  type: ParamType;
}

/** Why a parameter's type cannot be passed from JavaScript, for the TypeError of `kernel()`. */
export class UnsupportedParam extends Error {}

const TOKEN = /\s*(::|[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*|\d+|\[\[|\]\]|[*&[\](),<>=]|\S)/y;

function tokenize(text: string): string[] {
  const out: string[] = [];
  TOKEN.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = TOKEN.exec(text)) !== null) {
    out.push(m[1]);
    if (TOKEN.lastIndex >= text.length) break;
  }
  return out;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*$/;

/**
 * Parses one parameter declaration (`const float* __restrict__ x`, `unsigned n`, `double v[]`,
 * `float2 *p`) into its name and {@link ParamType}. `fallbackName` names an unnamed parameter.
 *
 * @throws UnsupportedParam for what a launch cannot pass: references, structs and classes by value,
 *   unknown scalar types, function pointers.
 */
export function parseParam(
  declaration: string,
  fallbackName: string,
  context: TypeContext = NO_TYPE_CONTEXT,
): ParsedParam {
  let text = declaration.trim();
  // A default argument does not change the parameter.
  const eq = topLevelIndex(text, '=');
  if (eq >= 0) text = text.slice(0, eq).trim();
  // Attributes: [[…]] and __attribute__((…)).
  text = text.replace(/\[\[[^\]]*\]\]/g, ' ').replace(/__attribute__\s*\(\(.*?\)\)/g, ' ');
  const written = tokenize(text);
  if (written.includes('(')) throw new UnsupportedParam('function pointers cannot be passed from JavaScript');
  if (written.includes('&')) throw new UnsupportedParam('a reference cannot be passed to a kernel; pass a pointer');
  if (written.includes('<'))
    throw new UnsupportedParam('template types cannot be passed from JavaScript (give a plain scalar or pointer)');
  // Array brackets after the name (`float x[]`, `float x[4]`) make a pointer, as in any C parameter.
  const open = written.indexOf('[');
  const core = open >= 0 ? written.slice(0, open) : written;
  if (core.some((w) => w !== '*' && !IDENT.test(w)))
    throw new UnsupportedParam(`cannot read the declaration "${declaration}"`);
  // The name is found on the declaration as written: an alias never renames a parameter.
  const named = lastWordIsName(core);
  const name = named ? core[core.length - 1] : fallbackName;
  const writtenType = named ? core.slice(0, -1) : core;
  // Then only the type's words go through the aliases of options.defines (`real* x` with
  // `defines: { real: 'double' }`); one that leaves no type word (a define to nothing) tells nothing.
  let typeTokens = expandAliases(writtenType, context);
  if (typeTokens.every((t) => t === '*' || QUALIFIERS.has(t))) typeTokens = writtenType;
  const stars = typeTokens.filter((t) => t === '*').length + (open >= 0 ? 1 : 0);
  const typeWords = typeTokens.filter((t) => t !== '*');
  // Qualifiers before the first `*` qualify the pointee: `const float* p` only reads.
  const firstStar = typeTokens.indexOf('*');
  const pointeeWords = firstStar >= 0 ? typeTokens.slice(0, firstStar) : typeWords;
  const base = canonicalType(typeWords);
  const typeText = typeWords.join(' ') + (stars > 0 ? ' ' + '*'.repeat(stars) : '');
  if (stars > 0) {
    // A pointee of no dtype here (void, char, a struct, a name the scan does not resolve) takes any
    // array, whose bytes the kernel reinterprets.
    const dtype = stars === 1 && Object.hasOwn(POINTEE_DTYPES, base) ? POINTEE_DTYPES[base] : null;
    return {
      name,
      type: {
        kind: 'pointer',
        size: 8,
        dtype,
        readOnly: stars === 1 && pointeeWords.includes('const'),
        text: typeText,
      },
    };
  }
  const scalar = Object.hasOwn(SCALARS, base) ? SCALARS[base] : undefined;
  if (scalar === undefined) {
    throw new UnsupportedParam(
      `type ${base} cannot be passed from JavaScript: a parameter is a pointer or one of ` +
        'bool, (unsigned) char/short/int/long/long long, the <cstdint> types, size_t, float, double, __half or __nv_bfloat16',
    );
  }
  return { name, type: { kind: 'scalar', scalar, size: SCALAR_SIZES[scalar], text: typeText } };
}

/** Tokens an expansion may grow to: beyond, the type is read as written. */
const MAX_EXPANDED_TOKENS = 64;

/**
 * A type's tokens with each alias of `context` replaced by what it stands for, recursively, except
 * inside its own expansion (as the preprocessor does). An expansion that is not a plain type (a
 * template, a function type) or grows past MAX_EXPANDED_TOKENS leaves the tokens as written.
 */
function expandAliases(tokens: readonly string[], context: TypeContext): readonly string[] {
  if (context.aliases.size === 0) return tokens;
  const out: string[] = [];
  const walk = (ts: readonly string[], active: ReadonlySet<string>): boolean => {
    for (const t of ts) {
      const key = t.includes('::') ? t.slice(t.lastIndexOf('::') + 2) : t;
      const value = active.has(key) ? undefined : context.aliases.get(key);
      if (value === undefined) out.push(t);
      else if (!walk(tokenize(value), new Set([...active, key]))) return false;
      if (out.length > MAX_EXPANDED_TOKENS) return false;
    }
    return true;
  };
  return walk(tokens, new Set()) && out.every((t) => t === '*' || IDENT.test(t)) ? out : tokens;
}

/**
 * Whether the last word of a declaration's words (up to any `[`) is its name: when more than the type
 * is left (`float x`, `float* x`), not for a type alone (`float`, `unsigned int`). Also the rule by
 * which signature.ts matches a declaration to its definition.
 */
export function lastWordIsName(core: readonly string[]): boolean {
  const last = core.length > 0 ? core[core.length - 1] : undefined;
  const significant = core.filter((w) => w !== '*' && !QUALIFIERS.has(w));
  return (
    last !== undefined &&
    last !== '*' &&
    !QUALIFIERS.has(last) &&
    significant.length >= 2 &&
    !isTypeWordPair(significant)
  );
}

/** `unsigned int`, `long long`: two words that are both part of a type, not a type and a name. */
function isTypeWordPair(words: readonly string[]): boolean {
  const builtin = new Set(['unsigned', 'signed', 'long', 'short', 'int', 'char', 'double', 'float', 'bool']);
  return words.every((w) => builtin.has(w));
}

/** The index of `ch` outside any (), <>, [] or {} in `text`, or −1. */
export function topLevelIndex(text: string, ch: string): number {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(' || c === '<' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === '>' || c === ']' || c === '}') depth--;
    else if (c === ch && depth === 0) return i;
  }
  return -1;
}

/** Splits `text` at its top-level commas (outside (), <>, [] and {}); blank pieces are dropped. */
export function splitTopLevel(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(' || c === '<' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === '>' || c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 0) {
      out.push(text.slice(start, i));
      start = i + 1;
    }
  }
  out.push(text.slice(start));
  return out.map((s) => s.trim()).filter((s) => s.length > 0);
}

/**
 * Parses a parameter list (`int n, float a, const float* x`); `void` or blank is an empty list.
 *
 * @throws UnsupportedParam naming the parameter that cannot be passed.
 */
export function parseParamList(list: string, context: TypeContext = NO_TYPE_CONTEXT): ParsedParam[] {
  const trimmed = list.trim();
  if (trimmed === '' || trimmed === 'void') return [];
  return splitTopLevel(trimmed).map((decl, i) => {
    try {
      return parseParam(decl, `arg${i}`, context);
    } catch (e) {
      if (e instanceof UnsupportedParam) throw new UnsupportedParam(`parameter ${i} (${decl.trim()}): ${e.message}`);
      throw e;
    }
  });
}
