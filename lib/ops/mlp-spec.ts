// The multilayer network's specification, shared by the GPU `Mlp` (lib/ops/mlp.ts) and the CPU
// reference `cpu.Mlp` (lib/cpu/mlp.ts): options and their checks, the seeded initialisation, the
// parameter layout and the weights format. It loads no binary, so the CPU reference stays usable
// without one.
import { checkInteger, rangeError, typeError, elements, inWords } from '../errors';

/** Activations of the hidden layers. */
export const mlpActivations = ['sigmoid', 'tanh', 'relu'] as const;
/** Activation of the hidden layers: sigmoid 1/(1+e^−x), tanh, or relu max(0, x). */
export type MlpActivation = (typeof mlpActivations)[number];
/** Activations of the output layer. */
export const mlpOutputs = ['sigmoid', 'identity'] as const;
/** Activation of the output layer: sigmoid (targets in [0, 1]) or identity (regression). */
export type MlpOutput = (typeof mlpOutputs)[number];

/** What defines a network and its training rule (shared by `Mlp` and `cpu.Mlp`). */
export interface MlpSpec {
  /** Layer sizes [nIn, ...hidden, nOut]: at least 2 entries, each an integer ≥ 1. */
  layers: readonly number[];
  /** Hidden-layer activation (default `sigmoid`). */
  activation?: MlpActivation;
  /** Output-layer activation (default `sigmoid`). */
  output?: MlpOutput;
  /** Learning rate η ≥ 0 (finite). */
  eta: number;
  /** Momentum α ≥ 0 (finite; default 0). */
  alpha?: number;
  /**
   * Seed of the initial weights (an integer, default 1): W uniform in ±√(6/(n_in + n_out)) (relu:
   * ±√(6/n_in)), rounded to float32; biases 0. The same seed gives the same weights on every method
   * and on the CPU.
   */
  seed?: number;
}

/** {@link MlpSpec} with the defaults applied and checked. */
export interface ResolvedMlpSpec {
  layers: number[];
  activation: MlpActivation;
  output: MlpOutput;
  eta: number;
  alpha: number;
  seed: number;
}

/** One epoch's result. */
export interface EpochResult {
  /** 1-based epoch number, counted over the network's life (a second `train` call continues it). */
  epoch: number;
  /** ½Σ(y − t)² over all patterns, each batch's part computed with the weights before its update. */
  error: number;
  /** Time of the epoch in milliseconds: GPU time from CUDA events on the GPU, wall time on the CPU. */
  ms: number;
}

/** Options of `train`. */
export interface TrainOptions {
  /** Epochs to run (an integer ≥ 1). */
  epochs: number;
  /**
   * Patterns per update (an integer in [1, P]; default P, the report's full batch). Batches are
   * consecutive patterns in order, the last one possibly shorter.
   */
  batchSize?: number;
  /** Called after each epoch, e.g. to draw progress. */
  onEpoch?: (result: EpochResult) => void;
  /**
   * Check before training that X and T hold only finite numbers (default true): a single NaN or
   * ±Infinity makes every weight and the momentum NaN within an epoch, silently. On the GPU it is one
   * reduction of each on the device (after the conversion to float32, so a float64 beyond float32's
   * range counts as Infinity); on the CPU a scan of the values. Pass false for inputs known to be
   * finite. (A plain array holding anything but numbers is refused either way.)
   */
  validate?: boolean;
}

/** A network's weights as plain JSON (what `getWeights()` returns and `fromWeights` takes). */
export interface MlpWeights {
  format: 'cuda-kernels.mlp/1';
  layers: number[];
  activation: MlpActivation;
  output: MlpOutput;
  /** weights[l]: n_l × n_{l+1} values, row-major (input index × output index). */
  weights: number[][];
  /** biases[l]: n_{l+1} values. */
  biases: number[][];
}

/** Applies the defaults and checks every field, throwing TypeError/RangeError naming it. */
export function resolveMlpSpec(spec: MlpSpec, name = 'options'): ResolvedMlpSpec {
  if (typeof spec !== 'object' || spec === null) throw typeError(name, 'an object', spec);
  const { layers } = spec;
  if (!Array.isArray(layers)) throw typeError(`${name}.layers`, 'an array of layer sizes', layers);
  if (layers.length < 2) throw rangeError(`${name}.layers`, 'at least 2 entries [nIn, ..., nOut]', layers.length);
  layers.forEach((n, i) => checkInteger(`${name}.layers[${i}]`, n, 1, 2 ** 31 - 1));
  const activation = spec.activation ?? 'sigmoid';
  if (!(mlpActivations as readonly string[]).includes(activation))
    throw rangeError(`${name}.activation`, `one of ${mlpActivations.join(', ')}`, activation);
  const output = spec.output ?? 'sigmoid';
  if (!(mlpOutputs as readonly string[]).includes(output))
    throw rangeError(`${name}.output`, `one of ${mlpOutputs.join(', ')}`, output);
  const eta = checkRate(`${name}.eta`, spec.eta);
  const alpha = checkRate(`${name}.alpha`, spec.alpha ?? 0);
  const seed = checkInteger(`${name}.seed`, spec.seed ?? 1, -(2 ** 31), 2 ** 53);
  return { layers: [...layers], activation, output, eta, alpha, seed };
}

function checkRate(name: string, value: unknown): number {
  if (typeof value !== 'number') throw typeError(name, 'a number', value);
  if (!Number.isFinite(value) || value < 0) throw rangeError(name, 'a finite number ≥ 0', value);
  return value;
}

/** Parameters (weights and biases) of a network: Σ n_l·n_{l+1} + n_{l+1}. */
export function mlpParameterCount(layers: readonly number[]): number {
  let count = 0;
  for (let l = 0; l + 1 < layers.length; l++) count += layers[l] * layers[l + 1] + layers[l + 1];
  return count;
}

/** Offset of W_l in the parameter vector (W_l, then b_l, for each layer in turn). */
export function mlpWeightOffset(layers: readonly number[], l: number): number {
  return mlpParameterCount(layers.slice(0, l + 1));
}

/** The seeded initial parameters (see {@link MlpSpec.seed}), laid out W_0, b_0, W_1, b_1, … */
export function mlpInitialParameters(spec: ResolvedMlpSpec): Float32Array {
  const { layers } = spec;
  const out = new Float32Array(mlpParameterCount(layers));
  // splitmix32: a small, well-mixed generator; the stream depends only on the seed.
  let state = spec.seed >>> 0;
  const next = (): number => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  };
  let off = 0;
  for (let l = 0; l + 1 < layers.length; l++) {
    const nIn = layers[l];
    const nOut = layers[l + 1];
    const r = spec.activation === 'relu' ? Math.sqrt(6 / nIn) : Math.sqrt(6 / (nIn + nOut));
    for (let i = 0; i < nIn * nOut; i++) out[off + i] = (2 * next() - 1) * r;
    off += nIn * nOut + nOut; // biases stay 0
  }
  return out;
}

/** Splits a parameter vector into the JSON weights format. */
export function packWeights(spec: ResolvedMlpSpec, params: ArrayLike<number>): MlpWeights {
  const weights: number[][] = [];
  const biases: number[][] = [];
  let off = 0;
  for (let l = 0; l + 1 < spec.layers.length; l++) {
    const nw = spec.layers[l] * spec.layers[l + 1];
    weights.push(Array.from({ length: nw }, (_, i) => params[off + i]));
    off += nw;
    biases.push(Array.from({ length: spec.layers[l + 1] }, (_, i) => params[off + i]));
    off += spec.layers[l + 1];
  }
  return {
    format: 'cuda-kernels.mlp/1',
    layers: [...spec.layers],
    activation: spec.activation,
    output: spec.output,
    weights,
    biases,
  };
}

/**
 * The weights of `getWeights()` as one vector in the parameter layout (W_0, b_0, W_1, …), without
 * checking them: NaN stays NaN (for comparing a diverged run, which {@link unpackWeights} refuses).
 */
export function flatWeights(w: MlpWeights): Float64Array {
  return Float64Array.from(w.weights.flatMap((layer, l) => [...layer, ...w.biases[l]]));
}

/**
 * Checks a weights object and returns its spec fields and parameter vector (float64); with `float32`,
 * also that every value stays finite as a float32 (for the GPU network).
 */
export function unpackWeights(
  w: MlpWeights,
  name = 'weights',
  float32 = false,
): { layers: number[]; activation: MlpActivation; output: MlpOutput; params: Float64Array } {
  if (typeof w !== 'object' || w === null) throw typeError(name, 'an object from getWeights()', w);
  if (w.format !== 'cuda-kernels.mlp/1') throw rangeError(`${name}.format`, "'cuda-kernels.mlp/1'", w.format);
  const spec = resolveMlpSpec({ layers: w.layers, activation: w.activation, output: w.output, eta: 0 }, name);
  const L = spec.layers.length - 1;
  if (!Array.isArray(w.weights) || w.weights.length !== L)
    throw rangeError(`${name}.weights`, `an array of ${L} layers`, w.weights);
  if (!Array.isArray(w.biases) || w.biases.length !== L)
    throw rangeError(`${name}.biases`, `an array of ${L} layers`, w.biases);
  const params = new Float64Array(mlpParameterCount(spec.layers));
  let off = 0;
  const copy = (field: string, values: unknown, length: number) => {
    if (!Array.isArray(values) || values.length !== length)
      throw rangeError(field, `an array of ${length} numbers`, values);
    for (let i = 0; i < length; i++) {
      const v: unknown = values[i];
      if (typeof v !== 'number' || !Number.isFinite(v)) throw rangeError(`${field}[${i}]`, 'a finite number', v);
      // 1e39 would become Infinity on its way to a float32 network.
      if (float32 && !Number.isFinite(Math.fround(v)))
        throw rangeError(`${field}[${i}]`, 'a finite number within float32’s range (|w| ≤ 3.4028235e38)', v);
      params[off++] = v;
    }
  };
  for (let l = 0; l < L; l++) {
    copy(`${name}.weights[${l}]`, w.weights[l], spec.layers[l] * spec.layers[l + 1]);
    copy(`${name}.biases[${l}]`, w.biases[l], spec.layers[l + 1]);
  }
  return { layers: spec.layers, activation: spec.activation, output: spec.output, params };
}

/** Any array-like of numbers (typed array or plain array) holding patterns row by row. */
export type PatternData = ArrayLike<number>;

/** Checks X (P×nIn) and T (P×nOut, when given) against the layers; returns P. */
export function checkPatterns(layers: readonly number[], X: { length: number }, T?: { length: number }): number {
  const nIn = layers[0];
  const nOut = layers[layers.length - 1];
  if (X.length === 0 || X.length % nIn !== 0)
    throw rangeError('X', `a non-empty multiple of nIn = ${nIn} elements long`, elements(X.length));
  const P = X.length / nIn;
  if (P > 2 ** 31 - 1) throw rangeError('X', 'at most 2^31 − 1 patterns', P);
  if (T !== undefined) {
    if (T.length % nOut !== 0) throw rangeError('T', `a multiple of nOut = ${nOut} elements long`, elements(T.length));
    if (T.length / nOut !== P)
      throw rangeError('T', `${P} patterns (as many as X) of ${nOut}`, inWords(`${T.length / nOut} patterns`));
  }
  return P;
}

/** Checks train options against P patterns; returns epochs, the batch size and whether to validate. */
export function checkTrainOptions(
  options: TrainOptions,
  P: number,
): { epochs: number; batch: number; validate: boolean } {
  if (typeof options !== 'object' || options === null) throw typeError('options', 'an object', options);
  const epochs = checkInteger('options.epochs', options.epochs, 1);
  const batch = checkInteger('options.batchSize', options.batchSize ?? P, 1, P);
  if (options.onEpoch !== undefined && typeof options.onEpoch !== 'function')
    throw typeError('options.onEpoch', 'a function', options.onEpoch);
  const validate = options.validate ?? true;
  if (typeof validate !== 'boolean') throw typeError('options.validate', 'a boolean', validate);
  return { epochs, batch, validate };
}

/**
 * `eta` and `alpha` as a training starts: they are plain fields a user may have set to anything since
 * the construction. RangeError naming the field; returns them, for the training to use throughout.
 */
export function checkTrainRates(eta: unknown, alpha: unknown): { eta: number; alpha: number } {
  for (const [name, value] of [
    ['eta', eta],
    ['alpha', alpha],
  ] as const) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      throw rangeError(name, 'a finite number ≥ 0', value);
  }
  return { eta: eta as number, alpha: alpha as number };
}

/**
 * Refuses host patterns that are not numbers: a plain array with an element that is not a number (a
 * string or `undefined` would become NaN, or a number by accident, on the way to float32) and BigInt
 * typed arrays. TypeError naming the element.
 */
export function checkPatternValues(name: string, data: unknown): void {
  if (data instanceof BigInt64Array || data instanceof BigUint64Array)
    throw typeError(name, 'a typed array of numbers or an array of numbers', data);
  if (!Array.isArray(data)) return;
  for (let i = 0; i < data.length; i++) {
    const v: unknown = data[i];
    if (typeof v !== 'number') throw typeError(`${name}[${i}]`, 'a number', v);
  }
}

/** Refuses host patterns holding NaN or ±Infinity (see {@link TrainOptions.validate}): RangeError naming the element. */
export function checkFinitePatterns(name: string, data: ArrayLike<number>): void {
  for (let i = 0; i < data.length; i++) {
    if (!Number.isFinite(data[i]))
      throw rangeError(`${name}[${i}]`, 'a finite number (or pass options.validate: false)', data[i]);
  }
}

/**
 * The error of device patterns whose sum (float64, from a reduction on the device) is `sum`: a sum of
 * float32 values in float64 is finite exactly when every value is (no count of them that fits in memory
 * can overflow float64).
 */
export function nonFiniteSumError(name: string, sum: number): RangeError | undefined {
  if (Number.isFinite(sum)) return undefined;
  return new RangeError(
    `${name} must hold only finite numbers, but its sum on the device is ${sum}: it holds a NaN or ±Infinity ` +
      '(a float64 beyond float32’s range counts as Infinity; pass options.validate: false to skip this check)',
  );
}
