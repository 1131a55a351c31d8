// What a source includes, for the kernel cache's key: every header reachable through #include lines,
// found the way NVRTC finds it (the headers given as strings, the including file's folder, the include
// paths, the toolkit's folder), each identified by a hash of its contents. Others' caches key on the
// file name only and serve stale code after a header changes; this one cannot.
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

// Blanks (form feeds and vertical tabs too) and one-line /* */ comments: the preprocessor sees a
// comment as a space, so `/* note */ #include <a.h>` includes a.h.
const GAP = String.raw`(?:[ \t\f\v]|/\*[^*\n]*\*+(?:[^*/\n][^*\n]*\*+)*/)*`;
// `#` or its digraph `%:`, then include, then <name>, "name" or a macro.
const DIRECTIVE = String.raw`^${GAP}(?:#|%:)${GAP}include${GAP}(?:([<"])([^>"\r\n]+)[>"]|([A-Za-z_]\w*))`;
const INCLUDE = new RegExp(DIRECTIVE, 'gm');
// The same on one line of text.
const LINE_INCLUDE = new RegExp(DIRECTIVE);

/**
 * The [start, end) of each block comment that spans lines, paired naively (the first `*\/` after each
 * `/*`, strings and `//` comments not skipped): a real one is never missed, since a `/*` paired early
 * ends at the same `*\/`, and a false one can only add a match below. Linear: the next newline is
 * looked up again only once the scan has passed it.
 */
function spanningComments(text: string): [number, number][] {
  const spans: [number, number][] = [];
  let newline = -1;
  for (let p = text.indexOf('/*'); p >= 0;) {
    const e = text.indexOf('*/', p + 2);
    if (e < 0) break;
    if (newline < p) {
      newline = text.indexOf('\n', p);
      if (newline < 0) newline = text.length;
    }
    if (newline < e) spans.push([p, e + 2]);
    p = text.indexOf('/*', e + 2);
  }
  return spans;
}

/**
 * Whether `text` may hold an #include: it names include, or has a line splice that may cut the word
 * (`#inc\<newline>lude`, which the preprocessor joins first).
 */
function mayInclude(text: string): boolean {
  return text.includes('include') || text.includes('\\\n') || text.includes('\\\r');
}

/** One #include of a text: `<name>`, `"name"`, or a macro (a computed include). */
interface Directive {
  quoted: boolean;
  name: string;
  computed: boolean;
}

function directives(text: string): Directive[] {
  const out: Directive[] = [];
  // Most kernels include nothing: no regex pass for them (a disk-cache hit is timed in microseconds).
  if (!mayInclude(text)) return out;
  // Splices joined, and a byte-order mark at the start dropped (the directive after it is at a line's start).
  const unmarked = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const joined = unmarked.includes('\\') ? unmarked.replace(/\\\r?\n/g, '') : unmarked;
  const add = (m: RegExpMatchArray) => {
    if (m[3] !== undefined) out.push({ quoted: false, name: m[3], computed: true });
    else out.push({ quoted: m[1] === '"', name: m[2].trim(), computed: false });
  };
  for (const m of joined.matchAll(INCLUDE)) add(m);
  // A comment that spans lines is one space to the preprocessor: an #include may start before it and
  // go on after it (`# /* … ⏎ … */ include <a.h>`), or start right after it, which NVRTC takes as a
  // directive even with code before the comment. Each line is read at most twice here.
  if (joined.includes('*/')) {
    for (const [s, e] of spanningComments(joined)) {
      const lineStart = joined.lastIndexOf('\n', s) + 1;
      const lineEnd = joined.indexOf('\n', e);
      const after = joined.slice(e, lineEnd < 0 ? joined.length : lineEnd);
      for (const line of [`${joined.slice(lineStart, s)} ${after}`, after]) {
        const m = LINE_INCLUDE.exec(line);
        if (m) add(m);
      }
    }
  }
  return out;
}

// Node ≥ 20.12's one-shot crypto.hash skips the Hash object a createHash chain builds: a disk-cache
// hit hashes four times, each time in code that has run once or twice (interpreted).
const oneShot = (crypto as { hash?: (algorithm: string, data: string | Uint8Array, encoding: 'hex') => string }).hash;

export function sha256(data: string | Uint8Array): string {
  return oneShot ? oneShot('sha256', data, 'hex') : crypto.createHash('sha256').update(data).digest('hex');
}

interface FileEntry {
  size: number;
  mtimeMs: number;
  ino: number;
  hash: string;
  directives: Directive[];
}

/** Files read once per process, re-read when their size, time or inode changes. */
const files = new Map<string, FileEntry>();

function readFile(abs: string): FileEntry | null {
  let st: fs.Stats;
  try {
    st = fs.statSync(abs);
  } catch {
    return null;
  }
  if (!st.isFile()) return null;
  const known = files.get(abs);
  if (known && known.size === st.size && known.mtimeMs === st.mtimeMs && known.ino === st.ino) return known;
  let text: string;
  try {
    text = fs.readFileSync(abs, 'utf8');
  } catch {
    return null;
  }
  const entry = { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, hash: sha256(text), directives: directives(text) };
  files.set(abs, entry);
  return entry;
}

/** Where a compilation's #includes are looked for. */
export interface IncludeContext {
  /** Headers given as strings (options.headers), by name. */
  headers: ReadonlyMap<string, string>;
  /** options.includePaths (absolute), then the toolkit's include folders. */
  searchDirs: readonly string[];
  /**
   * The folder of the source itself, where NVRTC looks for its quoted #includes first (the folder of
   * the program's name, options.name: the working folder for a bare name). Default: the working
   * folder; null: none (NVRTC's --no-source-include).
   */
  sourceDir?: string | null;
}

/** What a source includes, as the cache key sees it. */
export interface IncludeSet {
  /** [what, content hash] for each reachable header, sorted: `header:name` (a string header) or `file:/abs/path`. */
  entries: [string, string][];
  /** #include names that were not found anywhere (NVRTC will fail on them, or has them built in). */
  missing: string[];
  /**
   * Some quoted #include was not found: if NVRTC compiles the source all the same, it found the file
   * where this scan did not look, and the key does not cover its contents (the cache then keeps the
   * code in memory only).
   */
  missingQuoted: boolean;
  /** Some #include names a macro: its target cannot be known, so the compilation is not cached. */
  computed: boolean;
}

/** Stops a pathological include graph from walking the whole disk. */
const MAX_FILES = 5000;

/** Every header `source` reaches through #include, found as NVRTC would find it (see {@link IncludeContext}). */
export function resolveIncludes(source: string, ctx: IncludeContext): IncludeSet {
  // Most kernels include nothing: then nothing is reachable, whatever the headers and folders.
  if (!mayInclude(source)) return { entries: [], missing: [], missingQuoted: false, computed: false };
  const entries = new Map<string, string>();
  const missing = new Set<string>();
  let computed = false;
  let missingQuoted = false;
  const headerDirectives = new Map<string, Directive[]>();
  // (directives of a text, folder of that text when it is a file)
  const queue: [Directive[], string | null][] = [[directives(source), null]];
  while (queue.length > 0 && entries.size < MAX_FILES) {
    const [ds, dir] = queue.shift()!;
    for (const d of ds) {
      if (d.computed) {
        computed = true;
        continue;
      }
      const header = ctx.headers.get(d.name);
      if (header !== undefined) {
        const id = `header:${d.name}`;
        if (entries.has(id)) continue;
        entries.set(id, sha256(header));
        let parsed = headerDirectives.get(d.name);
        if (!parsed) headerDirectives.set(d.name, (parsed = directives(header)));
        queue.push([parsed, null]);
        continue;
      }
      // A quoted name is looked for beside the file that includes it first (for the source itself, the
      // folder of its name, as NVRTC adds it unless told --no-source-include).
      const first = dir ?? (ctx.sourceDir === null ? null : (ctx.sourceDir ?? process.cwd()));
      const dirs = d.quoted && first !== null ? [first, ...ctx.searchDirs] : ctx.searchDirs;
      let found = false;
      for (const base of dirs) {
        const abs = path.resolve(base, d.name);
        const id = `file:${abs}`;
        if (entries.has(id)) {
          found = true;
          break;
        }
        const f = readFile(abs);
        if (f === null) continue;
        entries.set(id, f.hash);
        queue.push([f.directives, path.dirname(abs)]);
        found = true;
        break;
      }
      if (!found) {
        missing.add(d.name);
        missingQuoted ||= d.quoted;
      }
    }
  }
  return {
    entries: [...entries.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)),
    missing: [...missing].sort(),
    missingQuoted,
    computed,
  };
}
