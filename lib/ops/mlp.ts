import { checkArray, DeviceArray, empty, upload } from '../array';
import {
  type AsyncOptions,
  holdArrays,
  type ProgressOptions,
  type ResolvedAsync,
  resolveAsync,
  throwIfAborted,
} from '../async';
import {
  checkPatternValues,
  checkPatterns,
  checkTrainOptions,
  checkTrainRates,
  type EpochResult,
  type MlpActivation,
  mlpInitialParameters,
  type MlpOutput,
  type MlpSpec,
  type MlpWeights,
  nonFiniteSumError,
  packWeights,
  type ResolvedMlpSpec,
  resolveMlpSpec,
  type TrainOptions,
  unpackWeights,
} from './mlp-spec';
import { checkDevice, cublasInfo } from '../device';
import { type Communicator } from '../distributed/communicator';
import {
  dataParallelComm,
  dataParallelDevice,
  type DataParallelStart,
  dataParallelStart,
  dataParallelStartAsync,
  reserveForTraining,
} from '../distributed/mlp';
import { asNcclError } from '../distributed/nccl';
import { checkInteger, rangeError, typeError, inWords } from '../errors';
import { native } from '../native';
import { reduce, reduceAsync } from './scan';
import { EventTimer } from '../timing';

/**
 * The training variants, in the order of native/mlp/methods.cc (native/mlp/mlp.h's Method enum).
 *
 * - `custom`: the report's design — our tiled GEMM kernel with the bias, activation, output error
 *   and derivative fused into it; the patterns of a batch split over `streams` CUDA streams, each
 *   with its own gradient buffer, reduced in the update kernel; η and α in constant memory; the
 *   targets read through the read-only data path; the error by warp-shuffle block reduction.
 * - `cublas`: cublasSgemm (TF32 off) per layer with our fused bias+activation, output-error and
 *   derivative kernels; with `streams` ≥ 2 the weight-gradient GEMMs run on a second stream beside
 *   the input-gradient ones.
 */
export const mlpMethods = ['custom', 'cublas'] as const;

/** A variant name, or `auto` (`cublas` where cuBLAS loads, else `custom`). */
export type MlpMethod = (typeof mlpMethods)[number] | 'auto';

/** @internal The activation codes native/mlp passes to its kernels (its `mlpActivations()` order). */
export const HIDDEN_CODE: Record<MlpActivation, number> = { sigmoid: 0, tanh: 1, relu: 2 };
/** @internal */
export const OUTPUT_CODE: Record<MlpOutput, number> = { sigmoid: 0, identity: 3 };

/** Options of the GPU {@link Mlp}: the network ({@link MlpSpec}) and how it runs. */
export interface MlpOptions extends MlpSpec {
  /** Variant (default `auto`). */
  method?: MlpMethod;
  /**
   * CUDA streams, 1–8; see {@link mlpMethods} for what each method does with them. Default: the
   * fastest measured on the H100's benchmark nets — 2 for `cublas` (2.5% faster than 1), 4 for
   * `custom` (up to 20% faster than 1).
   */
  streams?: number;
  /** Device the network lives on (default 0). */
  device?: number;
}

/** Options of {@link Mlp.train}: the epochs and batch size, and a communicator for data-parallel training. */
export interface MlpTrainOptions extends TrainOptions {
  /**
   * Train data-parallel over the ranks of this communicator (see {@link Mlp.train}); the network must
   * be on the communicator's device.
   */
  comm?: Communicator;
}

/** Options of {@link Mlp.trainAsync}: those of {@link Mlp.train}, an AbortSignal and a progress callback. */
export interface MlpTrainAsyncOptions extends MlpTrainOptions, ProgressOptions {}

/** What `fromWeights` takes besides the weights. */
export type MlpRunOptions = Omit<MlpOptions, 'layers' | 'activation' | 'output' | 'seed'>;

/** Patterns on the host (converted to float32) or already on the device (float32). */
export type MlpInput = DeviceArray<'float32'> | ArrayLike<number>;

/**
 * A multilayer network trained on the GPU by feed-forward and back-propagation with momentum:
 * H_{l+1} = f(H_l·W_l + b_l); E = ½Σ(y − t)²; ΔW = −η·∂E/∂W + α·ΔW_prev; W += ΔW (biases alike).
 * `cpu.Mlp` is the reference with the same specification and initialisation.
 *
 * Each epoch's `ms` is GPU time from CUDA events; `train` waits for each epoch to read its error.
 *
 * @example
 * ```ts
 * using net = new Mlp({ layers: [4, 8, 3], eta: 0.01, alpha: 0.9, seed: 7 });
 * net.train(X, T, { epochs: 200, onEpoch: ({ epoch, error }) => console.log(epoch, error) });
 * const y = net.predict(X); // Float32Array, P × 3
 * ```
 */
export class Mlp {
  /** Layer sizes [nIn, ...hidden, nOut]. */
  readonly layers: readonly number[];
  /** Hidden-layer activation. */
  readonly activation: MlpActivation;
  /** Output-layer activation. */
  readonly output: MlpOutput;
  /** Learning rate η (finite, ≥ 0). */
  eta: number;
  /** Momentum α (finite, ≥ 0). */
  alpha: number;
  /** The variant that runs (`auto` resolved). */
  readonly method: (typeof mlpMethods)[number];
  /** CUDA streams used by training. */
  readonly streams: number;
  /** The device holding the network. */
  readonly device: number;
  #params: DeviceArray<'float32'> | null = null;
  #momentum: DeviceArray<'float32'> | null = null;
  #error: DeviceArray<'float64'> | null = null;
  #workspace: { array: DeviceArray<'float32'>; batch: number } | null = null;
  #epochs = 0;

  constructor(options: MlpOptions) {
    const spec = resolveMlpSpec(options);
    const method = options.method ?? 'auto';
    if (method !== 'auto' && !(mlpMethods as readonly string[]).includes(method))
      throw rangeError('options.method', `one of auto, ${mlpMethods.join(', ')}`, method);
    this.method = method === 'auto' ? (cublasInfo().available ? 'cublas' : 'custom') : method;
    this.streams = checkInteger('options.streams', options.streams ?? (this.method === 'cublas' ? 2 : 4), 1, 8);
    this.device = checkDevice(options.device ?? 0, 'options.device');
    this.layers = spec.layers;
    this.activation = spec.activation;
    this.output = spec.output;
    this.eta = spec.eta;
    this.alpha = spec.alpha;
    this.#allocate(mlpInitialParameters(spec));
  }

  #allocate(params: Float32Array): void {
    try {
      this.#params = upload(params, { device: this.device });
      this.#momentum = empty('float32', params.length, { device: this.device }).fill(0);
      this.#error = empty('float64', 1, { device: this.device });
    } catch (e) {
      this.free();
      throw e;
    }
  }

  /** A network on the GPU with the given weights (from `getWeights()`, either class's), momentum zero. */
  static fromWeights(weights: MlpWeights, options: MlpRunOptions): Mlp {
    const w = unpackWeights(weights, 'weights', true);
    if (typeof options !== 'object' || options === null) throw typeError('options', 'an object', options);
    const net = new Mlp({ ...options, layers: w.layers, activation: w.activation, output: w.output });
    net.#live().copyFrom(Float32Array.from(w.params));
    return net;
  }

  /** True once {@link Mlp.free} has been called. */
  get freed(): boolean {
    return this.#params === null;
  }

  #live(): DeviceArray<'float32'> {
    if (this.#params === null) throw new TypeError('this Mlp has been freed');
    return this.#params;
  }

  #spec(): ResolvedMlpSpec {
    const { layers, activation, output, eta, alpha } = this;
    return { layers: [...layers], activation, output, eta, alpha, seed: 0 };
  }

  #args(): [number[], number, number] {
    return [[...this.layers], HIDDEN_CODE[this.activation], OUTPUT_CODE[this.output]];
  }

  /**
   * A device copy of the parameter vector, laid out W_0, b_0, W_1, b_1, … (W_l row-major n_l ×
   * n_{l+1}); for comparing networks on the device without a trip through JSON.
   */
  copyParameters(): DeviceArray<'float32'> {
    return this.#live().clone();
  }

  /** The weights as JSON-serialisable arrays (waits for the GPU). */
  getWeights(): MlpWeights {
    return packWeights(this.#spec(), this.#live().toHostSync());
  }

  /**
   * Trains for `options.epochs` epochs over the P patterns of X (P × nIn) and T (P × nOut), row by
   * row; returns each epoch's result (and passes it to `options.onEpoch`). Host data is uploaded once
   * per call as float32. X and T are first checked to hold only finite numbers (one reduction of each
   * on the device; `options.validate: false` skips it). `eta` and `alpha` are read, and checked, at the
   * start of every epoch, so `onEpoch` may change them.
   *
   * With `options.comm`, training is data parallel: every rank calls `train` with its own shard of the
   * patterns and the same network options, its batches are its shard's, and after each batch the
   * gradient is summed over the ranks (an NCCL all-reduce) before the update, so every rank applies
   * the same update. The weights and momentum are first broadcast from rank 0, and the ranks check that
   * they agree on the network's size, the number of batches per epoch and the epochs (a RangeError on
   * every rank otherwise); a rank whose own checks fail (X or T not finite, a batch larger than its
   * shard, any argument error) makes every rank throw, that rank its own error. Each epoch's `error`
   * is the sum over all ranks' patterns. To reproduce one GPU's
   * training on P patterns in batches of B, give each of the k ranks batches of B / k patterns whose
   * union is the one-GPU batch (with the whole set as one batch, any split works); the weights then
   * agree up to float32 rounding (sums taken in another order). A dead peer makes `train` throw an
   * `NcclError` within the communicator's timeout.
   */
  train(X: MlpInput, T: MlpInput, options: MlpTrainOptions): EpochResult[] {
    const comm = options?.comm === undefined ? undefined : dataParallelComm(options.comm);
    const owned: DeviceArray[] = [];
    try {
      // With comm, a check of this rank's own that fails is not thrown here but brought to the
      // start-up agreement: thrown alone, it would leave the other ranks waiting there (and in
      // this blocking call, their JS threads) until the timeout.
      let ready:
        | (DataParallelStart & {
            x: DeviceArray<'float32'>;
            t: DeviceArray<'float32'>;
            workspace: DeviceArray<'float32'>;
          })
        | null = null;
      let failure: unknown = null;
      try {
        const params = this.#live();
        checkTrainRates(this.eta, this.alpha);
        if (comm) dataParallelDevice(comm, this.device);
        const { x, t, owned: uploaded } = this.#inputs(X, T);
        owned.push(...uploaded);
        const P = checkPatterns(this.layers, x, t);
        const { epochs, batch, validate } = checkTrainOptions(options, P);
        const bad = validate
          ? (nonFiniteSumError('X', reduce(x, 'sum')) ?? nonFiniteSumError('T', reduce(t as DeviceArray, 'sum')))
          : undefined;
        if (bad) throw bad;
        const workspace = this.#trainingWorkspace(batch);
        const momentum = this.#momentum as DeviceArray<'float32'>;
        ready = { params, momentum, patterns: P, batch, epochs, x, t: t as DeviceArray<'float32'>, workspace };
      } catch (e) {
        if (!comm) throw e;
        failure = e;
      }
      if (comm) dataParallelStart(comm, ready, failure);
      const { params, momentum, x, t, patterns: P, batch, epochs, workspace } = ready as NonNullable<typeof ready>;
      const error = this.#error as DeviceArray<'float64'>;
      using timer = new EventTimer(this.device);
      const results: EpochResult[] = [];
      for (let e = 0; e < epochs; e++) {
        // Read at every epoch, after the last onEpoch, which may change them (a schedule).
        const rates = checkTrainRates(this.eta, this.alpha);
        error.fill(0);
        timer.start();
        native.mlpTrainEpoch(
          ...this.#epochArgs([params, momentum, workspace, x, t, error], P, batch, rates, comm, 'Mlp.train'),
        );
        timer.stop();
        const ms = timer.elapsedMs();
        const r = { epoch: ++this.#epochs, error: error.toHostSync()[0], ms };
        // A peer that died mid-epoch: the watchdog aborted the communicator, so the wait above ended.
        comm?.check();
        results.push(r);
        options.onEpoch?.(r);
      }
      return results;
    } catch (e) {
      throw comm ? asNcclError(e) : e;
    } finally {
      for (const a of owned) a.free();
    }
  }

  /** One pass of all patterns through the network; host in, host out (P × nOut, float32). */
  predict(X: ArrayLike<number>): Float32Array;
  /** One pass of all patterns through the network; device in, device out (P × nOut). */
  predict(X: DeviceArray<'float32'>): DeviceArray<'float32'>;
  predict(X: MlpInput): Float32Array | DeviceArray<'float32'> {
    this.#live();
    const { x, owned } = this.#inputs(X);
    try {
      const P = checkPatterns(this.layers, x);
      const y = empty('float32', P * (this.layers.at(-1) as number), { device: this.device });
      try {
        this.#forward(x, y, null, P);
      } catch (e) {
        y.free();
        throw e;
      }
      if (X instanceof DeviceArray) return y;
      const host = y.toHostSync();
      y.free();
      return host;
    } finally {
      for (const a of owned) a.free();
    }
  }

  /** ½Σ(y − t)² over all patterns with the current weights, without training. */
  evaluate(X: MlpInput, T: MlpInput): number {
    this.#live();
    const { x, t, owned } = this.#inputs(X, T);
    try {
      const P = checkPatterns(this.layers, x, t);
      using y = empty('float32', P * (this.layers.at(-1) as number), { device: this.device });
      const error = this.#error as DeviceArray<'float64'>;
      error.fill(0);
      this.#forward(x, y, t as DeviceArray<'float32'>, P);
      return error.toHostSync()[0];
    } finally {
      for (const a of owned) a.free();
    }
  }

  /**
   * {@link Mlp.train} as a Promise: the same epochs, results, `onEpoch` calls and argument checks, with
   * each epoch enqueued and waited for on a libuv pool thread, so the JS thread keeps running. After each
   * epoch it calls `options.onEpoch` and then `options.onProgress({ done, total })` (epochs done of
   * `epochs`), and checks `options.signal`. With `options.comm` the ranks' start-up agreement is awaited
   * too instead of blocking.
   *
   * It trains on X and T as they are at the call, with `eta` and `alpha` as they are then: host inputs
   * are uploaded and device inputs copied on the device before it returns (so device inputs take their
   * size in device memory again while it runs), and writing them or the fields afterwards does not
   * change the training.
   *
   * Rejects, never throws: TypeError/RangeError as {@link Mlp.train} throws them, {@link CudaError} (or
   * `NcclError` with `comm`), or {@link AbortError} after the epoch in flight when the signal aborts:
   * the network then holds the weights of the epochs completed (each counted in later `epoch` numbers)
   * and is usable at once. While it runs, the network's arrays are refused as outputs of other calls
   * (a second `trainAsync` or an `evaluateAsync` rejects; `predictAsync` may run and sees the weights
   * of the moment), and `free()` takes effect when it settles. See docs/async.md.
   *
   * @example
   * ```ts
   * const ac = new AbortController();
   * const epochs = await net.trainAsync(X, T, { epochs: 1000, signal: ac.signal, onProgress: ({ done }) => bar.update(done) });
   * ```
   */
  async trainAsync(X: MlpInput, T: MlpInput, options: MlpTrainAsyncOptions): Promise<EpochResult[]> {
    const what = 'Mlp.trainAsync';
    const comm = options?.comm === undefined ? undefined : dataParallelComm(options.comm);
    // With comm, the communicator is reserved now, before this rank's own checks (sequences queue
    // in call order, which must be the same on every rank), and a check that fails is not thrown
    // here but brought to the start-up agreement: thrown alone, it would leave the other ranks
    // waiting there until the timeout.
    const reserved = comm ? reserveForTraining(comm) : undefined;
    const owned: DeviceArray[] = [];
    let workspace: DeviceArray<'float32'> | null = null;
    let endSequence: (() => void) | undefined; // with comm: its reservation, held to the end
    try {
      let ready:
        | (DataParallelStart & {
            x: DeviceArray<'float32'>;
            t: DeviceArray<'float32'>;
            rates: { eta: number; alpha: number };
            signal: AbortSignal | undefined;
            onProgress: ResolvedAsync['onProgress'];
            checked: Promise<unknown>;
          })
        | null = null;
      let failure: unknown = null;
      try {
        const params = this.#live();
        // Taken at the call, like everything the epochs read: eta and alpha, and X and T (host data is
        // uploaded, device arrays are copied on the device), so that later writes do not reach the training.
        const rates = checkTrainRates(this.eta, this.alpha);
        if (comm) dataParallelDevice(comm, this.device);
        const { signal, onProgress } = resolveAsync(options, true);
        throwIfAborted(signal, what);
        const { x, t, owned: uploaded } = this.#inputs(X, T, true);
        owned.push(...uploaded);
        const P = checkPatterns(this.layers, x, t);
        const { epochs, batch, validate } = checkTrainOptions(options, P);
        // Queued now, read before the first epoch is queued (with comm, in the start-up agreement).
        const sums = validate ? [reduceAsync(x, 'sum'), reduceAsync(t as DeviceArray, 'sum')] : [];
        const checked: Promise<unknown> = Promise.all(sums).then(
          ([sx, st]) => (validate ? (nonFiniteSumError('X', sx) ?? nonFiniteSumError('T', st) ?? null) : null),
          (e: unknown) => e,
        );
        // A workspace of its own: the cached one of train() may be replaced meanwhile.
        workspace = empty('float32', native.mlpWorkspace(...this.#args(), batch, this.streams, true), {
          device: this.device,
        });
        const momentum = this.#momentum as DeviceArray<'float32'>;
        const tt = t as DeviceArray<'float32'>;
        ready = { params, momentum, patterns: P, batch, epochs, x, t: tt, rates, signal, onProgress, checked };
      } catch (e) {
        if (!comm) throw e;
        failure = e;
      }
      if (comm) {
        const checks = failure !== null || ready === null ? Promise.resolve(failure) : ready.checked;
        endSequence = await dataParallelStartAsync(comm, reserved as Promise<() => void>, ready, checks);
      }
      const {
        params,
        momentum,
        x,
        t,
        patterns: P,
        batch,
        epochs,
        rates,
        signal,
        onProgress,
        checked,
      } = ready as NonNullable<typeof ready>;
      const error = this.#error as DeviceArray<'float64'>;
      const ws = workspace as DeviceArray<'float32'>;
      const release = holdArrays(
        what,
        [],
        [
          ['params', params],
          ['momentum', momentum],
          ['workspace', ws],
          ['error', error],
        ],
      );
      try {
        const bad = comm ? null : await checked;
        if (bad) throw bad;
        using timer = new EventTimer(this.device);
        const results: EpochResult[] = [];
        for (let e = 0; e < epochs; e++) {
          timer.start();
          await native.mlpTrainEpochAsync(
            ...this.#epochArgs([params, momentum, ws, x, t, error], P, batch, rates, comm, what),
          );
          timer.stop();
          const [sum] = await error.toHost();
          // The stop event came before the error's copy: complete, so this does not wait.
          const r = { epoch: ++this.#epochs, error: sum, ms: timer.elapsedMs() };
          comm?.check();
          results.push(r);
          options.onEpoch?.(r);
          onProgress?.({ done: e + 1, total: epochs });
          throwIfAborted(signal, `${what} (after ${e + 1} of ${epochs} epochs)`);
        }
        return results;
      } finally {
        release();
      }
    } catch (e) {
      throw comm ? asNcclError(e) : e;
    } finally {
      endSequence?.();
      workspace?.free();
      for (const a of owned) a.free();
    }
  }

  /** {@link Mlp.predict} as a Promise: host in, host out (P × nOut, float32). See {@link Mlp.predictAsync}. */
  predictAsync(X: ArrayLike<number>, options?: AsyncOptions): Promise<Float32Array>;
  /**
   * {@link Mlp.predict} as a Promise: the forward pass is enqueued and waited for on a libuv pool
   * thread, so the JS thread keeps running; device in, device out (P × nOut). Rejects, never throws:
   * TypeError/RangeError as {@link Mlp.predict} throws them, {@link CudaError}, or {@link AbortError}
   * when `options.signal` aborts before the result is in (after the pass in flight: nothing is left
   * locked). May run while {@link Mlp.trainAsync} runs (it reads the weights of the moment).
   */
  predictAsync(X: DeviceArray<'float32'>, options?: AsyncOptions): Promise<DeviceArray<'float32'>>;
  async predictAsync(X: MlpInput, options: AsyncOptions = {}): Promise<Float32Array | DeviceArray<'float32'>> {
    const what = 'Mlp.predictAsync';
    this.#live();
    const { signal } = resolveAsync(options, false);
    throwIfAborted(signal, what);
    const { x, owned } = this.#inputs(X);
    try {
      const P = checkPatterns(this.layers, x);
      const y = empty('float32', P * (this.layers.at(-1) as number), { device: this.device });
      try {
        await this.#forwardAsync(x, y, null, P);
        throwIfAborted(signal, what);
        if (X instanceof DeviceArray) return y;
        const host = await y.toHost();
        throwIfAborted(signal, what);
        y.free();
        return host;
      } catch (e) {
        y.free();
        throw e;
      }
    } finally {
      for (const a of owned) a.free();
    }
  }

  /**
   * {@link Mlp.evaluate} as a Promise: ½Σ(y − t)² over all patterns, the forward pass enqueued and
   * waited for on a libuv pool thread. Rejects, never throws: TypeError/RangeError as
   * {@link Mlp.evaluate} throws them, {@link CudaError}, or {@link AbortError} when `options.signal`
   * aborts before the result is in (after the pass in flight). Rejects while {@link Mlp.trainAsync}
   * runs on the same network (both write its error accumulator).
   */
  async evaluateAsync(X: MlpInput, T: MlpInput, options: AsyncOptions = {}): Promise<number> {
    const what = 'Mlp.evaluateAsync';
    this.#live();
    const { signal } = resolveAsync(options, false);
    throwIfAborted(signal, what);
    const { x, t, owned } = this.#inputs(X, T);
    try {
      const P = checkPatterns(this.layers, x, t);
      using y = empty('float32', P * (this.layers.at(-1) as number), { device: this.device });
      // The error comes back with the pass: the accumulator may be written again before a read here.
      const sum = (await this.#forwardAsync(x, y, t as DeviceArray<'float32'>, P)) as number;
      throwIfAborted(signal, what);
      return sum;
    } finally {
      for (const a of owned) a.free();
    }
  }

  async #forwardAsync(
    x: DeviceArray<'float32'>,
    y: DeviceArray<'float32'>,
    t: DeviceArray<'float32'> | null,
    P: number,
  ): Promise<number | undefined> {
    using ws = this.#forwardWorkspace(P);
    return await native.mlpForwardAsync(...this.#forwardArgs(ws, x, y, t, P));
  }

  #forward(x: DeviceArray<'float32'>, y: DeviceArray<'float32'>, t: DeviceArray<'float32'> | null, P: number): void {
    using ws = this.#forwardWorkspace(P);
    native.mlpForward(...this.#forwardArgs(ws, x, y, t, P));
  }

  /** The arguments of mlpTrainEpoch and mlpTrainEpochAsync, which take the same ones. */
  #epochArgs(
    [params, momentum, workspace, x, t, error]: [
      DeviceArray<'float32'>,
      DeviceArray<'float32'>,
      DeviceArray<'float32'>,
      DeviceArray<'float32'>,
      DeviceArray<'float32'>,
      DeviceArray<'float64'>,
    ],
    P: number,
    batch: number,
    rates: { eta: number; alpha: number },
    comm: ReturnType<typeof dataParallelComm> | undefined,
    what: string,
  ): Parameters<typeof native.mlpTrainEpoch> {
    return [
      params.handle('params'),
      momentum.handle('momentum'),
      workspace.handle('workspace'),
      x.handle('X'),
      t.handle('T'),
      error.handle('error'),
      ...this.#args(),
      P,
      batch,
      rates.eta,
      rates.alpha,
      mlpMethods.indexOf(this.method),
      this.streams,
      comm?.handle(what),
    ];
  }

  /** The work space of one forward pass over P patterns. */
  #forwardWorkspace(P: number): DeviceArray<'float32'> {
    const floats = native.mlpWorkspace(...this.#args(), P, 1, false);
    return empty('float32', Math.max(1, floats), { device: this.device });
  }

  /** The arguments of mlpForward and mlpForwardAsync, which take the same ones. */
  #forwardArgs(
    ws: DeviceArray<'float32'>,
    x: DeviceArray<'float32'>,
    y: DeviceArray<'float32'>,
    t: DeviceArray<'float32'> | null,
    P: number,
  ): Parameters<typeof native.mlpForward> {
    return [
      this.#live().handle(),
      ws.handle(),
      x.handle('X'),
      y.handle(),
      t ? t.handle('T') : null,
      t ? (this.#error as DeviceArray<'float64'>).handle() : null,
      ...this.#args(),
      P,
      mlpMethods.indexOf(this.method),
    ];
  }

  // Device arrays for X and T: the caller's when they are on this device, else uploaded copies
  // (listed in `owned`, freed by the caller). With `snapshot`, the caller's device arrays are copied
  // too (on the device, queued now), for a call that reads them later, from a pool thread.
  #inputs(
    X: MlpInput,
    T?: MlpInput,
    snapshot = false,
  ): { x: DeviceArray<'float32'>; t: DeviceArray<'float32'> | undefined; owned: DeviceArray[] } {
    const owned: DeviceArray[] = [];
    const copy = (a: DeviceArray<'float32'>): DeviceArray<'float32'> => {
      if (!snapshot || owned.includes(a)) return a;
      const c = a.clone();
      owned.push(c);
      return c;
    };
    try {
      const x = copy(this.#input('X', X, owned));
      const t = T === undefined ? undefined : copy(this.#input('T', T, owned));
      return { x, t, owned };
    } catch (e) {
      for (const a of owned) a.free();
      throw e;
    }
  }

  #input(name: string, value: MlpInput, owned: DeviceArray[]): DeviceArray<'float32'> {
    if (value instanceof DeviceArray) {
      checkArray(name, value, 'float32');
      if (value.device !== this.device)
        throw rangeError(name, `on device ${this.device}`, inWords(`device ${value.device}`));
      return value;
    }
    const isTyped = ArrayBuffer.isView(value) && !(value instanceof DataView);
    if (!Array.isArray(value) && !isTyped)
      throw typeError(name, 'a float32 DeviceArray, a typed array or an array of numbers', value);
    checkPatternValues(name, value);
    const host = value instanceof Float32Array ? value : Float32Array.from(value as ArrayLike<number>);
    // An empty input is uploaded too (as a 0-element array) so that checkPatterns gives its error.
    const arr =
      host.length === 0 ? empty('float32', 0, { device: this.device }) : upload(host, { device: this.device });
    owned.push(arr);
    return arr;
  }

  #trainingWorkspace(batch: number): DeviceArray<'float32'> {
    if (this.#workspace?.batch === batch) return this.#workspace.array;
    this.#workspace?.array.free();
    this.#workspace = null;
    const floats = native.mlpWorkspace(...this.#args(), batch, this.streams, true);
    this.#workspace = { array: empty('float32', floats, { device: this.device }), batch };
    return this.#workspace.array;
  }

  /** Releases the network's device memory now. Idempotent. */
  free(): void {
    for (const a of [this.#params, this.#momentum, this.#error, this.#workspace?.array]) a?.free();
    this.#params = this.#momentum = this.#error = null;
    this.#workspace = null;
  }

  /** Frees the network at the end of a `using` block. */
  [Symbol.dispose](): void {
    this.free();
  }

  toString(): string {
    return `Mlp[${this.layers.join(', ')}] ${this.activation}/${this.output} (${this.method}) on device ${this.device}${
      this.freed ? ' (freed)' : ''
    }`;
  }
}
