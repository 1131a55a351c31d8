import * as ck from '../lib';
import { native } from '../lib/native';
import { describeGpu, describeNeeding } from './helpers/gpu';
import { freshSeed } from './harness/families';
import { hugeInputMissing, periodic, PERIODIC_CXX, periodicSum } from './helpers/huge-inputs';
import { symmetryDefect } from './helpers/reference-checks';

const SHAPES: [number, number][] = [
  [1, 1],
  [1, 7],
  [7, 1],
  [17, 33],
  [33, 17],
  [100, 100],
  [257, 129],
  [129, 257],
  [1000, 300],
];
// Methods that compute one triangle and mirror it: C must be exactly symmetric.
const MIRRORED = new Set(['cublas-syrk', 'tiled', 'fast']);

describe('cpu.atA', () => {
  test('matches a hand-computed Gram matrix', () => {
    // A = [[1, 2], [3, 4], [5, 6]]: AᵀA = [[35, 44], [44, 56]]
    expect(Array.from(ck.cpu.atA([1, 2, 3, 4, 5, 6], 3, 2))).toEqual([35, 44, 44, 56]);
    expect(Array.from(ck.cpu.atA([2, -3], 1, 2))).toEqual([4, -6, -6, 9]);
  });

  test('checks its arguments', () => {
    expect(() => ck.cpu.atA([1, 2, 3], 2, 2)).toThrow(RangeError);
    expect(() => ck.cpu.atA([1], 0, 1)).toThrow(/rows/);
  });
});

describe('atA arguments (no GPU needed)', () => {
  test('dA must be a DeviceArray', () => {
    expect(() => ck.atA(new Float64Array(4) as never, 2, 2)).toThrow(/dA must be a DeviceArray/);
  });

  test('the TS registry lists the native methods in the same order', () => {
    expect(native.ataMethods()).toEqual([...ck.ataMethods]);
  });
});

describeGpu('atA', () => {
  const cublas = ck.cublasInfo().available;
  const methods = ck.ataMethods.filter((m) => cublas || !m.startsWith('cublas'));

  describe.each(methods)('%s', (method) => {
    test.each(SHAPES)('%i×%i matches cpu.atA to 1e-12, every element written', async (rows, cols) => {
      const host = ck.cpu.randomArray(Float64Array, rows * cols, freshSeed());
      using a = ck.upload(host);
      using out = ck.full('float64', cols * cols, NaN);
      const c = ck.atA(a, rows, cols, { method, out });
      expect(c).toBe(out);
      const got = await c.toHost();
      const ref = ck.cpu.atA(host, rows, cols);
      expect(ck.cpu.relativeError(got, ref)).toBeLessThan(1e-12);
      if (MIRRORED.has(method)) expect(symmetryDefect(got, cols)).toBe(0);
    });
  });

  test('auto picks a real method for every shape and is correct', () => {
    for (const [r, c] of [
      [1_000_000, 64],
      [2000, 2000],
      [16000, 16000],
    ]) {
      const auto = ck.ataAutoMethod(r, c, 0);
      expect(ck.ataMethods).toContain(auto);
      if (!cublas) expect(auto.startsWith('cublas')).toBe(false);
    }
    const host = ck.cpu.randomArray(Float64Array, 50 * 20, freshSeed());
    using a = ck.upload(host);
    using c = ck.atA(a, 50, 20);
    expect(c.shape).toEqual([20, 20]);
    expect(ck.cpu.relativeError(c.toHostSync(), ck.cpu.atA(host, 50, 20))).toBeLessThan(1e-12);
  });

  // 40×4000 on fast: 528 whole 128-tiles (inner ones, diagonal ones, and edge ones whose last 96
  // columns lie outside C) which, on sm_90, leave through shared memory as bulk copies of their rows
  // and then of their mirror's rows; C is poisoned with NaN first, so a row the copies miss fails.
  test('fast at 40×4000 (whole tiles, bulk-copy epilogue) matches cpu.atA, every element written, exactly symmetric', async () => {
    const rows = 40;
    const cols = 4000;
    const host = ck.cpu.randomArray(Float64Array, rows * cols, freshSeed());
    using a = ck.upload(host);
    using out = ck.full('float64', cols * cols, NaN);
    ck.atA(a, rows, cols, { method: 'fast', out });
    const got = await out.toHost();
    expect(ck.cpu.relativeError(got, ck.cpu.atA(host, rows, cols))).toBeLessThan(1e-12);
    expect(symmetryDefect(got, cols)).toBe(0);
  });

  // The large config's tensor-copy loads at their edges (sm_90, n even). 3001×2946: 2946 =
  // 23·128 + 2, so the last tile column holds 2 columns of C (130 of the box's 132 columns lie
  // outside A and come as zeros) and its last tile is also diagonal; 3001 rows end in a 25-row
  // k-tile, and on 132-SM GPUs the last 36 tiles run as 2 K-pieces (the second from row 1504).
  // 20001×770: uniform split-K (9 splits on 132 SMs) whose last split ends in a 1-row k-tile,
  // 770 = 6·128 + 2. C poisoned with NaN; fast against tiled.
  test.each([
    [3001, 2946],
    [20001, 770],
  ])(
    'fast at %i×%i (tensor copies past A, partial k-tiles) agrees with tiled, every element written, exactly symmetric',
    async (rows, cols) => {
      using a = ck.empty('float64', rows * cols).fillRandom(freshSeed());
      using ref = ck.atA(a, rows, cols, { method: 'tiled' });
      using out = ck.full('float64', cols * cols, NaN);
      ck.atA(a, rows, cols, { method: 'fast', out });
      expect(ck.deviceRelativeError(out, ref)).toBeLessThan(1e-12);
      expect(symmetryDefect(await out.toHost(), cols)).toBe(0);
    },
  );

  // 3001×2999: odd cols (8-byte copies) and, on 132-SM GPUs, a tail split of the fast kernel (the
  // last 36 of 300 tiles in 2 K-pieces each, then the reduce), next to whole tiles in one launch.
  test.each([
    [4000, 4000],
    [3001, 2999],
    [100_000, 512],
  ])('%i×%i: every method agrees with the reference to 1e-12', (rows, cols) => {
    const reference = cublas ? 'cublas' : 'tiled';
    using a = ck.empty('float64', rows * cols).fillRandom(freshSeed());
    using ref = ck.atA(a, rows, cols, { method: reference });
    using out = ck.empty('float64', cols * cols);
    for (const method of methods) {
      if (method === reference || (method === 'basic' && rows * cols * cols > 2e10)) continue;
      out.fill(NaN);
      ck.atA(a, rows, cols, { method, out });
      const err = ck.deviceRelativeError(out, ref);
      // Names the method in the failure message.
      expect(`${method}: ${err < 1e-12 ? 'within 1e-12' : err}`).toBe(`${method}: within 1e-12`);
    }
  });

  test('bad input gives clear errors and nothing crashes', () => {
    using a = ck.zeros('float64', 12);
    using f32 = ck.zeros('float32', 12);
    expect(() => ck.atA(f32 as never, 3, 4)).toThrow(/dA must be a DeviceArray of float64/);
    expect(() => ck.atA(a, 3, 5)).toThrow(/dA must be rows·cols = 3·5 = 15 elements long/);
    expect(() => ck.atA(a, 0, 12)).toThrow(/rows must be an integer ≥ 1/);
    expect(() => ck.atA(a, -3, -4)).toThrow(RangeError);
    expect(() => ck.atA(a, 1.5, 8)).toThrow(/rows/);
    expect(() => ck.atA(a, 3, '4' as never)).toThrow(TypeError);
    expect(() => ck.atA(a, 3, 4, { method: 'magic' as never })).toThrow(
      /options.method must be one of auto, cublas, cublas-syrk, basic, tiled, fast/,
    );
    using small = ck.empty('float64', 15);
    expect(() => ck.atA(a, 3, 4, { out: small })).toThrow(/options.out must be cols·cols = 16 elements long/);
    using square = ck.zeros('float64', 16);
    expect(() => ck.atA(square, 4, 4, { out: square })).toThrow(/must not be dA/);
    const freed = ck.zeros('float64', 12);
    freed.free();
    expect(() => ck.atA(freed, 3, 4)).toThrow(/dA has been freed/);
    using outF32 = ck.empty('float32', 16);
    expect(() => ck.atA(a, 3, 4, { out: outF32 as never })).toThrow(/options.out must be a DeviceArray of float64/);
  });
});

// Long K through every method but the textbook ones, on A filled on the device by a user kernel with
// the integers of helpers/huge-inputs.ts, v(r, c) = (5r + 7c) mod 17 − 8. Every product and partial sum
// is an integer below 2^53, so every method must give the closed-form sums exactly, in any order.
// - 2^31 + 77 rows × 2 columns (4 294 967 450 elements, 34.4 GB): rows and elements past 32-bit
//   indices. The values repeat every 17 rows and 2^31 ≡ 9 (mod 17), so a row or element index that
//   wrapped reads other values, and rows dropped change the sums. `fast` runs the 64×64 config with
//   8-byte cp.async copies there (no tensor map past INT_MAX rows) and splits K. The package's DGEMM
//   left C untouched (H100) or wrong (H200) at k = INT_MAX (cuBLAS 13.0), so cuBLAS now gets K in
//   chunks of at most 2^30 rows and 2^31 elements (core/cublas.h): here 2^30, 2^30 and 77 rows.
// - 3·2^28 + 5 rows × 4 columns (25.8 GB): chunks of 2^29 rows, where DSYRK slowed past 2^31
//   elements of A in one call.
// basic and tiled walk all rows in one thread or one block (seconds to minutes): not run.
const HUGE_SHAPES: [number, number][] = [
  [2 ** 31 + 77, 2],
  [3 * 2 ** 28 + 5, 4],
];
const HUGE_BYTES = Math.max(...HUGE_SHAPES.map(([r, c]) => r * c * 8));

describeNeeding(
  'atA with long K (rows past INT_MAX, A past 2^32 elements)',
  () => {
    test.each(HUGE_SHAPES)('%i×%i: fast, auto, cublas and cublas-syrk give the exact sums', (rows, cols) => {
      const fill = ck.elementwise({
        name: 'long_k_fill',
        in: 'int32 cols',
        out: 'float64 a',
        body: `const long long r = i / cols, c = i % cols; a = ${PERIODIC_CXX};`,
      });
      using a = ck.empty('float64', rows * cols);
      fill(cols, { out: a });
      const want: number[] = [];
      for (let i = 0; i < cols; i++)
        for (let j = 0; j < cols; j++) want.push(periodicSum(rows, (r) => periodic(r, i) * periodic(r, j)));
      expect(Math.max(...want.map(Math.abs))).toBeLessThan(2 ** 53);
      const cublas = ck.cublasInfo().available;
      const methods: ck.AtaMethod[] = ['fast', 'auto', ...(cublas ? (['cublas', 'cublas-syrk'] as const) : [])];
      using out = ck.empty('float64', cols * cols);
      for (const method of methods) {
        out.fill(NaN);
        ck.atA(a, rows, cols, { method, out });
        // Names the method in the failure message.
        expect({ method, c: Array.from(out.toHostSync()) }).toEqual({ method, c: want });
      }
    });
  },
  hugeInputMissing(HUGE_BYTES),
);
