// Finding kernels and their parameters in CUDA C++ sources (lib/kernels/signature.ts, ctypes.ts): what a
// launch checks its arguments against. Pure parsing: runs without a GPU and without NVRTC.
import fc from 'fast-check';

import { canonicalType, parseParam, parseParamList, UnsupportedParam } from '../lib/kernels/ctypes';
import { describeKernels, storedKernels } from '../lib/kernels/module';
import {
  findKernels,
  instantiate,
  kernelSignature,
  isIdentifier,
  normalizeExpression,
  splitExpression,
  stripSource,
  typeContext,
} from '../lib/kernels/signature';

describe('parameter types', () => {
  test.each([
    ['unsigned', 'unsigned int'],
    ['unsigned int', 'unsigned int'],
    ['long int unsigned', 'unsigned long'],
    ['long long', 'long long'],
    ['unsigned long long int', 'unsigned long long'],
    ['signed char', 'signed char'],
    ['short int', 'short'],
    ['std::int32_t', 'int32_t'],
    ['cuda::std::size_t', 'size_t'],
    ['float2', 'float2'],
  ])('%s is %s', (text, canonical) => {
    expect(canonicalType(text.split(' '))).toBe(canonical);
  });

  test('pointers take the dtype of their pointee, const pointees are read-only', () => {
    const cases: [string, string, string | null, boolean][] = [
      ['const float* __restrict__ x', 'x', 'float32', true],
      ['float *y', 'y', 'float32', false],
      ['double* const out', 'out', 'float64', false],
      ['float const* in', 'in', 'float32', true],
      ['const int* idx', 'idx', 'int32', true],
      ['unsigned* bits', 'bits', 'uint32', false],
      ['uint32_t* u', 'u', 'uint32', false],
      ['float4* v', 'v', 'float32', false],
      ['void* raw', 'raw', null, false],
      ['unsigned char* bytes', 'bytes', null, false],
      ['__half* h', 'h', null, false],
      ['float** table', 'table', null, false],
      ['const double v[]', 'v', 'float64', true],
      ['struct MyStruct* s', 's', null, false],
    ];
    for (const [decl, name, dtype, readOnly] of cases) {
      const p = parseParam(decl, 'unnamed');
      expect(p.name).toBe(name);
      expect(p.type).toMatchObject({ kind: 'pointer', size: 8, dtype, readOnly });
    }
  });

  test('scalars: size and kind', () => {
    const cases: [string, string, string, number][] = [
      ['int n', 'n', 'int32', 4],
      ['unsigned n', 'n', 'uint32', 4],
      ['const long long count', 'count', 'int64', 8],
      ['size_t bytes', 'bytes', 'uint64', 8],
      ['float a', 'a', 'float32', 4],
      ['double alpha', 'alpha', 'float64', 8],
      ['bool flag', 'flag', 'bool', 1],
      ['char c', 'c', 'int8', 1],
      ['unsigned short s', 's', 'uint16', 2],
      ['int64_t big', 'big', 'int64', 8],
      ['__half h', 'h', 'float16', 2],
      ['__nv_bfloat16 b', 'b', 'bfloat16', 2],
      ['const __grid_constant__ int g', 'g', 'int32', 4],
      ['int n = 4', 'n', 'int32', 4],
    ];
    for (const [decl, name, scalar, size] of cases) {
      const p = parseParam(decl, 'unnamed');
      expect(p.name).toBe(name);
      expect(p.type).toMatchObject({ kind: 'scalar', scalar, size });
    }
  });

  test('unnamed parameters get the fallback name', () => {
    expect(parseParam('float*', 'arg2').name).toBe('arg2');
    expect(parseParam('unsigned int', 'arg0')).toMatchObject({ name: 'arg0', type: { scalar: 'uint32' } });
    expect(parseParam('long long', 'arg1')).toMatchObject({ name: 'arg1', type: { scalar: 'int64' } });
  });

  test('what a launch cannot pass is refused with the reason', () => {
    expect(() => parseParam('float& x', 'a')).toThrow(/reference/);
    expect(() => parseParam('Weights w', 'a')).toThrow(/type Weights cannot be passed/);
    expect(() => parseParam('long double x', 'a')).toThrow(UnsupportedParam);
    expect(() => parseParam('void (*f)(int)', 'a')).toThrow(/function pointers/);
    expect(() => parseParam('cuda::std::array<float, 4> v', 'a')).toThrow(/template types/);
    expect(() => parseParamList('int n, Weights w')).toThrow(/parameter 1 \(Weights w\)/);
  });

  test('parameter lists: void and empty are no parameters; commas inside brackets do not split', () => {
    expect(parseParamList('void')).toEqual([]);
    expect(parseParamList('  ')).toEqual([]);
    expect(parseParamList('int n, float a, const float* x, float* y').map((p) => p.name)).toEqual(['n', 'a', 'x', 'y']);
    expect(parseParamList('float v[4], int n').map((p) => p.type.kind)).toEqual(['pointer', 'scalar']);
  });
});

describe('pointees: a typed array where the dtype is known, any array only where the type has none', () => {
  test.each([
    ['const float3* p', 'float32'],
    ['float1* p', 'float32'],
    ['double3* p', 'float64'],
    ['double4* p', 'float64'],
    ['double4_16a* p', 'float64'],
    ['double1* p', 'float64'],
    ['int3* p', 'int32'],
    ['int1* p', 'int32'],
    ['uint3* p', 'uint32'],
    ['uint1* p', 'uint32'],
  ])('%s takes only %s', (decl, dtype) => {
    expect(parseParam(decl, 'p').type).toMatchObject({ kind: 'pointer', dtype });
  });

  test.each(['char4* p', 'longlong2* p', '__half2* p', 'long long* p', 'int64_t* p', 'const void* p'])(
    '%s takes any array',
    (decl) => {
      expect(parseParam(decl, 'p').type).toMatchObject({ kind: 'pointer', dtype: null });
    },
  );

  test('a pointee of no dtype here takes any array: structs (in namespaces too), header types, names the scan cannot resolve', () => {
    const ctx = typeContext('namespace ns { struct Particle { float x, v; }; }\ntypedef struct { int a; } Pair;');
    for (const decl of [
      'Particle* p',
      'ns::Particle* p',
      'Pair* p',
      'T* p',
      'const __nv_fp8_e4m3* p',
      '__nv_fp8x4_e4m3* p',
      'const cuFloatComplex* p',
    ])
      expect(parseParam(decl, 'p', ctx).type).toMatchObject({ kind: 'pointer', dtype: null });
    // An alias of a template type is not expanded: the name stays, and takes any array.
    const tmpl = typeContext('using F = cuda::std::conditional_t<true, float, double>;');
    expect(parseParam('F* x', 'x', tmpl).type).toMatchObject({ kind: 'pointer', dtype: null });
  });

  test("options.defines resolve a type the source leaves to them; the source's own aliases are not guessed", () => {
    const dtypeOf = (
      src: string,
      decl: string,
      defines: [string, string | null][] = [],
      headers: [string, string][] = [],
    ) => {
      const t = parseParam(decl, 'x', typeContext(src, headers, defines)).type;
      return t.kind === 'pointer' ? t.dtype : t.scalar;
    };
    expect(dtypeOf('', 'real* x', [['real', 'double']])).toBe('float64');
    expect(dtypeOf('', 'const real* x', [['real', 'float']])).toBe('float32');
    expect(
      dtypeOf('', 'real* x', [
        ['real', 'REAL_T'],
        ['REAL_T', 'unsigned'],
      ]),
    ).toBe('uint32');
    expect(dtypeOf('', 'idx n', [['idx', 'long long']])).toBe('int64');
    expect(dtypeOf('', 'float* RESTRICT x', [['RESTRICT', '__restrict__']])).toBe('float32');
    expect(dtypeOf('', 'real* x', [['real', null]])).toBeNull(); // defined to nothing: as written
    // Where the source (or a string header) gives the name a meaning of its own, its #if branches and
    // scopes decide, which the scan does not read: any array, never a guess.
    const own: [string, [string, string][]][] = [
      ['#ifndef real\n#define real float\n#endif\n', []],
      ['#undef real\ntypedef float real;\n', []],
      ['typedef float real;\n', []],
      ['using real = float;\n', []],
      ['#include "cfg.h"\n', [['cfg.h', '#ifndef real\r\n#define real float\r\n#endif\r\n']]],
      ['namespace detail { typedef float real; }\n', []],
      // Directives as the compiler finds them: after a comment, across a splice, as %:.
      ['/* the type */ #define real float\n', []],
      ['#def\\\nine real float\n', []],
      ['%:define real float\n', []],
    ];
    for (const [src, headers] of own)
      expect([src, dtypeOf(src, 'real* x', [['real', 'double']], headers)]).toEqual([src, null]);
    // Without a define, a typedef of the source is not resolved either: any array, as a struct.
    expect(dtypeOf('typedef double real;', 'real* x')).toBeNull();
    expect(dtypeOf('#define real double\n', 'real* x')).toBeNull();
  });

  test('defines rename types, never parameters', () => {
    const ctx = typeContext(
      '',
      [],
      [
        ['index', 'long long'],
        ['scalar', 'double'],
      ],
    );
    expect(parseParam('int index', 'a', ctx)).toMatchObject({ name: 'index', type: { scalar: 'int32', size: 4 } });
    expect(parseParam('float scalar', 'a', ctx)).toMatchObject({ name: 'scalar', type: { scalar: 'float32' } });
    expect(parseParam('index* p', 'a', ctx).type).toMatchObject({ dtype: null }); // long long: no dtype here
    expect(parseParam('scalar* p', 'a', ctx).type).toMatchObject({ dtype: 'float64' });
  });

  test('expansion stops: a macro in its own expansion, cycles and growth', () => {
    const cases: [string, string | null][][] = [
      [['CONST', 'CONST CONST']],
      [
        ['A', 'B'],
        ['B', 'A'],
      ],
      [['M', 'M M M M M M M M']],
    ];
    for (const defines of cases) {
      const t0 = performance.now();
      const p = parseParam('CONST A M float* x', 'x', typeContext('', [], defines));
      expect(performance.now() - t0).toBeLessThan(200);
      expect(p.name).toBe('x');
    }
  });

  test('the scans of a source are linear: long comments, blanks, many blocks and unclosed declarations', () => {
    const long = ' doc'.repeat(250_000); // 1 MB
    const sources = [
      `typedef /*${long} */ struct {\n  float x;\n} P;\n`,
      `using X =${' '.repeat(1_000_000)}{\n`,
      `#define real double /*${long} */\n`,
      '#if 0\n' + 'typedef float f\n'.repeat(20_000) + '#endif\n',
      'extern "C" { __global__ void k(float* x) {} }\n'.repeat(20_000),
      // Conditional groups, spliced comments and directives, digit separators.
      '#if 0\n#ifdef A\n#else\n#endif\n'.repeat(20_000) + '#endif\n',
      '#if 1\n#else\n__global__ void k(float* x) {}\n#endif\n'.repeat(20_000),
      '// \\\n'.repeat(100_000),
      '#define A \\\r\n /* \n */'.repeat(50_000),
      `int x = 1${"'1".repeat(300_000)};\n`,
    ];
    for (const src of sources) {
      const t0 = performance.now();
      typeContext(src, [], [['real', 'double']]);
      findKernels(src);
      expect(performance.now() - t0).toBeLessThan(2000);
    }
  });

  test('at compile level: a kernel over options.defines takes only arrays of its dtype', () => {
    const viaDefine = describeKernels('extern "C" __global__ void scale(real* x, int n) { }', {
      headers: [],
      defines: [['real', 'double']],
    });
    expect(viaDefine.params.scale[0].type).toMatchObject({ dtype: 'float64' });
    // Without the define the scan cannot tell what real is: any array, as for a struct.
    expect(describeKernels('extern "C" __global__ void scale(real* x, int n) { }').params.scale[0].type).toMatchObject({
      dtype: null,
    });
  });

  test('template defaults that name earlier parameters are filled in', () => {
    const src = 'template <typename T, typename U = T> __global__ void k(const T* x, U* y) {}';
    const sig = kernelSignature('k<float>', findKernels(src), {});
    expect(sig.ok && sig.params.map((p) => p.type)).toMatchObject([{ dtype: 'float32' }, { dtype: 'float32' }]);
    const both = kernelSignature('k<float, double>', findKernels(src), {});
    expect(both.ok && both.params[1].type).toMatchObject({ dtype: 'float64' });
    // A value substituted is not substituted again: k<U> keeps U as the argument's text.
    expect(instantiate(findKernels(src)[0], ['U'])).toBe('const U* x, U* y');
  });
});

describe('finding kernels in a source', () => {
  const source = `
#include <cuda_fp16.h>
#define BLOCK 256
// __global__ void commented(int x) {}
/* extern "C" __global__ void alsoCommented(float* x); */
const char* text = "__global__ void inAString(int)";

extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" {
__global__ void __launch_bounds__(BLOCK, 2) inBlock(double* out,
                                                     unsigned n) { out[0] = n; }
__device__ float helper(float x) { return x; }
}

template <typename T, int N = 4>
__global__ void scale(T* x, T a, int n) { if (threadIdx.x < n) x[threadIdx.x] *= a * N; }

namespace ns {
__global__ void cpp(float* v) { v[0] = 1; }
}

extern "C" __global__ void declaredFirst(int n);
extern "C" __global__ void declaredFirst(int n) {}
`;

  test('strips comments, strings and preprocessor lines, keeping offsets', () => {
    const s = stripSource(source);
    expect(s.length).toBe(source.length);
    expect(s).not.toContain('commented');
    expect(s).not.toContain('inAString');
    expect(s).not.toContain('BLOCK 256');
    expect(s).toContain('extern "C" __global__ void saxpy');
  });

  test('finds extern "C" kernels, kernels in extern "C" blocks, templates and C++ kernels, once each', () => {
    const found = findKernels(source);
    expect(found.map((k) => [k.name, k.externC, k.template !== null])).toEqual([
      ['saxpy', true, false],
      ['inBlock', true, false],
      ['scale', false, true],
      ['cpp', false, false],
      ['declaredFirst', true, false],
    ]);
    expect(found[0].paramsText).toBe('int n, float a, const float* x, float* y');
    expect(found[1].paramsText).toBe('double* out, unsigned n');
    expect(found[2].template).toEqual([
      { kind: 'type', name: 'T' },
      { kind: 'value', name: 'N', default: '4' },
    ]);
  });

  test('signatures: extern "C" by name, templates instantiated, overrides from options.signatures', () => {
    const kernels = findKernels(source);
    const saxpy = kernelSignature('saxpy', kernels, {});
    expect(saxpy.ok && saxpy.params.map((p) => [p.name, p.type.kind])).toEqual([
      ['n', 'scalar'],
      ['a', 'scalar'],
      ['x', 'pointer'],
      ['y', 'pointer'],
    ]);
    const scaled = kernelSignature('scale<double, 2>', kernels, {});
    expect(scaled.ok && scaled.params.map((p) => p.type)).toMatchObject([
      { kind: 'pointer', dtype: 'float64' },
      { kind: 'scalar', scalar: 'float64' },
      { kind: 'scalar', scalar: 'int32' },
    ]);
    // The default fills the missing value argument.
    const defaulted = kernelSignature('scale<float>', kernels, {});
    expect(defaulted.ok && defaulted.params[0].type).toMatchObject({ kind: 'pointer', dtype: 'float32' });
    const given = kernelSignature('made<int>', kernels, { 'made< int >': 'int* out, int n' });
    expect(given.ok && given.source).toBe('signatures');
    expect(kernelSignature('ns::cpp', kernels, {}).ok).toBe(true);
  });

  test('a kernel declared, then defined: one kernel, extern "C" if either declaration says so', () => {
    const proto = `extern "C" __global__ void k(float*, int);
extern "C" __global__ void k(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = 0; }`;
    expect(findKernels(proto)).toHaveLength(1);
    expect(kernelSignature('k', findKernels(proto), {})).toMatchObject({ ok: true });
    expect(Object.keys(describeKernels(proto).params)).toEqual(['k']);
    const sig = kernelSignature('k', findKernels(proto), {});
    expect(sig.ok && sig.params.map((p) => p.name)).toEqual(['x', 'n']);
    const linkage = `extern "C" __global__ void k(float* x, int n);
__global__ void k(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = 0; }`;
    expect(findKernels(linkage).map((d) => d.externC)).toEqual([true]);
    // Real overloads stay two.
    const two = 'extern "C++" __global__ void f(float* x) {}\n__global__ void f(double* x) {}';
    expect(findKernels(two)).toHaveLength(2);
    // Spellings of one type are one declaration.
    for (const [a, b] of [
      ['unsigned n', 'unsigned int n'],
      ['const float* x', 'float const* x'],
      ['const int n', 'int n'],
      ['float* const p', 'float* p'],
      ['float x[]', 'float* x'],
    ])
      expect([a, b, findKernels(`__global__ void g(${a});\n__global__ void g(${b}) {}`).length]).toEqual([a, b, 1]);
    for (const [a, b] of [
      ['long n', 'long long n'],
      ['float* a', 'float a'],
      ['const float* x', 'float* x'],
    ])
      expect([a, b, findKernels(`__global__ void g(${a});\n__global__ void g(${b}) {}`).length]).toEqual([a, b, 2]);
  });

  test('merges: attributes and (void) do not make an overload; different types stay apart', () => {
    const pairs = [
      [
        'extern "C" __global__ void k(float* x, int n);',
        'extern "C" __global__ void k(float* x, [[maybe_unused]] int n) {}',
      ],
      ['extern "C" __global__ void k(void);', 'extern "C" __global__ void k() {}'],
      ['__global__ void g([[maybe_unused]] long n);', '__global__ void g(long n) {}'],
    ];
    for (const [a, b] of pairs) expect([a, findKernels(`${a}\n${b}`).length]).toEqual([a, 1]);
    // extern "C" kernels of one name in two #ifdef branches stay two: kernel() asks for a signature.
    const branches =
      '#ifdef USE_DOUBLE\nextern "C" __global__ void k(double* x, int n) {}\n#else\nextern "C" __global__ void k(float* x, int n) {}\n#endif\n';
    expect(findKernels(branches)).toHaveLength(2);
    expect(kernelSignature('k', findKernels(branches), {})).toMatchObject({ ok: false, reason: /overloaded/ });
    // Different C++ overloads stay two, attributes or not.
    expect(
      findKernels('__global__ void g([[maybe_unused]] long n) {}\n__global__ void g([[maybe_unused]] double* p) {}'),
    ).toHaveLength(2);
  });

  test('a template head with a > inside parentheses is read as a template', () => {
    const src = 'template <int N, bool Big = (N > 2)> __global__ void k(float* x) {}';
    expect(findKernels(src)[0].template?.map((p) => p.name)).toEqual(['N', 'Big']);
    expect(kernelSignature('k<4>', findKernels(src), {})).toMatchObject({ ok: true });
  });

  test('what the compiler leaves out is left out: spliced comments, #if 0 groups, comments in directives', () => {
    const names = (src: string) => findKernels(src).map((k) => `${k.name}(${k.paramsText})`);
    // A `//` comment whose line ends in a backslash goes on to the next line (LF and CRLF).
    for (const eol of ['\n', '\r\n']) {
      const src = `// was: \\${eol}extern "C" __global__ void k(double* x, int n);${eol}extern "C" __global__ void k(float* x, int n) {}${eol}`;
      expect(stripSource(src)).toHaveLength(src.length);
      expect(names(src)).toEqual(['k(float* x, int n)']);
      // So does a preprocessor line, and a block comment inside one may span lines.
      const define = `#define OLD 1 \\${eol}  __global__ void gone(int n) {}${eol}__global__ void kept(int n) {}`;
      expect(names(define)).toEqual(['kept(int n)']);
      const commented = `#define A 1 /* spans${eol}__global__ void gone(int n) {} */ + 2${eol}__global__ void kept(int n) {}`;
      expect(names(commented)).toEqual(['kept(int n)']);
    }
    // #if 0 groups, nested conditionals inside them, an #endif inside a comment, and #else branches.
    const groups = [
      '#if 0',
      '#ifdef X',
      '__global__ void nested(int n) {}',
      '#endif',
      '/* #endif */ extern "C" __global__ void k(double* x) {}',
      "don't compile this",
      '#else',
      'extern "C" __global__ void k(float* x) {}',
      '#endif',
      '#if 1',
      '__global__ void one(int n) {}',
      '#elif defined(Y)',
      '__global__ void notElif(int n) {}',
      '#else',
      '__global__ void notElse(int n) {}',
      '#endif',
      '#  if  false // off',
      '__global__ void off(int n) {}',
      '#elif 1',
      '__global__ void elif(int n) {}',
      '#endif',
      '#ifdef Z',
      '__global__ void maybe(int n) {}',
      '#else',
      '__global__ void orNot(int n) {}',
      '#endif',
      '__global__ void after(int n) {}',
    ].join('\n');
    expect(names(groups)).toEqual([
      'k(float* x)',
      'one(int n)',
      'elif(int n)',
      'maybe(int n)',
      'orNot(int n)',
      'after(int n)',
    ]);
    const sig = kernelSignature('k', findKernels(groups), {});
    expect(sig.ok && sig.params[0].type).toMatchObject({ kind: 'pointer', dtype: 'float32' });
    // An unclosed #if 0 leaves out the rest; an unmatched #endif or #else changes nothing.
    expect(names('#if 0\n__global__ void a(int n) {}')).toEqual([]);
    expect(names('#endif\n#else\n__global__ void a(int n) {}')).toEqual(['a(int n)']);
  });

  test('stripping keeps the length and every newline, on any text', () => {
    const unit = fc.constantFrom(...'#/*\\\r\n\'"R()ifdef0 1xC'.split(''));
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 200 }), (src) => {
        const s = stripSource(src);
        expect(s).toHaveLength(src.length);
        for (let i = 0; i < src.length; i++) if (src[i] === '\n' || s[i] !== ' ') expect(s[i]).toBe(src[i]);
      }),
      { numRuns: 3000 },
    );
  });

  test('directives as the compiler finds them: after block comments, %:, whole words, any length; splices in literals', () => {
    const names = (src: string) => findKernels(src).map((k) => `${k.name}(${k.paramsText})`);
    // A block comment (even one from an earlier line) may come before a directive's #; so may \f and \v.
    const nested = (lead: string) =>
      `#if 1\n${lead}#ifdef USE_DOUBLE\nextern "C" __global__ void k(double* x) {}\n#else\nextern "C" __global__ void k(float* x) {}\n#endif\n#endif\n`;
    for (const lead of ['/**/ ', '/* a\n b */ ', '\f', '\v ']) {
      expect([lead, names(nested(lead))]).toEqual([lead, ['k(double* x)', 'k(float* x)']]);
      expect(kernelSignature('k', findKernels(nested(lead)), {})).toMatchObject({ ok: false, reason: /overloaded/ });
    }
    expect(names('#if 0\n/* other */ #else\n__global__ void k(float* x) {}\n#endif\n')).toEqual(['k(float* x)']);
    expect(names('#if 0\n/* end */ #endif\n__global__ void k(float* x) {}\n')).toEqual(['k(float* x)']);
    expect(names('#if 0\n%:endif\n__global__ void k(float* x) {}\n')).toEqual(['k(float* x)']);
    expect(names('%:if 0\n__global__ void gone(float* x) {}\n#endif\n')).toEqual([]);
    // Directive names are whole words: #if0 and #else0 are not #if and #else.
    expect(names('#if 0\n#if0 x\n#endif\n__global__ void k(float* x) {}\n')).toEqual(['k(float* x)']);
    expect(names('#if 0\n#else0\n__global__ void gone(float* x) {}\n#endif\n')).toEqual([]);
    // A condition is read whole, however long: `0 || 1` and `1 && 0` are not constants.
    expect(names(`#if 0${' '.repeat(300)}|| 1\n__global__ void k(float* x) {}\n#endif\n`)).toEqual(['k(float* x)']);
    const spliced = `#if 1${' '.repeat(72)}\\\n${' '.repeat(76)}\\\n${' '.repeat(76)}\\\n    && 0\nextern "C" __global__ void k(double* x) {}\n#else\nextern "C" __global__ void k(float* x) {}\n#endif\n`;
    expect(names(spliced)).toEqual(['k(double* x)', 'k(float* x)']);
    // A splice inside a literal (LF or CRLF, after an escaped backslash, or between an escape and its
    // character) keeps the literal going: what follows on the next line is still inside it.
    for (const eol of ['\n', '\r\n']) {
      expect(names(`const char* s = "abc\\${eol}#if 0 //";${eol}__global__ void k(float* x) {}${eol}`)).toEqual([
        'k(float* x)',
      ]);
      expect(names(`const char* s = "abc\\\\\\${eol}#if 0 //";${eol}__global__ void k(float* x) {}${eol}`)).toEqual([
        'k(float* x)',
      ]);
      expect(names(`const char* s = "abc\\${eol}__global__ void gone(double* x) {}";${eol}`)).toEqual([]);
      expect(names(`char c = '\\\\${eol}'';${eol}__global__ void k(float* x) {}${eol}`)).toEqual(['k(float* x)']);
    }
    expect(names('const char* s = "a\\\\\n"b";\n#if 0\n__global__ void gone(float* x) {}\n#endif\n')).toEqual([]);
  });

  test('directives hold digit separators, raw strings and split comment marks; NVRTC starts a line after a long comment', () => {
    const names = (src: string) => findKernels(src).map((k) => k.name);
    const k0 = '__global__ void k0(int n) {}';
    expect(names(`#define KB 1'024 // don't use /* here\n${k0}\n/* */`)).toEqual(['k0']);
    expect(names(`#define S 1'2'/*'\n${k0}\n`)).toEqual(['k0']); // 1'2, then the character literal '/*'
    expect(names(`#define S R"(" /*)"\n${k0}\n`)).toEqual(['k0']);
    // Raw strings begin at R, u8R, uR, UR or LR only: a name ending in R before a string is no prefix.
    expect(names(`const char* a = LR"x(${k0})x"; auto b = u8R"(${k0})";\n`)).toEqual([]);
    expect(names(`#define LOGR "[r] "\nconst char* a = LOGR"(";\n${k0}\n`)).toEqual(['k0']);
    // A splice inside the prefix is joined first; an R inside a number (1.R, 1'R, 1e+R) begins none.
    expect(names(`auto s = u\\\n8R"x(\n${k0}\n)x";\n`)).toEqual([]);
    for (const num of ['1.', "1'", '1e+', '0x1p-', '1u8'])
      expect([num, names(`#define S ${num}R"("\n${k0}\n`)]).toEqual([num, ['k0']]);
    expect(names(`#define A 1 /* c *\\\n/\n${k0}\n/* */`)).toEqual(['k0']);
    expect(names(`#define A 1 /\\\n/ c /*\n${k0}\n/* */`)).toEqual(['k0']);
    expect(names(`int a; /\\\n* c *\\\r\n/ ${k0}`)).toEqual(['k0']);
    // NVRTC reads a # after a comment spanning lines as a directive, even with code before the comment.
    expect(
      names('#if 0\n__global__ void k0(int n) {}\nfoo /* a\n*/ #else\n__global__ void k1(int n) {}\n#endif\n'),
    ).toEqual(['k1']);
    expect(names(`typedef int T; /* a\n*/ #if 0\n${k0}\n#endif\n`)).toEqual([]);
    // #elif is a whole word too.
    expect(names('#if 0\n__global__ void k0(int n) {}\n#elif0\n__global__ void k1(int n) {}\n#endif\n' + k0)).toEqual([
      'k0',
    ]);
  });

  test("a ' inside a number is a digit separator, not a character literal", () => {
    const src =
      "template <int N = 1'024, int M = 0x1'0> __global__ void k(float* x) { x[0] = 1'000'000; }\nextern \"C\" __global__ void c(char* s) { s[0] = 'a'; s[1] = u8'b'; }";
    const found = findKernels(src);
    expect(found.map((k) => k.name)).toEqual(['k', 'c']);
    expect(found[0].template).toEqual([
      { kind: 'value', name: 'N', default: "1'024" },
      { kind: 'value', name: 'M', default: "0x1'0" },
    ]);
    expect(stripSource(src)).not.toContain("'a'");
  });

  test('templates: a default on the declaration holds for the definition; other template heads stay apart', () => {
    const src =
      'template <typename T, int BLOCK = 256> __global__ void k(T* x, int n);\n' +
      'template <typename T, int BLOCK> __global__ void k(T* x, int n) { }\n';
    expect(findKernels(src)).toHaveLength(1);
    expect(kernelSignature('k<float>', findKernels(src), {})).toMatchObject({ ok: true });
    const two =
      'template <typename T> __global__ void fill(T* x, int n) { }\n' +
      'template <typename T, int V> __global__ void fill(T* x, int n) { }\n';
    expect(findKernels(two)).toHaveLength(2);
    const sig = kernelSignature('fill<float>', findKernels(two), {});
    expect(sig.ok && sig.params[0].type).toMatchObject({ dtype: 'float32' });
  });

  test('unknown kernels and overloads say what to do', () => {
    const kernels = findKernels(source);
    const missing = kernelSignature('nothere', kernels, {});
    expect(missing.ok).toBe(false);
    expect(!missing.ok && missing.reason).toMatch(/no __global__ function nothere.*found: saxpy/);
    const overloaded = findKernels(
      '__global__ void f(int* x) {}\n__global__ void f(float* x) {}\ntemplate <typename T> __global__ void g(T x) {}',
    );
    const f = kernelSignature('f', overloaded, {});
    expect(!f.ok && f.reason).toMatch(/overloaded.*options.signatures/);
    const tooMany = kernelSignature('g<int, int>', overloaded, {});
    expect(!tooMany.ok && tooMany.reason).toMatch(/does not fit/);
    expect(!tooMany.ok && tooMany.kind).toBe('unknown');
    const byValue = kernelSignature('s', findKernels('extern "C" __global__ void s(Weights w) {}'), {});
    expect(byValue).toMatchObject({ ok: false, kind: 'unsupported' });
  });

  test('the plain-name shortcut changes nothing: the same results as the regex rules alone, on any string', () => {
    // The rules as they were before plain names skipped them, and the regex isIdentifier replaced.
    const rules = (e: string) =>
      e
        .trim()
        .replace(/\s+/g, ' ')
        .replace(/ ?([<>,()*&:[\]]) ?/g, '$1');
    const unit = fc.constantFrom(...'aZ_09$é \t\n\u00a0\ufeff<>,:()*&[]'.split(''));
    const text = fc.oneof(fc.string({ unit }), fc.string({ unit: 'binary' }), fc.string());
    fc.assert(
      fc.property(text, (e) => {
        expect([e, normalizeExpression(e), isIdentifier(e)]).toEqual([e, rules(e), /^[A-Za-z_]\w*$/.test(e)]);
      }),
      { numRuns: 2000 },
    );
  });

  test('name expressions', () => {
    expect(normalizeExpression(' scale< float , 4 > ')).toBe('scale<float,4>');
    expect(normalizeExpression('ns :: k')).toBe('ns::k');
    // Plain names skip the regex passes and come back as they are; anything else is normalised.
    expect(normalizeExpression('saxpy_2')).toBe('saxpy_2');
    expect(normalizeExpression(' saxpy ')).toBe('saxpy');
    expect(normalizeExpression('k <int>')).toBe('k<int>');
    expect(['k', '_k9', 'K_'].every(isIdentifier)).toBe(true);
    expect(['', '9k', 'k-1', 'k<int>', ' k', 'ns::k', 'é'].some(isIdentifier)).toBe(false);
    expect(splitExpression('&ns::scale<float, 4>')).toEqual({ base: 'scale', args: ['float', '4'] });
    expect(splitExpression('ns::k')).toEqual({ base: 'k', args: null });
    expect(splitExpression('k<cuda::std::pair<int, int>>')).toEqual({ base: 'k', args: ['cuda::std::pair<int, int>'] });
    const t = findKernels('template <typename T> __global__ void k(const T* a, T* Tb, T b) {}')[0];
    // Only whole identifiers are replaced.
    expect(instantiate(t, ['double'])).toBe('const double* a, double* Tb, double b');
  });
});

describe('what a cache entry keeps of its source (describeKernels, storedKernels)', () => {
  const source = `extern "C" __global__ void a(int n, const float* x, double* y, unsigned long long m) {}
extern "C" __global__ void s(MyStruct v) {}
template <typename T, int N = 4> __global__ void b(T* x) {}
__global__ void c(int n) {}`;

  test('the kernels and the parsed parameters of each plain extern "C" one come back through JSON', () => {
    const kept = describeKernels(source);
    expect(kept.kernels).toEqual(findKernels(source));
    // a parses; s has a parameter JavaScript cannot pass (kernel() parses it again and says why);
    // templates and C++ names are left to kernel().
    expect(Object.keys(kept.params)).toEqual(['a']);
    const parsed = kernelSignature('a', findKernels(source), {});
    expect(parsed.ok && kept.params.a).toEqual(parsed.ok && parsed.params);
    expect(storedKernels(JSON.parse(JSON.stringify(kept)))).toEqual(kept);
  });

  test('anything else is not taken: the source is parsed again', () => {
    const kept = JSON.parse(JSON.stringify(describeKernels(source))) as Record<string, unknown>;
    const a = (kept.params as Record<string, { name: string; type: Record<string, unknown> }[]>).a;
    const withParam = (type: Record<string, unknown>) => ({ ...kept, params: { a: [{ ...a[0], type }] } });
    for (const bad of [
      undefined,
      null,
      'a',
      [],
      findKernels(source),
      { kernels: findKernels(source) },
      { kernels: findKernels(source), params: [] },
      { kernels: [{ name: 'a', externC: 'yes', paramsText: '', template: null }], params: {} },
      { kernels: [{ name: 'a', externC: true, paramsText: 1, template: null }], params: {} },
      { kernels: [{ name: 'a', externC: true, paramsText: '', template: [{ kind: 'other', name: 'T' }] }], params: {} },
      { kernels: [{ name: 'a', externC: true, paramsText: '' }], params: {} },
      { ...kept, params: { a: 'int n' } },
      { ...kept, params: { a: [{ name: 1, type: a[0].type }] } },
      withParam({ kind: 'scalar', scalar: 'int33', size: 4, text: 'int' }),
      withParam({ kind: 'scalar', scalar: 'int32', size: 8, text: 'int' }),
      withParam({ kind: 'scalar', scalar: 'toString', size: 4, text: 'int' }),
      withParam({ kind: 'pointer', size: 4, dtype: null, readOnly: true, text: 'void*' }),
      withParam({ kind: 'pointer', size: 8, dtype: 7, readOnly: true, text: 'void*' }),
      withParam({ kind: 'reference', size: 8, text: 'int&' }),
      // Made by another version of the parsers.
      { ...kept, version: 0 },
      { ...kept, version: undefined },
    ])
      expect(storedKernels(bad)).toBeNull();
  });
});
