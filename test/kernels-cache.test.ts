// The kernel cache (lib/kernels/cache.ts) with a fake compiler: its key, the in-process memo, the disk
// entries (atomic writes, checksums, corruption, several processes writing one key at once), the size
// bound and clearing. Runs without a GPU and without NVRTC.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import {
  type CompileRequest,
  decodeEntry,
  decodeParts,
  defaultCacheDir,
  defaultCacheMaxBytes,
  encodeEntry,
  type EntryReader,
  entryParts,
  KernelCache,
} from '../lib/kernels/cache';
import { crc64 } from '../lib/kernels/checksum';
import { CompileError } from '../lib/kernels/compile-error';
import { resolveIncludes, sha256 } from '../lib/kernels/includes';
import { binaryInfo, native } from '../lib/native';
import { fakeCode, fakeCompiler, type FakeCompilerOptions } from './helpers/fake-compiler';

const root = path.join(__dirname, '..');
let dir: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-kcache-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const SAXPY = `extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
`;

function request(over: Partial<CompileRequest> = {}): CompileRequest {
  return {
    source: SAXPY,
    name: 'saxpy.cu',
    options: ['--std=c++17'],
    includePaths: [],
    headers: [],
    nameExpressions: [],
    deviceArch: 90,
    ...over,
  };
}

function makeCache(
  o: FakeCompilerOptions = {},
  over: Partial<{
    maxBytes: number;
    packageVersion: string;
    dir: string;
    readEntry: EntryReader;
  }> = {},
) {
  const compiler = fakeCompiler(o);
  const cache = new KernelCache({
    compiler,
    dir: over.dir ?? dir,
    maxBytes: over.maxBytes ?? 1 << 30,
    packageVersion: over.packageVersion ?? '1.0.0',
    readEntry: over.readEntry,
  });
  return { compiler, cache };
}

const entries = () => fs.readdirSync(dir).filter((f) => f.endsWith('.ckbin'));
/** node:fs as the cache's require sees it, whose functions jest can spy on (an import's namespace is sealed). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const fsModule = () => require('node:fs') as typeof fs;
const leftovers = () => fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'));

describe('the key', () => {
  const keyOf = (req: CompileRequest, o: FakeCompilerOptions = {}, version = '1.0.0') => {
    const { cache, compiler } = makeCache(o, { packageVersion: version });
    return cache.keyOf(req, compiler.load());
  };

  test('sha256 (one-shot where Node has it) equals the createHash digest, for text and bytes', () => {
    const digest = (d: string | Uint8Array) => createHash('sha256').update(d).digest('hex');
    const bytes = Uint8Array.from({ length: 70_001 }, (_, i) => (i * 131 + 7) & 255);
    // Lone surrogates (a source may hold one) and a view into Buffer's shared pool, at an offset.
    const lone = ['\ud800', 'a\udc00b', 'x\ud83d', '\udfff\ud800', '\ud83d\ude80'];
    const pooled = Buffer.from('a small buffer, so one from the pool');
    for (const d of ['', 'saxpy', '// größe ∑ 🚀\nextern "C"', ...lone, bytes, bytes.subarray(3, 65_540), pooled])
      expect(sha256(d)).toBe(digest(d));
    expect(sha256('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  test('a Node without crypto.hash (before 20.12) finds the entries written with it: the same keys', () => {
    const req = request({ source: SAXPY + '// \ud800 lone', headers: [['h.cuh', '// \udc00 \u00e9']] });
    const written = makeCache().cache.get(req);
    const real = jest.requireActual<typeof import('node:crypto')>('node:crypto');
    const createHashes = jest.fn(real.createHash);
    let before: typeof import('../lib/kernels/cache') | undefined;
    jest.isolateModules(() => {
      jest.doMock('node:crypto', () => ({ ...real, hash: undefined, createHash: createHashes }));
      before = jest.requireActual<typeof import('../lib/kernels/cache')>('../lib/kernels/cache');
    });
    jest.dontMock('node:crypto');
    const compiler = fakeCompiler();
    const cache = new before!.KernelCache({ compiler, dir, maxBytes: 1 << 30, packageVersion: '1.0.0' });
    const r = cache.get(req);
    expect(createHashes).toHaveBeenCalled();
    expect({ from: r.from, key: r.key }).toEqual({ from: 'disk', key: written.key });
    expect(compiler.compiles).toBe(0);
  });

  test('is a SHA-256, the same for the same compilation', () => {
    const k = keyOf(request());
    expect(k).toMatch(/^[0-9a-f]{64}$/);
    expect(keyOf(request())).toBe(k);
  });

  test('changes with the source, options, name, architecture, name expressions, compiler and package version', () => {
    const base = keyOf(request());
    const changed = [
      keyOf(request({ source: SAXPY + ' ' })),
      keyOf(request({ options: ['--std=c++20'] })),
      keyOf(request({ options: ['--std=c++17', '-DN=4'] })),
      keyOf(request({ name: 'other.cu' })),
      keyOf(request({ deviceArch: 80 })),
      keyOf(request({ nameExpressions: ['k<float>'] })),
      keyOf(request(), { identity: 'nvrtc 13.1' }),
      keyOf(request(), {}, '1.0.1'),
      keyOf(request(), { includeDirs: ['/usr/local/cuda/include'] }),
    ];
    for (const k of changed) expect(k).not.toBe(base);
    expect(new Set(changed).size).toBe(changed.length);
  });

  test('changes with the contents of a header given as a string, and of one included from a folder', () => {
    const inc = path.join(dir, 'inc');
    fs.mkdirSync(path.join(inc, 'sub'), { recursive: true });
    fs.writeFileSync(path.join(inc, 'a.h'), '#include "sub/b.h"\n#define A 1\n');
    fs.writeFileSync(path.join(inc, 'sub', 'b.h'), '#define B 2\n');
    const src = '#include "str.h"\n#include <a.h>\n' + SAXPY;
    const req = (h: string) =>
      request({ source: src, includePaths: [inc], options: [`-I${inc}`], headers: [['str.h', h]] });
    const k1 = keyOf(req('#define S 1\n'));
    expect(keyOf(req('#define S 1\n'))).toBe(k1);
    expect(keyOf(req('#define S 2\n'))).not.toBe(k1);
    // A header two levels down changes: the key follows it, though no name changed.
    fs.writeFileSync(path.join(inc, 'sub', 'b.h'), '#define B 3\n');
    const k2 = keyOf(req('#define S 1\n'));
    expect(k2).not.toBe(k1);
    // Same size, same second: the cache must still see the new contents (its file memo checks inode,
    // size and time; rewriting through a new file changes the inode).
    fs.writeFileSync(path.join(inc, 'sub', 'b.tmp'), '#define B 4\n');
    fs.renameSync(path.join(inc, 'sub', 'b.tmp'), path.join(inc, 'sub', 'b.h'));
    expect(keyOf(req('#define S 1\n'))).not.toBe(k2);
  });

  test('the key follows a header reached after a comment (one spanning lines too), across a line splice, or through %:include', () => {
    // Each is an #include to the preprocessor (NVRTC compiles them all: test/kernels-nvrtc.test.ts).
    const inc = path.join(dir, 'inc');
    fs.mkdirSync(inc);
    const forms = [
      '/* why */ #include <a.h>',
      '# /**/ include <a.h>',
      '#inc\\\nlude <a.h>',
      '#\\\r\ninclude "a.h"',
      '%:include <a.h>',
      '/* a comment\n   over two lines */ #include <a.h>',
      'typedef int q; /* a\n */ #include "a.h"',
      '# /* a comment\n over two lines */ include <a.h>',
      '#include /* a\n */ <a.h>',
      '\f#\vinclude\f<a.h>',
      '\ufeff#include <a.h>',
    ];
    const req = (form: string) => request({ source: `${form}\n${SAXPY}`, includePaths: [inc], options: [`-I${inc}`] });
    fs.writeFileSync(path.join(inc, 'a.h'), '#define A 1\n');
    const before = forms.map((f) => keyOf(req(f)));
    fs.writeFileSync(path.join(inc, 'b.tmp'), '#define A 2\n');
    fs.renameSync(path.join(inc, 'b.tmp'), path.join(inc, 'a.h'));
    forms.forEach((f, i) => expect([f, keyOf(req(f))]).not.toEqual([f, before[i]]));
  });

  test('reading the #includes stays linear on long lines of comments (a comment that spans lines is looked at once)', () => {
    const ctx = { headers: new Map<string, string>(), searchDirs: [], sourceDir: null };
    for (const text of [
      '/**/'.repeat(250_000),
      '/* */ '.repeat(170_000),
      'x */' + '/* */'.repeat(200_000),
      ('/**/'.repeat(2_500) + '\n').repeat(100),
      '/*\n*/ '.repeat(150_000),
      '/*'.repeat(500_000),
    ]) {
      const t0 = performance.now();
      const found = resolveIncludes(`${text}\n#include <a.h>\n`, ctx);
      expect(performance.now() - t0).toBeLessThan(1000);
      // (After an unclosed comment the compiler reads no #include; the key may hold more than it reads.)
      expect(found.missing).toEqual(['a.h']);
    }
  });

  test('a header found nowhere is part of the key; an #include through a macro makes it uncacheable', () => {
    const { cache, compiler } = makeCache();
    const missing = cache.keyOf(request({ source: '#include "nowhere.h"\n' + SAXPY }), compiler.load());
    expect(missing).toMatch(/^[0-9a-f]{64}$/);
    const computed = cache.keyOf(request({ source: '#define H "x.h"\n#include H\n' + SAXPY }), compiler.load());
    expect(computed).toBeNull();
    // Not cached, but still compiled.
    const r = cache.get(request({ source: '#define H "x.h"\n#include H\n' + SAXPY }));
    expect(r.from).toBe('compiled');
    expect(entries()).toEqual([]);
  });
});

describe('quoted #includes beside the source (NVRTC looks in the folder of options.name first)', () => {
  test('editing a header beside a source named with a folder changes the key', () => {
    const src = path.join(dir, 'src');
    fs.mkdirSync(src);
    fs.writeFileSync(path.join(src, 'params.h'), '#define SCALE 2.0f\n');
    const { cache, compiler } = makeCache();
    const req = request({ source: '#include "params.h"\n' + SAXPY, name: path.join(src, 'k.cu') });
    const before = cache.keyOf(req, compiler.load());
    fs.writeFileSync(path.join(src, 'p.tmp'), '#define SCALE 3.0f\n');
    fs.renameSync(path.join(src, 'p.tmp'), path.join(src, 'params.h'));
    expect(cache.keyOf(req, compiler.load())).not.toBe(before);
    // And it is on disk: found, so the entry may be kept.
    expect(cache.get(req).from).toBe('compiled');
    expect(entries()).toHaveLength(1);
  });

  test('with --no-source-include the folder of options.name is not searched, as NVRTC does not', () => {
    const src = path.join(dir, 'src');
    fs.mkdirSync(src);
    fs.writeFileSync(path.join(src, 'params.h'), '#define SCALE 2.0f\n');
    const { cache, compiler } = makeCache();
    const req = request({
      source: '#include "params.h"\n' + SAXPY,
      name: path.join(src, 'k.cu'),
      options: ['--std=c++17', '--no-source-include'],
    });
    const before = cache.keyOf(req, compiler.load());
    fs.writeFileSync(path.join(src, 'params.h'), '#define SCALE 3.0f\n');
    expect(cache.keyOf(req, compiler.load())).toBe(before); // not the header NVRTC reads
    cache.get(req);
    expect(entries()).toEqual([]); // found nowhere else: kept in memory only
  });

  test('a quoted #include the scan found nowhere keeps the compiled code in memory only', async () => {
    const { cache } = makeCache();
    const req = request({ source: '#include "only_nvrtc_knows.h"\n' + SAXPY });
    expect(cache.get(req).from).toBe('compiled');
    expect(cache.get(req).from).toBe('memory');
    expect((await cache.getAsync(request({ ...req, source: req.source + '//a' }))).from).toBe('compiled');
    expect(entries()).toEqual([]);
    // An angle-bracket one NVRTC may have built in (the toolkit folder absent) is cached by name.
    cache.get(request({ source: '#include <cuda_fp16.h>\n' + SAXPY }));
    expect(entries()).toHaveLength(1);
  });
});

describe('memory and disk', () => {
  test('a miss compiles and writes one entry; the next lookup is a memory hit; a new cache reads the disk', () => {
    const { cache, compiler } = makeCache();
    const first = cache.get(request());
    expect(first.from).toBe('compiled');
    expect(compiler.compiles).toBe(1);
    expect(entries()).toEqual([`${first.key}.ckbin`]);
    expect(leftovers()).toEqual([]);
    expect(cache.get(request()).from).toBe('memory');
    expect(compiler.compiles).toBe(1);

    const other = makeCache();
    const again = other.cache.get(request());
    expect(again.from).toBe('disk');
    expect(other.compiler.compiles).toBe(0);
    expect(Buffer.from(again.code.code).equals(Buffer.from(first.code.code))).toBe(true);
    expect(Buffer.from(again.code.code).equals(Buffer.from(fakeCode({ ...request(), options: ['--std=c++17'] })))).toBe(
      true,
    );
  });

  test('a hit needs no compiler: locate() knew the identity, load() was never called', () => {
    makeCache().cache.get(request());
    const { cache, compiler } = makeCache();
    expect(cache.get(request()).from).toBe('disk');
    expect(compiler.loads).toBe(0);
  });

  test('an unknown identity loads the compiler; one that differs after loading re-keys', () => {
    const { cache, compiler } = makeCache({ identity: null, loadedIdentity: 'fake-1' });
    expect(cache.get(request()).from).toBe('compiled');
    expect(compiler.loads).toBeGreaterThan(0);
    // The entry was written under the loaded identity: a cache that locates that identity hits.
    expect(makeCache({ identity: 'fake-1' }).cache.get(request()).from).toBe('disk');
    const moved = makeCache({ identity: 'located', loadedIdentity: 'fake-1' });
    expect(moved.cache.get(request()).from).toBe('disk');
    expect(moved.compiler.compiles).toBe(0);
  });

  test('a missing compiler is a CompileError saying so, on a miss only', () => {
    const { cache } = makeCache({ identity: null, missing: true });
    expect(() => cache.get(request())).toThrow(CompileError);
    expect(() => cache.get(request())).toThrow(/could not be loaded/);
    // With the identity known and the entry on disk, no compiler is needed.
    makeCache().cache.get(request());
    expect(makeCache({ missing: true }).cache.get(request()).from).toBe('disk');
  });

  test('compile errors are not cached', () => {
    const { cache, compiler } = makeCache();
    const bad = request({ source: 'extern "C" __global__ void k() {\n  SYNTAX_ERROR;\n}\n' });
    expect(() => cache.get(bad)).toThrow(CompileError);
    expect(() => cache.get(bad)).toThrow(CompileError);
    expect(compiler.compiles).toBe(2);
    expect(entries()).toEqual([]);
  });

  test('lowered names survive the disk', () => {
    makeCache().cache.get(request({ nameExpressions: ['scale<float, 4>'] }));
    const r = makeCache().cache.get(request({ nameExpressions: ['scale<float, 4>'] }));
    expect(r.from).toBe('disk');
    expect(r.code.lowered).toEqual({ 'scale<float, 4>': '_Z15scale_float__4_' });
  });

  test('describe() runs once, on the compile; its result comes back from memory and from the disk in a new cache; an entry without it has none', async () => {
    let calls = 0;
    const describe = () => {
      calls++;
      return [{ name: 'saxpy', externC: true, paramsText: 'int n', template: null }];
    };
    const want = [{ name: 'saxpy', externC: true, paramsText: 'int n', template: null }];
    const { cache } = makeCache();
    expect(cache.get(request({ describe })).code.info).toEqual(want);
    expect(cache.get(request({ describe })).code.info).toEqual(want);
    const disk = makeCache().cache.get(request({ describe }));
    expect([disk.from, disk.code.info, calls]).toEqual(['disk', want, 1]);
    const async = await makeCache().cache.getAsync(request({ describe, source: SAXPY + '// async\n' }));
    expect([async.from, async.code.info, calls]).toEqual(['compiled', want, 2]);
    expect((await makeCache().cache.getAsync(request({ source: SAXPY + '// async\n' }))).code.info).toEqual(want);
    // The key does not depend on describe: a request without it reads the same entry.
    expect(makeCache().cache.get(request()).from).toBe('disk');
    makeCache().cache.get(request({ source: SAXPY + '// none\n' }));
    expect(makeCache().cache.get(request({ source: SAXPY + '// none\n' })).code.info).toBeUndefined();
  });

  test('options.cache false: memory only', () => {
    const { cache } = makeCache();
    expect(cache.get(request(), { disk: false }).from).toBe('compiled');
    expect(entries()).toEqual([]);
    expect(cache.get(request(), { disk: false }).from).toBe('memory');
  });

  test('an unwritable folder still returns the code, counting the failure', () => {
    const file = path.join(dir, 'not-a-folder');
    fs.writeFileSync(file, 'x');
    const { cache } = makeCache({}, { dir: path.join(file, 'sub') });
    const r = cache.get(request());
    expect(r.from).toBe('compiled');
    expect(r.code.code.length).toBeGreaterThan(0);
    expect(cache.stats.writeFailures).toBe(1);
  });

  test('getAsync: the same answers, and concurrent calls for one key share one compilation', async () => {
    const { cache, compiler } = makeCache({ delayMs: 30 });
    const [a, b, c] = await Promise.all([
      cache.getAsync(request()),
      cache.getAsync(request()),
      cache.getAsync(request()),
    ]);
    expect(compiler.compiles).toBe(1);
    // Whichever reached the compiler first compiled; the others waited for it.
    expect([a.from, b.from, c.from].sort()).toEqual(['compiled', 'memory', 'memory']);
    expect(Buffer.from(b.code.code).equals(Buffer.from(a.code.code))).toBe(true);
    const fresh = makeCache();
    expect((await fresh.cache.getAsync(request())).from).toBe('disk');
    await expect(makeCache().cache.getAsync(request({ source: 'SYNTAX_ERROR\n' }))).rejects.toThrow(CompileError);
  });
});

describe('entries', () => {
  const code = {
    code: new Uint8Array([1, 2, 3, 4, 5]),
    cubin: true,
    arch: 90,
    lowered: { k: '_Z1k' },
    log: 'w',
    note: '',
  };
  const key = 'a'.repeat(64);

  test('round trip', () => {
    const back = decodeEntry(encodeEntry(key, code), key);
    expect(back).toEqual({ ...code, code: new Uint8Array([1, 2, 3, 4, 5]) });
  });

  test('an entry inside a larger buffer (a view with an offset), as a plain Uint8Array too', () => {
    const good = encodeEntry(key, code);
    const big = new Uint8Array(good.length + 16).fill(7);
    big.set(good, 9);
    const view = new Uint8Array(big.buffer, 9, good.length);
    for (const data of [view, Buffer.from(big.buffer, 9, good.length)]) {
      const back = decodeEntry(data, key);
      expect(back && [...back.code]).toEqual([1, 2, 3, 4, 5]);
      expect(back?.lowered).toEqual({ k: '_Z1k' });
    }
  });

  test('any single flipped byte, any truncation, another key, or garbage is refused', () => {
    const good = encodeEntry(key, code);
    for (let i = 0; i < good.length; i++) {
      const bad = Buffer.from(good);
      bad[i] ^= 0x01;
      expect(decodeEntry(bad, key)).toBeNull();
    }
    for (let n = 0; n < good.length; n++) expect(decodeEntry(good.subarray(0, n), key)).toBeNull();
    expect(decodeEntry(Buffer.concat([good, Buffer.from([0])]), key)).toBeNull();
    expect(decodeEntry(good, 'b'.repeat(64))).toBeNull();
    expect(decodeEntry(Buffer.from('not an entry at all, but long enough to have a header and a sum'), key)).toBeNull();
  });

  test('lengths that do not add up to the buffer are refused, never read past it', () => {
    // A small Buffer copy lives in Node's shared pool: a code view past its end would show other data.
    for (const [metaDelta, codeDelta] of [
      [0, 1],
      [0, -1],
      [1, 0],
      [0, 2 ** 31],
      [2 ** 31, 2 ** 31],
    ]) {
      const bad = Buffer.from(encodeEntry(key, code));
      bad.writeUInt32LE((bad.readUInt32LE(8) + metaDelta) >>> 0, 8);
      bad.writeUInt32LE((bad.readUInt32LE(12) + codeDelta) >>> 0, 12);
      expect([metaDelta, codeDelta, entryParts(bad, key)]).toEqual([metaDelta, codeDelta, null]);
    }
  });

  test('metadata that is not what encodeEntry writes is refused after the checks passed', () => {
    const parts = (meta: string) => [new Uint8Array([1]), meta, true, 90] as const;
    expect(decodeParts(parts('{"lowered":{},"log":"","note":"","info":null}'))).toEqual({
      code: new Uint8Array([1]),
      cubin: true,
      arch: 90,
      lowered: {},
      log: '',
      note: '',
    });
    for (const bad of [
      '',
      '{',
      'null',
      '[]',
      '{"lowered":{},"log":1,"note":""}',
      '{"lowered":null,"log":"","note":""}',
    ])
      expect([bad, decodeParts(parts(bad))]).toEqual([bad, null]);
  });

  test('CRC-64/XZ: the standard check value, and the native check agrees on entries of every length up to 300 bytes of code', () => {
    expect(crc64(Buffer.from('123456789')).readBigUInt64LE(0)).toBe(0x995dc9bbdf1939fan);
    expect(crc64(new Uint8Array(0)).readBigUInt64LE(0)).toBe(0n);
    const f = path.join(dir, 'e.ckbin');
    for (let n = 0; n <= 300; n++) {
      const e = encodeEntry(key, { ...code, code: Uint8Array.from({ length: n }, (_, i) => (i * 131 + n) & 255) });
      fs.writeFileSync(f, e);
      const r = native.kernelsReadEntry(f, key);
      const js = entryParts(e, key);
      expect(r && js && [Buffer.from(r[0]).equals(Buffer.from(js[0])), ...r.slice(1)]).toEqual([true, ...js!.slice(1)]);
    }
  });

  // The package reads entries with the addon's kernelsReadEntry (checked natively); the default is
  // fs.readFileSync, checked by decodeEntry; getAsync reads with fs.promises and decodeEntry.
  type Reader = EntryReader;
  type Get = (cache: KernelCache, req: CompileRequest) => Promise<{ from: string; code: { code: Uint8Array } }>;
  const sync: Get = (cache, req) => Promise.resolve(cache.get(req));
  const readers: [string, Reader | undefined, Get][] = [
    ['fs.readFileSync', undefined, sync],
    ['the native reader', (file, k, touchAfterMs) => native.kernelsReadEntry(file, k, touchAfterMs), sync],
    ['getAsync', undefined, (cache, req) => cache.getAsync(req)],
  ];
  describe.each(readers)('read with %s', (_reader, readEntry, get) => {
    test.each([
      ['truncated', (b: Buffer) => b.subarray(0, b.length - 7)],
      ['corrupted in its code', (b: Buffer) => ((b[b.length - 40] ^= 0xff), b)],
      ['emptied', () => Buffer.alloc(0)],
      ['another key’s entry', () => encodeEntry('c'.repeat(64), code)],
    ])('an entry on disk that is %s is recompiled, never loaded, and replaced by a good one', async (_what, damage) => {
      const first = makeCache({}, { readEntry }).cache.get(request());
      const file = path.join(dir, `${first.key}.ckbin`);
      fs.writeFileSync(file, damage(fs.readFileSync(file)));
      const { cache, compiler } = makeCache({}, { readEntry });
      const r = await get(cache, request());
      expect(r.from).toBe('compiled');
      expect(compiler.compiles).toBe(1);
      expect(cache.stats.corrupt).toBe(1);
      expect(Buffer.from(r.code.code).equals(Buffer.from(first.code.code))).toBe(true);
      // The rewritten entry is good again.
      expect((await get(makeCache({}, { readEntry }).cache, request())).from).toBe('disk');
    });

    test('an entry that is a folder, or unreadable, is a miss that compiles', async () => {
      const key = makeCache({}, { readEntry }).cache.get(request()).key!;
      const file = path.join(dir, `${key}.ckbin`);
      fs.rmSync(file);
      fs.mkdirSync(file);
      const { cache, compiler } = makeCache({}, { readEntry });
      expect((await get(cache, request())).from).toBe('compiled');
      expect(compiler.compiles).toBe(1);
      fs.rmSync(file, { recursive: true });
    });

    test('a hit refreshes an old entry’s time; a damaged entry’s time is left alone', async () => {
      const key = makeCache({}, { readEntry }).cache.get(request()).key!;
      const file = path.join(dir, `${key}.ckbin`);
      const old = new Date(Date.now() - 2 * 3600_000);
      // A second name for the file, to see its time once the cache has removed the damaged entry.
      const seen = path.join(dir, 'seen.bin');
      const settle = () => new Promise((r) => setTimeout(r, 50));
      const good = fs.readFileSync(file);
      const bad = Buffer.from(good);
      bad[bad.length - 40] ^= 0xff;
      fs.writeFileSync(file, bad);
      fs.utimesSync(file, old, old);
      fs.linkSync(file, seen);
      const { cache } = makeCache({}, { readEntry });
      expect((await get(cache, request())).from).toBe('compiled');
      await settle();
      expect(cache.stats.corrupt).toBe(1);
      const age = () => Date.now() - fs.statSync(seen).mtimeMs;
      expect(age()).toBeGreaterThan(3600_000);
      fs.rmSync(seen);
      fs.writeFileSync(file, good);
      fs.utimesSync(file, old, old);
      fs.linkSync(file, seen);
      expect((await get(makeCache({}, { readEntry }).cache, request())).from).toBe('disk');
      for (let i = 0; i < 100 && age() > 3600_000; i++) await settle();
      expect(age()).toBeLessThan(600_000);
    });
  });

  test('a reader that returns the whole entry (the older kernelsReadEntry, as an older addon would) is refused, and leaves the entry on disk', () => {
    const first = makeCache().cache.get(request());
    const file = path.join(dir, `${first.key}.ckbin`);
    const bytes = fs.readFileSync(file);
    for (const stale of [(f: string) => fs.readFileSync(f), () => undefined, () => ({})]) {
      const { cache, compiler } = makeCache({}, { readEntry: stale as never });
      expect(() => cache.get(request())).toThrow(
        /^readEntry's result must be \[code, meta, cubin, arch\], false or null, got /,
      );
      expect([compiler.compiles, cache.stats.corrupt]).toEqual([0, 0]);
      // Not taken for a damaged entry and removed: another process may read it with the right reader.
      expect(fs.readFileSync(file).equals(bytes)).toBe(true);
    }
  });

  test('the native reader, the default reader and getAsync give equal compiled code for one entry, and the native code is memory of its own', async () => {
    const written = makeCache({}).cache.get(request({ describe: () => ({ é: '🚀' }) }));
    const sync = makeCache({}, { readEntry: native.kernelsReadEntry }).cache.get(request());
    const plain = makeCache().cache.get(request());
    const viaAsync = await makeCache().cache.getAsync(request());
    expect([sync.from, plain.from, viaAsync.from]).toEqual(['disk', 'disk', 'disk']);
    expect(sync.code).toEqual(plain.code);
    expect(viaAsync.code).toEqual(plain.code);
    expect(plain.code.info).toEqual({ é: '🚀' });
    expect(Buffer.from(sync.code.code).equals(Buffer.from(written.code.code))).toBe(true);
    const again = native.kernelsReadEntry(path.join(dir, `${sync.key}.ckbin`), sync.key!);
    expect(again && again[0].buffer).not.toBe(sync.code.code.buffer);
    expect(again && [again[0].byteOffset, again[0].buffer.byteLength]).toEqual([0, again && again[0].byteLength]);
  });

  test('kernelsReadEntry decodes the metadata as JavaScript does, invalid UTF-8 included, and takes empty metadata or code', () => {
    const f = path.join(dir, 'e.ckbin');
    const raw = (meta: Buffer, body: Buffer) => {
      const head = Buffer.alloc(88);
      head.write('CKKERNL2', 0, 'latin1');
      head.writeUInt32LE(meta.length, 8);
      head.writeUInt32LE(body.length, 12);
      head.writeUInt32LE(1, 16);
      head.writeUInt32LE(90, 20);
      head.write(key, 24, 'latin1');
      const e = Buffer.concat([head, meta, body]);
      return Buffer.concat([e, crc64(e)]);
    };
    // Text as encodeEntry writes it, and bytes it never writes (cut, overlong, surrogate, beyond U+10FFFF).
    const bad = ['ff', 'c3', 'e282', 'eda080', 'c0af', 'f4908080', 'f09f98', '80bf', 'efbbbf'];
    const metas = [
      ...['', '{"log":"é 😀 \\u0000"}', '\u0000'].map((m) => Buffer.from(m)),
      ...bad.map((h) => Buffer.concat([Buffer.from('{"log":"'), Buffer.from(h, 'hex'), Buffer.from('"}')])),
    ];
    for (const meta of metas)
      for (const body of [Buffer.alloc(0), Buffer.from([0, 1, 2])]) {
        const e = raw(meta, body);
        fs.writeFileSync(f, e);
        const r = native.kernelsReadEntry(f, key);
        const js = entryParts(e, key);
        expect([meta.toString('hex'), r && [[...r[0]], ...r.slice(1)]]).toEqual([
          meta.toString('hex'),
          js && [[...js[0]], ...js.slice(1)],
        ]);
      }
  });

  test('kernelsReadEntry refuses any single flipped byte, any truncation, a byte more, and another key', () => {
    const good = encodeEntry(key, code);
    const f = path.join(dir, 'e.ckbin');
    const read = (b: Uint8Array, k = key) => (fs.writeFileSync(f, b), native.kernelsReadEntry(f, k));
    expect(read(good)).not.toBe(false);
    for (let i = 0; i < good.length; i++) {
      const bad = Buffer.from(good);
      bad[i] ^= 0x01;
      expect([i, read(bad)]).toEqual([i, false]);
    }
    for (let n = 0; n < good.length; n++) expect(read(good.subarray(0, n))).toBe(false);
    expect(read(Buffer.concat([good, Buffer.from([0])]))).toBe(false);
    expect(read(good, 'b'.repeat(64))).toBe(false);
    expect(read(good, key.slice(1))).toBe(false);
  });

  test('kernelsReadEntry closes what it opens: thousands of reads, refusals and misses leave no descriptor', () => {
    const f = path.join(dir, 'e.ckbin');
    fs.writeFileSync(f, encodeEntry(key, code));
    const junk = path.join(dir, 'junk.ckbin');
    fs.writeFileSync(junk, 'entry');
    const open = () => fs.readdirSync('/proc/self/fd').length;
    const before = open();
    for (let i = 0; i < 3000; i++) {
      expect(native.kernelsReadEntry(f, key)).not.toBe(false);
      expect(native.kernelsReadEntry(junk, key)).toBe(false);
      expect(native.kernelsReadEntry(dir, key)).toBeNull();
      expect(native.kernelsReadEntry(path.join(dir, 'missing.bin'), key)).toBeNull();
    }
    expect(open()).toBeLessThanOrEqual(before + 2);
  });

  test('kernelsReadEntry: a large entry whole; null for a missing file, a folder, a NUL in the path or a FIFO', () => {
    const big = { ...code, code: Uint8Array.from({ length: 200_003 }, (_, i) => (i * 7 + 1) & 255) };
    const f = path.join(dir, 'e.ckbin');
    fs.writeFileSync(f, encodeEntry(key, big));
    const r = native.kernelsReadEntry(f, key);
    expect(r && decodeParts(r)).toEqual(decodeEntry(encodeEntry(key, big), key));
    expect(r && Buffer.from(r[0]).equals(Buffer.from(big.code))).toBe(true);
    fs.writeFileSync(f, '');
    expect(native.kernelsReadEntry(f, key)).toBe(false);
    expect(native.kernelsReadEntry(path.join(dir, 'missing.bin'), key)).toBeNull();
    expect(native.kernelsReadEntry(dir, key)).toBeNull();
    // A NUL ends the path for open(): refused, as fs refuses it, instead of reading the file before it.
    fs.writeFileSync(f, encodeEntry(key, code));
    expect(native.kernelsReadEntry(`${f}\0.ckbin`, key)).toBeNull();
    // A FIFO (no writer) is refused at once instead of blocking the open.
    const fifo = path.join(dir, 'fifo.ckbin');
    if (spawnSync('mkfifo', [fifo]).status === 0) expect(native.kernelsReadEntry(fifo, key)).toBeNull();
    expect(() => native.kernelsReadEntry(42 as never, key)).toThrow(/path must be a string/);
    expect(() => native.kernelsReadEntry(f, 42 as never)).toThrow(/key must be a string/);
  });

  test('kernelsReadEntry: no memory for an entry’s bytes is null (cannot be read), not an abort of the process', () => {
    // A sparse 2 GiB file whose header's lengths add up to its size, read by a process whose address
    // space has 1 GiB to spare: the allocation fails (before the fix, std::bad_alloc aborted Node).
    const f = path.join(dir, 'huge.ckbin');
    const head = Buffer.alloc(88);
    head.write('CKKERNL2', 0, 'latin1');
    head.writeUInt32LE(2 ** 31 - 96 - 1000, 8);
    head.writeUInt32LE(1000, 12);
    head.write(key, 24, 'latin1');
    const fd = fs.openSync(f, 'w');
    fs.writeSync(fd, head);
    fs.ftruncateSync(fd, 2 ** 31);
    fs.closeSync(fd);
    const script = `const b = require(${JSON.stringify(binaryInfo.file)});
      const vm = Number(/VmSize:\\s*(\\d+)/.exec(require('fs').readFileSync('/proc/self/status', 'utf8'))[1]);
      if (process.argv[1] === 'size') process.stdout.write(String(vm));
      else process.stdout.write(JSON.stringify(b.kernelsReadEntry(${JSON.stringify(f)}, ${JSON.stringify(key)})));`;
    const size = spawnSync(process.execPath, ['-e', script, 'size'], { encoding: 'utf8' });
    expect(size.status).toBe(0);
    const limitKb = Number(size.stdout) + 1024 * 1024;
    const r = spawnSync('sh', ['-c', `ulimit -v ${limitKb} && exec "$0" -e "$1" read`, process.execPath, script], {
      encoding: 'utf8',
    });
    expect({ status: r.status, signal: r.signal, out: r.stdout, err: r.stderr }).toEqual({
      status: 0,
      signal: null,
      out: 'null',
      err: '',
    });
  });

  test('kernelsReadEntry with touchAfterMs gives an entry older than that the current time, and leaves a newer one or a bad one', () => {
    const f = path.join(dir, 'aged.ckbin');
    fs.writeFileSync(f, encodeEntry(key, code));
    const setAge = (ms: number) => {
      const t = new Date(Date.now() - ms);
      fs.utimesSync(f, t, t);
      return fs.statSync(f).mtimeMs;
    };
    // 30 s old, bound 60 s: left alone. Without touchAfterMs: never touched.
    let before = setAge(30_000);
    expect(native.kernelsReadEntry(f, key, 60_000)).not.toBe(false);
    expect(fs.statSync(f).mtimeMs).toBe(before);
    before = setAge(2 * 3600_000);
    native.kernelsReadEntry(f, key);
    expect(fs.statSync(f).mtimeMs).toBe(before);
    // Another key's: refused, and left alone (the cache removes it).
    expect(native.kernelsReadEntry(f, 'b'.repeat(64), 60_000)).toBe(false);
    expect(fs.statSync(f).mtimeMs).toBe(before);
    // Two hours old: refreshed by the read.
    expect(native.kernelsReadEntry(f, key, 60_000)).not.toBe(false);
    expect(Date.now() - fs.statSync(f).mtimeMs).toBeLessThan(60_000);
    for (const bad of [-1, NaN, '60000'])
      expect(() => native.kernelsReadEntry(f, key, bad as never)).toThrow(/touchAfterMs must be a number/);
  });

  test('several processes compiling one key at once all succeed, leaving one good entry and no temporary file', async () => {
    const children = 4;
    let ready = 0;
    const runs = await Promise.all(
      Array.from(
        { length: children },
        () =>
          new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
            const child = spawn(
              process.execPath,
              ['-r', './test/harness/ts-register.js', 'test/harness/kernel-cache-writer.ts', dir, SAXPY, '800'],
              { cwd: root },
            );
            let out = '';
            let err = '';
            let seen = false;
            child.stdout.on('data', (d) => {
              out += d;
              // Every child waits for this file, written once all of them are ready: they compile at once.
              if (!seen && out.includes('ready\n')) {
                seen = true;
                if (++ready === children) fs.writeFileSync(path.join(dir, 'go'), '');
              }
            });
            child.stderr.on('data', (d) => (err += d));
            child.on('close', (code) => resolve({ code, out, err }));
          }),
      ),
    );
    for (const r of runs) expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' });
    const results = runs.map((r) => JSON.parse(r.out.trim().split('\n').pop()!));
    // They overlapped (each compiled: none found another's entry); all got the same code.
    expect(new Set(results.map((r) => r.code)).size).toBe(1);
    expect(new Set(results.map((r) => r.key)).size).toBe(1);
    expect(results.every((r) => r.writeFailures === 0)).toBe(true);
    expect(results.map((r) => r.from)).toEqual(Array(children).fill('compiled'));
    expect(entries()).toEqual([`${results[0].key}.ckbin`]);
    expect(leftovers()).toEqual([]);
    const reader = makeCache({}, { packageVersion: 'test' }).cache;
    expect(reader.get(request({ options: ['--std=c++17'], name: 'race.cu' })).from).toBe('disk');
  }, 60_000);
});

describe('size bound and clearing', () => {
  /** The bytes of one entry of the fake compiler's code for SAXPY (all the entries these tests make). */
  const entryBytes = () =>
    encodeEntry('0'.repeat(64), {
      code: fakeCode({ ...request(), source: SAXPY + '//0' }),
      cubin: true,
      arch: 90,
      lowered: {},
      log: '',
      note: '',
    }).length;

  test('the least recently used entries go first once the folder passes its bound', async () => {
    const size = entryBytes();
    const { cache } = makeCache({}, { maxBytes: 3 * size });
    const keys: string[] = [];
    for (let i = 0; i < 3; i++) {
      keys.push(cache.get(request({ source: SAXPY + `//${i}` })).key!);
      // Distinct times, oldest first.
      const t = new Date(Date.now() - (10 - i) * 60_000);
      fs.utimesSync(path.join(dir, `${keys[i]}.ckbin`), t, t);
    }
    expect(entries().length).toBe(3);
    const fourth = cache.get(request({ source: SAXPY + '//3' })).key!;
    expect(entries().sort()).toEqual([keys[1], keys[2], fourth].map((k) => `${k}.ckbin`).sort());
    expect(cache.stats.evicted).toBe(1);
    // A hit on an old entry refreshes it, so it outlives a newer one that is not used: at once in this
    // process (the file's own time is refreshed off the JS thread, for the other processes).
    const reader = makeCache({}, { maxBytes: 3 * size }).cache;
    const refreshed = path.join(dir, `${keys[1]}.ckbin`);
    const before = fs.statSync(refreshed).mtimeMs;
    expect(reader.get(request({ source: SAXPY + '//1' })).from).toBe('disk');
    reader.get(request({ source: SAXPY + '//4' }));
    expect(entries()).toContain(`${keys[1]}.ckbin`);
    expect(entries()).not.toContain(`${keys[2]}.ckbin`);
    for (let i = 0; i < 200 && fs.statSync(refreshed).mtimeMs === before; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(fs.statSync(refreshed).mtimeMs).toBeGreaterThan(before);
  });

  test('getAsync scans the folder for the bound off the JS thread, and the bound still holds', async () => {
    const size = entryBytes();
    const junk = Buffer.alloc(size);
    const old = new Date(Date.now() - 3600_000);
    for (let i = 0; i < 2000; i++) {
      const f = path.join(dir, `${i.toString(16).padStart(64, '0')}.ckbin`);
      fs.writeFileSync(f, junk);
      fs.utimesSync(f, old, old);
    }
    const { cache } = makeCache({}, { maxBytes: 1000 * size });
    const stat = jest.spyOn(fsModule(), 'statSync');
    let key: string | undefined;
    try {
      const r = await cache.getAsync(request({ source: SAXPY + '//async' }));
      expect(r.from).toBe('compiled');
      key = r.key!;
      // No synchronous stat per entry of the folder (there are 2001).
      expect(stat.mock.calls.length).toBeLessThan(20);
    } finally {
      stat.mockRestore();
    }
    await cache.scanning;
    expect(entries().length).toBeLessThanOrEqual(1000);
    expect(entries()).toContain(`${key}.ckbin`); // the newest stays
  });

  test('get() scans the folder on its first write, then when its own writes may pass the bound', () => {
    const { cache } = makeCache({}, { maxBytes: 1 << 30 });
    const readdir = jest.spyOn(fsModule(), 'readdirSync');
    try {
      for (let i = 0; i < 10; i++) cache.get(request({ source: SAXPY + `//w${i}` }));
      expect(readdir).toHaveBeenCalledTimes(1);
    } finally {
      readdir.mockRestore();
    }
    // Another process's writes are seen by a later scan: a small bound evicts at the next write past it.
    const size = entryBytes();
    const small = makeCache({}, { maxBytes: 12 * size }).cache;
    for (let i = 0; i < 3; i++) small.get(request({ source: SAXPY + `//x${i}` }));
    expect(entries().length).toBeLessThanOrEqual(12);
  });

  test('writes made while a scan off the JS thread runs are counted after it (the bound holds at the next write)', async () => {
    const size = entryBytes();
    const { cache } = makeCache({}, { maxBytes: 4 * size });
    // The scan's readdir answers with the folder as it was when called, but only once released: a scan
    // that takes a while (50 000 entries) while this process keeps writing.
    const promises = fsModule().promises;
    const realReaddir = promises.readdir.bind(promises);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const readdir = jest.spyOn(promises, 'readdir').mockImplementation((async (d: fs.PathLike) => {
      const names = await realReaddir(d);
      await gate;
      return names;
    }) as unknown as typeof promises.readdir);
    try {
      // First write: the scan is due (none yet) and starts off the JS thread.
      await cache.getAsync(request({ source: SAXPY + '//first' }));
      const scan = cache.scanning;
      expect(scan).not.toBeNull();
      // Ten writes land while it runs (it read the folder before them).
      for (let i = 0; i < 10; i++) await cache.getAsync(request({ source: SAXPY + `//during${i}` }));
      release();
      await scan;
    } finally {
      readdir.mockRestore();
    }
    expect(entries().length).toBe(11);
    // The next write: 12 entries on disk, bound 4. It should scan (its own writes passed the bound).
    await cache.getAsync(request({ source: SAXPY + '//after' }));
    await cache.scanning;
    expect(entries().length).toBeLessThanOrEqual(4);
  });

  /** Lookups in a new process (test/harness/kernel-cache-hits.ts) run in `cwd`, which then exits by itself. */
  const hitsInChild = (cwd: string, folder: string, maxBytes: number, reqs: CompileRequest[]): string[] => {
    const r = spawnSync(
      process.execPath,
      [
        '-r',
        path.join(root, 'test/harness/ts-register.js'),
        path.join(root, 'test/harness/kernel-cache-hits.ts'),
        folder,
        String(maxBytes),
        ...reqs.map((q) => JSON.stringify(q)),
      ],
      { cwd, encoding: 'utf8', timeout: 60_000 },
    );
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    return JSON.parse(r.stdout.trim()) as string[];
  };

  test('a hit in a short-lived process refreshes the entry’s time before the process exits', () => {
    const key = makeCache().cache.get(request()).key!;
    const file = path.join(dir, `${key}.ckbin`);
    const old = new Date(Date.now() - 2 * 3600_000);
    fs.utimesSync(file, old, old);
    expect(hitsInChild(root, dir, 1 << 30, [request()])).toEqual(['disk']);
    // Otherwise a kernel every run uses but none rewrites goes first, before newer ones no run uses.
    expect(Date.now() - fs.statSync(file).mtimeMs).toBeLessThan(600_000);
  }, 60_000);

  test('an entry’s path is path.join(dir, key + .ckbin) for every spelling of the folder', () => {
    const key = 'ab'.repeat(32);
    for (const d of ['', '.', './', 'a/..', 'rel', 'rel/', './rel//x/', '..', '/', dir, dir + path.sep])
      expect(makeCache({}, { dir: d }).cache.entryPath(key)).toBe(path.join(d, `${key}.ckbin`));
  });

  test('with the folder given as ".", a hit in this process still keeps its entry from the size bound', () => {
    const size = entryBytes();
    const { cache } = makeCache();
    const reqs = [0, 1, 2, 3].map((i) => request({ source: SAXPY + `//${i}` }));
    const keys = reqs.map((q) => cache.get(q).key!);
    fs.rmSync(path.join(dir, `${keys[3]}.ckbin`));
    // Within a minute of each other (no file time is refreshed), oldest first.
    for (let i = 0; i < 3; i++) {
      const t = new Date(Date.now() - (30 - 10 * i) * 1000);
      fs.utimesSync(path.join(dir, `${keys[i]}.ckbin`), t, t);
    }
    // Hitting the oldest, then compiling a fourth past the bound, evicts the second oldest.
    expect(hitsInChild(dir, '.', 3 * size, [reqs[0], reqs[3]])).toEqual(['disk', 'compiled']);
    expect(entries().sort()).toEqual([keys[0], keys[2], keys[3]].map((k) => `${k}.ckbin`).sort());
  }, 60_000);

  test('temporary files left by a dead process are removed once stale', () => {
    const stale = path.join(dir, `${'d'.repeat(64)}.123.abc.tmp`);
    fs.writeFileSync(stale, 'partial');
    const old = new Date(Date.now() - 2 * 3600_000);
    fs.utimesSync(stale, old, old);
    const fresh = path.join(dir, `${'e'.repeat(64)}.124.abd.tmp`);
    fs.writeFileSync(fresh, 'being written');
    makeCache().cache.get(request());
    expect(fs.existsSync(stale)).toBe(false);
    expect(fs.existsSync(fresh)).toBe(true);
  });

  test('clear() empties the memo and the folder, and says how many entries went', () => {
    const { cache, compiler } = makeCache();
    cache.get(request());
    cache.get(request({ source: SAXPY + '//b' }));
    fs.writeFileSync(path.join(dir, 'unrelated.txt'), 'kept');
    expect(cache.clear()).toBe(2);
    expect(entries()).toEqual([]);
    expect(fs.existsSync(path.join(dir, 'unrelated.txt'))).toBe(true);
    expect(cache.get(request()).from).toBe('compiled');
    expect(compiler.compiles).toBe(3);
    expect(cache.info()).toMatchObject({ dir, entries: 1 });
  });
});

describe('where the cache lives', () => {
  test('CUDA_KERNELS_CACHE_DIR, else XDG_CACHE_HOME, else ~/.cache', () => {
    expect(defaultCacheDir({ CUDA_KERNELS_CACHE_DIR: '/tmp/x' })).toBe('/tmp/x');
    expect(defaultCacheDir({ XDG_CACHE_HOME: '/var/cache/me' })).toBe('/var/cache/me/cuda-kernels/kernels');
    expect(defaultCacheDir({})).toBe(path.join(os.homedir(), '.cache', 'cuda-kernels', 'kernels'));
    expect(defaultCacheMaxBytes({})).toBe(512 * 1024 * 1024);
    expect(defaultCacheMaxBytes({ CUDA_KERNELS_CACHE_MAX_BYTES: '1000' })).toBe(1000);
    expect(defaultCacheMaxBytes({ CUDA_KERNELS_CACHE_MAX_BYTES: 'lots' })).toBe(512 * 1024 * 1024);
  });
});
