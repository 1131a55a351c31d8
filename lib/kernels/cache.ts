// The kernel cache: compiled code kept in memory for the process and on disk for every process.
//
// - Key: a SHA-256 of everything that changes the binary: the source, the contents of every header it
//   includes (lib/kernels/includes.ts), the options, the device's architecture, the compiler's identity
//   (NVRTC's file: its version) and the package's version.
// - Entries are written to a temporary file and renamed into place, so a reader sees a whole entry or
//   none; each carries its key and a checksum (CRC-64) of itself, and one that fails them (truncated,
//   corrupted, another key's) is removed and compiled again, never loaded. Two processes compiling one
//   key both succeed: the last rename wins, and both entries are good.
// - The folder is bounded in size: after a write, the least recently used entries go first (a hit
//   gives its entry's file the current time, when that is more than a minute old).
//
// The compiler is injected, so all of this is tested without NVRTC (test/kernels-cache.test.ts).
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { typeError } from '../errors';
import { crc64 } from './checksum';
import { type IncludeSet, resolveIncludes, sha256 } from './includes';

/** A compilation, as the caller describes it. */
export interface CompileRequest {
  source: string;
  /** The program's file name. */
  name: string;
  /** NVRTC options, the architecture and the toolkit's include folders left out. */
  options: readonly string[];
  /** The user's include folders (absolute), also given as -I in `options`. */
  includePaths: readonly string[];
  /** Headers given as strings: [name, source], sorted by name. */
  headers: readonly (readonly [string, string])[];
  /** C++ names whose lowered (mangled) names are wanted. */
  nameExpressions: readonly string[];
  /** The device's compute capability as a number: 90 for 9.0. */
  deviceArch: number;
  /**
   * What the caller derives from the source (the kernels it declares), computed on a compile and
   * kept with the entry as {@link CompiledCode.info}, so that a hit in a new process need not derive
   * it again. JSON data; it must depend on nothing outside the key.
   */
  describe?: () => unknown;
}

/** A compilation as the compiler receives it: the request with the toolkit's folders added. */
export interface CompileJob extends CompileRequest {
  /** Where #include looks, in order: the user's folders, then the toolkit's. */
  searchDirs: readonly string[];
}

/** What a compilation produced. */
export interface CompiledCode {
  /** A cubin, or NUL-terminated PTX. */
  code: Uint8Array;
  cubin: boolean;
  /** The architecture compiled for (the device's own, unless `note` says otherwise). */
  arch: number;
  /** name expression → lowered name. */
  lowered: Readonly<Record<string, string>>;
  /** The compiler's log (warnings). */
  log: string;
  /** Why the code is not a cubin for the device's own architecture; empty when it is. */
  note: string;
  /** The request's `describe()` at compile time (undefined without one, or from an older entry). */
  info?: unknown;
}

/** Where the compiler is, as far as the key is concerned. */
export interface CompilerLocation {
  /** What identifies the compiler's build (it changes with its version); null when unknown without loading it. */
  identity: string | null;
  /** The toolkit's include folders (cuda_fp16.h and friends). */
  includeDirs: readonly string[];
}

/** The compiler behind the cache: NVRTC (lib/kernels/nvrtc.ts), or a fake one in the tests. */
export interface Compiler {
  /** Where it is, without loading it when possible. */
  locate(): CompilerLocation;
  /** Loads it; throws a CompileError saying what to install when it cannot be loaded. */
  load(): CompilerLocation & { identity: string };
  /** Compiles; throws a CompileError on failure. */
  compile(job: CompileJob): CompiledCode;
  /** The same off the JS thread. */
  compileAsync(job: CompileJob): Promise<CompiledCode>;
}

/** Where a compilation came from: the memory of this process, the disk cache, or the compiler. */
export type CacheSource = 'memory' | 'disk' | 'compiled';

/** What the cache did so far in this process. */
export interface KernelCacheStats {
  memoryHits: number;
  diskHits: number;
  compiles: number;
  /** Entries that failed their checksum or did not parse: removed and compiled again. */
  corrupt: number;
  /** Entries that could not be written (a read-only or full disk): the code was still returned. */
  writeFailures: number;
  /** Entries removed to keep the folder under its bound. */
  evicted: number;
}

/** Where the disk cache is and what it holds (see {@link kernelCacheInfo}). */
export interface KernelCacheInfo {
  dir: string;
  entries: number;
  bytes: number;
  maxBytes: number;
  stats: KernelCacheStats;
}

/** The compiler's options for `request`: the request's, then the toolkit's include folders. */
function jobOptions(request: CompileRequest, loc: CompilerLocation): readonly string[] {
  return loc.includeDirs.length === 0 ? request.options : [...request.options, ...loc.includeDirs.map((d) => `-I${d}`)];
}

/** Where #include looks for `request`: the user's folders, then the toolkit's. */
function searchDirs(request: CompileRequest, loc: CompilerLocation): readonly string[] {
  return loc.includeDirs.length === 0 ? request.includePaths : [...request.includePaths, ...loc.includeDirs];
}

/** What a compilation passes to the compiler (on a miss; a hit needs only the key). */
function jobOf(request: CompileRequest, loc: CompilerLocation): CompileJob {
  return { ...request, options: jobOptions(request, loc), searchDirs: searchDirs(request, loc) };
}

const NO_HEADERS: ReadonlyMap<string, string> = new Map();

/** Bumped when the entry format or the key's material changes, so old entries are never read. */
const FORMAT = 2;
// The layout, which native/nvrtc/entry.h checks too: magic, the metadata's and the code's lengths, flags
// (bit 0: a cubin), the architecture, the key (64 hex digits), the metadata (JSON), the code, CRC-64.
const MAGIC = Buffer.from('CKKERNL2', 'latin1');
const KEY_AT = 24;
const HEAD = KEY_AT + 64;
const SUM = 8;
const SUFFIX = '.ckbin';
/** Temporary files older than this are left over from a process that died mid-write. */
const STALE_TMP_MS = 3600_000;
/** A hit refreshes the entry's time (for the size bound's order) when it is older than this. */
const TOUCH_AFTER_MS = 60_000;
/**
 * The folder is scanned for the size bound (a readdir and a stat per entry) on a process's first
 * write, then only when its own writes since may have passed the bound or after this many writes
 * (other processes write too): a scan of 50 000 entries takes about 0.4 s.
 */
const RESCAN_AFTER_WRITES = 64;

/** An entry file of the folder, for the size bound. */
interface CacheFile {
  file: string;
  bytes: number;
  mtimeMs: number;
}

/** The folder of the disk cache: CUDA_KERNELS_CACHE_DIR, else $XDG_CACHE_HOME or ~/.cache, then cuda-kernels/kernels. */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CUDA_KERNELS_CACHE_DIR) return path.resolve(env.CUDA_KERNELS_CACHE_DIR);
  const base = env.XDG_CACHE_HOME ? env.XDG_CACHE_HOME : path.join(os.homedir(), '.cache');
  return path.join(path.resolve(base), 'cuda-kernels', 'kernels');
}

/** The disk cache's bound in bytes: CUDA_KERNELS_CACHE_MAX_BYTES, else 512 MiB. */
export function defaultCacheMaxBytes(env: NodeJS.ProcessEnv = process.env): number {
  const v = env.CUDA_KERNELS_CACHE_MAX_BYTES;
  const n = v === undefined || v === '' ? NaN : Number(v);
  return Number.isFinite(n) && n >= 0 ? n : 512 * 1024 * 1024;
}

/** Serialises an entry for `key` (a SHA-256 in hex): the header, metadata (JSON), code, then a CRC-64 of all of it. */
export function encodeEntry(key: string, c: CompiledCode): Buffer {
  if (!/^[0-9a-f]{64}$/.test(key)) throw new RangeError(`an entry's key must be 64 hex digits, got ${key}`);
  const meta = Buffer.from(
    JSON.stringify({ lowered: c.lowered, log: c.log, note: c.note, info: c.info ?? null }),
    'utf8',
  );
  const head = Buffer.alloc(HEAD);
  MAGIC.copy(head, 0);
  head.writeUInt32LE(meta.length, 8);
  head.writeUInt32LE(c.code.length, 12);
  head.writeUInt32LE(c.cubin ? 1 : 0, 16);
  head.writeUInt32LE(c.arch, 20);
  head.write(key, KEY_AT, 'latin1');
  const body = Buffer.concat([head, meta, c.code]);
  return Buffer.concat([body, crc64(body)]);
}

/**
 * An entry's parts, once its magic, lengths, key and checksum have passed: the code, the metadata (JSON
 * text), whether the code is a cubin, and the architecture it was compiled for. The addon's reader
 * (kernelsReadEntry, native/nvrtc/entry.cc) returns them as they are; {@link entryParts} takes them
 * out of an entry's bytes in JavaScript.
 */
export type EntryParts = readonly [code: Uint8Array, meta: string, cubin: boolean, arch: number];

/** The parts of the entry for `key` in `data`, or null when it is not one (wrong magic, length, key or checksum). */
export function entryParts(data: Uint8Array, key: string): EntryParts | null {
  const n = data.byteLength;
  if (n < HEAD + SUM) return null;
  const buf = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, n);
  const metaLength = buf.readUInt32LE(8);
  const codeLength = buf.readUInt32LE(12);
  if (HEAD + metaLength + codeLength + SUM !== n) return null;
  for (let i = 0; i < MAGIC.length; i++) if (buf[i] !== MAGIC[i]) return null;
  if (buf.toString('latin1', KEY_AT, HEAD) !== key) return null;
  if (!crc64(buf.subarray(0, n - SUM)).equals(buf.subarray(n - SUM))) return null;
  return [
    // A view, not a copy: the entry's buffer is read for this entry alone and kept only through it.
    new Uint8Array(buf.buffer, buf.byteOffset + HEAD + metaLength, codeLength),
    buf.toString('utf8', HEAD, HEAD + metaLength),
    (buf.readUInt32LE(16) & 1) === 1,
    buf.readUInt32LE(20),
  ];
}

/** The compiled code of an entry's parts, or null when its metadata is not what {@link encodeEntry} writes. */
export function decodeParts(parts: EntryParts): CompiledCode | null {
  let meta: Record<string, unknown>;
  try {
    meta = JSON.parse(parts[1]) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (
    typeof meta !== 'object' ||
    meta === null ||
    typeof meta.log !== 'string' ||
    typeof meta.note !== 'string' ||
    typeof meta.lowered !== 'object' ||
    meta.lowered === null
  )
    return null;
  const c: CompiledCode = {
    code: parts[0],
    cubin: parts[2],
    arch: parts[3],
    lowered: meta.lowered as Record<string, string>,
    log: meta.log,
    note: meta.note,
  };
  if (meta.info !== null && meta.info !== undefined) c.info = meta.info;
  return c;
}

/** The entry for `key` in `data` (every check made here, in JavaScript), or null when it is not one. */
export function decodeEntry(data: Uint8Array, key: string): CompiledCode | null {
  const parts = entryParts(data, key);
  return parts === null ? null : decodeParts(parts);
}

/** Options of a {@link KernelCache}. */
export interface KernelCacheOptions {
  compiler: Compiler;
  /** The disk cache's folder (created on the first write). */
  dir: string;
  /** The folder's bound in bytes; 0 keeps nothing on disk after a write. */
  maxBytes: number;
  /** Part of every key: a new version of the package never reads an older one's entries. */
  packageVersion: string;
  /**
   * Reads and checks an entry in one call, and gives the file the current time when it was last
   * modified more than `touchAfterMs` ago (best effort: the size bound evicts the least recently used
   * entries first): its parts when the file is a whole, undamaged entry for `key` (as entryParts
   * checks it: magic, lengths, key, checksum), false when the file is there but is not one, null when
   * it cannot be read. The package passes its native reader (kernelsReadEntry), which a disk hit's time
   * budget favours (lib/kernels/module.ts). Default: fs.readFileSync, fs.utimesSync and entryParts.
   */
  readEntry?: EntryReader;
}

/** A reader of entries (KernelCacheOptions.readEntry). */
export type EntryReader = (file: string, key: string, touchAfterMs: number) => EntryParts | false | null;

/**
 * The default reader (KernelCacheOptions.readEntry): fs.readFileSync, entryParts's checks, then the
 * touch. Null when the file cannot be read, false when it is not a whole entry for `key`.
 */
function readEntrySync(file: string, key: string, touchAfterMs: number): EntryParts | false | null {
  let data: Buffer;
  try {
    data = fs.readFileSync(file);
  } catch {
    return null;
  }
  const parts = entryParts(data, key);
  if (parts === null) return false;
  // After the check, as kernelsReadEntry does: a damaged entry is not made to look used. Best effort: a
  // read-only folder, or the entry removed meanwhile, only changes the size bound's eviction order.
  try {
    if (Date.now() - fs.statSync(file).mtimeMs > touchAfterMs) {
      const now = new Date();
      fs.utimesSync(file, now, now);
    }
  } catch {
    // As above.
  }
  return parts;
}

/** How one lookup should behave. */
export interface LookupOptions {
  /** Use the disk cache (default true); the in-process memo is always used. */
  disk?: boolean;
}

/** Compiled code by key: memory, then disk, then the compiler. */
export class KernelCache {
  readonly dir: string;
  readonly maxBytes: number;
  readonly stats: KernelCacheStats = {
    memoryHits: 0,
    diskHits: 0,
    compiles: 0,
    corrupt: 0,
    writeFailures: 0,
    evicted: 0,
  };
  readonly #compiler: Compiler;
  readonly #version: string;
  readonly #readEntry: EntryReader;
  readonly #memo = new Map<string, CompiledCode>();
  readonly #pending = new Map<string, Promise<CompiledCode>>();
  /**
   * When this process last hit each entry (file → ms): the size bound's order for an entry whose file
   * time was left alone (touched less than TOUCH_AFTER_MS ago) or is still being refreshed (getAsync).
   */
  readonly #touched = new Map<string, number>();
  /**
   * What path.join(dir, name) puts before a plain file name, so an entry's path is a concatenation
   * (path.join on every hit showed in profiles) and still the path #entries, clear and write use.
   */
  readonly #prefix: string;
  /** The entries' bytes at the last scan plus this process's writes since; null before the first scan. */
  #knownBytes: number | null = null;
  #writesSinceScan = 0;
  /** This process's writes to the folder, in all: a scan counts those made while it ran. */
  #written = { bytes: 0, count: 0 };
  /** The scan getAsync started (off the JS thread), while it runs. */
  #scanning: Promise<void> | null = null;

  constructor(options: KernelCacheOptions) {
    this.#compiler = options.compiler;
    this.dir = options.dir;
    // Not path.join(dir, path.sep): for '' that is '/', and for '.' './' where path.join('.', name) is name.
    this.#prefix = path.join(options.dir, '_').slice(0, -1);
    this.maxBytes = options.maxBytes;
    this.#version = options.packageVersion;
    this.#readEntry = options.readEntry ?? readEntrySync;
  }

  /** The compiler's location; its identity is made known by loading it when looking was not enough. */
  #location(): CompilerLocation & { identity: string } {
    const loc = this.#compiler.locate();
    return loc.identity === null ? this.#compiler.load() : (loc as CompilerLocation & { identity: string });
  }

  /**
   * The key of `request` under `loc`, or null when it is not cacheable (an #include through a macro,
   * whose target cannot be known).
   */
  keyOf(request: CompileRequest, loc: CompilerLocation & { identity: string }): string | null {
    return this.#keyOf(request, loc).key;
  }

  /** The key, and whether the disk may keep its entry (not when a quoted #include was not found). */
  #keyOf(request: CompileRequest, loc: CompilerLocation & { identity: string }): { key: string | null; disk: boolean } {
    const includes: IncludeSet = resolveIncludes(request.source, {
      headers: request.headers.length === 0 ? NO_HEADERS : new Map(request.headers),
      searchDirs: searchDirs(request, loc),
      sourceDir: request.options.some((o) => o === '--no-source-include' || o === '-no-source-include')
        ? null
        : path.dirname(path.resolve(request.name)),
    });
    if (includes.computed) return { key: null, disk: false };
    const material = JSON.stringify([
      FORMAT,
      this.#version,
      loc.identity,
      request.deviceArch,
      request.name,
      jobOptions(request, loc),
      request.nameExpressions,
      request.headers.map(([n, s]) => [n, sha256(s)]),
      includes.entries,
      includes.missing,
      sha256(request.source),
    ]);
    return { key: sha256(material), disk: !includes.missingQuoted };
  }

  /** The path of an entry (path.join(dir, key + '.ckbin'); keys are hex digests). */
  entryPath(key: string): string {
    return this.#prefix + key + SUFFIX;
  }

  /**
   * The compiled code for `request`: from the memo, else the disk, else the compiler (whose result is
   * then stored in both). Throws CompileError (compiler missing, source that does not compile).
   */
  get(
    request: CompileRequest,
    options: LookupOptions = {},
  ): { code: CompiledCode; from: CacheSource; key: string | null } {
    let loc = this.#location();
    let { key, disk } = this.#keyOf(request, loc);
    disk &&= options.disk ?? true;
    const found = key === null ? null : this.#lookup(key, disk);
    if (found) return { code: found.code, from: found.from, key };
    // A miss: the compiler is needed now. If loading it reveals another build than the one located,
    // the key changes with it (and may hit).
    const loaded = this.#compiler.load();
    if (loaded.identity !== loc.identity) {
      loc = loaded;
      ({ key, disk } = this.#keyOf(request, loc));
      disk &&= options.disk ?? true;
      const again = key === null ? null : this.#lookup(key, disk);
      if (again) return { code: again.code, from: again.from, key };
    }
    this.stats.compiles++;
    const code = this.#compiler.compile(jobOf(request, loc));
    if (request.describe) code.info = request.describe();
    if (key !== null) this.#store(key, code, disk, 'sync');
    return { code, from: 'compiled', key };
  }

  /** {@link KernelCache.get} with the disk reads and the compilation off the JS thread. */
  async getAsync(
    request: CompileRequest,
    options: LookupOptions = {},
  ): Promise<{ code: CompiledCode; from: CacheSource; key: string | null }> {
    let loc = this.#location();
    let { key, disk } = this.#keyOf(request, loc);
    disk &&= options.disk ?? true;
    const lookup = async (k: string | null) => {
      if (k === null) return null;
      const memo = this.#memo.get(k);
      if (memo) {
        this.stats.memoryHits++;
        return { code: memo, from: 'memory' as const };
      }
      const pending = this.#pending.get(k);
      if (pending) return { code: await pending, from: 'memory' as const };
      if (!disk) return null;
      const code = await this.#readAsync(k);
      return code ? { code, from: 'disk' as const } : null;
    };
    const found = await lookup(key);
    if (found) return { ...found, key };
    const loaded = this.#compiler.load();
    if (loaded.identity !== loc.identity) {
      loc = loaded;
      ({ key, disk } = this.#keyOf(request, loc));
      disk &&= options.disk ?? true;
      const again = await lookup(key);
      if (again) return { ...again, key };
    }
    // Concurrent calls for one key share one compilation.
    const k = key;
    if (k !== null) {
      const pending = this.#pending.get(k);
      if (pending) return { code: await pending, from: 'memory', key };
    }
    this.stats.compiles++;
    const promise = this.#compiler.compileAsync(jobOf(request, loc)).then((code) => {
      if (request.describe) code.info = request.describe();
      return code;
    });
    if (k === null) return { code: await promise, from: 'compiled', key };
    this.#pending.set(k, promise);
    try {
      const code = await promise;
      this.#store(k, code, disk, 'async');
      return { code, from: 'compiled', key };
    } finally {
      this.#pending.delete(k);
    }
  }

  #lookup(key: string, disk: boolean): { code: CompiledCode; from: CacheSource } | null {
    const memo = this.#memo.get(key);
    if (memo) {
      this.stats.memoryHits++;
      return { code: memo, from: 'memory' };
    }
    if (!disk) return null;
    const file = this.entryPath(key);
    const parts = this.#readEntry(file, key, TOUCH_AFTER_MS);
    if (parts === null) return null;
    // An older addon's reader (CUDA_KERNELS_BINARY, a stale build) gives the entry's bytes: taken as
    // parts, every good entry in the shared folder would be counted damaged and removed.
    if (parts !== false && !Array.isArray(parts))
      throw typeError("readEntry's result", '[code, meta, cubin, arch], false or null', parts);
    const code = this.#accept(key, parts === false ? null : decodeParts(parts), file);
    return code ? { code, from: 'disk' } : null;
  }

  async #readAsync(key: string): Promise<CompiledCode | null> {
    const file = this.entryPath(key);
    let data: Buffer;
    try {
      data = await fs.promises.readFile(file);
    } catch {
      return null;
    }
    const code = this.#accept(key, decodeEntry(data, key), file);
    if (code === null) return null;
    // Not awaited: only the eviction order depends on it (and #touched keeps this process's order
    // meanwhile). Not unref'd either: a touch that never lands leaves the bound evicting by write time.
    fs.stat(file, (err, st) => {
      if (err || Date.now() - st.mtimeMs <= TOUCH_AFTER_MS) return;
      const now = new Date();
      fs.utimes(file, now, now, () => undefined);
    });
    return code;
  }

  /** A disk entry's decoded code, memoised; a bad one (null) is removed. */
  #accept(key: string, code: CompiledCode | null, file: string): CompiledCode | null {
    if (code === null) {
      this.stats.corrupt++;
      try {
        fs.unlinkSync(file);
      } catch {
        // Another process removed or replaced it first.
      }
      return null;
    }
    this.stats.diskHits++;
    this.#memo.set(key, code);
    this.#touched.set(file, Date.now());
    return code;
  }

  /**
   * Memo and disk; the size bound is then kept by a scan of the folder when one is due (see
   * RESCAN_AFTER_WRITES), on the JS thread for get() and off it for getAsync().
   */
  #store(key: string, code: CompiledCode, disk: boolean, scan: 'sync' | 'async'): void {
    this.#memo.set(key, code);
    if (!disk) return;
    const bytes = this.#write(key, code);
    if (bytes > 0 && this.#knownBytes !== null) this.#knownBytes += bytes;
    this.#writesSinceScan++;
    this.#written = { bytes: this.#written.bytes + Math.max(bytes, 0), count: this.#written.count + 1 };
    const due =
      this.#knownBytes === null || this.#knownBytes > this.maxBytes || this.#writesSinceScan >= RESCAN_AFTER_WRITES;
    if (!due) return;
    if (scan === 'sync') this.enforceBound();
    // Nothing waits for it, so nothing it could throw may reach the process as an unhandled rejection.
    else
      this.#scanning ??= this.#enforceBoundAsync()
        .catch(() => undefined)
        .finally(() => (this.#scanning = null));
  }

  /** Writes an entry atomically (a temporary file renamed into place); false when the disk refused. */
  write(key: string, code: CompiledCode): boolean {
    return this.#write(key, code) > 0;
  }

  /** {@link KernelCache.write}, giving the entry's bytes (0 when the disk refused). */
  #write(key: string, code: CompiledCode): number {
    const tmp = path.join(this.dir, `${key}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      fs.mkdirSync(this.dir, { recursive: true });
      const data = encodeEntry(key, code);
      fs.writeFileSync(tmp, data, { flag: 'wx' });
      fs.renameSync(tmp, this.entryPath(key));
      return data.length;
    } catch {
      this.stats.writeFailures++;
      try {
        fs.unlinkSync(tmp);
      } catch {
        // Never created.
      }
      return 0;
    }
  }

  /** The entries on disk, oldest first (temporary files left by a dead process are removed). */
  #entries(): CacheFile[] {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: CacheFile[] = [];
    const now = Date.now();
    for (const n of names) {
      const file = path.join(this.dir, n);
      let st: fs.Stats;
      try {
        st = fs.statSync(file);
      } catch {
        continue;
      }
      this.#sortOut(n, file, st, now, out, (f) => this.#remove(f));
    }
    return out.sort((a, b) => a.mtimeMs - b.mtimeMs);
  }

  /** {@link KernelCache.enforceBound} with the folder read and the files removed off the JS thread. */
  async #enforceBoundAsync(): Promise<void> {
    const before = this.#written;
    let names: string[];
    try {
      names = await fs.promises.readdir(this.dir);
    } catch {
      return;
    }
    const out: CacheFile[] = [];
    const now = Date.now();
    const removeLater = (f: string) => void fs.promises.unlink(f).catch(() => undefined);
    for (const n of names) {
      const file = path.join(this.dir, n);
      const st = await fs.promises.stat(file).catch(() => null);
      if (st !== null) this.#sortOut(n, file, st, now, out, removeLater);
    }
    out.sort((a, b) => a.mtimeMs - b.mtimeMs);
    let total = out.reduce((sum, e) => sum + e.bytes, 0);
    for (const e of out) {
      if (total <= this.maxBytes) break;
      if (
        await fs.promises.unlink(e.file).then(
          () => true,
          () => false,
        )
      )
        this.stats.evicted++;
      total -= e.bytes;
    }
    // Writes that landed while it ran may not have been seen: counted on top, so that the next write
    // scans again if they pass the bound.
    this.#scanned(total + this.#written.bytes - before.bytes, this.#written.count - before.count);
  }

  /** One name of the folder: an entry goes to `out`, a stale temporary file to `remove`. */
  #sortOut(n: string, file: string, st: fs.Stats, now: number, out: CacheFile[], remove: (f: string) => void): void {
    if (n.endsWith('.tmp')) {
      if (now - st.mtimeMs > STALE_TMP_MS) remove(file);
      return;
    }
    if (n.endsWith(SUFFIX) && st.isFile())
      out.push({ file, bytes: st.size, mtimeMs: Math.max(st.mtimeMs, this.#touched.get(file) ?? 0) });
  }

  /** A scan found `total` bytes of entries left (after its evictions), `writes` of ours not counted in it. */
  #scanned(total: number, writes = 0): void {
    this.#knownBytes = total;
    this.#writesSinceScan = writes;
  }

  /** @internal The scan getAsync started, if one is running (tests wait for it). */
  get scanning(): Promise<void> | null {
    return this.#scanning;
  }

  #remove(file: string): boolean {
    try {
      fs.unlinkSync(file);
      return true;
    } catch {
      return false;
    }
  }

  /** Removes the least recently used entries until the folder holds at most `maxBytes`. */
  enforceBound(): void {
    const entries = this.#entries();
    let total = entries.reduce((s, e) => s + e.bytes, 0);
    for (const e of entries) {
      if (total <= this.maxBytes) break;
      if (this.#remove(e.file)) this.stats.evicted++;
      total -= e.bytes;
    }
    this.#scanned(total);
  }

  /** Empties the memo and removes every entry (and temporary file) from the folder; returns how many entries. */
  clear(): number {
    this.#memo.clear();
    this.#touched.clear();
    let removed = 0;
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return 0;
    }
    for (const n of names) {
      if (!n.endsWith(SUFFIX) && !n.endsWith('.tmp')) continue;
      if (this.#remove(path.join(this.dir, n)) && n.endsWith(SUFFIX)) removed++;
    }
    return removed;
  }

  /** Empties the memo only (the next lookup reads the disk). */
  forgetMemory(): void {
    this.#memo.clear();
  }

  info(): KernelCacheInfo {
    const entries = this.#entries();
    return {
      dir: this.dir,
      entries: entries.length,
      bytes: entries.reduce((s, e) => s + e.bytes, 0),
      maxBytes: this.maxBytes,
      stats: { ...this.stats },
    };
  }
}
