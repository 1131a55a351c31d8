// One entry per kernel family, shared by the reliability harnesses: the property tests
// (test/property.test.ts), the out-of-memory tests (test/faults.test.ts) and the soak
// (test/harness/soak.ts). Each entry knows its variants, how to draw a random problem, how to run
// a variant on it and how to check the result against the CPU reference in lib/cpu.
//
// Adding a family = one more object in FAMILIES below; every harness picks it up.
import fc from 'fast-check';

import * as ck from '../../lib';
import type { DeviceArray } from '../../lib';
import { flatWeights } from '../../lib/ops/mlp-spec';
import { kinkAlternatives, mlpMismatch } from './mlp-margin';

/** Size limits for the random problems: small under a sanitizer (CK_SANITIZER_TOOL set), larger natively. */
export interface Limits {
  /** Largest matrix side (rows, cols, m, k, n, vertices). */
  side: number;
  /** Largest 1-D length (scan, reduce). */
  length: number;
}

/** Set by scripts/gpu-run.sh's sanitize step: the compute-sanitizer tool the suites run under. */
export const SANITIZER = process.env.CK_SANITIZER_TOOL ?? '';

export const LIMITS: Limits = SANITIZER
  ? // racecheck and initcheck run kernels 100-1000× slower; these still cross every tile edge
    // (ata/gemm 64-128, stencil 32×16, apsp 128) and several scan tiles.
    { side: SANITIZER === 'racecheck' ? 140 : 200, length: 20_000 }
  : { side: 300, length: 300_000 };

/** A run of one variant: its device outputs (freed by the harness) and a check against the CPU. */
export interface Ran {
  outputs: DeviceArray[];
  /** Resolves to null when the result matches the reference, else what differs. */
  check(): Promise<string | null>;
}

/** A problem whose inputs are on the device. */
export interface Prepared {
  inputs: DeviceArray[];
  /**
   * Queues the variant; on failure it throws (CudaError) having freed whatever it allocated. By
   * default the outputs are NaN-filled arrays passed as `out`, so unwritten elements fail; with
   * `libraryAllocates` the library allocates them (the out-of-memory tests need that).
   */
  run(method: string, libraryAllocates?: boolean): Ran;
}

export interface Family<P> {
  name: string;
  /** Every variant, with the options that select a different kernel (tiles, paths, ops, …). */
  methods: readonly string[];
  /** Random problems: shapes including 1, primes and non-multiples of every tile, and a data seed. */
  params(limits: Limits): fc.Arbitrary<P>;
  /** A short description of a problem for messages. */
  label(p: P): string;
  /** Uploads the inputs (host data derived from the problem's seed). */
  prepare(p: P): Prepared;
  /** A problem whose device footprint (inputs + outputs + work space) is about `bytes`. */
  sized(bytes: number, seed: number): P;
}

/** Dimensions a property draws from: 1, small primes, tile edges ± 1, and anything up to max. */
export function dim(max: number): fc.Arbitrary<number> {
  const special = [1, 2, 3, 5, 7, 13, 17, 31, 33, 63, 65, 97, 127, 129, 131, 257].filter((d) => d <= max);
  return fc.oneof(fc.constantFrom(...special), fc.integer({ min: 1, max }));
}

/** A new seed for every run: each run checks fresh random inputs (the failure message names the seed where it matters). */
export const freshSeed = (): number => Math.floor(Math.random() * 2 ** 31);

/** xorshift32 in [0, 1). */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

const floats64 = (n: number, seed: number) => ck.cpu.randomArray(Float64Array, n, seed);
const floats32 = (n: number, seed: number) => ck.cpu.randomArray(Float32Array, n, seed);

/** A device array of `length` elements filled with NaN (or a sentinel), so unwritten elements fail. */
function poisoned<D extends ck.Dtype>(dtype: D, length: number, device = 0): DeviceArray<D> {
  const value = dtype === 'float32' || dtype === 'float64' ? NaN : dtype === 'int32' ? -123456789 : 0xdeadbeef;
  return ck.full(dtype, length, value, { device });
}

/** A value computed on first use (a CPU reference shared by every variant of one problem). */
function memo<T>(f: () => T): () => T {
  let done = false;
  let v: T;
  return () => {
    if (!done) {
      v = f();
      done = true;
    }
    return v;
  };
}

function relErr(label: string, got: ArrayLike<number>, ref: ArrayLike<number>, tol: number): string | null {
  const e = ck.cpu.relativeError(got, ref);
  return e < tol ? null : `${label}: relative error ${e} ≥ ${tol}`;
}

// ---------------------------------------------------------------------------------------------
// ata

interface AtaP {
  rows: number;
  cols: number;
  seed: number;
}

const ata: Family<AtaP> = {
  name: 'ata',
  methods: ck.ataMethods,
  params: (l) => fc.record({ rows: dim(l.side), cols: dim(l.side), seed: fc.nat() }),
  label: (p) => `${p.rows}×${p.cols}`,
  sized: (bytes, seed) => {
    const cols = Math.max(1, Math.floor(Math.sqrt(bytes / 16)));
    return { rows: cols, cols, seed };
  },
  prepare(p) {
    const host = floats64(p.rows * p.cols, p.seed);
    const a = ck.upload(host);
    const ref = memo(() => ck.cpu.atA(host, p.rows, p.cols));
    return {
      inputs: [a],
      run(method, libraryAllocates) {
        const given = libraryAllocates ? undefined : poisoned('float64', p.cols * p.cols);
        let out: DeviceArray<'float64'>;
        try {
          out = ck.atA(a, p.rows, p.cols, { method: method as ck.AtaMethod, out: given });
        } catch (e) {
          given?.free();
          throw e;
        }
        return {
          outputs: [out],
          check: async () => relErr('C', await out.toHost(), ref(), 1e-11),
        };
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// gemm

interface GemmP {
  m: number;
  k: number;
  n: number;
  seed: number;
}

const gemm: Family<GemmP> = {
  name: 'gemm',
  methods: ck.gemmMethods.flatMap((m) => (m === 'shared' ? ck.gemmTiles.map((t) => `shared/${t}`) : [m])),
  params: (l) => fc.record({ m: dim(l.side), k: dim(l.side), n: dim(l.side), seed: fc.nat() }),
  label: (p) => `${p.m}×${p.k}×${p.n}`,
  sized: (bytes, seed) => {
    const s = Math.max(1, Math.floor(Math.sqrt(bytes / 12)));
    return { m: s, k: s, n: s, seed };
  },
  prepare(p) {
    const ha = floats32(p.m * p.k, p.seed);
    const hb = floats32(p.k * p.n, p.seed + 1);
    const a = ck.upload(ha);
    const b = ck.upload(hb);
    const ref = memo(() => ck.cpu.gemm(ha, hb, p.m, p.k, p.n));
    // A float32 dot product of length k is off by up to about k·2⁻²⁴·Σ|a·b| (Σ over its terms); with
    // cancellation that is far more than 1e-5 of the result (the soak met 1.7e-5 at 1×238×1), so the
    // error is measured against ‖|A|·|B|‖ rather than ‖A·B‖.
    const magnitude = memo(() => {
      const abs = ck.cpu.gemm(ha.map(Math.abs), hb.map(Math.abs), p.m, p.k, p.n);
      let s = 0;
      for (let i = 0; i < abs.length; i++) s += abs[i] * abs[i];
      return Math.sqrt(s);
    });
    return {
      inputs: [a, b],
      run(label, libraryAllocates) {
        const [method, tile] = label.split('/');
        const given = libraryAllocates ? undefined : poisoned('float32', p.m * p.n);
        const options: ck.GemmOptions = { method: method as ck.GemmMethod, out: given };
        if (tile) options.tile = Number(tile) as 8 | 16 | 32;
        let out: DeviceArray<'float32'>;
        try {
          out = ck.gemm(a, b, p.m, p.k, p.n, options);
        } catch (e) {
          given?.free();
          throw e;
        }
        return {
          outputs: [out],
          check: async () => {
            const got = await out.toHost();
            const r = ref();
            let d = 0;
            for (let i = 0; i < r.length; i++) d += (got[i] - r[i]) * (got[i] - r[i]);
            const e = Math.sqrt(d) / magnitude();
            const tol = Math.max(1e-6, p.k * 6e-8);
            return e <= tol ? null : `C: ‖C − ref‖ / ‖|A|·|B|‖ = ${e} > ${tol}`;
          },
        };
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// scan and reduce

interface ScanP {
  length: number;
  dtype: ck.Dtype;
  inPlace: boolean;
  seed: number;
}

/** Random host data of a dtype: integers over their whole range (so sums wrap), floats in [-1, 1). */
export function hostData(dtype: ck.Dtype, n: number, seed: number): ck.HostArray {
  if (dtype === 'float64') return floats64(n, seed);
  if (dtype === 'float32') return floats32(n, seed);
  const r = rng(seed);
  const out = dtype === 'int32' ? new Int32Array(n) : new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(r() * 4294967296);
  return out;
}

const abs = (x: number) => (x < 0 ? -x : x);

/** Largest |out_i − ref_i| / Σ_{j≤i} |in_j| (the bound a reordered float sum can promise); NaN gives Infinity. */
export function floatScanError(
  out: ArrayLike<number>,
  ref: ArrayLike<number>,
  input: ArrayLike<number>,
  inclusive: boolean,
): number {
  let absPrefix = 0;
  let worst = 0;
  for (let i = 0; i < ref.length; i++) {
    if (inclusive) absPrefix += abs(input[i]);
    const e = abs(out[i] - ref[i]) / (absPrefix > 1e-300 ? absPrefix : 1e-300);
    if (!(e <= worst)) worst = e === e ? e : Infinity;
    if (!inclusive) absPrefix += abs(input[i]);
  }
  return worst;
}

const lengthArb = (max: number) =>
  fc.oneof(
    fc.constantFrom(0, 1, 2, 31, 32, 33, 1023, 1024, 1025, 4097),
    fc.integer({ min: 0, max: 5000 }),
    fc.integer({ min: 0, max }),
  );

const scanFamily: Family<ScanP> = {
  name: 'scan',
  methods: ck.scanMethods.flatMap((m) => [`${m}/inclusive`, `${m}/exclusive`]),
  params: (l) =>
    fc.record({
      length: lengthArb(l.length),
      dtype: fc.constantFrom(...ck.dtypes),
      inPlace: fc.boolean(),
      seed: fc.nat(),
    }),
  label: (p) => `${p.dtype}[${p.length}]${p.inPlace ? ' in place' : ''}`,
  sized: (bytes, seed) => ({ length: Math.max(1, Math.floor(bytes / 8)), dtype: 'int32', inPlace: false, seed }),
  prepare(p) {
    const host = hostData(p.dtype, p.length, p.seed);
    const a = ck.upload(host);
    const refs = [memo(() => ck.cpu.scan(host, false)), memo(() => ck.cpu.scan(host, true))];
    return {
      inputs: [a],
      run(label, libraryAllocates) {
        const [method, kind] = label.split('/');
        const inclusive = kind === 'inclusive';
        let given: DeviceArray | undefined;
        // In place, the input itself is overwritten: run on a copy so the problem can be rerun.
        if (!libraryAllocates) given = p.inPlace ? a.clone() : poisoned(p.dtype, p.length);
        let out: DeviceArray;
        try {
          out = ck.scan(p.inPlace && given ? given : a, { method: method as ck.ScanMethod, inclusive, out: given });
        } catch (e) {
          given?.free();
          throw e;
        }
        return {
          outputs: [out],
          async check() {
            const got = await out.toHost();
            const ref = refs[inclusive ? 1 : 0]();
            if (p.dtype === 'int32' || p.dtype === 'uint32') {
              const at = ck.cpu.firstMismatch(got, ref);
              return at < 0 ? null : `element ${at}: ${got[at]} ≠ ${ref[at]}`;
            }
            const e = floatScanError(got, ref, host, inclusive);
            const tol = p.dtype === 'float32' ? 1e-5 : 1e-13;
            return e < tol ? null : `prefix error ${e} ≥ ${tol}`;
          },
        };
      },
    };
  },
};

interface ReduceP {
  length: number;
  dtype: ck.Dtype;
  seed: number;
}

const reduceFamily: Family<ReduceP> = {
  name: 'reduce',
  methods: ['sum', 'min', 'max'],
  params: (l) => fc.record({ length: lengthArb(l.length), dtype: fc.constantFrom(...ck.dtypes), seed: fc.nat() }),
  label: (p) => `${p.dtype}[${p.length}]`,
  sized: (bytes, seed) => ({ length: Math.max(1, Math.floor(bytes / 4)), dtype: 'float32', seed }),
  prepare(p) {
    const host = hostData(p.dtype, p.length, p.seed);
    const a = ck.upload(host);
    return {
      inputs: [a],
      run(op) {
        const got = ck.reduce(a, op as ck.ReduceOp);
        return {
          outputs: [],
          async check() {
            const ref = ck.cpu.reduce(host, op as ck.ReduceOp);
            if (p.dtype === 'int32' || p.dtype === 'uint32' || op !== 'sum') {
              return Object.is(got, ref) || got === ref ? null : `${op} = ${got}, expected ${ref}`;
            }
            let absSum = 0;
            for (let i = 0; i < host.length; i++) absSum += abs(host[i]);
            const tol = 1e-12 * (absSum > 1 ? absSum : 1);
            return abs(got - ref) <= tol ? null : `sum = ${got}, expected ${ref} (± ${tol})`;
          },
        };
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// stencil

interface StencilP {
  rows: number;
  cols: number;
  dtype: 'float32' | 'float64';
  weights: 'box9' | 'jacobi5' | 'random';
  maxIterations: number;
  /** 0: fixed sweeps; else stop at the first sweep whose residual is ≤ this. */
  tolerance: number;
  seed: number;
}

function randomWeights(seed: number): number[] {
  // Positive weights summing to 1 keep the values bounded over many sweeps.
  const raw = Array.from(floats64(9, seed), (x) => x + 1.5);
  const sum = raw.reduce((x, y) => x + y, 0);
  return raw.map((x) => x / sum);
}

/** What the stencil oracle compares: a run's result with its grid on the host. */
export interface StencilOutcome {
  grid: ArrayLike<number>;
  iterations: number;
  residual: number;
  checksum: number;
}

/**
 * The stencil oracle: null when `got` matches the CPU reference `ref` for problem `p`, else what
 * differs. A run may stop before maxIterations only at a sweep whose residual is within the
 * tolerance (exactly 0 at tolerance 0). Sweep counts may differ only where both runs reached the
 * tolerance within one rounding step of each other — grids at an exact fixed point, where one
 * summation order reaches residual 0 a sweep before another — and the grids must then still agree.
 */
export function stencilMismatch(
  p: Pick<StencilP, 'rows' | 'cols' | 'dtype' | 'maxIterations' | 'tolerance'>,
  got: StencilOutcome,
  ref: StencilOutcome,
): string | null {
  const n = p.rows * p.cols;
  const tol = p.dtype === 'float64' ? 1e-12 : 1e-5;
  for (const [who, o] of [
    ['GPU', got],
    ['CPU', ref],
  ] as const) {
    if (!(o.iterations >= 1 && o.iterations <= p.maxIterations)) return `${who} ran ${o.iterations} sweeps`;
    if (o.iterations < p.maxIterations && !(o.residual <= p.tolerance))
      return `${who} stopped after ${o.iterations} sweeps with residual ${o.residual} above the tolerance ${p.tolerance}`;
  }
  if (got.iterations !== ref.iterations) {
    // The run that went on must have ended within rounding of the tolerance too.
    const later = got.iterations > ref.iterations ? got : ref;
    if (!(later.residual <= p.tolerance + tol))
      return `iterations ${got.iterations} ≠ ${ref.iterations} (residuals ${got.residual}, ${ref.residual})`;
    return relErr('grid (sweep counts differ within rounding)', got.grid, ref.grid, tol * 10);
  }
  const e = relErr('grid', got.grid, ref.grid, tol);
  if (e) return e;
  if (!(abs(got.residual - ref.residual) <= tol * 10 * (ref.residual > 1 ? ref.residual : 1)))
    return `residual ${got.residual} ≠ ${ref.residual}`;
  if (!(abs(got.checksum - ref.checksum) <= tol * 10 * (n > 1 ? n : 1)))
    return `checksum ${got.checksum} ≠ ${ref.checksum}`;
  return null;
}

const stencilFamily: Family<StencilP> = {
  name: 'stencil',
  methods: ck.stencilMethods,
  params: (l) =>
    fc.record({
      rows: dim(l.side),
      cols: dim(l.side),
      dtype: fc.constantFrom('float32' as const, 'float64' as const),
      weights: fc.constantFrom('box9' as const, 'jacobi5' as const, 'random' as const),
      maxIterations: fc.integer({ min: 1, max: 20 }),
      tolerance: fc.constantFrom(0, 0, 1e-2, 1e-3),
      seed: fc.nat(),
    }),
  label: (p) =>
    `${p.dtype} ${p.rows}×${p.cols} ${p.weights} ≤${p.maxIterations} sweeps${p.tolerance ? ` tol ${p.tolerance}` : ''}`,
  sized: (bytes, seed) => {
    const s = Math.max(1, Math.floor(Math.sqrt(bytes / 24)));
    return { rows: s, cols: s, dtype: 'float64', weights: 'box9', maxIterations: 9, tolerance: 0, seed };
  },
  prepare(p) {
    const n = p.rows * p.cols;
    const host = p.dtype === 'float64' ? floats64(n, p.seed) : floats32(n, p.seed);
    const g = ck.upload(host);
    const weights = p.weights === 'random' ? randomWeights(p.seed + 1) : p.weights;
    const opts = { weights, tolerance: p.tolerance, maxIterations: p.maxIterations };
    const cpuRef = memo(() => ck.cpu.stencil(host, p.rows, p.cols, opts));
    return {
      inputs: [g],
      run(method) {
        const r = ck.stencil(g, p.rows, p.cols, { ...opts, method: method as ck.StencilMethod });
        return {
          outputs: [r.grid],
          async check() {
            return stencilMismatch(p, { ...r, grid: await r.grid.toHost() }, cpuRef());
          },
        };
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// apsp

interface ApspP {
  n: number;
  density: number;
  blockFactor: number | undefined;
  seed: number;
}

/** A random digraph with zero weights and an unreachable part (the last fifth gets no edges in). */
export function hostGraph(n: number, density: number, seed: number, maxWeight = 100): Int32Array {
  const r = rng(seed);
  const w = new Int32Array(n * n).fill(ck.INF);
  const cut = Math.ceil(n * 0.8);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      if (i === j) w[i * n + j] = 0;
      else if (!(i < cut && j >= cut) && r() < density) w[i * n + j] = Math.floor(r() * (maxWeight + 1));
    }
  }
  return w;
}

/** Null when every path read off `next` follows edges of `w` and weighs exactly `dist`. */
export function pathError(w: Int32Array, dist: Int32Array, next: Int32Array, n: number): string | null {
  const step = n > 40 ? Math.ceil(n / 40) : 1;
  for (let i = 0; i < n; i += step) {
    for (let j = 0; j < n; j++) {
      if (next[i * n + j] < 0 !== dist[i * n + j] >= ck.INF && i !== j) return `next/dist disagree at [${i}][${j}]`;
      const p = ck.reconstructPath(next, i, j);
      if (dist[i * n + j] >= ck.INF) {
        if (p.length !== 0) return `path ${i}→${j} to an unreachable vertex`;
        continue;
      }
      let total = 0;
      for (let h = 0; h + 1 < p.length; h++) {
        const e = w[p[h] * n + p[h + 1]];
        if (e >= ck.INF) return `path ${i}→${j} uses a missing edge`;
        total += e;
      }
      if (p[0] !== i || p[p.length - 1] !== j || total !== dist[i * n + j])
        return `path ${i}→${j} weighs ${total}, distance ${dist[i * n + j]}`;
    }
  }
  return null;
}

const apspFamily: Family<ApspP> = {
  name: 'apsp',
  methods: ck.apspMethods.flatMap((m) => [m, `${m}/paths`]),
  params: (l) =>
    fc.record({
      n: dim(l.side),
      density: fc.constantFrom(0, 0.02, 0.1, 0.5, 1),
      blockFactor: fc.option(fc.integer({ min: 1, max: 256 }), { nil: undefined }),
      seed: fc.nat(),
    }),
  label: (p) => `n=${p.n} density ${p.density}${p.blockFactor ? ` basic block ${p.blockFactor}` : ''}`,
  sized: (bytes, seed) => ({
    n: Math.max(1, Math.floor(Math.sqrt(bytes / 16))),
    density: 0.05,
    blockFactor: undefined,
    seed,
  }),
  prepare(p) {
    const w = hostGraph(p.n, p.density, p.seed);
    const g = ck.upload(w);
    const cpuRef = memo(() => ck.cpu.apsp(w, p.n));
    return {
      inputs: [g],
      run(label, libraryAllocates) {
        const [method, paths] = label.split('/');
        const blockFactor = method === 'basic' ? p.blockFactor : undefined;
        const given = libraryAllocates ? undefined : poisoned('int32', p.n * p.n);
        const options = { method: method as ck.ApspMethod, blockFactor, out: given };
        let out: DeviceArray<'int32'>;
        let next: DeviceArray<'int32'> | undefined;
        try {
          if (paths) ({ dist: out, next } = ck.apsp(g, p.n, { ...options, paths: true }));
          else out = ck.apsp(g, p.n, options);
        } catch (e) {
          given?.free();
          throw e;
        }
        return {
          outputs: next ? [out, next] : [out],
          async check() {
            const dist = await out.toHost();
            const ref = cpuRef();
            const at = ck.cpu.firstMismatch(dist, ref);
            if (at >= 0) return `dist[${at}] = ${dist[at]} ≠ ${ref[at]}`;
            return next ? pathError(w, dist, await next.toHost(), p.n) : null;
          },
        };
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// mlp

export interface MlpP {
  layers: number[];
  patterns: number;
  batch: number;
  activation: ck.MlpActivation;
  output: ck.MlpOutput;
  seed: number;
}

const EPOCHS = 2;

/** The weights of `getWeights()` as one vector, in the parameter layout (W_0, b_0, W_1, …). */
export { flatWeights };

const mlpFamily: Family<MlpP> = {
  name: 'mlp',
  // method/streams: every method on one stream and on several (the custom method splits the
  // patterns across streams; cublas moves the weight gradients to a second stream).
  methods: ['custom/1', 'custom/3', 'cublas/1', 'cublas/2'],
  params: (l) =>
    fc
      .record({
        layers: fc.array(dim(Math.min(l.side, 140)), { minLength: 2, maxLength: 4 }),
        patterns: dim(l.side),
        activation: fc.constantFrom(...ck.mlpActivations),
        output: fc.constantFrom(...ck.mlpOutputs),
        seed: fc.nat(),
        batchPick: fc.nat(),
      })
      .map(({ batchPick, ...p }) => ({ ...p, batch: 1 + (batchPick % p.patterns) })),
  label: (p) => `[${p.layers.join(',')}]×${p.patterns} batch ${p.batch} ${p.activation}/${p.output}`,
  sized: (bytes, seed) => {
    // Parameters, momentum and 3 gradient sets (≈ 5·2s² floats) plus activations and deltas (4·s·s).
    const s = Math.max(1, Math.floor(Math.sqrt(bytes / 4 / 14)));
    return { layers: [s, s, s], patterns: s, batch: s, activation: 'sigmoid', output: 'sigmoid', seed };
  },
  prepare(p) {
    const nIn = p.layers[0];
    const nOut = p.layers[p.layers.length - 1];
    const hx = floats32(p.patterns * nIn, p.seed);
    const ht = floats32(p.patterns * nOut, p.seed + 1).map((v) => (v + 1) / 2);
    const spec = {
      layers: p.layers,
      activation: p.activation,
      output: p.output,
      // Small enough that two epochs do not diverge on any drawn shape (the soak met a relu/identity
      // net that ran to NaN on the CPU and the GPU alike at 0.01 / batch).
      eta: 0.05 / (p.batch * Math.max(...p.layers)),
      alpha: 0.5,
      seed: p.seed,
    };
    const x = ck.upload(hx);
    const t = ck.upload(ht);
    const ref = memo(() => {
      const net = new ck.cpu.Mlp(spec);
      const errors = net.train(hx, ht, { epochs: EPOCHS, batchSize: p.batch }).map((r) => r.error);
      return { errors, params: flatWeights(net.getWeights()) };
    });
    const alternatives = memo(() => kinkAlternatives({ spec, x: hx, t: ht, epochs: EPOCHS, batch: p.batch }));
    return {
      inputs: [x, t],
      run(label) {
        // The network always allocates its own memory, so `libraryAllocates` changes nothing here.
        const [method, streams] = label.split('/');
        const net = new ck.Mlp({ ...spec, method: method as ck.MlpMethod, streams: Number(streams) });
        let errors: number[];
        let params: DeviceArray<'float32'>;
        try {
          errors = net.train(x, t, { epochs: EPOCHS, batchSize: p.batch }).map((r) => r.error);
          params = net.copyParameters();
        } finally {
          net.free();
        }
        return {
          outputs: [params],
          check: async () => {
            const r = ref();
            if (!r.errors.every(Number.isFinite)) return `the CPU reference diverged (errors ${r.errors.join(', ')})`;
            // A relu unit at its kink may take either side in float32: a result that misses the
            // reference may instead be a training that took the other side (test/harness/mlp-margin.ts).
            return mlpMismatch({ errors, params: await params.toHost() }, r, 1e-4, alternatives);
          },
        };
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// transfer: host ↔ device copies through every path (pinned staging for small arrays, the pinned
// ring for large ones, pinned memory directly, the asynchronous forms, offsets), the snapshot that
// toHost() takes at call time, and copies within one array whose ranges overlap.

interface TransferP {
  length: number;
  dtype: ck.Dtype;
  /** Where copyFrom writes / copyWithin moves to (taken modulo length + 1). */
  offset: number;
  seed: number;
}

const HOST_CTORS = { float32: Float32Array, float64: Float64Array, int32: Int32Array, uint32: Uint32Array };
const poisonOf = (dtype: ck.Dtype) =>
  dtype === 'float32' || dtype === 'float64' ? NaN : dtype === 'int32' ? -123456789 : 0xdeadbeef;

/** Host memory for a target or source: pageable, or pinned (freed by the check). */
function hostBuffer(dtype: ck.Dtype, n: number, pinnedMemory: boolean): ck.HostArray {
  const a = pinnedMemory ? ck.pinned(dtype, n) : new HOST_CTORS[dtype](n);
  return a.fill(poisonOf(dtype));
}

const freeHost = (a: ck.HostArray) => (a as Partial<ck.PinnedArray>).free?.();

/** null when `got` equals `want` element for element (NaN equal to NaN), else the first difference. */
function sameElements(got: ArrayLike<number>, want: ArrayLike<number>): string | null {
  if (got.length !== want.length) return `length ${got.length} ≠ ${want.length}`;
  for (let i = 0; i < want.length; i++) {
    if (!(got[i] === want[i] || (got[i] !== got[i] && want[i] !== want[i])))
      return `element ${i}: ${got[i]} ≠ ${want[i]}`;
  }
  return null;
}

const transferFamily: Family<TransferP> = {
  name: 'transfer',
  methods: [
    'toHost',
    'toHostSync',
    'toHost/pinned',
    'toHostSync/pinned',
    'toHost/snapshot',
    'copyFrom',
    'copyFromAsync',
    'copyFrom/pinned',
    'copyFromAsync/pinned',
    'copyWithin',
  ],
  // Up to 8× the scan lengths: large enough (natively up to 19 MB) for several chunks of the ring.
  params: (l) =>
    fc.record({
      length: lengthArb(8 * l.length),
      dtype: fc.constantFrom(...ck.dtypes),
      offset: fc.nat(),
      seed: fc.nat(),
    }),
  label: (p) => `${p.dtype}[${p.length}] offset ${p.offset % (p.length + 1)}`,
  // Input, output and a snapshot of the same size: a third each.
  sized: (bytes, seed) => ({ length: Math.max(1, Math.floor(bytes / 24)), dtype: 'float64', offset: 7, seed }),
  prepare(p) {
    const host = hostData(p.dtype, p.length, p.seed);
    const a = ck.upload(host);
    const off = p.offset % (p.length + 1);
    return {
      inputs: [a],
      run(label) {
        const [method, kind] = label.split('/');
        const pinnedMemory = kind === 'pinned';
        if (method === 'toHost' || method === 'toHostSync') {
          const target = hostBuffer(p.dtype, p.length, pinnedMemory);
          let snapshot: DeviceArray | undefined;
          try {
            if (kind === 'snapshot') snapshot = a.clone();
            const src = snapshot ?? a;
            const done = method === 'toHost' ? src.toHost(target) : Promise.resolve(src.toHostSync(target));
            // Written right after the call: the promise must still resolve to the data before it.
            snapshot?.fillRandom(p.seed + 1);
            return {
              outputs: snapshot ? [snapshot] : [],
              async check() {
                try {
                  const got = await done;
                  if (got !== target) return 'did not resolve to the target';
                  return sameElements(got, host);
                } finally {
                  freeHost(target);
                }
              },
            };
          } catch (e) {
            snapshot?.free();
            freeHost(target);
            throw e;
          }
        }
        if (method === 'copyFrom' || method === 'copyFromAsync') {
          const source = hostBuffer(p.dtype, p.length - off, pinnedMemory);
          source.set(host.subarray(0, p.length - off));
          let out: DeviceArray | undefined;
          try {
            out = poisoned(p.dtype, p.length);
            const done =
              method === 'copyFrom'
                ? Promise.resolve(out.copyFrom(source as never, { offset: off }))
                : out.copyFromAsync(source as never, { offset: off });
            // Read before awaiting: the copy is ordered before later work on the array.
            const early = out.toHost();
            const want = new HOST_CTORS[p.dtype](p.length).fill(poisonOf(p.dtype));
            want.set(host.subarray(0, p.length - off), off);
            const o = out;
            return {
              outputs: [o],
              async check() {
                try {
                  if ((await done) !== o) return 'did not resolve to the array';
                  return sameElements(await early, want);
                } finally {
                  freeHost(source);
                }
              },
            };
          } catch (e) {
            out?.free();
            freeHost(source);
            throw e;
          }
        }
        // copyWithin: one array, overlapping ranges, forwards or backwards by the seed's parity.
        const out = a.clone();
        const count = p.length - off;
        const [dstOffset, srcOffset] = p.seed % 2 ? [off, 0] : [0, off];
        try {
          ck.copyDevice(out, out, { dstOffset, srcOffset, count });
        } catch (e) {
          out.free();
          throw e;
        }
        const want = host.slice().copyWithin(dstOffset, srcOffset, srcOffset + count);
        return {
          outputs: [out],
          async check() {
            return sameElements(await out.toHost(), want);
          },
        };
      },
    };
  },
};

/** Every family, in a fixed order. Add new families here. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const FAMILIES: readonly Family<any>[] = [
  ata,
  gemm,
  scanFamily,
  reduceFamily,
  stencilFamily,
  apspFamily,
  mlpFamily,
  transferFamily,
];

/**
 * Runs every variant of a family on a tiny problem and on `samples` random problems within
 * `limits` (results not checked) and frees everything. CUDA loads kernels lazily, on first launch,
 * taking device memory for their code (in 2 MiB steps), and cuBLAS creates its handles and work
 * space on first use: after a warm-up that state exists before a test measures free memory, so it
 * is not mistaken for a leak. The leak checks also compare repeated runs, which lazy state cannot
 * fool.
 */
export async function warmUp(family: Family<unknown>, samples = 0, limits: Limits = LIMITS): Promise<void> {
  const problems = [family.sized(4096, 1), ...fc.sample(family.params(limits), { seed: 42, numRuns: samples })];
  for (const p of problems) {
    const prepared = family.prepare(p);
    try {
      for (const method of family.methods) {
        for (const own of [false, true]) {
          const ran = prepared.run(method, own);
          for (const o of ran.outputs) o.free();
        }
      }
    } finally {
      for (const a of prepared.inputs) a.free();
    }
  }
  // The array operations' kernels, for every dtype.
  for (const dtype of ck.dtypes) {
    const a = ck.empty(dtype, 1000).fillRandom(1);
    a.fill(3);
    const b = a.clone();
    ck.copyDevice(b, a);
    ck.deviceRelativeError(a, b);
    await b.toHost();
    a.free();
    b.free();
  }
  ck.synchronize();
}
