import * as ck from '../lib';
import { native } from '../lib/native';
import { freshSeed, stencilMismatch } from './harness/families';
import { describeGpu } from './helpers/gpu';

type FloatDtype = 'float32' | 'float64';
const FLOATS: readonly FloatDtype[] = ['float32', 'float64'];
const SHAPES: readonly [number, number][] = [
  [1, 1],
  [1, 9],
  [9, 1],
  [8, 8],
  [16, 16],
  [31, 17],
  [256, 256],
  // Larger than one tile of every method, rows not a multiple of any tile; cols odd (scalar loads
  // in `fast`) and a multiple of 4 (16-byte loads).
  [150, 301],
  [97, 276],
  // Around the tiles of `fast`: a second (and third) tile column that owns a single column (odd cols,
  // scalar loads) or four (16-byte loads), and a second tile row that owns one row. On sm_90 the
  // tiles are float 224×96 and double 104×96; elsewhere float 112×96 and double 96×48.
  [97, 113],
  [200, 228],
  [97, 225],
  [97, 449],
  [97, 105],
  [97, 209],
  [130, 108],
];

function hostGrid(dtype: FloatDtype, n: number, seed: number): Float32Array | Float64Array {
  const g = ck.cpu.randomArray(Float64Array, n, seed);
  return dtype === 'float64' ? g : new Float32Array(g);
}

function randomWeights(seed: number): number[] {
  // Positive weights summing to 1 keep the values bounded over many sweeps.
  const raw = Array.from(ck.cpu.randomArray(Float64Array, 9, seed), (x) => x + 1.5);
  const sum = raw.reduce((a, b) => a + b, 0);
  return raw.map((x) => x / sum);
}

const tolerance = (dtype: FloatDtype) => (dtype === 'float64' ? 1e-12 : 1e-5);

describe('cpu.stencil', () => {
  test('one sweep on a 3×3 torus by hand', () => {
    const g = Float64Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // jacobi5 at the centre: (2 + 8 + 4 + 6) / 4 = 5; at (0,0): (up 7 + down 4 + left 3 + right 2) / 4 = 4.
    const r = ck.cpu.stencil(g, 3, 3, { weights: 'jacobi5', maxIterations: 1, tolerance: 0 });
    expect(r.grid[4]).toBe(5);
    expect(r.grid[0]).toBe(4);
    expect(r.iterations).toBe(1);
    expect(r.residual).toBe(Math.max(...Array.from(r.grid, (v, i) => Math.abs(v - g[i]))));
    expect(r.checksum).toBeCloseTo(45, 12);
    expect(Array.from(g)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  test('box9 keeps the sum, and a constant grid converges after one jacobi5 sweep', () => {
    const g = ck.cpu.randomArray(Float64Array, 35, 3);
    const r = ck.cpu.stencil(g, 5, 7, { maxIterations: 10, tolerance: 0 });
    expect(r.checksum).toBeCloseTo(
      Array.from(g).reduce((a, b) => a + b, 0),
      12,
    );
    // jacobi5's weights are exact in binary, so a constant stays exactly constant.
    const c = ck.cpu.stencil(new Float64Array(12).fill(2.5), 3, 4, { tolerance: 0, weights: 'jacobi5' });
    expect(c.iterations).toBe(1);
    expect(c.residual).toBe(0);
  });

  test('a NaN never converges', () => {
    const g = new Float64Array(9).fill(1);
    g[4] = NaN;
    const r = ck.cpu.stencil(g, 3, 3, { maxIterations: 7, tolerance: 1 });
    expect(r.iterations).toBe(7);
    expect(r.residual).toBeNaN();
  });
});

describe('the stencil property oracle', () => {
  // A CPU result stands in for the GPU's, then is broken one way at a time: each must be caught.
  const p = { rows: 6, cols: 7, dtype: 'float64' as const, maxIterations: 12, tolerance: 0 };
  const grid = Float64Array.from({ length: 42 }, (_, i) => Math.sin(i));
  const ref = ck.cpu.stencil(grid, 6, 7, { tolerance: 0, maxIterations: 12 });
  const same = () => ({ ...ref, grid: Float64Array.from(ref.grid) });

  test('accepts the reference itself', () => {
    expect(stencilMismatch(p, same(), ref)).toBeNull();
  });

  test('at tolerance 0, refuses a run that stopped early with a residual above 0', () => {
    const early = ck.cpu.stencil(grid, 6, 7, { tolerance: 0, maxIterations: 9 });
    expect(stencilMismatch(p, { ...early, iterations: 9 }, ref)).toMatch(/stopped after 9 sweeps with residual/);
  });

  test('refuses different sweep counts unless both runs reached the tolerance', () => {
    // Stopped "converged" (residual 0 claimed) while the reference is still far from a fixed point.
    const early = ck.cpu.stencil(grid, 6, 7, { tolerance: 0, maxIterations: 9 });
    expect(stencilMismatch(p, { ...early, residual: 0 }, ref)).toMatch(/iterations 9 ≠ 12/);
  });

  test('refuses a wrong grid, residual or checksum, and NaN', () => {
    const g = same();
    g.grid[5] += 1e-6;
    expect(stencilMismatch(p, g, ref)).toMatch(/grid: relative error/);
    expect(stencilMismatch(p, { ...same(), residual: ref.residual * 1.01 }, ref)).toMatch(/residual/);
    expect(stencilMismatch(p, { ...same(), checksum: ref.checksum + 1e-6 }, ref)).toMatch(/checksum/);
    const nan = same();
    nan.grid[0] = NaN;
    expect(stencilMismatch(p, nan, ref)).toMatch(/grid/);
    expect(stencilMismatch(p, { ...same(), residual: NaN }, ref)).toMatch(/residual/);
  });

  test('accepts sweep counts that differ at an exact fixed point', () => {
    // A constant grid is a fixed point: residual 0 within a sweep or two (the first may round).
    const flat = new Float64Array(42).fill(0.25);
    const r = ck.cpu.stencil(flat, 6, 7, { tolerance: 0, maxIterations: 12 });
    expect(r.iterations).toBeLessThan(4);
    expect(r.residual).toBe(0);
    expect(stencilMismatch(p, { ...r, iterations: r.iterations + 1 }, r)).toBeNull();
  });
});

describe('stencil arguments (no GPU needed)', () => {
  test('the TS registry lists the native methods in the same order', () => {
    expect(native.stencilMethods()).toEqual([...ck.stencilMethods]);
  });

  test('cpu.stencil rejects bad options like the GPU entry point', () => {
    const g = new Float64Array(4);
    expect(() => ck.cpu.stencil(new Int32Array(4) as never, 2, 2)).toThrow(/grid must be a Float32Array/);
    expect(() => ck.cpu.stencil(g, 2, 3)).toThrow(/grid must be rows·cols = 6 elements long/);
    expect(() => ck.cpu.stencil(g, 0, 4)).toThrow(/rows must be an integer ≥ 1/);
    expect(() => ck.cpu.stencil(g, 2, 2.5)).toThrow(/cols must be an integer ≥ 1/);
    expect(() => ck.cpu.stencil(g, 2, 2, { weights: [1, 2, 3] })).toThrow(/9 numbers/);
    expect(() => ck.cpu.stencil(g, 2, 2, { weights: [1, 1, 1, 1, NaN, 1, 1, 1, 1] })).toThrow(
      /options.weights\[4\] must be finite/,
    );
    expect(() => ck.cpu.stencil(g, 2, 2, { weights: 'gauss' as never })).toThrow(/a preset/);
    expect(() => ck.cpu.stencil(g, 2, 2, { tolerance: -1 })).toThrow(/options.tolerance must be ≥ 0/);
    expect(() => ck.cpu.stencil(g, 2, 2, { maxIterations: 1.5 })).toThrow(/options.maxIterations must be an integer/);
    expect(() => ck.cpu.stencil(g, 2, 2, { maxIterations: 0 })).toThrow(/options.maxIterations/);
  });

  test('stencil needs a DeviceArray', () => {
    expect(() => ck.stencil(new Float64Array(4) as never, 2, 2)).toThrow(/grid must be a DeviceArray/);
  });
});

describeGpu('stencil', () => {
  describe.each(ck.stencilMethods)('%s', (method) => {
    describe.each(FLOATS)('%s', (dtype) => {
      test.each(SHAPES)('%i×%i: fixed sweeps, both presets and random weights, against cpu.stencil', (rows, cols) => {
        const seed = freshSeed();
        const input = hostGrid(dtype, rows * cols, seed);
        using g = ck.upload(input);
        for (const weights of ['box9', 'jacobi5', randomWeights(seed + 1)] as const) {
          // 13 sweeps: one full pass of 8 and a partial one in `fast`.
          const opts = { weights, tolerance: 0, maxIterations: 13, method };
          const ref = ck.cpu.stencil(input, rows, cols, opts);
          const got = ck.stencil(g, rows, cols, opts);
          try {
            // A 1×1 torus is its own neighbour: presets map x to x·Σw, an exact fixed point in one
            // rounding order and not in another, so only the values are compared there.
            if (rows * cols > 1) expect(got.iterations).toBe(ref.iterations);
            expect(got.grid.dtype).toBe(dtype);
            expect(ck.cpu.relativeError(got.grid.toHostSync(), ref.grid)).toBeLessThan(tolerance(dtype));
            expect(Math.abs(got.residual - ref.residual)).toBeLessThanOrEqual(
              tolerance(dtype) * Math.max(1, ref.residual) * 10,
            );
            expect(Math.abs(got.checksum - ref.checksum)).toBeLessThanOrEqual(
              tolerance(dtype) * 10 * Math.max(1, rows * cols),
            );
          } finally {
            got.grid.free();
          }
        }
        // The input is left unchanged.
        expect(ck.cpu.firstMismatch(g.toHostSync(), input)).toBe(-1);
      });
    });

    test.each([1, 3, 64])(
      'converges after the same number of sweeps as cpu.stencil (float64, checkEvery %i)',
      (checkEvery) => {
        const rows = 40;
        const cols = 52;
        const seed = freshSeed();
        const input = hostGrid('float64', rows * cols, seed);
        using g = ck.upload(input);
        // Not jacobi5: on a torus with an even side its checkerboard mode never decays.
        for (const [weights, tol] of [
          ['box9', 1e-3],
          [randomWeights(seed + 1), 1e-3],
        ] as const) {
          const opts = { weights, tolerance: tol, maxIterations: 500 };
          const ref = ck.cpu.stencil(input, rows, cols, opts);
          expect(ref.iterations).toBeGreaterThan(2);
          expect(ref.iterations).toBeLessThan(500);
          const got = ck.stencil(g, rows, cols, { ...opts, method, checkEvery });
          try {
            expect(got.iterations).toBe(ref.iterations);
            expect(got.residual).toBeLessThanOrEqual(tol);
            expect(Math.abs(got.residual - ref.residual)).toBeLessThan(1e-12);
            expect(ck.cpu.relativeError(got.grid.toHostSync(), ref.grid)).toBeLessThan(1e-12);
          } finally {
            got.grid.free();
          }
        }
      },
    );

    test('a constant grid converges after one sweep; a NaN runs to maxIterations', () => {
      using c = ck.full('float32', 20 * 30, 1.25);
      const r = ck.stencil(c, 20, 30, { tolerance: 0, method, weights: 'jacobi5' });
      expect([r.iterations, r.residual, r.checksum]).toEqual([1, 0, 1.25 * 600]);
      r.grid.free();
      const input = new Float64Array(33 * 35).fill(1);
      input[100] = NaN;
      using n = ck.upload(input);
      const s = ck.stencil(n, 33, 35, { tolerance: 1, maxIterations: 11, method });
      expect(s.iterations).toBe(11);
      expect(s.residual).toBeNaN();
      s.grid.free();
    });
  });

  test.each(ck.stencilMethods)('%s: out and scratch are used, and the grid always ends in out', (method) => {
    const input = hostGrid('float64', 24 * 40, freshSeed());
    using g = ck.upload(input);
    using out = ck.full('float64', 24 * 40, NaN);
    using scratch = ck.full('float64', 24 * 40, NaN);
    // Converging after an odd and after an even number of passes puts the last sweep in either buffer.
    for (const tol of [1e-2, 3e-3, 1e-3, 3e-4]) {
      const opts = { tolerance: tol, maxIterations: 300, method };
      const ref = ck.cpu.stencil(input, 24, 40, opts);
      const got = ck.stencil(g, 24, 40, { ...opts, out, scratch });
      expect(got.grid).toBe(out);
      expect(got.iterations).toBe(ref.iterations);
      expect(ck.cpu.relativeError(out.toHostSync(), ref.grid)).toBeLessThan(1e-12);
    }
    expect(() => ck.stencil(g, 24, 40, { out: g })).toThrow(/options.out must be an array other than grid/);
    expect(() => ck.stencil(g, 24, 40, { out, scratch: out })).toThrow(/options.scratch must be an array other/);
    using short = ck.zeros('float64', 10);
    expect(() => ck.stencil(g, 24, 40, { scratch: short })).toThrow(/options.scratch must be 960 elements long/);
  });

  test('a 1000×1000 float32 grid, 20 sweeps: every method agrees with cpu.stencil', () => {
    const input = hostGrid('float32', 1e6, freshSeed());
    using g = ck.upload(input);
    const ref = ck.cpu.stencil(input, 1000, 1000, { tolerance: 0, maxIterations: 20, weights: 'jacobi5' });
    for (const method of ck.stencilMethods) {
      const got = ck.stencil(g, 1000, 1000, { tolerance: 0, maxIterations: 20, weights: 'jacobi5', method });
      expect(ck.cpu.relativeError(got.grid.toHostSync(), ref.grid)).toBeLessThan(1e-5);
      got.grid.free();
    }
  });

  test.each([0, 1, 31, 32, 33, 1025, 10_000_019])('reduce at length %i against cpu.reduce', (n) => {
    const input = ck.cpu.randomArray(Float64Array, n, freshSeed());
    using a = ck.upload(input);
    using f = ck.upload(new Float32Array(input));
    const i32 = Int32Array.from(input, (x) => Math.floor(x * 1e6));
    using ai = ck.upload(i32);
    for (const op of ['sum', 'min', 'max'] as const) {
      const sumBound = 1e-9 * Math.max(1, n);
      if (op === 'sum') {
        expect(Math.abs(ck.reduce(a, op) - ck.cpu.reduce(input, op))).toBeLessThanOrEqual(sumBound);
        expect(Math.abs(ck.reduce(f, op) - ck.cpu.reduce(new Float32Array(input), op))).toBeLessThanOrEqual(sumBound);
      } else {
        expect(ck.reduce(a, op)).toBe(ck.cpu.reduce(input, op));
        expect(ck.reduce(f, op)).toBe(ck.cpu.reduce(new Float32Array(input), op));
      }
      expect(ck.reduce(ai, op)).toBe(ck.cpu.reduce(i32, op));
    }
  });

  test('bad input gives clear errors', () => {
    using g = ck.zeros('float64', 12);
    using i = ck.zeros('int32', 12);
    expect(() => ck.stencil(i as never, 3, 4)).toThrow(/grid must be a DeviceArray of float32 or float64, got int32/);
    expect(() => ck.stencil(g, 3, 5)).toThrow(/grid must be rows·cols = 15 elements long/);
    expect(() => ck.stencil(g, 3, 4, { weights: [[1, 2, 3]] as never })).toThrow(/9 numbers/);
    expect(() => ck.stencil(g, 3, 4, { weights: [1, 1, 1, 1, Infinity, 1, 1, 1, 1] })).toThrow(/must be finite/);
    expect(() => ck.stencil(g, 3, 4, { tolerance: -0.5 })).toThrow(/options.tolerance must be ≥ 0/);
    expect(() => ck.stencil(g, 3, 4, { maxIterations: 2.5 })).toThrow(/options.maxIterations must be an integer/);
    expect(() => ck.stencil(g, 3, 4, { checkEvery: 0 })).toThrow(/options.checkEvery/);
    expect(() => ck.stencil(g, 3, 4, { method: 'magic' as never })).toThrow(/options.method must be one of auto/);
    const h = ck.zeros('float32', 4);
    h.free();
    expect(() => ck.stencil(h, 2, 2)).toThrow(/grid has been freed/);
  });
});
