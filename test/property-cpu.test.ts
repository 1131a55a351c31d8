// Property tests of the CPU references (lib/cpu) against plain definitions, on random shapes and
// data. They need no GPU: the GPU property tests (property.test.ts) trust these references.
import fc from 'fast-check';

import * as ck from '../lib';
import { assertProperty } from './harness/fc-run';
import { hostGraph, pathError, rng } from './harness/families';
import { report } from './harness/report';

const RUNS = 200;
const side = fc.integer({ min: 1, max: 13 });
/** Small integers: every product and sum below is exact in float64, so results compare exactly. */
const intMatrix = (n: number, seed: number) => {
  const r = rng(seed);
  return Float64Array.from({ length: n }, () => Math.floor(r() * 21) - 10);
};

async function check<T>(name: string, arb: fc.Arbitrary<T>, predicate: (v: T) => void): Promise<void> {
  const outcome = await assertProperty(name, fc.property(arb, predicate), RUNS);
  report(`property cpu.${name}: ${outcome.runs} cases passed (seed ${outcome.seed})`);
}

function expectSame(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  const at = ck.cpu.firstMismatch(got, want);
  if (at >= 0) throw new Error(`${what}: element ${at} is ${got[at]}, the definition gives ${want[at]}`);
}

describe('CPU references against their definitions (property tests)', () => {
  test('atA: C[i][j] = Σ_k A[k][i]·A[k][j], symmetric, and equal to gemm(Aᵀ, A)', async () => {
    await check('atA', fc.record({ rows: side, cols: side, seed: fc.nat() }), ({ rows, cols, seed }) => {
      const a = intMatrix(rows * cols, seed);
      const c = ck.cpu.atA(a, rows, cols);
      const def = new Float64Array(cols * cols);
      const at = new Float64Array(cols * rows);
      for (let i = 0; i < cols; i++)
        for (let j = 0; j < cols; j++) {
          let s = 0;
          for (let k = 0; k < rows; k++) s += a[k * cols + i] * a[k * cols + j];
          def[i * cols + j] = s;
        }
      for (let k = 0; k < rows; k++) for (let i = 0; i < cols; i++) at[i * rows + k] = a[k * cols + i];
      expectSame(c, def, 'atA');
      expectSame(c, ck.cpu.gemm(at, a, cols, rows, cols), 'atA vs gemm(Aᵀ, A)');
    });
  });

  test('gemm: C[i][j] = Σ_p A[i][p]·B[p][j], and (AB)ᵀ = BᵀAᵀ', async () => {
    await check('gemm', fc.record({ m: side, k: side, n: side, seed: fc.nat() }), ({ m, k, n, seed }) => {
      const a = intMatrix(m * k, seed);
      const b = intMatrix(k * n, seed + 1);
      const c = ck.cpu.gemm(a, b, m, k, n);
      const def = new Float64Array(m * n);
      for (let i = 0; i < m; i++)
        for (let j = 0; j < n; j++) {
          let s = 0;
          for (let p = 0; p < k; p++) s += a[i * k + p] * b[p * n + j];
          def[i * n + j] = s;
        }
      expectSame(c, def, 'gemm');
      const t = (x: Float64Array, r: number, q: number) => {
        const o = new Float64Array(r * q);
        for (let i = 0; i < r; i++) for (let j = 0; j < q; j++) o[j * r + i] = x[i * q + j];
        return o;
      };
      expectSame(t(c, m, n), ck.cpu.gemm(t(b, k, n), t(a, m, k), n, k, m), '(AB)ᵀ vs BᵀAᵀ');
    });
  });

  test('scan and reduce on integers: prefix sums and sums modulo 2^32, min and max by sorting', async () => {
    const arb = fc.record({
      values: fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { maxLength: 200 }),
      unsigned: fc.boolean(),
    });
    await check('scan/reduce (integers)', arb, ({ values, unsigned }) => {
      const a = unsigned ? Uint32Array.from(values, (v) => v >>> 0) : Int32Array.from(values);
      const inc = ck.cpu.scan(a, true);
      const exc = ck.cpu.scan(a, false);
      let acc = 0n;
      for (let i = 0; i < a.length; i++) {
        const wrapped = unsigned ? BigInt.asUintN(32, acc) : BigInt.asIntN(32, acc);
        if (BigInt(exc[i]) !== wrapped) throw new Error(`exclusive[${i}] = ${exc[i]}, want ${wrapped}`);
        acc += BigInt(a[i]);
        const w2 = unsigned ? BigInt.asUintN(32, acc) : BigInt.asIntN(32, acc);
        if (BigInt(inc[i]) !== w2) throw new Error(`inclusive[${i}] = ${inc[i]}, want ${w2}`);
      }
      const sum = unsigned ? BigInt.asUintN(32, acc) : BigInt.asIntN(32, acc);
      if (BigInt(ck.cpu.reduce(a, 'sum')) !== sum) throw new Error(`sum ${ck.cpu.reduce(a, 'sum')} ≠ ${sum}`);
      const sorted = Array.from(a).sort((x, y) => x - y);
      const min = a.length ? sorted[0] : Infinity;
      const max = a.length ? sorted[sorted.length - 1] : -Infinity;
      if (ck.cpu.reduce(a, 'min') !== min || ck.cpu.reduce(a, 'max') !== max) throw new Error('min/max');
    });
  });

  test('scan on floats: float64 prefix sums; reduce min/max propagate NaN', async () => {
    const arb = fc.record({
      values: fc.array(fc.double({ min: -1e6, max: 1e6, noNaN: true }), { maxLength: 200 }),
      single: fc.boolean(),
      nanAt: fc.option(fc.nat(), { nil: undefined }),
    });
    await check('scan/reduce (floats)', arb, ({ values, single, nanAt }) => {
      const a = single ? Float32Array.from(values) : Float64Array.from(values);
      const inc = ck.cpu.scan(a, true);
      let acc = 0;
      for (let i = 0; i < a.length; i++) {
        acc += a[i];
        if (!Object.is(inc[i], acc)) throw new Error(`inclusive[${i}] = ${inc[i]}, want ${acc}`);
      }
      if (!Object.is(ck.cpu.reduce(a, 'sum'), acc)) throw new Error('sum');
      if (a.length && nanAt !== undefined) {
        a[nanAt % a.length] = NaN;
        if (!Number.isNaN(ck.cpu.reduce(a, 'min')) || !Number.isNaN(ck.cpu.reduce(a, 'max'))) throw new Error('NaN');
      }
    });
  });

  test('stencil: one sweep is the 3×3 periodic definition; shifting the grid shifts the result', async () => {
    const arb = fc.record({
      rows: side,
      cols: side,
      seed: fc.nat(),
      dr: fc.nat({ max: 20 }),
      dc: fc.nat({ max: 20 }),
      sweeps: fc.integer({ min: 1, max: 4 }),
    });
    await check('stencil', arb, ({ rows, cols, seed, dr, dc, sweeps }) => {
      const g = intMatrix(rows * cols, seed);
      const w = Array.from(intMatrix(9, seed + 7));
      const one = ck.cpu.stencil(g, rows, cols, { weights: w, maxIterations: 1, tolerance: 0 });
      let residual = 0;
      for (let i = 0; i < rows; i++)
        for (let j = 0; j < cols; j++) {
          let s = 0;
          for (let a = 0; a < 3; a++)
            for (let b = 0; b < 3; b++)
              s += w[3 * a + b] * g[((i + a - 1 + rows) % rows) * cols + ((j + b - 1 + cols) % cols)];
          if (one.grid[i * cols + j] !== s) throw new Error(`sweep at (${i}, ${j}): ${one.grid[i * cols + j]} ≠ ${s}`);
          residual = Math.max(residual, Math.abs(s - g[i * cols + j]));
        }
      if (one.residual !== residual || one.iterations !== 1) throw new Error('residual or iterations');
      // Translation invariance on the torus, several sweeps (values stay small integers: exact).
      const shift = (x: Float64Array) => {
        const o = new Float64Array(x.length);
        for (let i = 0; i < rows; i++)
          for (let j = 0; j < cols; j++) o[((i + dr) % rows) * cols + ((j + dc) % cols)] = x[i * cols + j];
        return o;
      };
      const small = [0, 1, 0, 1, -1, 0, 0, 0, 1];
      const opts = { weights: small, maxIterations: sweeps, tolerance: 0 };
      const r1 = ck.cpu.stencil(g, rows, cols, opts);
      const r2 = ck.cpu.stencil(shift(g), rows, cols, opts);
      expectSame(r2.grid, shift(r1.grid), 'stencil of a shifted grid');
      if (r1.iterations > sweeps) throw new Error('more sweeps than maxIterations');
    });
  });

  test('apsp: distances are Bellman–Ford’s, satisfy the triangle inequality, and paths weigh them', async () => {
    const arb = fc.record({
      n: fc.integer({ min: 1, max: 24 }),
      density: fc.constantFrom(0, 0.1, 0.3, 1),
      seed: fc.nat(),
    });
    await check('apsp', arb, ({ n, density, seed }) => {
      const w = hostGraph(n, density, seed, 5);
      const { dist, next } = ck.cpu.apsp(w, n, { paths: true });
      expectSame(ck.cpu.apsp(w, n), dist, 'apsp with and without paths');
      for (let s = 0; s < n; s++) {
        const d = new Array<number>(n).fill(Infinity);
        d[s] = 0;
        for (let round = 0; round < n; round++)
          for (let u = 0; u < n; u++)
            for (let v = 0; v < n; v++) {
              const e = w[u * n + v];
              if (u !== v && e < ck.INF && d[u] + e < d[v]) d[v] = d[u] + e;
            }
        for (let v = 0; v < n; v++) {
          const want = d[v] < ck.INF ? d[v] : ck.INF;
          if (dist[s * n + v] !== want) throw new Error(`dist[${s}][${v}] = ${dist[s * n + v]}, want ${want}`);
        }
      }
      for (let i = 0; i < n; i++)
        for (let k = 0; k < n; k++)
          for (let j = 0; j < n; j++)
            if (
              dist[i * n + k] < ck.INF &&
              dist[k * n + j] < ck.INF &&
              dist[i * n + j] > dist[i * n + k] + dist[k * n + j]
            )
              throw new Error('triangle inequality');
      const e = pathError(w, dist, next, n);
      if (e) throw new Error(e);
    });
  });

  test('relativeError: 0 for equal arrays, scale invariant, NaN for NaN', async () => {
    const arb = fc.record({
      values: fc.array(fc.double({ min: -1e3, max: 1e3, noNaN: true }), { minLength: 1, maxLength: 50 }),
      scale: fc.double({ min: 0.5, max: 4, noNaN: true }),
    });
    await check('relativeError', arb, ({ values, scale }) => {
      const a = Float64Array.from(values);
      // ‖ref‖ = 0 gives the absolute error, which scales: that case is covered by "0 for equal arrays".
      fc.pre(a.some((x) => Math.abs(x) >= 1));
      if (ck.cpu.relativeError(a, a) !== 0) throw new Error('not 0 on equal arrays');
      const b = a.map((x, i) => x + (i % 2 ? 1e-3 : -1e-3));
      const e1 = ck.cpu.relativeError(b, a);
      const e2 = ck.cpu.relativeError(
        b.map((x) => x * scale),
        a.map((x) => x * scale),
      );
      if (!(Math.abs(e1 - e2) <= 1e-9 * Math.max(1, e1))) throw new Error(`not scale invariant: ${e1} vs ${e2}`);
      const c = Float64Array.from(a);
      c[0] = NaN;
      if (!Number.isNaN(ck.cpu.relativeError(c, a))) throw new Error('NaN not propagated');
    });
  });
});
