// How close the float64 reference's training comes to a relu kink: the smallest |z| / Σ|terms| of a
// hidden unit's pre-activation z over every pattern of every batch. Below float32's resolution
// (~6e-8) a float32 implementation may put the unit on either side of the kink, and its weights then
// differ from the reference by far more than rounding (the soak met 2.8e-4 at a margin of 1.9e-8, with
// the GPU's four methods agreeing to 2e-8). The replay is cpu.Mlp's arithmetic, operation for
// operation (test/mlp-margin.test.ts checks that it ends on the same weights).
import { mlpInitialParameters, type MlpSpec, mlpWeightOffset, resolveMlpSpec } from '../../lib/ops/mlp-spec';

export interface MarginReplay {
  /** The smallest |z| / Σ|terms| of a relu unit (Infinity without relu units). */
  margin: number;
  /** The parameters at the end, as cpu.Mlp's getWeights() flattens them. */
  params: Float64Array;
}

export function reluMargin(
  spec: MlpSpec,
  x: ArrayLike<number>,
  t: ArrayLike<number>,
  epochs: number,
  batch: number,
): MarginReplay {
  const s = resolveMlpSpec(spec);
  const layers = s.layers;
  const L = layers.length - 1;
  const P = x.length / layers[0];
  const w = Float64Array.from(mlpInitialParameters(s));
  const mom = new Float64Array(w.length);
  const grad = new Float64Array(w.length);
  const act = (f: string, z: number) =>
    f === 'sigmoid' ? 1 / (1 + Math.exp(-z)) : f === 'tanh' ? Math.tanh(z) : f === 'relu' ? (z > 0 ? z : 0) : z;
  const deriv = (f: string, y: number) =>
    f === 'sigmoid' ? y * (1 - y) : f === 'tanh' ? 1 - y * y : f === 'relu' ? (y > 0 ? 1 : 0) : 1;
  let margin = Infinity;
  for (let e = 0; e < epochs; e++)
    for (let p0 = 0; p0 < P; p0 += batch) {
      grad.fill(0);
      for (let p = p0; p < Math.min(P, p0 + batch); p++) {
        const h: Float64Array[] = [Float64Array.from({ length: layers[0] }, (_, i) => x[p * layers[0] + i])];
        let off = 0;
        for (let l = 0; l < L; l++) {
          const nIn = layers[l];
          const nOut = layers[l + 1];
          const f = l + 1 === L ? s.output : s.activation;
          const out = new Float64Array(nOut);
          for (let j = 0; j < nOut; j++) {
            let z = w[off + nIn * nOut + j];
            let scale = Math.abs(z);
            for (let i = 0; i < nIn; i++) {
              const term = h[l][i] * w[off + i * nOut + j];
              z += term;
              scale += Math.abs(term);
            }
            if (f === 'relu' && scale > 0) margin = Math.min(margin, Math.abs(z) / scale);
            out[j] = act(f, z);
          }
          h.push(out);
          off += nIn * nOut + nOut;
        }
        const nOut = layers[L];
        let delta = new Float64Array(nOut);
        for (let j = 0; j < nOut; j++) delta[j] = (h[L][j] - t[p * nOut + j]) * deriv(s.output, h[L][j]);
        for (let l = L - 1; l >= 0; l--) {
          const nIn = layers[l];
          const n1 = layers[l + 1];
          const o = mlpWeightOffset(layers, l);
          for (let i = 0; i < nIn; i++) for (let j = 0; j < n1; j++) grad[o + i * n1 + j] += h[l][i] * delta[j];
          for (let j = 0; j < n1; j++) grad[o + nIn * n1 + j] += delta[j];
          if (l > 0) {
            const prev = new Float64Array(nIn);
            for (let i = 0; i < nIn; i++) {
              let sum = 0;
              for (let j = 0; j < n1; j++) sum += delta[j] * w[o + i * n1 + j];
              prev[i] = sum * deriv(s.activation, h[l][i]);
            }
            delta = prev;
          }
        }
      }
      for (let i = 0; i < w.length; i++) {
        const d = -s.eta * grad[i] + s.alpha * mom[i];
        mom[i] = d;
        w[i] += d;
      }
    }
  return { margin, params: w };
}

/** Below this margin a relu unit's side is float32 rounding's choice (float32's ε is 1.2e-7). */
export const FLOAT32_KINK_MARGIN = 1e-6;
