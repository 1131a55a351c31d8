// The CPU reference `cpu.Mlp`: float64 arithmetic on the same float32 initial values as the GPU's
// `Mlp`, whose specification (lib/ops/mlp-spec.ts) both share.
import { typeError } from '../errors';
import {
  checkFinitePatterns,
  checkPatternValues,
  checkPatterns,
  checkTrainOptions,
  checkTrainRates,
  type EpochResult,
  type MlpActivation,
  mlpInitialParameters,
  type MlpOutput,
  type MlpSpec,
  mlpWeightOffset,
  type MlpWeights,
  packWeights,
  type PatternData,
  type ResolvedMlpSpec,
  resolveMlpSpec,
  type TrainOptions,
  unpackWeights,
} from '../ops/mlp-spec';

function checkHost(name: string, value: unknown): PatternData {
  if (Array.isArray(value) || (ArrayBuffer.isView(value) && !(value instanceof DataView))) {
    checkPatternValues(name, value);
    return value as PatternData;
  }
  throw typeError(name, 'a typed array or an array of numbers', value);
}

const act = (a: MlpActivation | MlpOutput, x: number): number =>
  a === 'sigmoid' ? 1 / (1 + Math.exp(-x)) : a === 'tanh' ? Math.tanh(x) : a === 'relu' ? (x > 0 ? x : 0) : x;
// f'(x) in terms of y = f(x).
const deriv = (a: MlpActivation | MlpOutput, y: number): number =>
  a === 'sigmoid' ? y * (1 - y) : a === 'tanh' ? 1 - y * y : a === 'relu' ? (y > 0 ? 1 : 0) : 1;

/**
 * The CPU reference of `Mlp`: the same specification, initialisation and update rule in float64
 * arithmetic (from the same float32 initial weights), one pattern at a time.
 *
 * @example
 * ```ts
 * const net = new cpu.Mlp({ layers: [2, 4, 1], eta: 0.5, alpha: 0.9, seed: 3 });
 * net.train([0, 0, 0, 1, 1, 0, 1, 1], [0, 1, 1, 0], { epochs: 1000 });
 * ```
 */
export class Mlp {
  /** Layer sizes [nIn, ...hidden, nOut]. */
  readonly layers: readonly number[];
  /** Hidden-layer activation. */
  readonly activation: MlpActivation;
  /** Output-layer activation. */
  readonly output: MlpOutput;
  /** Learning rate η. */
  eta: number;
  /** Momentum α. */
  alpha: number;
  readonly #params: Float64Array;
  readonly #momentum: Float64Array;
  #epochs = 0;

  constructor(spec: MlpSpec) {
    const s = resolveMlpSpec(spec);
    this.layers = s.layers;
    this.activation = s.activation;
    this.output = s.output;
    this.eta = s.eta;
    this.alpha = s.alpha;
    this.#params = Float64Array.from(mlpInitialParameters(s));
    this.#momentum = new Float64Array(this.#params.length);
  }

  /** A network with the given weights (momentum zero). */
  static fromWeights(weights: MlpWeights, options: { eta: number; alpha?: number }): Mlp {
    const w = unpackWeights(weights);
    const net = new Mlp({ ...w, eta: options?.eta, alpha: options?.alpha });
    net.#params.set(w.params);
    return net;
  }

  /** The weights as JSON-serialisable arrays. */
  getWeights(): MlpWeights {
    return packWeights(this.#spec(), this.#params);
  }

  #spec(): ResolvedMlpSpec {
    const { layers, activation, output, eta, alpha } = this;
    return { layers: [...layers], activation, output, eta, alpha, seed: 0 };
  }

  /**
   * Trains for `options.epochs` epochs (see {@link TrainOptions}); returns each epoch's result. `eta` and
   * `alpha` are read, and checked, at the start of every epoch (so `onEpoch` may change them).
   */
  train(X: PatternData, T: PatternData, options: TrainOptions): EpochResult[] {
    checkTrainRates(this.eta, this.alpha);
    const x = checkHost('X', X);
    const t = checkHost('T', T);
    const P = checkPatterns(this.layers, x, t);
    const { epochs, batch, validate } = checkTrainOptions(options, P);
    if (validate) {
      checkFinitePatterns('X', x);
      checkFinitePatterns('T', t);
    }
    const results: EpochResult[] = [];
    const grad = new Float64Array(this.#params.length);
    for (let e = 0; e < epochs; e++) {
      const rates = checkTrainRates(this.eta, this.alpha);
      const start = performance.now();
      let error = 0;
      for (let p0 = 0; p0 < P; p0 += batch) {
        grad.fill(0);
        const p1 = Math.min(P, p0 + batch);
        for (let p = p0; p < p1; p++) error += this.#pattern(x, t, p, grad);
        this.#update(grad, rates);
      }
      const r = { epoch: ++this.#epochs, error, ms: performance.now() - start };
      results.push(r);
      options.onEpoch?.(r);
    }
    return results;
  }

  /** The network's outputs for P patterns (P × nOut, row-major). */
  predict(X: PatternData): Float64Array {
    const x = checkHost('X', X);
    const P = checkPatterns(this.layers, x);
    const nOut = this.layers[this.layers.length - 1];
    const out = new Float64Array(P * nOut);
    for (let p = 0; p < P; p++) out.set(this.#forward(x, p).at(-1) as Float64Array, p * nOut);
    return out;
  }

  /** ½Σ(y − t)² over all patterns, without training. */
  evaluate(X: PatternData, T: PatternData): number {
    const x = checkHost('X', X);
    const t = checkHost('T', T);
    const P = checkPatterns(this.layers, x, t);
    const y = this.predict(x);
    let error = 0;
    for (let i = 0; i < P * this.layers[this.layers.length - 1]; i++) error += 0.5 * (y[i] - t[i]) ** 2;
    return error;
  }

  #forward(x: PatternData, p: number): Float64Array[] {
    const { layers } = this;
    const h: Float64Array[] = [Float64Array.from({ length: layers[0] }, (_, i) => x[p * layers[0] + i])];
    let off = 0;
    for (let l = 0; l + 1 < layers.length; l++) {
      const nIn = layers[l];
      const nOut = layers[l + 1];
      const f = l + 2 === layers.length ? this.output : this.activation;
      const out = new Float64Array(nOut);
      const inp = h[l];
      for (let j = 0; j < nOut; j++) {
        let z = this.#params[off + nIn * nOut + j];
        for (let i = 0; i < nIn; i++) z += inp[i] * this.#params[off + i * nOut + j];
        out[j] = act(f, z);
      }
      h.push(out);
      off += nIn * nOut + nOut;
    }
    return h;
  }

  // Forward and backward for pattern p; adds ∂E/∂params to grad and returns its ½Σ(y − t)².
  #pattern(x: PatternData, t: PatternData, p: number, grad: Float64Array): number {
    const { layers } = this;
    const L = layers.length - 1;
    const h = this.#forward(x, p);
    const nOut = layers[L];
    let delta = new Float64Array(nOut);
    let error = 0;
    for (let j = 0; j < nOut; j++) {
      const d = h[L][j] - t[p * nOut + j];
      error += 0.5 * d * d;
      delta[j] = d * deriv(this.output, h[L][j]);
    }
    for (let l = L - 1; l >= 0; l--) {
      const nIn = layers[l];
      const n1 = layers[l + 1];
      const off = mlpWeightOffset(layers, l);
      for (let i = 0; i < nIn; i++) {
        const hi = h[l][i];
        for (let j = 0; j < n1; j++) grad[off + i * n1 + j] += hi * delta[j];
      }
      for (let j = 0; j < n1; j++) grad[off + nIn * n1 + j] += delta[j];
      if (l > 0) {
        const prev = new Float64Array(nIn);
        for (let i = 0; i < nIn; i++) {
          let s = 0;
          for (let j = 0; j < n1; j++) s += delta[j] * this.#params[off + i * n1 + j];
          prev[i] = s * deriv(this.activation, h[l][i]);
        }
        delta = prev;
      }
    }
    return error;
  }

  #update(grad: Float64Array, { eta, alpha }: { eta: number; alpha: number }): void {
    const w = this.#params;
    const m = this.#momentum;
    for (let i = 0; i < w.length; i++) {
      const d = -eta * grad[i] + alpha * m[i];
      m[i] = d;
      w[i] += d;
    }
  }
}
