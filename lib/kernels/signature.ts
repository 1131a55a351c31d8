// Finding the kernels of a CUDA C++ source and their parameters, so that a launch can check its
// arguments and pack them before anything reaches the GPU. A light scan, not a C++ parser: it reads
// `__global__` declarations (extern "C" ones, C++ ones and templates), which is all a launch needs;
// `options.signatures` covers what it cannot see (kernels made by macros, for instance).
import {
  canonicalType,
  lastWordIsName,
  NO_TYPE_CONTEXT,
  parseParamList,
  splitTopLevel,
  topLevelIndex,
  type ParsedParam,
  type TypeContext,
  UnsupportedParam,
} from './ctypes';

/** A template parameter of a kernel template. */
export interface TemplateParam {
  /** `typename`/`class` (a type), or a value (`int N`). */
  kind: 'type' | 'value';
  name: string;
  /** The default argument's text, if any. */
  default?: string;
}

/** A `__global__` function found in a source. */
export interface KernelDeclaration {
  name: string;
  /** Declared `extern "C"` (directly or in an `extern "C" { … }` block): launched by its own name. */
  externC: boolean;
  /** The text between the parentheses. */
  paramsText: string;
  /** The template parameters of a kernel template; null for a plain function. */
  template: TemplateParam[] | null;
}

/**
 * The source with comments, string and character literals, preprocessor lines and the groups an
 * `#if 0` (or the `#else` of an `#if 1`) leaves out blanked (each character replaced by a space,
 * newlines kept, so offsets still match), except that the literal of `extern "C"` stays readable.
 * Read as NVRTC reads it: backslash-newline splices (also before CRLF) join lines everywhere, in
 * comments, literals and directives too; a directive's `#` (or `%:`) may follow blanks and block
 * comments, and any code before a block comment that spans lines; a `'` inside a number (`1'024`)
 * is a digit separator. `onDirective` is given the text of every preprocessor line (splices joined,
 * comments as spaces), those of the groups left out too.
 */
export function stripSource(source: string, onDirective?: (text: string) => void): string {
  const out = source.split('');
  const n = source.length;
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  // Past a backslash-newline (or backslash-CR-LF) at j, or −1 where there is none: the compiler
  // removes these splices before it reads anything else.
  const spliceEnd = (j: number) => {
    if (source[j] !== '\\') return -1;
    if (source[j + 1] === '\n') return j + 2;
    return source[j + 1] === '\r' && source[j + 2] === '\n' ? j + 3 : -1;
  };
  // The index of the character after the one at j, past any splices.
  const next = (j: number) => {
    let k = j + 1;
    for (let s = spliceEnd(k); s >= 0; s = spliceEnd(k)) k = s;
    return k;
  };
  // The end of a `//` comment's line (the index of the newline that ends it, or n).
  const lineEnd = (from: number) => {
    let j = from;
    while (j < n && source[j] !== '\n') j = Math.max(spliceEnd(j), j + 1);
    return j;
  };
  // Past the `*/` that closes a block comment whose text starts at `from` (or n).
  const commentEnd = (from: number) => {
    for (let j = from; j < n; j++) if (source[j] === '*' && source[next(j)] === '/') return next(j) + 1;
    return n;
  };
  // The end of a quoted literal starting at `from` (past its closing quote, or at the line's end).
  const literalEnd = (from: number) => {
    const q = source[from];
    let j = from + 1;
    while (j < n && source[j] !== q && source[j] !== '\n') {
      if (source[j] !== '\\') j++;
      else if (spliceEnd(j) >= 0) j = spliceEnd(j);
      else j = next(j) + 1; // an escape: the character it escapes may come after splices
    }
    return j < n && source[j] === q ? j + 1 : Math.min(j, n); // an unclosed one keeps its newline
  };
  // Conditional groups: `skip` > 0 while inside a group left out (its #if nesting depth there);
  // `untilEndif`: the group is an `#if 1`'s #else, which #elif does not end. `live` holds, for each
  // #if read outside a skipped group, whether its #else is left out (an `#if 1`).
  let skip = 0;
  let untilEndif = false;
  const live: boolean[] = [];
  const conditional = (text: string) => {
    onDirective?.(text);
    const m = /^\s*#\s*([A-Za-z_]\w*)/.exec(text);
    if (m === null) return;
    const word = m[1];
    const rest = text.slice(m[0].length).trim();
    const opens = word === 'if' || word === 'ifdef' || word === 'ifndef';
    const otherwise = word === 'else' || word === 'elif' || word === 'elifdef' || word === 'elifndef';
    if (skip > 0) {
      if (opens) skip++;
      else if (word === 'endif') skip--;
      else if (otherwise && skip === 1 && !untilEndif) {
        skip = 0;
        live.push(false);
      }
      return;
    }
    if (opens) {
      const constant = word === 'if' && /^(?:0|1|false|true)$/.test(rest) ? rest === '1' || rest === 'true' : null;
      if (constant === false) {
        skip = 1;
        untilEndif = false;
      } else live.push(constant === true);
    } else if (otherwise && live.length > 0 && live[live.length - 1]) {
      live.pop();
      skip = 1;
      untilEndif = true;
    } else if (word === 'endif') live.pop();
  };
  let directive: string[] | null = null; // the text of the preprocessor line being read
  let i = 0;
  let lineStart = true;
  let inNumber = false;
  let last = ''; // the code character before this one, past splices ('' after a newline, literal or comment)
  let word = ''; // the name or number characters just before this one, past splices (3 at most: enough for u8)
  while (i < n) {
    const c = source[i];
    const splice = spliceEnd(i);
    if (splice >= 0) {
      // A line spliced to the next: still one line (a directive may start only at its start).
      if (skip > 0 || directive) blank(i, splice);
      i = splice;
      continue;
    }
    if (c === '\n') {
      if (directive) conditional(directive.join(''));
      directive = null;
      lineStart = true;
      inNumber = false;
      last = word = '';
      i++;
      continue;
    }
    if (lineStart && (c === '#' || (c === '%' && source[next(i)] === ':'))) {
      directive = ['#'];
      lineStart = false;
      const j = c === '#' ? i + 1 : next(i) + 1;
      blank(i, j);
      i = j;
      continue;
    }
    const hide = skip > 0 || directive !== null;
    let j: number;
    let text = ' '; // what a directive's text keeps of [i, j)
    if (c === '/' && source[next(i)] === '/') {
      j = lineEnd(i);
      blank(i, j);
      lineStart = false;
    } else if (c === '/' && source[next(i)] === '*') {
      j = commentEnd(next(i) + 1);
      blank(i, j);
      // After a comment that spans lines, NVRTC takes a # as a directive's, whatever came before it.
      if (source.slice(i, j).includes('\n')) lineStart = true;
    } else if (c === "'" && inNumber && isWordChar(source.charCodeAt(next(i)))) {
      // A digit separator: the number goes on.
      if (hide) out[i] = ' ';
      directive?.push(c);
      last = c;
      word = '';
      i++;
      continue;
    } else if (c === '"' || c === "'") {
      j = literalEnd(i);
      text = source.slice(i, j);
      if (hide || text !== '"C"') blank(i, j);
      lineStart = false;
    } else if (c === 'R' && source[i + 1] === '"' && !inNumber && RAW_PREFIXES.has(word)) {
      // A raw string literal R"delim( … )delim", alone or after u8, u, U or L (not `NAMER"…"`).
      const open = source.indexOf('(', i + 2);
      const delim = open < 0 ? '' : source.slice(i + 2, open);
      const end = open < 0 ? -1 : source.indexOf(`)${delim}"`, open + 1);
      j = end < 0 ? n : end + delim.length + 2;
      text = '""';
      blank(i, j);
      lineStart = false;
    } else {
      // A number starts with a digit that does not go on a word, and goes on through word characters and dots.
      const code = source.charCodeAt(i);
      // (A sign goes on one after an exponent's e, E, p or P: 1e+5.)
      inNumber = inNumber
        ? isWordChar(code) || code === 46 || ((code === 43 || code === 45) && /[eEpP]/.test(last))
        : code >= 48 && code <= 57 && !isWordChar(last.charCodeAt(0));
      last = c;
      word = !isWordChar(code) ? '' : word.length < 3 ? word + c : word;
      if (!' \t\r\f\v'.includes(c)) lineStart = false;
      directive?.push(c);
      if (hide) out[i] = ' ';
      i++;
      continue;
    }
    directive?.push(text);
    inNumber = false;
    last = word = '';
    i = j;
  }
  if (directive) conditional(directive.join(''));
  return out.join('');
}

/** What may stand before the `R` of a raw string literal. */
const RAW_PREFIXES = new Set(['', 'u8', 'u', 'U', 'L']);

/**
 * Whether a character code is a letter, digit, `_` or `$` (GCC takes `$` in names as an extension); NaN,
 * past either end, is not.
 */
function isWordChar(code: number): boolean {
  return (
    (code >= 48 && code <= 57) ||
    (code >= 65 && code <= 90) ||
    (code >= 97 && code <= 122) ||
    code === 95 ||
    code === 36
  );
}

const TOKEN = /"C"|[A-Za-z_][A-Za-z0-9_]*|::|\[\[|\]\]|\d[\w.]*|\S/g;

interface Token {
  text: string;
  at: number;
}

function tokens(stripped: string): Token[] {
  const out: Token[] = [];
  for (const m of stripped.matchAll(TOKEN)) out.push({ text: m[0], at: m.index ?? 0 });
  return out;
}

/** The index of the token closing the bracket opened at `open` (same kind), or −1. */
function matching(ts: readonly Token[], open: number): number {
  const pairs: Record<string, string> = { '(': ')', '{': '}', '[': ']', '<': '>' };
  const o = ts[open].text;
  const c = pairs[o];
  let depth = 0;
  for (let i = open; i < ts.length; i++) {
    if (ts[i].text === o) depth++;
    else if (ts[i].text === c && --depth === 0) return i;
  }
  return -1;
}

/** Specifiers that may stand between `template <…>`/`extern "C"` and `__global__`. */
const SPECIFIERS = new Set(['static', 'inline', '__inline__', '__forceinline__', '__noinline__', 'extern', '"C"']);
/** Annotations with an argument list that may stand between `__global__` and the kernel's name. */
const ANNOTATIONS = new Set(['__launch_bounds__', '__maxnreg__', '__cluster_dims__', '__attribute__', 'alignas']);

function parseTemplateParams(text: string): TemplateParam[] {
  return splitTopLevel(text).map((p) => {
    const eq = p.indexOf('=');
    const decl = (eq >= 0 ? p.slice(0, eq) : p).trim();
    const def = eq >= 0 ? p.slice(eq + 1).trim() : undefined;
    const words = decl.split(/\s+/);
    const name = words[words.length - 1];
    const kind = words[0] === 'typename' || words[0] === 'class' ? 'type' : 'value';
    return def === undefined ? { kind, name } : { kind, name, default: def };
  });
}

/**
 * Every `__global__` function declared or defined in `source`, in order of appearance (a kernel
 * declared and then defined appears once).
 */
export function findKernels(source: string): KernelDeclaration[] {
  const stripped = stripSource(source);
  const ts = tokens(stripped);
  // The extern "C" blocks: [open brace index, close brace index].
  const blocks: [number, number][] = [];
  for (let i = 0; i + 2 < ts.length; i++) {
    if (ts[i].text === 'extern' && ts[i + 1].text === '"C"' && ts[i + 2].text === '{') {
      blocks.push([i + 2, matching(ts, i + 2)]);
    }
  }
  // Whether token i is inside an extern "C" block: one pass over the blocks' ends.
  const edge = new Int32Array(ts.length + 1);
  for (const [a, b] of blocks) {
    edge[a + 1]++;
    edge[b < 0 ? ts.length : b]--;
  }
  const inside = new Uint8Array(ts.length);
  for (let i = 0, depth = 0; i < ts.length; i++) inside[i] = (depth += edge[i]) > 0 ? 1 : 0;
  const inBlock = (i: number) => inside[i] === 1;
  const found = new Map<string, KernelDeclaration>();
  const order: string[] = [];
  for (let g = 0; g < ts.length; g++) {
    if (ts[g].text !== '__global__') continue;
    // Backwards over specifiers to `extern "C"` and `template <…>`.
    let externC = inBlock(g);
    let b = g - 1;
    while (b >= 0 && SPECIFIERS.has(ts[b].text)) {
      if (ts[b].text === '"C"' && b > 0 && ts[b - 1].text === 'extern') externC = true;
      b--;
    }
    let template: TemplateParam[] | null = null;
    if (b >= 0 && ts[b].text === '>') {
      // Find the `template <` whose `>` this is.
      // Parentheses are skipped: `bool Big = (N > 2)` holds a `>` of its own.
      let depth = 0;
      let parens = 0;
      let k = b;
      for (; k >= 0; k--) {
        const t = ts[k].text;
        if (t === ')') parens++;
        else if (t === '(') parens--;
        else if (parens > 0) continue;
        else if (t === '>') depth++;
        else if (t === '<' && --depth === 0) break;
      }
      if (k > 0 && ts[k - 1].text === 'template') {
        template = parseTemplateParams(stripped.slice(ts[k].at + 1, ts[b].at));
      }
    }
    // Forwards: the return type, annotations with arguments, then `name (`.
    let f = g + 1;
    let name: string | null = null;
    let open = -1;
    while (f < ts.length) {
      const t = ts[f].text;
      if (t === ';' || t === '{' || t === '}') break;
      if (t === '[[') {
        while (f < ts.length && ts[f].text !== ']]') f++;
        f++;
        continue;
      }
      if (ANNOTATIONS.has(t) && ts[f + 1]?.text === '(') {
        f = matching(ts, f + 1) + 1;
        if (f <= 0) break;
        continue;
      }
      if (t === '(' && f > 0 && /^[A-Za-z_]/.test(ts[f - 1].text)) {
        name = ts[f - 1].text;
        open = f;
        break;
      }
      f++;
    }
    if (name === null || open < 0) continue;
    const close = matching(ts, open);
    if (close < 0) continue;
    const decl: KernelDeclaration = {
      name,
      externC,
      paramsText: stripped
        .slice(ts[open].at + 1, ts[close].at)
        .replace(/\s+/g, ' ')
        .trim(),
      template,
    };
    const shape = template ? `t${template.map((p) => (p.kind === 'type' ? 'T' : 'V')).join('')}` : 'f';
    // A declaration and a later definition of the same types are one kernel: the definition's text
    // (with its names) is kept, extern "C" if either says so (C++ keeps the first one's linkage). Two
    // extern "C" kernels of one name and different types stay two (#ifdef branches: which one
    // compiles is the compiler's to say), and kernel() asks for options.signatures rather than guess.
    const key = `${name}/${shape}/${paramTypesKey(decl.paramsText)}`;
    const before = found.get(key);
    if (before === undefined) order.push(key);
    else {
      decl.externC ||= before.externC;
      // A template parameter's default is given once, on the first declaration: the definition keeps it.
      if (decl.template && before.template)
        decl.template = decl.template.map((p, k) =>
          p.default === undefined && before.template![k].default !== undefined
            ? { ...p, default: before.template![k].default }
            : p,
        );
    }
    found.set(key, decl);
    g = close;
  }
  return order.map((k) => found.get(k)!);
}

/**
 * A parameter list as the compiler matches declarations: each parameter's type without its name or
 * default, in canonical words (`unsigned` is `unsigned int`, `float const` is `const float`), `x[]` as
 * `*`, and without the qualifiers of the parameter itself (`int const n` is `int`, `float* const p` is
 * `float*`). `float* x, int n` and `float*, int` give the same key; names go by parseParam's rule.
 */
function paramTypesKey(paramsText: string): string {
  const quals = new Set(['const', 'volatile', '__restrict__', '__restrict', 'restrict', 'struct', 'class', 'typename']);
  const text = paramsText
    .replace(/\[\[[^\]]*\]\]/g, ' ')
    .replace(/__attribute__\s*\(\(.*?\)\)/g, ' ')
    .trim();
  if (text === 'void') return '';
  return splitTopLevel(text)
    .map((decl) => {
      const eq = topLevelIndex(decl, '=');
      const words: string[] = (eq >= 0 ? decl.slice(0, eq) : decl).match(/[A-Za-z_]\w*(?:::\w+)*|\S/g) ?? [];
      const bracket = words.indexOf('[');
      const core = bracket >= 0 ? words.slice(0, bracket) : words;
      const type = [...(lastWordIsName(core) ? core.slice(0, -1) : core), ...(bracket >= 0 ? ['*'] : [])];
      // Segments between the stars: each canonical, its qualifiers sorted; the last one's are the parameter's own.
      const segments: string[][] = [[]];
      for (const w of type) {
        if (w === '*') segments.push([]);
        else segments[segments.length - 1].push(w);
      }
      return segments
        .map((seg, k) => {
          const q = k === segments.length - 1 ? [] : seg.filter((w) => quals.has(w) && w !== 'struct' && w !== 'class');
          const rest = seg.filter((w) => !quals.has(w));
          return [...new Set(q)]
            .sort()
            .concat(rest.length ? [canonicalType(rest)] : [])
            .join(' ');
        })
        .join('*');
    })
    .join(',');
}

/**
 * What the compile options tell about type names (see {@link TypeContext}): each of `defines` (the
 * -D macros) that neither `source` nor its string headers give a meaning of their own. A name that a
 * preprocessor line mentions (a `#define`, `#undef`, `#ifdef` of it; the lines as stripSource finds
 * them, after a comment or across a splice too) or that ends a declaration
 * (`typedef … NAME;`, `using NAME = …`) is left out, as is anything the sources define themselves:
 * their `#if` branches and scopes are the compiler's to read, and a light scan that guesses them can
 * hand a launch the wrong dtype (an unresolved pointee takes any array instead). Linear in the text.
 */
export function typeContext(
  source: string,
  headers: readonly (readonly [string, string])[] = [],
  defines: readonly (readonly [string, string | null])[] = [],
): TypeContext {
  const aliases = new Map<string, string>();
  if (defines.length === 0) return { aliases };
  const touched = new Set<string>();
  for (const text of [source, ...headers.map(([, h]) => h)]) {
    const ts = tokens(
      stripSource(text, (directive) => {
        for (const w of directive.match(/[A-Za-z_]\w*/g) ?? []) touched.add(w);
      }),
    );
    // `using NAME = …`, and the last word before `;`, `,` or `[` (a typedef's or a variable's name).
    for (let i = 0; i + 1 < ts.length; i++) {
      const next = ts[i + 1].text;
      if (ts[i].text === 'using') touched.add(next);
      if (next === ';' || next === ',' || next === '[') touched.add(ts[i].text);
    }
  }
  for (const [name, value] of defines) if (!touched.has(name)) aliases.set(name, value ?? '');
  return { aliases };
}

/** Whether `s` is a C identifier (letters, digits, `_`, not starting with a digit), checked without a regex. */
export function isIdentifier(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const letter = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
    if (!letter && (i === 0 || c < 48 || c > 57)) return false;
  }
  return true;
}

/** A name expression without spaces that do not separate words: `scale< float , 4 >` → `scale<float,4>`. */
export function normalizeExpression(expr: string): string {
  // A plain name (the usual extern "C" kernel) is already normal: no regex pass for it.
  if (isIdentifier(expr)) return expr;
  return expr
    .trim()
    .replace(/\s+/g, ' ')
    .replace(/ ?([<>,()*&:[\]]) ?/g, '$1');
}

/** `scale<float, 4>` → { base: 'scale', args: ['float', '4'] }; `ns::k` → { base: 'k', args: null }. */
export function splitExpression(expr: string): { base: string; args: string[] | null } {
  let e = expr.trim();
  if (e.startsWith('&')) e = e.slice(1).trim();
  const lt = e.indexOf('<');
  const head = (lt >= 0 ? e.slice(0, lt) : e).trim();
  const base = head.split('::').pop()!.trim();
  if (lt < 0) return { base, args: null };
  const gt = e.lastIndexOf('>');
  return { base, args: splitTopLevel(e.slice(lt + 1, gt)) };
}

/** `text` with each type parameter of `params` replaced by its value in `values`, in one pass. */
function substitute(text: string, params: readonly TemplateParam[], values: readonly string[]): string {
  const byName = new Map<string, string>();
  params.forEach((p, i) => {
    if (p.kind === 'type') byName.set(p.name, values[i]);
  });
  if (byName.size === 0) return text;
  return text.replace(/(?<![\w:])[A-Za-z_]\w*(?![\w])/g, (w) => byName.get(w) ?? w);
}

/**
 * The parameter list of a template instance: the template's `paramsText` with each type parameter
 * replaced by its argument (defaults fill missing trailing arguments). Null when the arguments do not
 * fit the template.
 */
export function instantiate(decl: KernelDeclaration, args: readonly string[]): string | null {
  if (decl.template === null) return null;
  const params = decl.template;
  if (args.length > params.length) return null;
  // A default may name the parameters before it (`typename U = T`): it is read with theirs put in.
  const full: string[] = [];
  for (let i = 0; i < params.length; i++) {
    const given = i < args.length ? args[i] : params[i].default;
    if (given === undefined) return null;
    full.push(i < args.length ? given : substitute(given, params.slice(0, i), full));
  }
  return substitute(decl.paramsText, params, full);
}

/** What {@link kernelSignature} found for a kernel name. */
export type SignatureLookup =
  | { ok: true; params: ParsedParam[]; source: 'declaration' | 'signatures' }
  /** `unsupported`: a parameter cannot be passed from JavaScript; `unknown`: the parameters cannot be told. */
  | { ok: false; kind: 'unsupported' | 'unknown'; reason: string };

/**
 * The parameters of the kernel `name` (an extern "C" name or a name expression such as
 * `scale<float, 4>` or `ns::k`): from `signatures[name]` when given, else from its declaration in
 * `kernels`, instantiating templates.
 */
export function kernelSignature(
  name: string,
  kernels: readonly KernelDeclaration[],
  signatures: Readonly<Record<string, string>>,
  context: TypeContext = NO_TYPE_CONTEXT,
): SignatureLookup {
  const wanted = normalizeExpression(name);
  const given = Object.keys(signatures).find((k) => normalizeExpression(k) === wanted);
  try {
    if (given !== undefined)
      return { ok: true, params: parseParamList(signatures[given], context), source: 'signatures' };
    const { base, args } = splitExpression(name);
    const candidates = kernels.filter((k) => k.name === base && (args === null) === (k.template === null));
    const lists = new Set<string>();
    for (const k of candidates) {
      const text = args === null ? k.paramsText : instantiate(k, args);
      if (text !== null) lists.add(text);
    }
    if (lists.size === 1) return { ok: true, params: parseParamList([...lists][0], context), source: 'declaration' };
    if (lists.size > 1)
      return {
        ok: false,
        kind: 'unknown',
        reason: `${base} is overloaded: give its parameters in options.signatures['${name}']`,
      };
    const anyNamed = kernels.some((k) => k.name === base);
    return {
      ok: false,
      kind: 'unknown',
      reason: anyNamed
        ? `the declaration of ${base} does not fit ${name}: give its parameters in options.signatures['${name}']`
        : `no __global__ function ${base} was found in the source` +
          (kernels.length ? ` (found: ${[...new Set(kernels.map((k) => k.name))].join(', ')})` : ''),
    };
  } catch (e) {
    if (e instanceof UnsupportedParam) return { ok: false, kind: 'unsupported', reason: e.message };
    throw e;
  }
}
