// API fuzzing: every public function of lib/index.ts called with random wrong types and values.
// Each call must return or throw a TypeError, RangeError or CudaError (the io functions may also
// throw GraphFileError and the file system's own errors) — never anything else, never crash, never
// hang. Runs as a child process (test/fuzz.test.ts) so that a crash is caught by the parent:
//
//   node -r ./test/harness/ts-register.js test/harness/fuzz.ts [--calls N] [--seed S] [--out result.json]
//
// It prints one JSON line: calls made, outcomes by kind, failures (at most 20), device memory before
// and after. Works without a GPU too: argument checks run before any CUDA call, and the calls that
// reach the device throw CudaError "no device".
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import * as ck from '../../lib';
import { DeviceArray } from '../../lib';
import { rng } from './families';

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const CALLS = Number(arg('calls', '20000'));
const SEED = Number(arg('seed', String((Date.now() ^ (Math.random() * 2 ** 31)) >>> 0)));
const OUT = arg('out', '');
const GPU = ck.deviceCount() > 0;
const random = rng(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-fuzz-'));
process.chdir(tmp);

// ---- values -----------------------------------------------------------------------------------

/** Device arrays made for one call; freed after it. */
let made: DeviceArray[] = [];
const track = <T extends DeviceArray>(a: T): T => {
  made.push(a);
  return a;
};

/** Device arrays a call returned (directly or in a result object), to be freed after it. */
function collect(r: unknown): void {
  if (r instanceof DeviceArray) made.push(r);
  else if (r && typeof r === 'object' && !(r instanceof Promise))
    for (const k of ['grid', 'dist', 'next'])
      if ((r as Record<string, unknown>)[k] instanceof DeviceArray) made.push((r as Record<string, DeviceArray>)[k]);
}

/** A fake handle: an object the native side must refuse (it is not a type-tagged External). */
const fakeHandle = () => pick([{}, { ptr: 0 }, null, 42, 'handle', new Float32Array(4)]);

/** A device array of `dtype` and `length`: real on a GPU, else a forged one around a fake handle. */
function arrayOf<D extends ck.Dtype>(dtype: D, length: number): DeviceArray<D> {
  if (!GPU) return new DeviceArray(fakeHandle() as never, dtype, length, 0);
  const a = track(ck.empty(dtype, length));
  a.fillRandom(7);
  if (dtype === 'int32') a.fill(5); // valid non-negative weights for apsp
  return a;
}

/** Objects that claim to be device arrays but are not (or no longer) usable. */
function foreignArrays(): unknown[] {
  const list: unknown[] = [
    Object.create(DeviceArray.prototype),
    { dtype: 'float64', length: 4, device: 0, freed: false, handle: () => ({}) },
    new DeviceArray(fakeHandle() as never, pick(ck.dtypes), pick([0, 1, 4, 9, 1e6]), 0),
  ];
  if (GPU) {
    const freed = ck.empty(pick(ck.dtypes), 4);
    freed.free();
    list.push(freed);
    // A forged array around a real handle that claims to be longer than it is: the native side
    // checks lengths against its own record, never the TypeScript object's.
    const small = track(ck.zeros(pick(ck.dtypes), 4));
    list.push(new DeviceArray(small.handle(), small.dtype, pick([9, 16, 2 ** 20 + 1]), 0));
    list.push(new DeviceArray(small.handle(), pick(ck.dtypes), 4, pick([0, 1, 7])));
    list.push(track(ck.zeros(pick(ck.dtypes), pick([0, 1, 3, 17]))));
  }
  return list;
}

const numbers = [
  NaN,
  Infinity,
  -Infinity,
  -1,
  -0,
  0,
  0.5,
  1.5,
  -(2 ** 31),
  2 ** 31,
  2 ** 32 + 1,
  2 ** 53,
  2 ** 53 + 2,
  1e308,
  -1e308,
  Number.MIN_VALUE,
  Number.MAX_SAFE_INTEGER,
];
const others = (): unknown[] => [
  undefined,
  null,
  '1',
  '',
  'auto',
  'bogus',
  'float32',
  'int32',
  'sum',
  true,
  false,
  {},
  [],
  [1, 2, 3],
  [NaN],
  Symbol('fuzz'),
  () => 0,
  10n,
  new Float32Array(4),
  new Float64Array(9),
  new Int32Array(1),
  new Uint32Array(16),
  new Uint8Array(4),
  new ArrayBuffer(8),
  new Date(0),
  /re/,
  Object.create(null),
  new Proxy({}, {}),
];

/** A wrong value of any kind. */
function badValue(): unknown {
  const r = random();
  if (r < 0.35) return pick(numbers);
  if (r < 0.8) return pick(others());
  return pick(foreignArrays());
}

// ---- targets ----------------------------------------------------------------------------------

interface Target {
  name: string;
  /** Valid arguments (the last may be an options object whose fields are mutated too). */
  base(): unknown[];
  call(...a: unknown[]): unknown;
  /** Index of an options argument, whose fields are mutated like arguments. */
  options?: number;
  /** Calls that are valid but would legitimately run for a very long time are skipped. */
  skip?(a: unknown[]): boolean;
  io?: boolean;
  /**
   * The error name the base arguments throw on purpose (a method on a foreign `this`, a timer read
   * before it ran). Every other target's base call must succeed on a GPU.
   */
  baseThrows?: string;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const f = (fn: (...a: any[]) => unknown) => fn as (...a: unknown[]) => unknown;
const big = (x: unknown, limit: number) => typeof x === 'number' && x > limit;
/** Options whose layer list holds a size over 10^5 (valid, but a long initialisation on the host). */
const hugeLayers = (o: unknown) =>
  typeof o === 'object' && o !== null && Array.isArray((o as { layers?: unknown }).layers)
    ? ((o as { layers: unknown[] }).layers.some((n) => big(n, 1e5)) as boolean)
    : false;
const hostInt = (n: number) => new Int32Array(n * n).fill(3).map((v, i) => (i % (n + 1) === 0 ? 0 : v));

const TARGETS: Target[] = [
  { name: 'deviceCount', base: () => [], call: f(ck.deviceCount) },
  { name: 'deviceProperties', base: () => [0], call: f(ck.deviceProperties) },
  { name: 'memoryInfo', base: () => [0], call: f(ck.memoryInfo) },
  { name: 'synchronize', base: () => [0], call: f(ck.synchronize) },
  { name: 'runtimeInfo', base: () => [], call: f(ck.runtimeInfo) },
  { name: 'cublasInfo', base: () => [], call: f(ck.cublasInfo) },
  {
    name: 'new CudaError',
    base: () => ['m', 'c', 'x'],
    call: f((...a) => new ck.CudaError(...(a as [string, string, string]))),
  },
  {
    name: 'new DeviceArray',
    // A DeviceArray around a forged handle: the native side must refuse it.
    baseThrows: 'TypeError',
    base: () => [fakeHandle(), 'float32', 4, 0],
    call: f((...a) => (new (DeviceArray as any)(...a) as DeviceArray).toHostSync()),
  },
  { name: 'upload', base: () => [new Float64Array(6), { device: 0, shape: [2, 3] }], options: 1, call: f(ck.upload) },
  { name: 'empty', base: () => ['float32', 6, { device: 0, shape: [3, 2] }], options: 2, call: f(ck.empty) },
  { name: 'zeros', base: () => ['int32', 5, {}], options: 2, call: f(ck.zeros) },
  { name: 'full', base: () => ['float64', 5, 2.5, {}], options: 3, call: f(ck.full) },
  {
    name: 'copyDevice',
    base: () => [arrayOf('float32', 8), arrayOf('float32', 8), { dstOffset: 1, srcOffset: 2, count: 5 }],
    options: 2,
    call: f(ck.copyDevice),
  },
  {
    name: 'deviceRelativeError',
    base: () => [arrayOf('float64', 5), arrayOf('float64', 5)],
    call: f(ck.deviceRelativeError),
  },
  { name: 'dtypeBytes', base: () => ['uint32'], call: f(ck.dtypeBytes) },
  { name: 'DeviceArray.toHost', base: () => [arrayOf('float32', 3)], call: f((a: DeviceArray) => a.toHost()) },
  { name: 'DeviceArray.toHostSync', base: () => [arrayOf('int32', 3)], call: f((a: DeviceArray) => a.toHostSync()) },
  {
    name: 'DeviceArray.copyFrom',
    base: () => [arrayOf('float32', 3), new Float32Array(3)],
    call: f((a: DeviceArray, s: unknown) => a.copyFrom(s as never)),
  },
  {
    name: 'DeviceArray.toHost(target)',
    base: () => [arrayOf('float32', 3), new Float32Array(3)],
    call: f((a: DeviceArray, t: unknown) => a.toHost(t as never)),
  },
  {
    name: 'DeviceArray.toHostSync(target)',
    base: () => [arrayOf('uint32', 5), new Uint32Array(5)],
    call: f((a: DeviceArray, t: unknown) => a.toHostSync(t as never)),
  },
  {
    name: 'DeviceArray.copyFrom at an offset',
    base: () => [arrayOf('float64', 6), new Float64Array(4), { offset: 2 }],
    options: 2,
    call: f((a: DeviceArray, s: unknown, o: unknown) => a.copyFrom(s as never, o as never)),
  },
  {
    name: 'DeviceArray.copyFromAsync',
    base: () => [arrayOf('int32', 6), new Int32Array(5), { offset: 1 }],
    options: 2,
    call: f((a: DeviceArray, s: unknown, o: unknown) => a.copyFromAsync(s as never, o as never)),
  },
  {
    name: 'pinned',
    base: () => ['float32', 5],
    call: f((d: unknown, n: unknown) => ck.pinned(d as ck.Dtype, n as number).free()),
    // Valid but slow: page-locking gigabytes of host memory.
    skip: (a) => big(a[1], 1e7),
  },
  { name: 'isPinned', base: () => [new Float32Array(2)], call: f(ck.isPinned) },
  { name: 'memoryPool', base: () => [0], call: f(ck.memoryPool) },
  { name: 'trimMemoryPool', base: () => [0, 1 << 20], call: f(ck.trimMemoryPool) },
  {
    name: 'DeviceArray.fill',
    base: () => [arrayOf('uint32', 3), 7],
    call: f((a: DeviceArray, v: unknown) => a.fill(v as never)),
  },
  {
    name: 'DeviceArray.fillRandom',
    base: () => [arrayOf('float64', 3), 11],
    call: f((a: DeviceArray, v: unknown) => a.fillRandom(v as never)),
  },
  { name: 'DeviceArray.clone', base: () => [arrayOf('float64', 3)], call: f((a: DeviceArray) => track(a.clone())) },
  { name: 'DeviceArray.free', base: () => [arrayOf('float64', 3)], call: f((a: DeviceArray) => a.free()) },
  {
    name: 'DeviceArray method on a foreign this',
    baseThrows: 'TypeError',
    base: () => [{}, 'toHostSync'],
    call: f((self: unknown, m: unknown) => {
      const method = (DeviceArray.prototype as any)[m as string];
      if (typeof method !== 'function') return undefined;
      return method.call(self, 1);
    }),
  },
  {
    name: 'new EventTimer',
    base: () => [0],
    call: f((d) => new ck.EventTimer(d as number).start().stop().elapsedMs()),
  },
  {
    name: 'EventTimer.elapsedMs unstarted',
    baseThrows: 'CudaError',
    base: () => [0],
    call: f((d) => new ck.EventTimer(d as number).elapsedMs()),
  },
  { name: 'timed', base: () => [() => 1, { device: 0 }], options: 1, call: f(ck.timed) },
  {
    name: 'atA',
    base: () => [arrayOf('float64', 12), 4, 3, { method: 'auto' }],
    options: 3,
    call: f((...a) => {
      const r = ck.atA(...(a as Parameters<typeof ck.atA>));
      if (r !== (a[3] as any)?.out) track(r);
      return r;
    }),
  },
  { name: 'ataAutoMethod', base: () => [10, 10, 0], call: f(ck.ataAutoMethod) },
  {
    name: 'gemm',
    base: () => [arrayOf('float32', 6), arrayOf('float32', 12), 2, 3, 4, { method: 'shared', tile: 8 }],
    options: 5,
    call: f((...a) => {
      const r = ck.gemm(...(a as Parameters<typeof ck.gemm>));
      if (r !== (a[5] as any)?.out) track(r);
      return r;
    }),
  },
  { name: 'gemmAutoMethod', base: () => [], call: f(ck.gemmAutoMethod) },
  {
    name: 'scan',
    base: () => [arrayOf('int32', 9), { inclusive: false, method: 'fast' }],
    options: 1,
    call: f((...a) => {
      const r = ck.scan(...(a as Parameters<typeof ck.scan>));
      if (r !== (a[1] as any)?.out) track(r);
      return r;
    }),
  },
  { name: 'reduce', base: () => [arrayOf('float32', 9), 'max'], call: f(ck.reduce) },
  {
    name: 'stencil',
    base: () => [
      arrayOf('float64', 12),
      3,
      4,
      { weights: 'jacobi5', tolerance: 1e-3, maxIterations: 5, method: 'tiled', checkEvery: 2 },
    ],
    options: 3,
    call: f((...a) => {
      const r = ck.stencil(...(a as Parameters<typeof ck.stencil>));
      const o = a[3] as any;
      if (r.grid !== o?.out && r.grid !== o?.scratch) track(r.grid);
      return r;
    }),
    // A valid run of billions of sweeps is not a hang of the library.
    skip: (a) => big((a[3] as any)?.maxIterations, 1e5),
  },
  {
    name: 'apsp',
    base: () => [arrayOf('int32', 9), 3, { method: 'basic', blockFactor: 2, paths: true, validate: true }],
    options: 2,
    call: f((...a) => {
      const r = ck.apsp(...(a as [DeviceArray<'int32'>, number, ck.ApspOptions]));
      const o = a[2] as any;
      if (r instanceof DeviceArray) {
        if (r !== o?.out) track(r);
      } else {
        if (r.dist !== o?.out) track(r.dist);
        track(r.next);
      }
      return r;
    }),
  },
  // The Promise forms: a wrong argument must reject with the same kinds of error (never a crash, a
  // hang or an unhandled rejection), and their valid calls take their inputs at the call.
  { name: 'reduceAsync', base: () => [arrayOf('float32', 9), 'max', {}], options: 2, call: f(ck.reduceAsync) },
  {
    name: 'stencilAsync',
    base: () => [
      arrayOf('float64', 12),
      3,
      4,
      { weights: 'box9', tolerance: 1e-3, maxIterations: 9, method: 'fast', checkEvery: 2 },
    ],
    options: 3,
    call: f(async (...a) => {
      const r = await ck.stencilAsync(...(a as Parameters<typeof ck.stencilAsync>));
      const o = a[3] as any;
      if (r.grid !== o?.out && r.grid !== o?.scratch) track(r.grid);
      return r;
    }),
    skip: (a) => big((a[3] as any)?.maxIterations, 1e5),
  },
  {
    name: 'apspAsync',
    base: () => [arrayOf('int32', 9), 3, { method: 'shared', paths: true, validate: true }],
    options: 2,
    call: f(async (...a) => {
      const r = await ck.apspAsync(...(a as [DeviceArray<'int32'>, number, ck.ApspAsyncOptions]));
      const o = a[2] as any;
      if (r instanceof DeviceArray) {
        if (r !== o?.out) track(r);
      } else {
        if (r.dist !== o?.out) track(r.dist);
        track(r.next);
      }
      return r;
    }),
  },
  { name: 'canAccessPeer', base: () => [0, 0], call: f(ck.canAccessPeer) },
  { name: 'enablePeerAccess', base: () => [0, 0], call: f(ck.enablePeerAccess) },
  {
    name: 'peerCopy',
    base: () => [arrayOf('float32', 6), arrayOf('float32', 6), { srcOffset: 1, dstOffset: 0, length: 4 }],
    options: 2,
    call: f(ck.peerCopy),
  },
  {
    name: 'copyViaHost',
    base: () => [arrayOf('int32', 6), arrayOf('int32', 6), { srcOffset: 0, dstOffset: 2, length: 3 }],
    options: 2,
    call: f(ck.copyViaHost),
  },
  {
    name: 'new Mlp',
    base: () => [
      {
        layers: [3, 4, 2],
        eta: 0.1,
        alpha: 0.5,
        seed: 3,
        method: 'custom',
        streams: 2,
        activation: 'tanh',
        output: 'identity',
      },
    ],
    options: 0,
    call: f((o: ck.MlpOptions) => new ck.Mlp(o).free()),
    // Valid layer sizes of millions are a large allocation and a long initialisation, not a hang.
    skip: (a) => hugeLayers(a[0]),
  },
  {
    name: 'Mlp.train',
    base: () => [arrayOf('float32', 6), new Float32Array(4), { epochs: 2, batchSize: 1 }],
    options: 2,
    call: f((X: ck.MlpInput, T: ck.MlpInput, o: ck.TrainOptions) => {
      using net = new ck.Mlp({ layers: [3, 4, 2], eta: 0.1, method: 'cublas' });
      return net.train(X, T, o);
    }),
    skip: (a) => big((a[2] as any)?.epochs, 1000),
  },
  {
    name: 'Mlp.trainAsync',
    base: () => [arrayOf('float32', 6), new Float32Array(4), { epochs: 2, batchSize: 1, validate: true }],
    options: 2,
    call: f(async (X: ck.MlpInput, T: ck.MlpInput, o: ck.MlpTrainAsyncOptions) => {
      using net = new ck.Mlp({ layers: [3, 4, 2], eta: 0.1, method: 'custom' });
      return await net.trainAsync(X, T, o);
    }),
    skip: (a) => big((a[2] as any)?.epochs, 1000),
  },
  {
    name: 'Mlp.evaluateAsync',
    base: () => [arrayOf('float32', 6), new Float32Array(4), {}],
    options: 2,
    call: f(async (X: ck.MlpInput, T: ck.MlpInput, o: ck.AsyncOptions) => {
      using net = new ck.Mlp({ layers: [3, 4, 2], eta: 0.1 });
      return await net.evaluateAsync(X, T, o);
    }),
  },
  {
    name: 'Mlp.predict',
    base: () => [arrayOf('float32', 6)],
    call: f((X: DeviceArray<'float32'>) => {
      using net = new ck.Mlp({ layers: [3, 4, 2], eta: 0.1, method: 'custom' });
      const y = net.predict(X);
      if (y instanceof DeviceArray) track(y);
      return y;
    }),
  },
  {
    name: 'Mlp.evaluate',
    base: () => [new Float32Array(6), arrayOf('float32', 4)],
    call: f((X: ck.MlpInput, T: ck.MlpInput) => {
      using net = new ck.Mlp({ layers: [3, 4, 2], eta: 0.1 });
      return net.evaluate(X, T);
    }),
  },
  {
    name: 'Mlp.fromWeights',
    base: () => [new ck.cpu.Mlp({ layers: [3, 4, 2], eta: 0 }).getWeights(), { eta: 0.1, method: 'cublas' }],
    options: 1,
    call: f((w: ck.MlpWeights, o: ck.MlpRunOptions) => ck.Mlp.fromWeights(w, o).free()),
  },
  { name: 'apspBlockFactor', base: () => ['basic', 10, 4], call: f(ck.apspBlockFactor) },
  { name: 'apspRounds', base: () => ['fast', 300], call: f(ck.apspRounds) },
  {
    name: 'reconstructPath',
    base: () => [ck.cpu.apsp(hostInt(3), 3, { paths: true }).next, 0, 2],
    call: f(ck.reconstructPath),
  },
  {
    name: 'randomGraph',
    base: () => [5, { density: 0.5, minWeight: 1, maxWeight: 9, seed: 3, device: 0 }],
    options: 1,
    call: f((...a) => track(ck.randomGraph(...(a as Parameters<typeof ck.randomGraph>)))),
    skip: (a) => big(a[0], 8192),
  },
  { name: 'graphFormatOf', base: () => ['g.gr'], call: f(ck.graphFormatOf), io: true },
  { name: 'matrixFormatOf', base: () => ['d.bin'], call: f(ck.matrixFormatOf), io: true },
  {
    name: 'writeGraph',
    base: () => ['g.txt', hostInt(3), 3, { format: 'text' }],
    options: 3,
    call: f(ck.writeGraph),
    io: true,
  },
  { name: 'readGraph', base: () => ['g.txt', { format: 'text' }], options: 1, call: f(ck.readGraph), io: true },
  {
    name: 'writeDistances',
    base: () => ['d.bin', hostInt(3), 3, { format: 'binary' }],
    options: 3,
    call: f(ck.writeDistances),
    io: true,
  },
  { name: 'readDistances', base: () => ['d.bin', {}], options: 1, call: f(ck.readDistances), io: true },
  {
    name: 'cpu.atA',
    base: () => [new Float64Array(6), 2, 3],
    call: f(ck.cpu.atA),
    skip: (a) => big(a[1], 1e3) || big(a[2], 1e3),
  },
  {
    name: 'cpu.gemm',
    base: () => [new Float64Array(6), new Float64Array(12), 2, 3, 4],
    call: f(ck.cpu.gemm),
    skip: (a) => big(a[2], 1e3) || big(a[3], 1e3) || big(a[4], 1e3),
  },
  { name: 'cpu.scan', base: () => [new Int32Array(5), true], call: f(ck.cpu.scan) },
  { name: 'cpu.reduce', base: () => [new Float32Array(5), 'sum'], call: f(ck.cpu.reduce) },
  {
    name: 'cpu.stencil',
    base: () => [new Float64Array(12), 3, 4, { weights: 'box9', tolerance: 1e-3, maxIterations: 5 }],
    options: 3,
    call: f(ck.cpu.stencil),
    skip: (a) => big((a[3] as any)?.maxIterations, 1e4),
  },
  { name: 'cpu.apsp', base: () => [hostInt(4), 4, { paths: true }], options: 2, call: f(ck.cpu.apsp) },
  { name: 'cpu.relativeError', base: () => [new Float64Array(3), new Float64Array(3)], call: f(ck.cpu.relativeError) },
  { name: 'cpu.firstMismatch', base: () => [new Float64Array(3), new Float64Array(3)], call: f(ck.cpu.firstMismatch) },
  {
    name: 'cpu.Mlp',
    base: () => [{ layers: [3, 4, 2], eta: 0.1, alpha: 0.9, seed: 1, activation: 'relu', output: 'sigmoid' }],
    options: 0,
    call: f((o: ck.MlpSpec) => new ck.cpu.Mlp(o)),
    skip: (a) => hugeLayers(a[0]),
  },
  {
    name: 'cpu.Mlp.train',
    base: () => [[1, 2, 3, 4, 5, 6], [0, 1, 1, 0], { epochs: 2, batchSize: 2 }],
    options: 2,
    call: f((X: number[], T: number[], o: ck.TrainOptions) =>
      new ck.cpu.Mlp({ layers: [3, 4, 2], eta: 0.1 }).train(X, T, o),
    ),
    skip: (a) => big((a[2] as any)?.epochs, 1000),
  },
  {
    name: 'cpu.randomArray',
    base: () => [Float32Array, 10, 3],
    call: f(ck.cpu.randomArray),
    skip: (a) => big(a[1], 1e6),
  },
];
/* eslint-enable @typescript-eslint/no-explicit-any */

// A target whose valid call fails, planted by test/fuzz.test.ts to show that the harness reports it.
if (process.env.CK_FUZZ_PLANT === 'valid-call-throws') {
  TARGETS.push({
    name: 'planted',
    base: () => [1],
    call: f((x: unknown) => {
      if (x === 1) throw new RangeError('planted: a valid call that throws');
    }),
  });
}

// ---- running ----------------------------------------------------------------------------------

type Outcome = 'ok' | 'TypeError' | 'RangeError' | 'CudaError' | 'GraphFileError' | 'SystemError';

function classify(e: unknown, io: boolean): Outcome | null {
  if (e instanceof ck.CudaError) return 'CudaError';
  if (e instanceof RangeError) return 'RangeError';
  if (e instanceof TypeError) return 'TypeError';
  if (io && e instanceof ck.GraphFileError) return 'GraphFileError';
  if (io && e instanceof Error && /^E[A-Z]+$/.test(String((e as { code?: unknown }).code))) return 'SystemError';
  return null;
}

function describe(v: unknown): string {
  if (typeof v === 'symbol') return v.toString();
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'function') return 'function';
  if (v instanceof DeviceArray) return `DeviceArray(${v.dtype}[${v.length}]${v.freed ? ' freed' : ''})`;
  if (ArrayBuffer.isView(v)) return `${v.constructor.name}(${(v as unknown as ArrayLike<number>).length})`;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return Object.prototype.toString.call(v);
  }
}

/** The valid arguments of a target with one or two of them (or of its options' fields) made wrong. */
function mutate(t: Target): unknown[] {
  const a = t.base();
  const mutations = random() < 0.7 ? 1 : 2;
  for (let m = 0; m < mutations; m++) {
    const opts = t.options !== undefined ? (a[t.options] as Record<string, unknown> | undefined) : undefined;
    const r = random();
    if (opts && typeof opts === 'object' && r < 0.45) {
      const keys = Object.keys(opts);
      const key = keys.length && random() < 0.8 ? pick(keys) : pick(['out', 'scratch', 'device', 'shape', 'bogus']);
      a[t.options!] = { ...opts, [key]: badValue() };
    } else if (r < 0.9 || a.length === 0) {
      if (a.length === 0) a.push(badValue());
      else a[Math.floor(random() * a.length)] = badValue();
    } else if (random() < 0.5) {
      a.pop(); // too few arguments
    } else {
      a.push(badValue()); // too many
    }
  }
  return a;
}

const HANG_MS = 20_000;

/** Runs the garbage collector (node --expose-gc) and lets the N-API finalizers it queues run. */
async function collectGarbage(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return;
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function main(): Promise<void> {
  const counts: Record<string, number> = {};
  const failures: string[] = [];
  let calls = 0;
  let skipped = 0;
  // Every target once with its base arguments first (valid on a GPU but for the deliberately bad
  // ones; forged arrays without one): it creates the lazy state (cuBLAS handles, the
  // pool) before memory is measured, and shows the valid calls succeed.
  for (const t of TARGETS) {
    calls++;
    let thrown: unknown;
    try {
      const r = t.call(...t.base());
      collect(r);
      if (r instanceof Promise) await r;
    } catch (e) {
      thrown = e ?? new Error(String(e));
    }
    // On a GPU the base arguments are valid: they must succeed (or throw exactly what the target
    // says it throws on purpose). Without one, calls that reach the device throw CudaError, and
    // the forged arrays that stand in for device arrays a TypeError; nothing else.
    const allowed = t.baseThrows ? [t.baseThrows] : GPU ? [] : ['CudaError', 'TypeError'];
    const got = thrown === undefined ? undefined : String((thrown as Error).name ?? 'a non-error');
    if (got !== undefined && !allowed.includes(got)) {
      failures.push(`${t.name} with its base arguments threw ${got}: ${String((thrown as Error)?.message ?? thrown)}`);
    } else if (thrown === undefined && t.baseThrows && GPU) {
      failures.push(`${t.name} with its base arguments should throw ${t.baseThrows} but returned`);
    } else {
      const outcome = thrown === undefined ? 'ok' : classify(thrown, !!t.io);
      if (outcome) counts[outcome] = (counts[outcome] ?? 0) + 1;
    }
    for (const a of made) a.free();
    made = [];
  }
  // The largest allocations the wrong values can ask for (2^32 + 1 elements: 16 and 32 GiB), once
  // each before measuring: the driver may keep page-table memory for the highest amount of memory
  // ever mapped (a high-water mark, not a leak).
  if (GPU) {
    for (const dtype of ck.dtypes) {
      try {
        ck.empty(dtype, 2 ** 32 + 1).free();
      } catch (e) {
        if (!(e instanceof ck.CudaError)) throw e;
      }
    }
  }
  /** Where free memory first fell below its lowest level since the measurement began (at most 5). */
  const drops: string[] = [];
  let lowest = Infinity;
  // Memory is measured after the first fifth of the calls, so that kernels loaded lazily by their
  // first launch are in place; a leak would keep growing over the other four fifths.
  let memoryBefore: number | null = null;
  const started = Date.now();
  while (calls < CALLS) {
    if (GPU && memoryBefore === null && calls >= CALLS / 5) {
      await collectGarbage();
      ck.synchronize();
      memoryBefore = ck.memoryInfo().free;
    }
    const t = TARGETS[(calls + skipped) % TARGETS.length];
    const a = mutate(t);
    if (t.skip?.(a)) {
      skipped++;
      continue;
    }
    calls++;
    let outcome: Outcome | null = 'ok';
    let error: unknown;
    try {
      let r = t.call(...a);
      collect(r);
      if (r instanceof Promise) {
        let timer: NodeJS.Timeout | undefined;
        r = await Promise.race([
          r,
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`hang: no answer in ${HANG_MS} ms`)), HANG_MS);
          }),
        ]).finally(() => clearTimeout(timer));
      }
    } catch (e) {
      error = e;
      outcome = classify(e, !!t.io);
    }
    if (outcome === null) {
      if (failures.length < 20)
        failures.push(
          `${t.name}(${a.map(describe).join(', ')}) threw ${describe((error as Error)?.name)}: ${String((error as Error)?.message ?? error)}`,
        );
      counts.other = (counts.other ?? 0) + 1;
    } else {
      counts[outcome] = (counts[outcome] ?? 0) + 1;
    }
    for (const d of made) d.free();
    made = [];
    if (memoryBefore !== null) {
      ck.synchronize();
      const free = ck.memoryInfo().free;
      if (free < Math.min(lowest, memoryBefore)) {
        if (drops.length < 5) drops.push(`call ${calls} ${t.name}(${a.map(describe).join(', ')}): free ${free}`);
        lowest = free;
      }
    }
  }
  if (GPU) ck.synchronize();
  const memoryAtEnd = GPU ? ck.memoryInfo().free : null;
  // Objects the calls dropped without freeing (event timers, which have no free(), and arrays of
  // calls that threw) are released by their finalizers: collect them before the last measurement,
  // so that what remains is memory nothing refers to any more.
  await collectGarbage();
  if (GPU) ck.synchronize();
  const memoryAfter = GPU ? ck.memoryInfo().free : null;
  const result = {
    seed: SEED,
    gpu: GPU,
    calls,
    skipped,
    targets: TARGETS.length,
    seconds: (Date.now() - started) / 1000,
    outcomes: counts,
    failures,
    memoryBefore,
    memoryAtEnd,
    memoryAfter,
    drops,
  };
  const line = JSON.stringify(result);
  if (OUT) fs.writeFileSync(OUT, line);
  process.stdout.write(line + '\n');
  fs.rmSync(tmp, { recursive: true, force: true });
}

process.on('unhandledRejection', (e) => {
  process.stdout.write(JSON.stringify({ unhandledRejection: String(e) }) + '\n');
  process.exitCode = 3;
});

main().catch((e) => {
  process.stdout.write(JSON.stringify({ fatal: String(e?.stack ?? e) }) + '\n');
  process.exitCode = 2;
});
