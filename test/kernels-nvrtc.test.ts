// NVRTC itself: what happens without it (everywhere, in a child process that points CUDA_KERNELS_NVRTC
// at nothing), and, where it can be loaded, real compilations that need no GPU: cubins and PTX, name
// expressions, headers, CompileErrors pointing at the user's line, and every generated kernel of
// elementwise() and reduction() for every dtype.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { Dtype } from '../lib/array';
import { dtypes } from '../lib/array';
import type { CompileJob } from '../lib/kernels/cache';
import { CompileError } from '../lib/kernels/compile-error';
import { elementwiseSource } from '../lib/kernels/elementwise';
import { mapCompileError } from '../lib/kernels/generated';
import { NvrtcCompiler, nvrtcInfo } from '../lib/kernels/nvrtc';
import { reductionSource } from '../lib/kernels/reduction';
import { native } from '../lib/native';

const root = path.join(__dirname, '..');

function missingChild(env: NodeJS.ProcessEnv) {
  const child = spawnSync(
    process.execPath,
    ['-r', './test/harness/ts-register.js', 'test/harness/kernel-nvrtc-missing.ts'],
    {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, ...env },
      timeout: 120_000,
    },
  );
  if (child.status !== 0)
    throw new Error(`child ended by ${child.signal ?? child.status}:\n${child.stdout}\n${child.stderr}`);
  return JSON.parse(child.stdout.trim().split('\n').pop()!);
}

describe('without NVRTC', () => {
  test('nvrtcInfo says why and compile() throws a CompileError saying what to set (CUDA_KERNELS_NVRTC wrong)', () => {
    const seen = missingChild({ CUDA_KERNELS_NVRTC: '/nonexistent/libnvrtc.so.13' });
    expect(seen.info).toMatchObject({ available: false, code: 'nvrtcLibraryNotFound' });
    expect(seen.info.reason).toMatch(/CUDA_KERNELS_NVRTC=\/nonexistent\/libnvrtc\.so\.13/);
    expect(seen.info.reason).toMatch(/Point CUDA_KERNELS_NVRTC at libnvrtc\.so\.1[23]/);
    expect(seen.compile).toMatchObject({ isCompileError: true, name: 'CompileError', code: 'nvrtcLibraryNotFound' });
    expect(seen.compile.message).toMatch(
      /compile\(\), elementwise\(\) and reduction\(\) are unavailable \(everything else works\)/,
    );
  });

  const absent = nvrtcInfo().version === undefined && !process.env.CUDA_KERNELS_NVRTC;
  (absent ? test : test.skip)(
    `where none is installed, the message says what to install${absent ? '' : ' [skipped: NVRTC is installed here]'}`,
    () => {
      const seen = missingChild({});
      expect(seen.info.available).toBe(false);
      expect(seen.compile.isCompileError).toBe(true);
      expect(seen.compile.message).toMatch(/Install the CUDA 1[23] toolkit/);
      expect(seen.compile.message).toMatch(/nvidia-cuda-nvrtc Python wheel/);
      expect(seen.compile.message).toMatch(/Tried:\n {2}/);
    },
  );
});

const info = nvrtcInfo();
// Compiling needs NVRTC only: these also run in a binary that cannot load code (built with CUDA before
// 12.5), where nvrtcInfo() says unavailable but still names the NVRTC it loaded.
const loaded = info.version !== undefined;
const describeNvrtc = loaded ? describe : describe.skip;
const suffix = loaded ? '' : ` [skipped: no NVRTC — ${info.code}]`;

const SAXPY = `extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
`;

function job(over: Partial<CompileJob> = {}): CompileJob {
  const includeDirs = info.includeDirs ?? [];
  return {
    source: SAXPY,
    name: 'saxpy.cu',
    options: ['--std=c++17', ...includeDirs.map((d) => `-I${d}`)],
    includePaths: [],
    headers: [],
    nameExpressions: [],
    deviceArch: 90,
    searchDirs: includeDirs,
    ...over,
  };
}

const isElf = (code: Uint8Array) => code[0] === 0x7f && code[1] === 0x45 && code[2] === 0x4c && code[3] === 0x46;

describeNvrtc(`NVRTC compilations (no GPU needed)${suffix}`, () => {
  const nvrtc = new NvrtcCompiler();

  test('nvrtcInfo: version, architectures, identity; locating finds the file that was loaded', () => {
    expect(info.version).toMatch(/^\d+\.\d+$/);
    expect(info.archs!.length).toBeGreaterThan(0);
    expect(info.newestArch).toBe(`sm_${info.archs![info.archs!.length - 1]}`);
    const located = native.nvrtcLocate();
    expect(located.loaded).toBe(true);
    expect(located.identity).toBe(native.nvrtcInfo().identity);
    expect(located.identity).toMatch(/libnvrtc.*\|\d+\|\d+\.\d+$/);
  });

  test('a cubin for sm_90 (its ELF header), PTX for a GPU newer than NVRTC', () => {
    const c = nvrtc.compile(job());
    expect(c).toMatchObject({ cubin: true, arch: 90, note: '' });
    expect(isElf(c.code)).toBe(true);
    const newest = info.archs![info.archs!.length - 1];
    const ptx = nvrtc.compile(job({ deviceArch: newest + 10 }));
    expect(ptx).toMatchObject({ cubin: false, arch: newest });
    expect(ptx.note).toMatch(/PTX/);
    expect(ptx.code[ptx.code.length - 1]).toBe(0);
    expect(Buffer.from(ptx.code).toString('latin1')).toMatch(/\.entry saxpy/);
  });

  test('name expressions give lowered names of template instances', () => {
    const c = nvrtc.compile(
      job({
        source: 'template <typename T, int N> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a * N; }',
        nameExpressions: ['scale<float, 4>', 'scale<double,2>'],
      }),
    );
    expect(c.lowered['scale<float, 4>']).toBe('_Z5scaleIfLi4EEvPT_S0_');
    expect(c.lowered['scale<double,2>']).toMatch(/^_Z5scaleIdLi2EE/);
  });

  test('headers from strings and from include paths; a missing header is a CompileError', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-nvrtc-inc-'));
    try {
      fs.writeFileSync(path.join(dir, 'scale.h'), '#define SCALE 3.0f\n');
      const source =
        '#include "consts.h"\n#include <scale.h>\nextern "C" __global__ void k(float* x) { x[0] = SCALE * TWO; }\n';
      const c = nvrtc.compile(
        job({
          source,
          name: 'k.cu',
          headers: [['consts.h', '#define TWO 2.0f\n']],
          options: ['--std=c++17', `-I${dir}`],
        }),
      );
      expect(isElf(c.code)).toBe(true);
      let caught: unknown;
      try {
        nvrtc.compile(job({ source, name: 'k.cu', headers: [['consts.h', '#define TWO 2.0f\n']] }));
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(CompileError);
      expect((caught as CompileError).message).toMatch(/^k\.cu:2(:\d+)?: error: .*scale\.h/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('an #include after a comment (one spanning lines too, code before it or not), across a line splice or as %:include reads the header (the key covers these)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-nvrtc-inc-'));
    try {
      fs.writeFileSync(path.join(dir, 'scale.h'), '#define SCALE 3.0f\n');
      const body = '\nextern "C" __global__ void k(float* x) { x[0] = SCALE; }\n';
      for (const form of [
        '/* why */ #include <scale.h>',
        '# /**/ include <scale.h>',
        '#inc\\\nlude <scale.h>',
        '%:include <scale.h>',
        '/* a comment\n   over two lines */ #include <scale.h>',
        'typedef int q; /* a\n */ #include <scale.h>',
      ])
        expect([
          form,
          isElf(nvrtc.compile(job({ source: form + body, name: 'k.cu', options: ['--std=c++17', `-I${dir}`] })).code),
        ]).toEqual([form, true]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the toolkit's headers (cuda_fp16.h) are found when the toolkit is there", () => {
    if ((info.includeDirs ?? []).length === 0) return; // a bare NVRTC: nothing to find
    const c = nvrtc.compile(
      job({
        source: '#include <cuda_fp16.h>\nextern "C" __global__ void h(__half* x) { x[0] = __float2half(1.0f); }\n',
        name: 'h.cu',
      }),
    );
    expect(isElf(c.code)).toBe(true);
  });

  test('a compile error names the file, line and column, shows the line with a caret; .log is the log', () => {
    const source = 'extern "C" __global__ void k(float* y) {\n    y[0] = 2.0f * nothere;\n}\n';
    let caught: unknown;
    try {
      nvrtc.compile(job({ source, name: 'mine.cu' }));
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(CompileError);
    const e = caught as CompileError;
    expect(e.message.split('\n')).toEqual([
      'mine.cu:2:19: error: identifier "nothere" is undefined',
      ' 2 |     y[0] = 2.0f * nothere;',
      '   |                   ^',
    ]);
    expect(e.code).toBe('NVRTC_ERROR_COMPILATION');
    expect(e.log).toMatch(/1 error detected in the compilation of "mine.cu"/);
  });

  test('an invalid flag is a CompileError naming it', () => {
    expect(() => nvrtc.compile(job({ options: ['--no-such-flag'] }))).toThrow(
      /NVRTC_ERROR_INVALID_OPTION.*no-such-flag/s,
    );
  });

  test('compileAsync compiles off the JS thread', async () => {
    const c = await nvrtc.compileAsync(job());
    expect(isElf(c.code)).toBe(true);
    await expect(nvrtc.compileAsync(job({ source: 'oops' }))).rejects.toThrow(CompileError);
  });

  test('an error in an elementwise body points into the body', () => {
    const spec = {
      in: 'float32 x, float32 a',
      out: 'float32 z',
      body: 'float t = a * x;\nz = t + nothere;',
      name: 'saxpy',
    };
    const b = elementwiseSource(spec, ['float32', 'float32', 'float32'], [true, false]);
    let caught: unknown;
    try {
      nvrtc.compile(job({ source: b.source, name: b.program }));
    } catch (e) {
      caught = mapCompileError(e, b.sources, 'saxpy did not compile');
    }
    expect(caught).toBeInstanceOf(CompileError);
    expect((caught as CompileError).message.split('\n').slice(0, 3)).toEqual([
      'saxpy:body:2:9: error: identifier "nothere" is undefined',
      ' 2 | z = t + nothere;',
      '   |         ^',
    ]);
  });

  test('every elementwise and reduction instance compiles for every dtype, with no warnings', () => {
    for (const d of dtypes as readonly Dtype[]) {
      const e = elementwiseSource(
        { in: 'T x, T y, T a', out: 'T z', body: 'z = a * x + y', name: `ew_${d}` },
        [d, d, d, d],
        [true, true, false],
      );
      const ec = nvrtc.compile(job({ source: e.source, name: e.program }));
      expect(isElf(ec.code)).toBe(true);
      expect(ec.log).toBe('');
      const r = reductionSource(
        { in: 'T x, T s', out: 'T y', map: 'x * s', reduce: 'a + b', post: 'a', identity: '0', name: `red_${d}` },
        [d, d],
        [true, false],
        d,
        d,
      );
      const rc = nvrtc.compile(job({ source: r.source, name: r.program }));
      expect(isElf(rc.code)).toBe(true);
      expect(rc.log).toBe('');
    }
  }, 120_000);
});
