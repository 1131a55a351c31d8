// What compile(), elementwise() and reduction() decide before NVRTC runs: option checks, the NVRTC
// options, the target architecture, the generated sources (with #line marks around the user's strings)
// and turning NVRTC's log into a CompileError pointing at the user's line. No GPU, no NVRTC.
import * as os from 'node:os';

import type { BufferHandle } from '../binding';
import { DeviceArray } from '../lib/array';
import { CompileError, compileErrorFromLog, parseLog } from '../lib/kernels/compile-error';
import { elementwise, elementwiseSource } from '../lib/kernels/elementwise';
import { nvrtcOptions, resolveCompileOptions } from '../lib/kernels/options';
import { reduction, reductionSource } from '../lib/kernels/reduction';
import { chooseTarget } from '../lib/kernels/target';

describe('compile options', () => {
  test('defaults', () => {
    const o = resolveCompileOptions({});
    expect(o).toMatchObject({ name: 'kernel.cu', std: 'c++17', device: 0, cache: true, headers: [], flags: [] });
    expect(resolveCompileOptions(undefined).name).toBe('kernel.cu');
  });

  test('normalised in a fixed order, signatures of C++ names become name expressions', () => {
    const o = resolveCompileOptions({
      headers: { 'b.h': '#define B', 'a.h': '#define A' },
      defines: { Z: 1, A: true, S: 'x', E: null, F: false },
      includePaths: [os.tmpdir()],
      signatures: { 'scale<float>': 'float* x', plain: 'int n', 'ns::k': 'float* v' },
      nameExpressions: ['other<int>'],
      flags: ['--use_fast_math'],
    });
    expect(o.headers.map(([n]) => n)).toEqual(['a.h', 'b.h']);
    expect(o.defines).toEqual([
      ['A', '1'],
      ['E', null],
      ['F', '0'],
      ['S', 'x'],
      ['Z', '1'],
    ]);
    expect(o.nameExpressions).toEqual(['other<int>', 'scale<float>', 'ns::k']);
    expect(nvrtcOptions(o, ['/usr/local/cuda/include'])).toEqual([
      '--std=c++17',
      '-DA=1',
      '-DE=',
      '-DF=0',
      '-DS=x',
      '-DZ=1',
      `-I${os.tmpdir()}`,
      '-I/usr/local/cuda/include',
      '--use_fast_math',
    ]);
  });

  test.each([
    [{ name: 3 }, TypeError, /options.name/],
    [{ name: 'a"b' }, RangeError, /options.name/],
    [{ headers: [] }, TypeError, /options.headers/],
    [{ headers: { 'a.h': 1 } }, TypeError, /options.headers\['a.h'\]/],
    [{ includePaths: ['/definitely/not/here'] }, RangeError, /options.includePaths\[0\] must be an existing folder/],
    [{ includePaths: 'x' }, TypeError, /options.includePaths/],
    [{ defines: { 'bad name': 1 } }, RangeError, /options.defines/],
    [{ defines: { N: Infinity } }, RangeError, /options.defines.N/],
    [{ defines: { N: {} } }, TypeError, /options.defines.N/],
    [{ std: 'c++98' }, RangeError, /options.std must be one of c\+\+14, c\+\+17, c\+\+20/],
    [{ flags: ['-arch=sm_80'] }, RangeError, /architecture is chosen for the device/],
    [{ flags: ['-I/x'] }, RangeError, /options.includePaths/],
    [{ flags: ['--pre-include=x.h'] }, RangeError, /options.headers/],
    [{ flags: ['-DX=1'] }, RangeError, /options.defines/],
    [{ flags: ['use_fast_math'] }, RangeError, /options.flags\[0\]/],
    [{ flags: ['-a b'] }, RangeError, /options.flags\[0\]/],
    [{ nameExpressions: [' '] }, RangeError, /options.nameExpressions\[0\]/],
    [{ signatures: { k: 1 } }, TypeError, /options.signatures\['k'\]/],
    [{ device: -1 }, RangeError, /options.device/],
    [{ cache: 'no' }, TypeError, /options.cache/],
  ])('%p is refused', (options, type, message) => {
    expect(() => resolveCompileOptions(options)).toThrow(type);
    expect(() => resolveCompileOptions(options)).toThrow(message);
  });
});

describe('the target architecture', () => {
  const cuda13 = [75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121];

  test('a cubin for the device itself when NVRTC knows it', () => {
    expect(chooseTarget(90, cuda13)).toEqual({ arch: 90, cubin: true, option: '--gpu-architecture=sm_90', note: '' });
    expect(chooseTarget(75, cuda13)?.option).toBe('--gpu-architecture=sm_75');
  });

  test('a cubin of an earlier minor version of the same major, saying so', () => {
    const t = chooseTarget(92, cuda13);
    expect(t).toMatchObject({ arch: 90, cubin: true, option: '--gpu-architecture=sm_90' });
    expect(t?.note).toMatch(/does not know sm_92/);
  });

  test('PTX only for a GPU newer than NVRTC, saying so; nothing for one older than NVRTC supports', () => {
    const t = chooseTarget(130, cuda13);
    expect(t).toMatchObject({ arch: 121, cubin: false, option: '--gpu-architecture=compute_121' });
    expect(t?.note).toMatch(/PTX/);
    expect(chooseTarget(70, cuda13)).toBeNull();
  });
});

// The log of a real NVRTC 13.0 compilation (the source below, as user.cu).
const BAD_SOURCE = `extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + foo;
  int j = "abc";
}
`;
const BAD_LOG = `user.cu(3): error: identifier "foo" is undefined
      if (i < n) y[i] = a * x[i] + foo;
                                   ^

user.cu(4): error: a value of type "const char *" cannot be used to initialize an entity of type "int"
    int j = "abc";
            ^

2 errors detected in the compilation of "user.cu".
`;

describe('CompileError', () => {
  test('parses NVRTC diagnostics with their columns', () => {
    const d = parseLog(BAD_LOG);
    expect(d.map((x) => [x.file, x.line, x.column, x.severity])).toEqual([
      ['user.cu', 3, 34, 'error'],
      ['user.cu', 4, 11, 'error'],
    ]);
    expect(d[0].message).toBe('identifier "foo" is undefined');
    expect(parseLog('a.cu(7): warning #177-D: variable "x" was declared but never referenced')).toMatchObject([
      { file: 'a.cu', line: 7, severity: 'warning' },
    ]);
  });

  test('the message is the first error with file, line, column, the line and a caret; .log is the whole log', () => {
    const e = compileErrorFromLog(BAD_LOG, 'NVRTC_ERROR_COMPILATION', new Map([['user.cu', BAD_SOURCE]]), 'x');
    expect(e).toBeInstanceOf(CompileError);
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('CompileError');
    expect(e.message).toBe(
      [
        'user.cu:3:34: error: identifier "foo" is undefined',
        ' 3 |     if (i < n) y[i] = a * x[i] + foo;',
        '   |                                  ^',
        '(1 more error in .log)',
      ].join('\n'),
    );
    expect(e.log).toBe(BAD_LOG);
    expect([e.file, e.line, e.column, e.code]).toEqual(['user.cu', 3, 34, 'NVRTC_ERROR_COMPILATION']);
    expect(e.diagnostics).toHaveLength(2);
  });

  test('a line NVRTC printed differently (tabs) still gets the caret under the right character', () => {
    const src = 'extern "C" __global__ void k() {\n\t\tint v = oops;\n}\n';
    const log = 'k.cu(2): error: identifier "oops" is undefined\n          int v = oops;\n                  ^\n';
    const e = compileErrorFromLog(log, 'NVRTC_ERROR_COMPILATION', new Map([['k.cu', src]]), 'x');
    expect(e.column).toBe(11);
    expect(e.message.split('\n')[2]).toBe('   | \t\t        ^');
  });

  test('one mistake in an element-wise body is one error, though each copy of the body reports it', () => {
    const spec = { in: 'T x, T y, T a', out: 'T z', body: 'z = a * xx + y', name: 'axpy' };
    const b = elementwiseSource(spec, ['float32', 'float32', 'float32', 'float32'], [true, true, false]);
    const copies = (b.source.match(/#line 1 "axpy:body"/g) ?? []).length;
    expect(copies).toBeGreaterThan(1);
    // NVRTC's log of the generated source: the diagnostic once per copy of the body.
    const one = 'axpy:body(1): error: identifier "xx" is undefined\n  z = a * xx + y\n          ^\n\n';
    const log = one.repeat(copies) + `${copies} errors detected in the compilation of "axpy.generated.cu".\n`;
    const e = compileErrorFromLog(log, 'NVRTC_ERROR_COMPILATION', b.sources, 'axpy did not compile');
    expect(e.message).not.toMatch(/more error/);
    expect(e.diagnostics).toHaveLength(1);
    // Two different mistakes stay two.
    const two = one + 'axpy:body(1): error: identifier "yy" is undefined\n  z = a * x + yy\n              ^\n\n';
    expect(compileErrorFromLog(two.repeat(2), 'NVRTC_ERROR_COMPILATION', b.sources, 'x').message).toMatch(
      /\(1 more error in \.log\)/,
    );
  });

  test('a log without a located error: the first error line', () => {
    const e = compileErrorFromLog(
      'nvrtc: error: failed to open libnvrtc-builtins.so.13.0.\n  Make sure that libnvrtc-builtins.so.13.0 is installed correctly.\n',
      'NVRTC_ERROR_BUILTIN_OPERATION_FAILURE',
      new Map(),
      'nvrtcCompileProgram failed with NVRTC_ERROR_BUILTIN_OPERATION_FAILURE',
    );
    expect(e.message).toMatch(
      /failed with NVRTC_ERROR_BUILTIN_OPERATION_FAILURE: nvrtc: error: failed to open libnvrtc-builtins/,
    );
    expect(e.line).toBeUndefined();
  });
});

/** Every `#line N "<program>"` in `source` must say the number of the line after it. */
function expectLineMarksTrue(source: string, program: string) {
  const lines = source.split('\n');
  let checked = 0;
  lines.forEach((l, i) => {
    const m = /^#line (\d+) "(.*)"$/.exec(l);
    if (m && m[2] === program) {
      expect(Number(m[1])).toBe(i + 2);
      checked++;
    }
  });
  expect(checked).toBeGreaterThan(0);
}

describe('generated kernels', () => {
  test('elementwise: the body under #line 1 of its own name, four loads in flight, references for outputs', () => {
    const spec = { in: 'float32 x, float32 y, float32 a', out: 'float32 z', body: 'z = a * x + y;', name: 'saxpy' };
    const b = elementwiseSource(spec, ['float32', 'float32', 'float32', 'float32'], [true, true, false]);
    expect(b.program).toBe('saxpy.generated.cu');
    const src = b.source;
    expect(src).toContain(
      'extern "C" __global__ void ck_elementwise(const float* ck_in_x, const float* ck_in_y, float a, float* ck_out_z, long long ck_n)',
    );
    // The vector path, 4 unrolled scalar bodies and the scalar tail.
    expect(src.match(/#line 1 "saxpy:body"\nz = a \* x \+ y;\n/g)).toHaveLength(6);
    expect(src).toContain('const float ck_x_3 = ck_in_x[ck_i + 3 * ck_stride];');
    expect(src).toContain('float& z = ck_out_z[i];');
    // float4-sized vectors of every element-wise array (not of the scalar a), used only where all are aligned.
    expect(src).toContain('const ck_vec<float, 4> ck_x_v = reinterpret_cast<const ck_vec<float, 4>*>(ck_in_x)[ck_j];');
    expect(src).toContain('(unsigned long long)ck_out_z % sizeof(ck_vec<float, 4>)');
    expect(src).not.toContain('ck_a_v');
    // z is a reference into its array, told its alignment (the compiler merges the stores).
    expect(src).toContain(
      'float* const ck_z_a = static_cast<float*>(__builtin_assume_aligned(ck_out_z, sizeof(ck_vec<float, 4>)));',
    );
    expect(src).toContain('        float& z = ck_z_a[i];');
    expect(src).toContain('ck_i += ck_nv * 4;');
    expectLineMarksTrue(src, b.program);
    expect(b.sources.get('saxpy:body')).toBe('z = a * x + y;');
  });

  test('elementwise: vectors of 16 bytes of the widest dtype', () => {
    const mixed = elementwiseSource(
      { in: 'float32 x, float64 y', out: 'float64 z', body: 'if (x > 0) z = x + y', name: 'mixed' },
      ['float32', 'float64', 'float64'],
      [true, true],
    ).source;
    expect(mixed).toContain('const ck_vec<float, 2> ck_x_v');
    expect(mixed).toContain('__builtin_assume_aligned(ck_out_z, sizeof(ck_vec<double, 2>))');
    // Only raw arrays and scalars: no vector path.
    const raw = elementwiseSource(
      { in: 'raw float64 x, float64 a', out: 'raw float64 y', body: 'y[i] = a * x[i]', name: 'rawonly' },
      ['float64', 'float64', 'float64'],
      [true, false],
    ).source;
    expect(raw).not.toContain('ck_vec');
    expectLineMarksTrue(mixed, 'mixed.generated.cu');
  });

  // Bodies that a text scan took for "assigns z, never reads it" although z may be left unwritten or its
  // old value read: macros (preamble, headers, defines), comment and string delimiters a scan misreads,
  // GNU statement expressions, digraphs. Whatever the body, z in the vector path is the element in the
  // array (as in the scalar loops), never a copy that is stored whole.
  test.each([
    ['x > 0 ? ({ z = x; }) : 0.0f', {}],
    ['WHEN(x > 0) { z = x; }', { preamble: '#define WHEN(c) if (c)' }],
    ['WHEN(x > 0) { z = x; }', { preamble: '#include "when.h"', headers: { 'when.h': '#define WHEN(c) if (c)' } }],
    ['WHEN_POSITIVE { z = x; }', { defines: { WHEN_POSITIVE: 'if (x > 0)' } }],
    ['w = OLD; z = x', { defines: { OLD: 'z' } }],
    ['// keep /* for later\nw = z;\n// */\nz = x', {}],
    ['printf("/*"); w = z; printf("*/"); z = x', {}],
    ['const char* s = R"(/*)"; w = z; s = R"(*/)"; z = x', {}],
    ['w = x; // two outputs \\\nz = x', {}],
    ['auto f = <:&:> { z = x; }; (void)f', {}],
    ['z = x', {}],
  ])('elementwise: the body %j sees z in its array in the vector path', (body, extra) => {
    const src = elementwiseSource(
      { in: 'float32 x', out: 'float32 w, float32 z', body, name: 'tricky', ...extra },
      ['float32', 'float32', 'float32'],
      [true],
    ).source;
    expect(src).toContain('        float& z = ck_z_a[i];');
    expect(src).not.toMatch(/ck_vec<float, 4> ck_[wz]_v/);
  });

  test('elementwise: continue and break in the body end its element, in every copy of the body', () => {
    // In the unrolled scalar loop a bare `continue` skipped the other three elements of the iteration
    // and `break` ran some of them twice (in the tail loop); in the vector path they acted per element.
    const b = elementwiseSource(
      { in: 'float32 x', out: 'float32 z', body: 'if (x < 0) continue;\nz = x', name: 'skip' },
      ['float32', 'float32'],
      [true],
    );
    // Each copy: `do {`, the body's two lines and its #line, `;`, `} while (0);`.
    const parts = b.source.split('#line 1 "skip:body"\n');
    expect(parts).toHaveLength(7);
    for (let k = 1; k < parts.length; k++) {
      const before = parts[k - 1].trimEnd().split('\n');
      const after = parts[k].split('\n').map((l) => l.trim());
      expect([k, before[before.length - 1].trim(), after[3], after[4]]).toEqual([k, 'do {', ';', '} while (0);']);
    }
    expectLineMarksTrue(b.source, b.program);
  });

  test('elementwise: raw arrays are pointers the body indexes; the preamble comes first', () => {
    const b = elementwiseSource(
      {
        in: 'raw float64 x',
        out: 'float64 y',
        body: 'y = x[(i + 1) % n] - x[i];',
        preamble: 'int helper();',
        name: 'diff',
      },
      ['float64', 'float64'],
      [true],
    );
    expect(b.source).toContain('ck_elementwise(const double* x, double* ck_out_y, long long ck_n)');
    expect(b.source.indexOf('#line 1 "diff:preamble"')).toBeLessThan(b.source.indexOf('ck_elementwise'));
    expectLineMarksTrue(b.source, b.program);
  });

  test('reduction: identity, reduce, map and post each under their own name; five kernels', () => {
    const spec = {
      in: 'float32 x',
      out: 'float64 s',
      map: 'x * x',
      reduce: 'a + b',
      post: 'sqrt(a)',
      identity: '0',
      name: 'norm',
    };
    const b = reductionSource(spec, ['float32'], [true], 'float64', 'float64');
    for (const part of ['identity', 'reduce', 'map', 'post']) expect(b.source).toContain(`#line 1 "norm:${part}"`);
    for (const k of ['ck_reduce_blocks', 'ck_reduce_final', 'ck_reduce_rows', 'ck_reduce_cols', 'ck_reduce_cols_final'])
      expect(b.source).toContain(`extern "C" __global__ void ${k}(`);
    expect(b.source).toContain('typedef double ck_R;');
    expect(b.source).toContain('typedef double ck_Out;');
    expectLineMarksTrue(b.source, b.program);
  });

  test('an input may be its own output element by element, never where a raw side reads or writes others', () => {
    const arr = () => new DeviceArray({} as unknown as BufferHandle, 'float64', 8, 0);
    const x = arr();
    const y = arr();
    const shift = elementwise({ in: 'raw float64 x', out: 'float64 y', body: 'y = x[(i + 1) % n] - x[i]', name: 'd' });
    expect(() => shift.source(x, { out: x, size: 8 })).toThrow(/options\.out\[0\] is also the input x, and x is raw/);
    expect(() => shift.source(x, { out: y, size: 8 })).not.toThrow();
    const scatter = elementwise({ in: 'float64 x', out: 'raw float64 y', body: 'y[n - 1 - i] = x', name: 's' });
    expect(() => scatter.source(x, { out: x })).toThrow(/and y is raw/);
    const axpy = elementwise({ in: 'float64 x, float64 a', out: 'float64 z', body: 'z = a * x', name: 'ax' });
    expect(() => axpy.source(x, 2, { out: x })).not.toThrow(); // element by element: in place is safe
  });

  test('spec errors are found when the kernel is made', () => {
    const ok = { in: 'float32 x', out: 'float32 y', body: 'y = x' };
    expect(() => elementwise({ ...ok, in: 'float32 i' })).toThrow(/the name i is reserved/);
    expect(() => elementwise({ ...ok, in: 'float32 x, float32 x' })).toThrow(/used twice/);
    expect(() => elementwise({ ...ok, out: 'float32 x' })).toThrow(/used twice/);
    expect(() => elementwise({ ...ok, in: 'float32' })).toThrow(RangeError);
    expect(() => elementwise({ ...ok, in: 'float 32 x' })).toThrow(/a dtype .* or a placeholder/);
    expect(() => elementwise({ ...ok, out: 'U y' })).toThrow(/U of y appears in no input/);
    expect(() => elementwise({ ...ok, out: '' })).toThrow(/at least one output/);
    expect(() => elementwise({ ...ok, body: 3 } as never)).toThrow(TypeError);
    expect(() => elementwise({ ...ok, name: 'bad name' })).toThrow(/spec.name/);
    expect(() => elementwise({ ...ok, in: 'float32 ck_x' })).toThrow(/reserved/);
    // Fine: a placeholder shared by inputs and output, C spellings.
    expect(typeof elementwise({ in: 'T x, double a', out: 'T y', body: 'y = x * a' })).toBe('function');
    const red = { in: 'float64 x', out: 'float64 s', map: 'x', reduce: 'a + b', identity: '0' };
    expect(() => reduction({ ...red, in: 'float64 a' })).toThrow(/the name a is reserved/);
    expect(() => reduction({ ...red, in: 'raw float64 x' })).toThrow(/cannot be raw/);
    expect(() => reduction({ ...red, out: 'float64 s, float64 t' })).toThrow(/exactly one/);
    expect(() => reduction({ ...red, identity: '' })).toThrow(/spec.identity/);
    expect(() => reduction({ ...red, reduceType: 'R' })).toThrow(/R .* appears in no input/);
    expect(typeof reduction({ ...red, in: 'T x', out: 'T s', reduceType: 'float64' })).toBe('function');
  });
});
