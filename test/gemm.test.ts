import * as ck from '../lib';
import { native } from '../lib/native';
import { describeGpu, describeNeeding } from './helpers/gpu';
import { hugeInputMissing, periodic, PERIODIC_CXX, periodicSum } from './helpers/huge-inputs';
import { outsideGemmBound } from './helpers/reference-checks';
import { freshSeed } from './harness/families';

const SHAPES: [number, number, number][] = [
  [1, 1, 1],
  [7, 5, 3],
  [17, 33, 9],
  [128, 128, 128],
  [129, 257, 65],
  [1000, 1, 1000],
  [1, 1000, 1],
];

describe('cpu.gemm', () => {
  test('matches a hand-computed product', () => {
    // [[1, 2, 3], [4, 5, 6]] · [[1, 0], [0, 1], [1, 1]] = [[4, 5], [10, 11]]
    expect(Array.from(ck.cpu.gemm([1, 2, 3, 4, 5, 6], [1, 0, 0, 1, 1, 1], 2, 3, 2))).toEqual([4, 5, 10, 11]);
  });

  test('checks its arguments', () => {
    expect(() => ck.cpu.gemm([1, 2], [1], 1, 2, 1)).toThrow(/b must be k·n = 2 elements long/);
    expect(() => ck.cpu.gemm([1], [1], 1, 1, 0)).toThrow(/n must be an integer ≥ 1/);
  });
});

describe('gemm arguments (no GPU needed)', () => {
  test('dA must be a DeviceArray', () => {
    expect(() => ck.gemm(new Float32Array(1) as never, new Float32Array(1) as never, 1, 1, 1)).toThrow(
      /dA must be a DeviceArray/,
    );
  });

  test('the TS registry lists the native methods in the same order', () => {
    expect(native.gemmMethods()).toEqual([...ck.gemmMethods]);
  });
});

describeGpu('gemm', () => {
  const cublas = ck.cublasInfo().available;
  const variants: [string, ck.GemmOptions][] = [
    ['naive', { method: 'naive' }],
    ['shared tile 8', { method: 'shared', tile: 8 }],
    ['shared tile 16', { method: 'shared', tile: 16 }],
    ['shared tile 32', { method: 'shared', tile: 32 }],
    ['fast', { method: 'fast' }],
    ['auto', {}],
    ...(cublas ? [['cublas', { method: 'cublas' }] as [string, ck.GemmOptions]] : []),
  ];

  describe.each(variants)('%s', (_name, options) => {
    // Each element within the float32 dot-product bound of the float64 reference, every element
    // written (helpers/reference-checks.ts).
    test.each(SHAPES)('%i×%i×%i matches cpu.gemm within the float32 bound, every element written', async (m, k, n) => {
      const a = ck.cpu.randomArray(Float32Array, m * k, freshSeed());
      const b = ck.cpu.randomArray(Float32Array, k * n, freshSeed());
      using dA = ck.upload(a);
      using dB = ck.upload(b);
      using out = ck.full('float32', m * n, NaN);
      expect(ck.gemm(dA, dB, m, k, n, { ...options, out })).toBe(out);
      expect(outsideGemmBound(await out.toHost(), a, b, m, k, n)).toBe(-1);
    });
  });

  test('4096³: every method agrees with the reference to 1e-5', () => {
    const N = 4096;
    const reference = cublas ? 'cublas' : 'fast';
    using a = ck.empty('float32', N * N).fillRandom(freshSeed());
    using b = ck.empty('float32', N * N).fillRandom(freshSeed());
    using ref = ck.gemm(a, b, N, N, N, { method: reference });
    using out = ck.empty('float32', N * N);
    for (const [name, options] of variants) {
      if (options.method === reference) continue;
      out.fill(NaN);
      ck.gemm(a, b, N, N, N, { ...options, out });
      const err = ck.deviceRelativeError(out, ref);
      // Names the variant in the failure message.
      expect(`${name}: ${err < 1e-5 ? 'within 1e-5' : err}`).toBe(`${name}: within 1e-5`);
    }
  });

  test('bad input gives clear errors and nothing crashes', () => {
    using a = ck.zeros('float32', 6);
    using b = ck.zeros('float32', 12);
    using f64 = ck.zeros('float64', 6);
    expect(() => ck.gemm(f64 as never, b, 2, 3, 4)).toThrow(/dA must be a DeviceArray of float32/);
    expect(() => ck.gemm(a, b, 2, 3, 5)).toThrow(/dB must be k·n = 3·5 = 15 elements long/);
    expect(() => ck.gemm(a, b, 3, 3, 4)).toThrow(/dA must be m·k/);
    expect(() => ck.gemm(a, b, 0, 3, 4)).toThrow(/m must be an integer ≥ 1/);
    expect(() => ck.gemm(a, b, 2, -3, 4)).toThrow(RangeError);
    expect(() => ck.gemm(a, b, 2, 3, 4.5)).toThrow(/n must be/);
    expect(() => ck.gemm(a, b, 2, 3, 4, { method: 'strassen' as never })).toThrow(
      /options.method must be one of auto, naive, shared, cublas, fast/,
    );
    expect(() => ck.gemm(a, b, 2, 3, 4, { method: 'shared', tile: 12 as never })).toThrow(
      /options.tile must be one of 8, 16, 32/,
    );
    expect(() => ck.gemm(a, b, 2, 3, 4, { method: 'fast', tile: 8 })).toThrow(/tile applies only to method 'shared'/);
    using small = ck.empty('float32', 7);
    expect(() => ck.gemm(a, b, 2, 3, 4, { out: small })).toThrow(/options.out must be m·n = 8 elements long/);
    const freed = ck.zeros('float32', 12);
    freed.free();
    expect(() => ck.gemm(a, freed, 2, 3, 4)).toThrow(/dB has been freed/);
    using sq = ck.zeros('float32', 4);
    expect(() => ck.gemm(sq, sq, 2, 2, 2, { out: sq })).toThrow(/must not be dA or dB/);
  });
});

// Long K, and A past 2^32 elements, on A filled on the device with the integers of helpers/huge-inputs.ts,
// A[i][r] = v(r, i), and B all ones: C[i][j] = Σ_r v(r, i). Each row of A sums to 0 over every 17
// columns, so the partial sums of contiguous runs, and of strided runs whose stride is coprime to 17,
// stay small integers, and so do sums of those: exact in float32 in the blocked orders GEMMs use.
// cuBLAS's SGEMM returned a C off by 17408 at k = INT_MAX (m = n = 2 and 4, H100, cuBLAS 13.0), so
// cublas.cc feeds it K in chunks of at most 2^30, accumulating into C.
// - 2 × (2^31 − 1) × 2 (34.4 GB of A and B): the largest k cuBLAS takes, A of 2^32 − 2 elements.
// - 3 × (2^30 + 3) × 3 (25.8 GB): two chunks, the second 3 deep, odd leading dimensions.
// - (2^21 + 5) × 2049 × 2 (17.2 GB): A past 2^32 elements through fast's many tiles.
// fast cuts the long K of a one-tile C into pieces (split-K: one block alone took 213 s at
// k = 2^31 − 1 on an H200), so it runs every shape; naive and shared walk K per output: not run.
const LONG_K: [number, number, number][] = [
  [2, 2 ** 31 - 1, 2],
  [3, 2 ** 30 + 3, 3],
  [2 ** 21 + 5, 2049, 2],
];
const LONG_K_BYTES = Math.max(...LONG_K.map(([m, k, n]) => (m * k + k * n) * 4));

describeNeeding(
  'gemm with long K (up to INT_MAX) and A past 2^32 elements',
  () => {
    const cublas = ck.cublasInfo().available;
    test.each(LONG_K)('%i×%i×%i: fast, auto and cublas give the exact sums', (m, k, n) => {
      const methods: ck.GemmMethod[] = ['fast', 'auto', ...(cublas ? (['cublas'] as const) : [])];
      const fill = ck.elementwise({
        name: 'long_k_fill_rows',
        in: 'int32 k',
        out: 'float32 a',
        // Row c of A (m×k, row-major), column r.
        body: `const long long c = i / k, r = i % k; a = (float)(${PERIODIC_CXX});`,
      });
      using a = ck.empty('float32', m * k);
      fill(k, { out: a });
      using b = ck.full('float32', k * n, 1);
      // C[i][j] depends on i mod 17 only.
      const rowSum = Array.from({ length: 17 }, (_, i) => periodicSum(k, (r) => periodic(r, i)));
      const want = new Float32Array(m * n);
      for (let i = 0; i < m; i++) want.fill(rowSum[i % 17], i * n, (i + 1) * n);
      using out = ck.empty('float32', m * n);
      for (const method of methods) {
        out.fill(NaN);
        ck.gemm(a, b, m, k, n, { method, out });
        const got = out.toHostSync();
        const bad = got.findIndex((x, i) => x !== want[i]);
        // Names the method and the first wrong element in the failure message.
        expect({ method, bad, got: got[bad], want: want[bad] }).toEqual({
          method,
          bad: -1,
          got: undefined,
          want: undefined,
        });
      }
    });
  },
  hugeInputMissing(LONG_K_BYTES),
);
