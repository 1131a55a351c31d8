// Users' own kernels on the GPU: raw kernels, elementwise() and reduction() for every dtype against the
// CPU (lengths 1, 7 and 1000003), templates, headers, compile errors, the disk cache across processes,
// a faulting kernel (in a child process), ordering with built-in ops and transfers, argument checks at
// launch, and several devices. Needs a GPU and NVRTC (skipped, saying why, without either).
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { tempDirs } from './helpers/temp-dirs';

// A cache folder of this suite's own, read when the first compile creates the cache. Made in
// beforeAll: where every suite here skips (no GPU) jest runs neither hook, and a folder made at load
// was left behind (68 had piled up here).
let cacheDir = '';
const cacheDirBefore = process.env.CUDA_KERNELS_CACHE_DIR;
const tmp = tempDirs('ck-kernels-gpu-');
beforeAll(() => {
  cacheDir = tmp();
  process.env.CUDA_KERNELS_CACHE_DIR = cacheDir;
});

import * as ck from '../lib';
import { type Dtype, type HostArray } from '../lib/array';
import { SANITIZER } from './harness/families';
import { expectThrows } from './helpers/errors';
import { describeGpu, gpuCount } from './helpers/gpu';

const root = path.join(__dirname, '..');
const nvrtc = ck.nvrtcInfo();
const seed = Date.now() % 100_000;
const LENGTHS = [1, 7, 1_000_003];
const DTYPES = ck.dtypes as readonly Dtype[];
const C_TYPE: Record<Dtype, string> = { float32: 'float', float64: 'double', int32: 'int', uint32: 'unsigned int' };
const HOST = { float32: Float32Array, float64: Float64Array, int32: Int32Array, uint32: Uint32Array } as const;

afterAll(() => {
  // The suites after this one run in the same process (jest -i): they get the environment back.
  if (cacheDirBefore === undefined) delete process.env.CUDA_KERNELS_CACHE_DIR;
  else process.env.CUDA_KERNELS_CACHE_DIR = cacheDirBefore;
});

/** Fresh random values of a dtype: floats in [-1, 1), integers small enough that a·x + y cannot overflow. */
function random(dtype: Dtype, n: number, s: number): HostArray {
  const f = ck.cpu.randomArray(Float64Array, n, s);
  const out = new HOST[dtype](n);
  for (let i = 0; i < n; i++)
    out[i] = dtype.startsWith('float')
      ? f[i]
      : dtype === 'int32'
        ? Math.round(f[i] * 1000)
        : Math.round((f[i] + 1) * 500);
  return out;
}

/** Exact for integers; relative to the sum of magnitudes for floats (each result may round once or twice). */
function expectClose(
  dtype: Dtype,
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  scale: ArrayLike<number> | number = 1,
) {
  expect(got.length).toBe(want.length);
  const tol = dtype === 'float32' ? 2e-6 : dtype === 'float64' ? 1e-14 : 0;
  let bad = -1;
  for (let i = 0; i < want.length; i++) {
    const s = typeof scale === 'number' ? scale : Math.max(1, Math.abs(scale[i]));
    if (!(Math.abs(got[i] - want[i]) <= tol * s)) {
      bad = i;
      break;
    }
  }
  if (bad >= 0) throw new Error(`${dtype}: element ${bad}: got ${got[bad]}, want ${want[bad]} (seed ${seed})`);
}

const wrap = (dtype: Dtype, v: number) => (dtype === 'int32' ? v | 0 : dtype === 'uint32' ? v >>> 0 : v);

/** elementwise() built for each path: as called (the vector path), and the scalar loops only. */
const BOTH_PATHS = [undefined, { CK_ELEMENTWISE_SCALAR_ONLY: 1 }] as const;
const elementwiseWith =
  (defines: (typeof BOTH_PATHS)[number]) => (name: string, inputs: string, outputs: string, body: string) =>
    ck.elementwise({ in: inputs, out: outputs, body, name, defines });

const describeKernels = nvrtc.available
  ? describeGpu
  : (name: string, fn: () => void) => describe.skip(`${name} [skipped: no NVRTC — ${nvrtc.code}]`, fn);

describeKernels(`user kernels (seed ${seed})`, () => {
  test('raw kernels of every dtype against the CPU, lengths 1, 7, 1000003', () => {
    const source = DTYPES.map(
      (
        d,
      ) => `extern "C" __global__ void axpy_${d}(long long n, ${C_TYPE[d]} a, const ${C_TYPE[d]}* __restrict__ x, ${C_TYPE[d]}* y) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}`,
    ).join('\n');
    const mod = ck.compile(source, { name: 'axpy.cu' });
    expect(mod.target).toBe(`sm_${ck.deviceProperties(0).major}${ck.deviceProperties(0).minor}`);
    for (const d of DTYPES) {
      const k = mod.kernel(`axpy_${d}`);
      expect(k.params.map((p) => [p.name, p.kind])).toEqual([
        ['n', 'scalar'],
        ['a', 'scalar'],
        ['x', 'pointer'],
        ['y', 'pointer'],
      ]);
      for (const n of LENGTHS) {
        const x = random(d, n, seed + n);
        const y = random(d, n, seed + n + 1);
        const a = d.startsWith('float') ? 0.75 : 3;
        using dx = ck.upload(x);
        using dy = ck.upload(y);
        k.launch({ grid: Math.min(Math.ceil(n / 256), 1024), block: 256 }, n, a, dx, dy);
        const want = Array.from(y, (v, i) => wrap(d, a * x[i] + v));
        expectClose(d, dy.toHostSync(), want, 2);
      }
    }
  });

  test('parameters of every scalar type arrive intact (packing and alignment)', () => {
    const mod = ck.compile(
      `#include <cuda_fp16.h>
extern "C" __global__ void echo(char c, short s, long long ll, unsigned char uc, float f, bool b, double d,
                                unsigned u, size_t z, __half h, int i, double* out) {
  out[0] = c; out[1] = s; out[2] = (double)ll; out[3] = uc; out[4] = f; out[5] = b; out[6] = d;
  out[7] = u; out[8] = (double)z; out[9] = __half2float(h); out[10] = i;
}`,
      { name: 'echo.cu' },
    );
    using out = ck.full('float64', 11, NaN);
    mod
      .kernel('echo')
      .launch(
        { grid: 1, block: 1 },
        -7,
        -300,
        -(2n ** 40n),
        200,
        0.5,
        true,
        Math.PI,
        4000000000,
        2 ** 40,
        1.5,
        -123456,
        out,
      );
    expect(Array.from(out.toHostSync())).toEqual([
      -7,
      -300,
      -(2 ** 40),
      200,
      0.5,
      1,
      Math.PI,
      4000000000,
      2 ** 40,
      1.5,
      -123456,
    ]);
  });

  test('templates through name expressions, their signatures from the declaration', () => {
    const mod = ck.compile(
      `template <typename T, int N>
__global__ void scale(T* x, T a, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a * N;
}`,
      { name: 'scale.cu', nameExpressions: ['scale<float, 4>', 'scale<double, 2>'] },
    );
    using xf = ck.upload(new Float32Array([1, 2, 3]));
    using xd = ck.upload(new Float64Array([1, 2, 3]));
    mod.kernel('scale<float, 4>').launch({ grid: 1, block: 32 }, xf, 0.5, 3);
    mod.kernel('scale< double ,2 >').launch({ grid: 1, block: 32 }, xd, 3, 3);
    expect(Array.from(xf.toHostSync())).toEqual([2, 4, 6]);
    expect(Array.from(xd.toHostSync())).toEqual([6, 12, 18]);
    expect(() => mod.kernel('scale<float, 4>').launch({ grid: 1, block: 32 }, xd, 1, 3)).toThrow(/of float32/);
    expect(() => mod.kernel('scale<int, 1>')).toThrow(/nameExpressions/);
  });

  test('headers from strings and from an include path', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-inc-'));
    try {
      fs.writeFileSync(path.join(dir, 'offset.h'), '#pragma once\n#define OFFSET 10.0\n');
      const mod = ck.compile(
        '#include "scale.h"\n#include <offset.h>\nextern "C" __global__ void value(double* out) { out[0] = SCALE * 2.0 + OFFSET; }',
        { headers: { 'scale.h': '#define SCALE 3.0\n' }, includePaths: [dir] },
      );
      using out = ck.zeros('float64', 1);
      mod.kernel('value').launch({ grid: 1, block: 1 }, out);
      expect(out.toHostSync()[0]).toBe(16);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('compile errors point at the user line, in raw sources and in elementwise bodies', () => {
    let caught: unknown;
    try {
      ck.compile('extern "C" __global__ void k(float* y) {\n  y[0] = undefined_name;\n}\n', { name: 'oops.cu' });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ck.CompileError);
    // " 2 | " then the line as written (two spaces of indent), the caret under column 10.
    expect((caught as ck.CompileError).message).toMatch(
      /^oops\.cu:2:10: error: identifier "undefined_name" is undefined\n 2 \| {3}y\[0\] = undefined_name;\n {3}\| {10}\^/,
    );
    const bad = ck.elementwise({ in: 'float32 x', out: 'float32 y', body: 'y = x;\ny += missing;', name: 'twice' });
    using x = ck.upload(new Float32Array([1]));
    let mapped: unknown;
    try {
      bad(x);
    } catch (e) {
      mapped = e;
    }
    expect(mapped).toBeInstanceOf(ck.CompileError);
    expect((mapped as ck.CompileError).message).toMatch(
      /^twice:body:2:6: error: identifier "missing" is undefined\n 2 \| y \+= missing;/,
    );
    expect((mapped as ck.CompileError).line).toBe(2);
  });

  test('elementwise: every dtype, arrays and scalars, new outputs and in place, lengths 1, 7, 1000003', () => {
    const axpy = ck.elementwise({ in: 'T x, T y, T a', out: 'T z', body: 'z = a * x + y', name: 'axpy' });
    const reverse = ck.elementwise({ in: 'raw T x', out: 'T y', body: 'y = x[n - 1 - i]', name: 'reverse' });
    for (const d of DTYPES)
      for (const n of LENGTHS) {
        const x = random(d, n, seed + 2 * n);
        const y = random(d, n, seed + 2 * n + 1);
        const a = d.startsWith('float') ? -1.25 : 5;
        using dx = ck.upload(x);
        using dy = ck.upload(y);
        using z = axpy(dx, dy, a) as ck.DeviceArray;
        expect(z.dtype).toBe(d);
        const want = Array.from(x, (v, i) => wrap(d, a * v + y[i]));
        expectClose(d, z.toHostSync(), want, 2);
        // Into a given output poisoned first: every element written.
        z.fill(d.startsWith('float') ? NaN : 0x5eed);
        axpy(dx, dy, a, { out: z });
        expectClose(d, z.toHostSync(), want, 2);
        // In place.
        axpy(dx, dy, a, { out: dy });
        expectClose(d, dy.toHostSync(), want, 2);
        using r = reverse(dx, { size: n }) as ck.DeviceArray; // only raw arrays: the length is given
        expect(Array.from(r.toHostSync())).toEqual(Array.from(x).reverse());
      }
    using a3 = ck.upload(new Float32Array(3));
    using d3 = ck.upload(new Float64Array(3));
    expect(() => axpy(a3, d3, 1)).toThrow(/T is float32 \(from x\)/);
    using a4 = ck.upload(new Float32Array(4));
    expect(() => axpy(a3, a4, 1)).toThrow(/y has 4 elements, x has 3/);
    using i3 = ck.upload(new Int32Array(3));
    expect(() => axpy(a3, a3, 1.5, { out: i3 })).toThrow(TypeError);
    expect(() => axpy(i3, i3, 1.5)).toThrow(/int32/);
  });

  test('elementwise: the vector path and the scalar loops agree; bodies that may not write keep the old values', () => {
    for (const defines of BOTH_PATHS) {
      const k = elementwiseWith(defines);
      const keep = k('keep', 'T x', 'T z', 'if (x > 0) z = x');
      const acc = k('acc', 'T x', 'T z', 'z += x');
      const widen = k('widen', 'float32 x', 'float64 z', 'z = 2.0 * x');
      for (const d of ['float32', 'float64', 'int32'] as const)
        for (const n of [1, 3, 5, 1_000_003, (1 << 20) + 6]) {
          const x = random(d, n, seed + 7 * n);
          const old = random(d, n, seed + 7 * n + 1);
          using dx = ck.upload(x);
          using z = ck.upload(old);
          keep(dx, { out: z });
          const kept = Array.from(old, (v, i) => (x[i] > 0 ? x[i] : v));
          expectClose(d, z.toHostSync(), kept, 1);
          acc(dx, { out: z });
          expectClose(
            d,
            z.toHostSync(),
            kept.map((v, i) => wrap(d, v + x[i])),
            kept.map((v, i) => Math.abs(v) + Math.abs(x[i])),
          );
          if (d === 'float32') {
            using w = widen(dx) as ck.DeviceArray;
            expect(w.dtype).toBe('float64');
            expectClose(
              'float64',
              w.toHostSync(),
              Array.from(x, (v) => 2 * v),
              1,
            );
          }
        }
    }
  });

  test('elementwise: outputs a body hides its condition or read from a text scan keep their old values', () => {
    // A condition in a macro (preamble, defines), a read behind `/*` in a string or a line comment.
    const bodies: [string, Partial<ck.ElementwiseSpec>, (x: number, old: number) => [number, number]][] = [
      ['WHEN(x > 0) { z = x; }', { preamble: '#define WHEN(c) if (c)' }, (x, old) => [0, x > 0 ? x : old]],
      ['POSITIVE { z = x; }', { defines: { POSITIVE: 'if (x > 0)' } }, (x, old) => [0, x > 0 ? x : old]],
      ['const char* s = "/*"; w = z; s = "*/"; (void)s; z = x', {}, (x, old) => [old, x]],
      ['// see /* below\nw = z;\n// */\nz = x', {}, (x, old) => [old, x]],
    ];
    const n = 1_000_003;
    const x = random('float32', n, seed + 11);
    const old = random('float32', n, seed + 12);
    bodies.forEach(([body, extra, want], k) => {
      const f = ck.elementwise({ in: 'float32 x', out: 'float32 w, float32 z', body, name: `hidden${k}`, ...extra });
      using dx = ck.upload(x);
      using w = ck.upload(new Float32Array(n));
      using z = ck.upload(old);
      f(dx, { out: [w, z] });
      const [gw, gz] = [w.toHostSync(), z.toHostSync()];
      for (let i = 0; i < n; i++) {
        const [ww, wz] = want(x[i], old[i]);
        if (gw[i] !== ww || gz[i] !== wz)
          throw new Error(`${body}: element ${i}: got w ${gw[i]}, z ${gz[i]}, want ${ww}, ${wz} (seed ${seed})`);
      }
    });
  });

  test("elementwise: a body may pass its output's address to cache-hint intrinsics and atomics, in both paths", () => {
    for (const defines of BOTH_PATHS) {
      const k = elementwiseWith(defines);
      const streamed = k('streamed', 'float32 x, float32 y, float32 a', 'float32 z', '__stcs(&z, a * x + y)');
      const evicted = k('evicted', 'float32 x', 'float32 z', 'z = __ldcs(&z) + x');
      const atomic = k('atomic', 'float32 x', 'float32 z', 'atomicAdd(&z, x)');
      for (const n of [5, 1_000_003]) {
        const x = random('float32', n, seed + 13 * n);
        const y = random('float32', n, seed + 13 * n + 1);
        using dx = ck.upload(x);
        using dy = ck.upload(y);
        using z = ck.upload(new Float32Array(n).fill(Number.NaN));
        streamed(dx, dy, 2, { out: z });
        const want = Array.from(x, (v, i) => Math.fround(2 * v + y[i]));
        expectClose('float32', z.toHostSync(), want, 3);
        evicted(dx, { out: z });
        const twice = want.map((v, i) => Math.fround(v + x[i]));
        expectClose('float32', z.toHostSync(), twice, 4);
        atomic(dx, { out: z });
        expectClose(
          'float32',
          z.toHostSync(),
          twice.map((v, i) => Math.fround(v + x[i])),
          5,
        );
      }
    }
  });

  test('elementwise: continue and break end the element, in the vector path and the scalar loops', () => {
    for (const defines of BOTH_PATHS) {
      const k = elementwiseWith(defines);
      const skip = k('skip', 'T x', 'T z', 'if (x < 0) continue;\nz += x');
      const stop = k('stop', 'T x', 'T z', 'z += 1;\nif (x < 0) break;\nz += x');
      for (const d of ['float32', 'int32'] as const)
        for (const n of [5, 1_000_003]) {
          const x = random(d, n, seed + 17 * n);
          const old = random(d, n, seed + 17 * n + 1);
          using dx = ck.upload(x);
          using z = ck.upload(old);
          skip(dx, { out: z });
          const skipped = Array.from(old, (v, i) => wrap(d, x[i] < 0 ? v : v + x[i]));
          expectClose(d, z.toHostSync(), skipped, 3);
          stop(dx, { out: z });
          expectClose(
            d,
            z.toHostSync(),
            skipped.map((v, i) => wrap(d, x[i] < 0 ? v + 1 : v + 1 + x[i])),
            6,
          );
        }
    }
  });

  test('elementwise: several outputs; a length from options.size when no argument is an array', () => {
    const split = ck.elementwise({
      in: 'float64 x',
      out: 'float64 lo, float64 hi',
      body: 'lo = floor(x); hi = x - lo;',
    });
    using x = ck.upload(new Float64Array([1.25, -0.5, 3]));
    const [lo, hi] = split(x) as ck.DeviceArray[];
    expect(Array.from(lo.toHostSync())).toEqual([1, -1, 3]);
    expect(Array.from(hi.toHostSync())).toEqual([0.25, 0.5, 0]);
    lo.free();
    hi.free();
    const iota = ck.elementwise({ in: 'int32 start', out: 'int32 y', body: 'y = start + (int)i' });
    using y = iota(100, { size: 5 }) as ck.DeviceArray;
    expect(Array.from(y.toHostSync())).toEqual([100, 101, 102, 103, 104]);
    expect(() => iota(1)).toThrow(/options.size/);
  });

  test('reduction: sums, maxima, norms and means of every dtype, whole arrays, lengths 1, 7, 1000003', () => {
    const sum = ck.reduction({ in: 'T x', out: 'T s', map: 'x', reduce: 'a + b', identity: '0', name: 'sum' });
    const sum64 = ck.reduction({ in: 'T x', out: 'double s', map: 'x', reduce: 'a + b', identity: '0', name: 'sum64' });
    const identities: Record<Dtype, string> = {
      float32: '-INFINITY',
      float64: '-INFINITY',
      int32: '(-2147483647 - 1)',
      uint32: '0u',
    };
    for (const d of DTYPES) {
      const max = ck.reduction({
        in: 'T x',
        out: 'T m',
        map: 'x',
        reduce: 'a > b ? a : b',
        identity: identities[d],
        name: `max_${d}`,
      });
      for (const n of LENGTHS) {
        const x = random(d, n, seed + 3 * n);
        using dx = ck.upload(x);
        let ref = 0;
        let abs = 0;
        let m = -Infinity;
        for (let i = 0; i < n; i++) {
          ref = d.startsWith('float') ? ref + x[i] : wrap(d, ref + x[i]);
          abs += Math.abs(x[i]);
          m = Math.max(m, x[i]);
        }
        using s = sum(dx);
        expect(s.dtype).toBe(d);
        expect(s.length).toBe(1);
        // float32 sums in float32: within n·ε of the magnitudes.
        const got = s.toHostSync()[0];
        if (d === 'float32') expect(Math.abs(got - ref)).toBeLessThanOrEqual(abs * 4e-6 + 1e-6);
        else expectClose(d, [got], [ref], abs);
        using s64 = sum64(dx);
        expect(Math.abs(s64.toHostSync()[0] - ref)).toBeLessThanOrEqual(abs * 1e-14 + 1e-12);
        using mx = max(dx);
        expect(mx.toHostSync()[0]).toBe(m);
        // Deterministic: the same bits twice.
        using again = sum(dx);
        expect(again.toHostSync()[0]).toBe(got);
      }
    }
    const norm = ck.reduction({
      in: 'float64 x',
      out: 'float64 s',
      map: 'x * x',
      reduce: 'a + b',
      post: 'sqrt(a)',
      identity: '0',
    });
    const mean = ck.reduction({
      in: 'float64 x, float64 w',
      out: 'float64 m',
      map: 'x * w',
      reduce: 'a + b',
      post: 'a / n',
      identity: '0',
    });
    const x = random('float64', 1_000_003, seed + 9) as Float64Array;
    using dx = ck.upload(x);
    let ss = 0;
    let sw = 0;
    for (const v of x) {
      ss += v * v;
      sw += v * 0.5;
    }
    using nrm = norm(dx);
    expect(nrm.toHostSync()[0]).toBeCloseTo(Math.sqrt(ss), 9);
    using mn = mean(dx, 0.5);
    expect(mn.toHostSync()[0]).toBeCloseTo(sw / x.length, 12);
    using empty0 = ck.empty('float64', 0);
    using z = norm(empty0);
    expect(z.toHostSync()[0]).toBe(0);
  });

  test('reduction along an axis of a 2-D array (rows and columns, odd shapes), into a given output too', () => {
    const sum = ck.reduction({ in: 'T x', out: 'T s', map: 'x', reduce: 'a + b', identity: '0', name: 'axsum' });
    for (const d of ['float64', 'int32'] as const)
      for (const [rows, cols] of [
        [1, 7],
        [7, 1],
        [257, 33],
        [3, 1000],
        [5000, 3],
      ]) {
        const x = random(d, rows * cols, seed + rows + cols);
        using dx = ck.upload(x, { shape: [rows, cols] });
        const rowRef = Array.from({ length: rows }, (_, r) => {
          let s = 0;
          for (let c = 0; c < cols; c++) s += x[r * cols + c];
          return s;
        });
        const colRef = Array.from({ length: cols }, (_, c) => {
          let s = 0;
          for (let r = 0; r < rows; r++) s += x[r * cols + c];
          return s;
        });
        using perRow = sum(dx, { axis: 1 });
        expectClose(d, perRow.toHostSync(), rowRef, cols);
        using perCol = ck.full(d, cols, d === 'float64' ? NaN : 0x5eed);
        sum(dx, { axis: 0, out: perCol });
        expectClose(d, perCol.toHostSync(), colRef, rows);
      }
    using flat = ck.upload(new Float64Array(12));
    expect(() => sum(flat, { axis: 0 })).toThrow(/2-D shape/);
    expect(() => sum(flat, { axis: 0, shape: [5, 2] })).toThrow(/rows × cols = 12/);
    expect(() => sum(flat, { out: flat })).toThrow(/must not be one of the inputs/);
  });

  test('launch checks: wrong dtype, a number for a pointer, wrong count, out-of-range shape; nothing is queued', () => {
    const k = ck
      .compile('extern "C" __global__ void set(int n, float v, float* y) { if (threadIdx.x < n) y[threadIdx.x] = v; }')
      .kernel('set');
    using y = ck.upload(new Float32Array([1, 2, 3]));
    using wrong = ck.upload(new Float64Array(3));
    expect(() => k.launch({ grid: 1, block: 32 }, 3, 9, wrong)).toThrow(
      /parameter y \(float \*\) must be a DeviceArray of float32, got a DeviceArray of float64/,
    );
    expect(() => k.launch({ grid: 1, block: 32 }, 3, 9, 1234)).toThrow(TypeError);
    expect(() => k.launch({ grid: 1, block: 32 }, 3, 9)).toThrow(/takes 3 argument\(s\) \(n, v, y\), got 2/);
    expect(() => k.launch({ grid: 1, block: 32 }, 2.5, 9, y)).toThrow(RangeError);
    expect(() => k.launch({ grid: 1, block: 4096 }, 3, 9, y)).toThrow(/maxBlockDim\[0\]/);
    expect(() => k.launch({ grid: 1, block: [64, 32, 1] }, 3, 9, y)).toThrow(/maxThreadsPerBlock/);
    expect(() => k.launch({ grid: [1, 1e9], block: 32 }, 3, 9, y)).toThrow(/maxGridDim\[1\]/);
    expect(() => k.launch({ grid: 1, block: 32, sharedMem: 1 << 30 }, 3, 9, y)).toThrow(/sharedMemPerBlockOptin/);
    expect(Array.from(y.toHostSync())).toEqual([1, 2, 3]);
    k.launch({ grid: 1, block: 32 }, 3, 9, y);
    expect(Array.from(y.toHostSync())).toEqual([9, 9, 9]);
    // A signature that contradicts the compiled kernel is refused before any launch (CUDA 13 reports the parameters).
    const lying = ck.compile('extern "C" __global__ void two(int a, int b) {}', { signatures: { two: 'int a' } });
    expectThrows(
      () => lying.kernel('two').launch({ grid: 1, block: 1 }, 1),
      'TypeError',
      /signature gives 1 parameter/,
    );
  });

  test('the kernel NVRTC compiles is the one whose parameters are checked: commented-out and #if 0 versions are not', () => {
    // Each text below holds a float version the compiler never sees (a // comment continued by a
    // backslash, an #if 0 group, #if 1's #else) beside the double one it compiles, or a string spliced
    // across CRLF lines that holds an "#if 0" that is no directive: the launch takes float64 arrays
    // and refuses float32 ones.
    const live = 'extern "C" __global__ void twice(double* x, int n) { int i = threadIdx.x; if (i < n) x[i] *= 2; }';
    const dead = 'extern "C" __global__ void twice(float* x, int n) { }';
    const sources = [
      `// the float version: \\\n${dead}\n${live}\n`,
      `// the float version: \\\r\n${dead}\r\n${live}\r\n`,
      `#if 0\n${dead}\n#endif\n${live}\n`,
      `#if 1\n${live}\n#else\n${dead}\n#endif\n`,
      `__device__ const char* note() { return "old: \\\r\n#if 0"; }\r\n${live}\r\n`,
    ];
    for (const [k, source] of sources.entries()) {
      const twice = ck.compile(source, { name: `twice${k}.cu` }).kernel('twice');
      expect([k, twice.params.map((p) => p.dtype ?? p.kind)]).toEqual([k, ['float64', 'scalar']]);
      using x = ck.upload(new Float64Array([1, 2, 3]));
      twice.launch({ grid: 1, block: 32 }, x, 3);
      expect([k, Array.from(x.toHostSync())]).toEqual([k, [2, 4, 6]]);
      using f = ck.upload(new Float32Array(3));
      expect(() => twice.launch({ grid: 1, block: 32 }, f, 3)).toThrow(/must be a DeviceArray of float64/);
    }
  });

  test('attributes(): the launch bound, the static shared memory and the architecture, and the launch limits they set', () => {
    const p = ck.deviceProperties(0);
    const mod = ck.compile(`extern "C" __global__ void __launch_bounds__(128) rev(float* y, int n) {
  __shared__ float s[300];
  for (int i = threadIdx.x; i < 300; i += blockDim.x) s[i] = i < n ? y[i] : 0.0f;
  __syncthreads();
  for (int i = threadIdx.x; i < n && i < 300; i += blockDim.x) y[i] = s[n - 1 - i];
}`);
    const k = mod.kernel('rev');
    const a = k.attributes();
    expect(Object.keys(a).sort()).toEqual(
      [
        'binaryVersion',
        'constSizeBytes',
        'localSizeBytes',
        'maxDynamicSharedSizeBytes',
        'maxThreadsPerBlock',
        'numRegs',
        'ptxVersion',
        'sharedSizeBytes',
      ].sort(),
    );
    expect([a.maxThreadsPerBlock, a.sharedSizeBytes]).toEqual([128, 1200]);
    expect(a.numRegs).toBeGreaterThan(0);
    for (const v of Object.values(a)) expect(Number.isInteger(v) && v >= 0).toBe(true);
    if (mod.target.startsWith('sm_')) {
      const arch = Number(mod.target.slice(3));
      expect([a.ptxVersion, a.binaryVersion]).toEqual([arch, arch]);
    }
    using y = ck.upload(new Float32Array([1, 2, 3]));
    expect(() => k.launch({ grid: 1, block: 129 }, y, 3)).toThrow(
      /129 threads per block is more than 128, .*this kernel/,
    );
    expect(() => k.launch({ grid: 1, block: 32, sharedMem: p.sharedMemPerBlockOptin - 1199 }, y, 3)).toThrow(
      /sharedMemPerBlockOptin less the kernel's static shared memory/,
    );
    k.launch({ grid: 1, block: 128 }, y, 3);
    expect(Array.from(y.toHostSync())).toEqual([3, 2, 1]);
  });

  test('more than 48 KiB of dynamic shared memory is granted on request', () => {
    const p = ck.deviceProperties(0);
    const k = ck
      .compile(
        `extern "C" __global__ void fill(float* out, int n) {
  extern __shared__ float tile[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = i;
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = tile[n - 1 - i];
}`,
      )
      .kernel('fill');
    const bytes = Math.min(p.sharedMemPerBlockOptin - 1024, 96 * 1024);
    const n = bytes / 4;
    using out = ck.empty('float32', n);
    k.launch({ grid: 1, block: 256, sharedMem: bytes }, out, n);
    const host = out.toHostSync();
    expect(host[0]).toBe(n - 1);
    expect(host[n - 1]).toBe(0);
  });

  test('static shared memory plus dynamic past 48 KiB less the static is granted too (opted in)', () => {
    const k = ck
      .compile(
        `extern "C" __global__ void both(float* out, int n) {
  __shared__ float fixed[4096];      // 16 KiB static
  extern __shared__ float dyn[];     // sharedMem bytes
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) fixed[i] = 1.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) dyn[i] = 2.0f + i;
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = fixed[i % 4096] + dyn[n - 1 - i];
}`,
      )
      .kernel('both');
    expect(k.attributes().sharedSizeBytes).toBe(16384);
    // 40 KiB: under 48 KiB, over 48 − 16 (the kernel's own limit until it opts in).
    for (const bytes of [40 * 1024, 32 * 1024]) {
      const n = bytes / 4;
      using out = ck.empty('float32', n);
      k.launch({ grid: 1, block: 256, sharedMem: bytes }, out, n);
      const host = out.toHostSync();
      expect([host[0], host[n - 1]]).toEqual([3 + (n - 1), 3]);
    }
  });

  test('two handles to one kernel: a smaller opt-in through one does not lower what the other was granted', () => {
    const p = ck.deviceProperties(0);
    const src = `extern "C" __global__ void fillDyn(float* out, int n) {
  extern __shared__ float tile[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = i;
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = tile[n - 1 - i];
}
// ${seed} two handles`;
    const mod = ck.compile(src);
    const a = mod.kernel('fillDyn');
    const b = mod.kernel('fillDyn', 'float* out, int n');
    const big = Math.min(p.sharedMemPerBlockOptin - 1024, 100 * 1024);
    const mid = Math.min(big - 4096, 64 * 1024);
    for (const [k, bytes] of [
      [a, big],
      [b, mid],
      [a, big],
    ] as const) {
      const n = bytes / 4;
      using out = ck.empty('float32', n);
      k.launch({ grid: 1, block: 256, sharedMem: bytes }, out, n);
      const host = out.toHostSync();
      expect([host[0], host[n - 1]]).toEqual([n - 1, 0]);
    }
  });

  test('typed arrays for a pointee named by options.defines, checked and computed; a typedef of the source takes any array', () => {
    const src = `extern "C" __global__ void twice(const real* x, real* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2 * x[i];
}`;
    const k = ck.compile(src, { defines: { real: 'double' } }).kernel('twice');
    using x = ck.upload(Float64Array.from([1.5, -2.25, 1e300]));
    using y = ck.empty('float64', 3);
    using wrong = ck.empty('float32', 3);
    expect(() => k.launch({ grid: 1, block: 32 }, wrong, y, 3)).toThrow(TypeError);
    k.launch({ grid: 1, block: 32 }, x, y, 3);
    expect(Array.from(y.toHostSync())).toEqual([3, -4.5, 2e300]);
    // The source's own typedef: not resolved (its scopes and #if branches are the compiler's), any array.
    const own = ck.compile(`typedef double real;\n${src}`).kernel('twice');
    expect(own.params[0]).toMatchObject({ kind: 'pointer', dtype: null });
    own.launch({ grid: 1, block: 32 }, x, y, 3);
    expect(Array.from(y.toHostSync())).toEqual([3, -4.5, 2e300]);
  });

  test('a quoted #include beside options.name: NVRTC finds it there, and the key follows its edits', () => {
    const dir = path.join(tmp(), 'src');
    fs.mkdirSync(dir);
    const header = path.join(dir, 'scale_by.h');
    fs.writeFileSync(header, '#define SCALE_BY 2.0f\n');
    const source = `#include "scale_by.h"\nextern "C" __global__ void scale(float* x) { x[0] *= SCALE_BY; } // ${seed}\n`;
    const run = () => {
      const mod = ck.compile(source, { name: path.join(dir, 'scale.cu') });
      using x = ck.upload(new Float32Array([1]));
      mod.kernel('scale').launch({ grid: 1, block: 1 }, x);
      return { from: mod.from, value: x.toHostSync()[0] };
    };
    expect(run()).toEqual({ from: 'compiled', value: 2 });
    fs.writeFileSync(path.join(dir, 'h.tmp'), '#define SCALE_BY 3.0f\n');
    fs.renameSync(path.join(dir, 'h.tmp'), header);
    expect(run()).toEqual({ from: 'compiled', value: 3 });
  });

  test('elementwise prepare(): compiled off the JS thread, then the call compiles nothing', async () => {
    const k = ck.elementwise({ in: 'T x, T a', out: 'T y', body: `y = a * x; // ${seed} prepare`, name: 'prep' });
    using x = ck.upload(Float32Array.from([1, 2, 3]));
    const before = ck.kernelCacheInfo().stats.compiles;
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    await k.prepare(x, 2);
    clearInterval(timer);
    expect(ck.kernelCacheInfo().stats.compiles).toBe(before + 1);
    expect(ticks).toBeGreaterThan(0);
    using y = k(x, 2) as ck.DeviceArray<'float32'>;
    expect(Array.from(y.toHostSync())).toEqual([2, 4, 6]);
    expect(ck.kernelCacheInfo().stats.compiles).toBe(before + 1);
  });

  test('ordered with built-in ops and transfers on one array; timed() measures a user kernel', async () => {
    const n = (1 << 20) + 3; // > 1 MiB, so copyFromAsync stages through the pinned ring
    const add = ck
      .compile(
        `extern "C" __global__ void add(long long n, int v, int* x) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) x[i] += v;
}`,
      )
      .kernel('add');
    const host = Int32Array.from({ length: n }, (_, i) => i % 7);
    using x = ck.upload(host);
    const cfg = { grid: 512, block: 256 };
    const ref = Int32Array.from(host);
    for (let round = 0; round < 3; round++) {
      add.launch(cfg, n, 1, x);
      ck.scan(x, { out: x }); // inclusive prefix sum, int32, in place
      add.launch(cfg, n, -2, x);
      let acc = 0;
      for (let i = 0; i < n; i++) ref[i] = ((acc = (acc + ref[i] + 1) | 0) - 2) | 0;
    }
    expect(ck.cpu.firstMismatch(await x.toHost(), ref)).toBe(-1);
    const fresh = Int32Array.from({ length: n }, (_, i) => (i * 3) % 11);
    const pending = x.copyFromAsync(fresh);
    add.launch(cfg, n, 5, x); // queued after the copy, without awaiting it
    const snapshot = x.toHost();
    add.launch(cfg, n, 100, x); // after the snapshot
    await pending;
    expect(
      ck.cpu.firstMismatch(
        await snapshot,
        fresh.map((v) => v + 5),
      ),
    ).toBe(-1);
    expect(
      ck.cpu.firstMismatch(
        x.toHostSync(),
        fresh.map((v) => v + 105),
      ),
    ).toBe(-1);
    const t = ck.timed(() => add.launch(cfg, n, 0, x));
    expect(t.ms).toBeGreaterThan(0);
  });

  test('compileAsync: the same module, the event loop keeps turning; concurrent calls share one compilation', async () => {
    const source = `// ${seed} async\nextern "C" __global__ void value(double* out) { out[0] = 42.0; }`;
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const [m1, m2] = await Promise.all([ck.compileAsync(source), ck.compileAsync(source)]);
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(0);
    using out = ck.zeros('float64', 1);
    m2.kernel('value').launch({ grid: 1, block: 1 }, out);
    expect(out.toHostSync()[0]).toBe(42);
    expect([m1.from, m2.from].sort()).toEqual(['compiled', 'memory']);
    await expect(ck.compileAsync('broken(')).rejects.toBeInstanceOf(ck.CompileError);
  });

  test('the disk cache: a miss, a hit in a fresh process, invalidation when an included header changes', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-kinc-'));
    try {
      fs.writeFileSync(path.join(dir, 'v.h'), '#define V 1.5\n');
      const file = path.join(dir, 'k.cu');
      fs.writeFileSync(
        file,
        `// ${seed} cache\n#include "v.h"\nextern "C" __global__ void value(double* out) { out[0] = V; }\n`,
      );
      const child = () => {
        const r = spawnSync(
          process.execPath,
          ['-r', './test/harness/ts-register.js', 'test/harness/kernel-cache-child.ts', file, dir],
          {
            cwd: root,
            encoding: 'utf8',
            env: { ...process.env, CUDA_KERNELS_CACHE_DIR: cacheDir },
            timeout: 120_000,
          },
        );
        if (r.status !== 0) throw new Error(`child ended by ${r.signal ?? r.status}:\n${r.stdout}\n${r.stderr}`);
        return JSON.parse(r.stdout.trim().split('\n').pop()!);
      };
      expect(child()).toMatchObject({ from: 'compiled', value: 1.5 });
      expect(child()).toMatchObject({ from: 'disk', value: 1.5 });
      // In this process too, from the disk.
      const mod = ck.compile(fs.readFileSync(file, 'utf8'), { name: 'child.cu', includePaths: [dir] });
      expect(mod.from).toBe('disk');
      // The header changes, not the source: recompiled, new value, in another process and in this one.
      fs.writeFileSync(path.join(dir, 'v.h'), '#define V 2.5\n');
      expect(child()).toMatchObject({ from: 'compiled', value: 2.5 });
      const again = ck.compile(fs.readFileSync(file, 'utf8'), { name: 'child.cu', includePaths: [dir] });
      expect(again.from).toBe('disk');
      using out = ck.zeros('float64', 1);
      again.kernel('value').launch({ grid: 1, block: 1 }, out);
      expect(out.toHostSync()[0]).toBe(2.5);
      expect(ck.kernelCacheInfo().dir).toBe(cacheDir);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('two processes compiling one new source at once both succeed', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-krace-'));
    try {
      const file = path.join(dir, 'k.cu');
      fs.writeFileSync(file, `// ${seed} race\nextern "C" __global__ void value(double* out) { out[0] = 7.0; }\n`);
      const run = () =>
        new Promise<{ status: number | null; out: string; err: string }>((resolve) => {
          const c = spawn(
            process.execPath,
            ['-r', './test/harness/ts-register.js', 'test/harness/kernel-cache-child.ts', file, '-'],
            {
              cwd: root,
              env: { ...process.env, CUDA_KERNELS_CACHE_DIR: cacheDir },
            },
          );
          let out = '';
          let err = '';
          c.stdout.on('data', (d) => (out += d));
          c.stderr.on('data', (d) => (err += d));
          c.on('close', (status) => resolve({ status, out, err }));
        });
      const results = await Promise.all([run(), run()]);
      for (const r of results) {
        expect({ status: r.status, err: r.err }).toEqual({ status: 0, err: '' });
        expect(JSON.parse(r.out.trim().split('\n').pop()!)).toMatchObject({ value: 7 });
      }
      expect(fs.readdirSync(cacheDir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  const faultTest = SANITIZER ? test.skip : test;
  for (const kind of ['null', 'trap'] as const)
    faultTest(
      `a faulting kernel (${kind}) in a child process: a CudaError saying the context is lost, then on every call; clean exit${SANITIZER ? ' [skipped: the sanitizer reports the fault itself]' : ''}`,
      () => {
        const r = spawnSync(
          process.execPath,
          ['-r', './test/harness/ts-register.js', 'test/harness/kernel-fault.ts', kind],
          {
            cwd: root,
            encoding: 'utf8',
            timeout: 120_000,
          },
        );
        if (r.signal || r.status !== 0)
          throw new Error(`child ended by ${r.signal ?? r.status}:\n${r.stdout}\n${r.stderr}`);
        const seen = JSON.parse(r.stdout.trim().split('\n').pop()!);
        // The whole record first, so that a failure shows every step's outcome.
        expect(seen).toMatchObject({ before: [1, 2, 3], launch: 'no error', fault: { isCudaError: true } });
        expect(seen.before).toEqual([1, 2, 3]);
        expect(seen.launch).toBe('no error'); // the launch is queued; the fault comes at the next wait
        expect(seen.fault.isCudaError).toBe(true);
        if (kind === 'null') expect(seen.fault.code).toBe('cudaErrorIllegalAddress');
        else expect(['cudaErrorLaunchFailure', 'cudaErrorIllegalInstruction']).toContain(seen.fault.code);
        expect(seen.fault.message).toMatch(/context is lost.*restart the process/);
        for (const later of ['relaunch', 'after', 'compile', 'elementwise'])
          expect({ step: later, outcome: seen[later] }).toMatchObject({
            step: later,
            outcome: { isCudaError: true, message: expect.stringMatching(/context is lost/) },
          });
      },
    );
});

(nvrtc.available ? describeGpu : describe.skip)(
  `user kernels on several devices${nvrtc.available ? '' : ` [skipped: no NVRTC — ${nvrtc.code}]`}`,
  () => {
    test('one module launched on each device with its own arrays; an array of another device is refused', () => {
      const k = ck
        .compile('extern "C" __global__ void inc(int n, float* x) { if (threadIdx.x < n) x[threadIdx.x] += 1.0f; }')
        .kernel('inc');
      const arrays = Array.from({ length: Math.min(gpuCount, 4) }, (_, d) =>
        ck.upload(new Float32Array([d, d, d]), { device: d }),
      );
      try {
        arrays.forEach((a) => k.launch({ grid: 1, block: 32 }, 3, a)); // the device comes from the array
        arrays.forEach((a, d) => expect(Array.from(a.toHostSync())).toEqual([d + 1, d + 1, d + 1]));
        expect(() => k.launch({ grid: 1, block: 32, device: 0 }, 3, arrays[1])).toThrow(/must be on device 0/);
        const double = ck.elementwise({ in: 'float32 x', out: 'float32 y', body: 'y = 2 * x' });
        using y = double(arrays[1]) as ck.DeviceArray;
        expect(y.device).toBe(1);
        expect(Array.from(y.toHostSync())).toEqual([4, 4, 4]);
      } finally {
        arrays.forEach((a) => a.free());
      }
    });

    test('on each other device: ordered with its built-in ops and transfers; a reduction there matches the CPU', async () => {
      const n = (1 << 20) + 3; // > 1 MiB: copyFromAsync stages through that device's pinned ring
      const add = ck
        .compile(
          `extern "C" __global__ void add(long long n, int v, int* x) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) x[i] += v;
}`,
        )
        .kernel('add');
      const sum = ck.reduction({ in: 'int32 x', out: 'float64 s', map: 'x', reduce: 'a + b', identity: '0' });
      const cfg = { grid: 512, block: 256 };
      for (let d = 1; d < Math.min(gpuCount, 4); d++) {
        const host = Int32Array.from({ length: n }, (_, i) => (i * (d + 2)) % 9);
        using x = ck.upload(host, { device: d });
        using other = ck.upload(host, { device: 0 }); // work on device 0 in between must not disturb it
        add.launch(cfg, n, 1, x);
        add.launch(cfg, n, 7, other);
        ck.scan(x, { out: x });
        add.launch(cfg, n, -2, x);
        const ref = new Int32Array(n);
        let acc = 0;
        for (let i = 0; i < n; i++) ref[i] = ((acc = (acc + host[i] + 1) | 0) - 2) | 0;
        expect(ck.cpu.firstMismatch(await x.toHost(), ref)).toBe(-1);
        const fresh = Int32Array.from({ length: n }, (_, i) => (i * 5 + d) % 13);
        const pending = x.copyFromAsync(fresh);
        add.launch(cfg, n, 3, x); // queued after the copy on device d's stream, not awaited
        using s = sum(x) as ck.DeviceArray;
        expect(s.device).toBe(d);
        await pending;
        expect(s.toHostSync()[0]).toBe(fresh.reduce((a, v) => a + v + 3, 0));
        expect(
          ck.cpu.firstMismatch(
            other.toHostSync(),
            host.map((v) => v + 7),
          ),
        ).toBe(-1);
      }
    });
  },
  2,
);
