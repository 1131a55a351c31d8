// How the MLP property family tells float32's freedom at a relu kink from a defect
// (test/harness/mlp-margin.ts): its replay is cpu.Mlp's training; the kink the soak met, taken the
// other way, gives the GPU's recorded result; and defects larger than such a flip still fail.
import fc from 'fast-check';

import * as ck from '../lib';
import { flatWeights } from '../lib/ops/mlp-spec';
import { assertProperty } from './harness/fc-run';
import { FAMILIES, type MlpP } from './harness/families';
import { report } from './harness/report';
import {
  FLOAT32_KINK_MARGIN,
  kinkAlternatives,
  MAX_KINK_ALTERNATIVES,
  type MlpOutcome,
  mlpMismatch,
  type MlpProblem,
  parameterBlocks as blocks,
  replayMlp,
} from './harness/mlp-margin';
import { describeGpu } from './helpers/gpu';

const floats32 = (n: number, seed: number) => ck.cpu.randomArray(Float32Array, n, seed);

// As the property family draws it (test/harness/families.ts).
function problem(
  layers: number[],
  patterns: number,
  batch: number,
  seed: number,
  activation: ck.MlpActivation,
  output: ck.MlpOutput,
  epochs = 2,
): MlpProblem {
  const x = floats32(patterns * layers[0], seed);
  const t = floats32(patterns * layers[layers.length - 1], seed + 1).map((v) => (v + 1) / 2);
  const spec = { layers, activation, output, eta: 0.05 / (batch * Math.max(...layers)), alpha: 0.5, seed };
  return { spec, x, t, epochs, batch };
}

function cpuMlp(pr: MlpProblem, spec = pr.spec): MlpOutcome {
  const net = new ck.cpu.Mlp(spec);
  const errors = net.train(pr.x, pr.t, { epochs: pr.epochs, batchSize: pr.batch }).map((r) => r.error);
  return { errors, params: flatWeights(net.getWeights()) };
}

function expectReplayIsCpuMlp(pr: MlpProblem): void {
  const want = cpuMlp(pr);
  const r = replayMlp(pr);
  expect(Array.from(r.params)).toEqual(Array.from(want.params));
  expect(r.errors).toEqual(want.errors);
  if (pr.spec.activation !== 'relu' || pr.spec.layers.length < 3) expect(r.margin).toBe(Infinity);
}

// The soak's failing problem (test-results/h100-2026-11-27/run26-2db7da1-mlp-case.txt).
const SOAK = [[135, 5, 13, 17], 256, 6, 3, 'relu', 'identity'] as const;
const soak = (epochs = 2) => problem([...SOAK[0]], SOAK[1], SOAK[2], SOAK[3], SOAK[4], SOAK[5], epochs);

describe('the float64 replay', () => {
  test.each([
    [[7, 5, 3], 23, 4, 'relu', 'identity'],
    [[9, 6, 4, 2], 17, 17, 'sigmoid', 'sigmoid'],
    [[5, 8, 3], 10, 3, 'tanh', 'identity'],
    [[135, 5, 13, 17], 64, 6, 'relu', 'sigmoid'],
    [[6, 4], 9, 2, 'relu', 'identity'],
    [[4, 7, 7, 3], 11, 1, 'relu', 'sigmoid'],
    [[4, 7, 3], 11, 11, 'relu', 'identity'],
  ] as const)(
    'ends on cpu.Mlp’s weights and epoch errors, bit for bit (%j × %i, batch %i, %s/%s)',
    (layers, patterns, batch, act, out) => expectReplayIsCpuMlp(problem([...layers], patterns, batch, 11, act, out)),
  );

  test('ends on cpu.Mlp’s weights and epoch errors on the property family’s problems (fast-check)', async () => {
    const mlp = FAMILIES.find((f) => f.name === 'mlp');
    if (mlp === undefined) throw new Error('no mlp family');
    // The family's own generator (every activation, output, depth and batch split), at small sizes.
    const arb = mlp.params({ side: 24, length: 1e4 }) as fc.Arbitrary<MlpP>;
    await assertProperty(
      'mlp replay',
      fc.property(arb, (p) =>
        expectReplayIsCpuMlp(problem(p.layers, p.patterns, p.batch, p.seed, p.activation, p.output)),
      ),
      60,
    );
  }, 60_000);
});

describe('relu kinks', () => {
  test('the soak’s problem has one kink (epoch 1, pattern 104, hidden layer 1, unit 1, margin 1.9e-8); its neighbours none', () => {
    const { kinks, margin } = replayMlp(soak());
    expect(kinks.map(({ epoch, pattern, layer, unit }) => ({ epoch, pattern, layer, unit }))).toEqual([
      { epoch: 1, pattern: 104, layer: 1, unit: 1 },
    ]);
    expect(margin).toBeGreaterThan(1.9e-8);
    expect(margin).toBeLessThan(2e-8);
    // The same shape at another batch size or seed: the GPU met the reference at ~1e-7 there.
    for (const [seed, batch] of [
      [3, 8],
      [4, 6],
      [5, 6],
    ]) {
      const pr = problem([...SOAK[0]], SOAK[1], batch, seed, 'relu', 'identity');
      expect([seed, batch, replayMlp(pr).margin > FLOAT32_KINK_MARGIN]).toEqual([seed, batch, true]);
    }
  }, 60_000);

  test('taking the other side of that kink gives the GPU’s recorded result, block for block', () => {
    // The H100's custom and cublas methods (run26): relative error to cpu.Mlp over all weights, per
    // block W0 b0 W1 b1 W2 b2, and the last epoch's error.
    const gpu = [
      { epochs: 1, all: 2.79e-4, blocks: [7.3e-4, 8.3e-4, 2.9e-6, 6.7e-5, 2.2e-6, 5.5e-5], error: 1609.818 },
      { epochs: 2, all: 2.82e-4, blocks: [7.4e-4, 4.8e-4, 3.6e-6, 5.1e-5, 2.2e-6, 3.0e-5], error: 1126.506 },
    ];
    for (const g of gpu) {
      const pr = soak(g.epochs);
      const ref = replayMlp(pr);
      const flipped = replayMlp(pr, [ref.kinks[0].at]);
      // Within the recorded digits and the GPU's own float32 rounding (~2e-7 relative, per block).
      const names = ['all', ...blocks([...SOAK[0]]).map(([n]) => n)];
      const got = [
        ck.cpu.relativeError(flipped.params, ref.params),
        ...blocks([...SOAK[0]]).map(([, a, b]) =>
          ck.cpu.relativeError(flipped.params.subarray(a, b), ref.params.subarray(a, b)),
        ),
      ];
      const want = [g.all, ...g.blocks];
      const off = names.filter((_, i) => !(Math.abs(got[i] / want[i] - 1) < (i === 0 ? 0.01 : 0.1)));
      expect({ epochs: g.epochs, off, got }).toEqual({ epochs: g.epochs, off: [], got });
      expect(Number(flipped.errors.at(-1)?.toFixed(3))).toBe(g.error);
    }
  }, 60_000);
  test('with several kinks, the alternatives take the other side of each, closest first, then of their own', () => {
    // A problem the family drew with two kinks on the reference's path.
    const pr = problem([25, 58, 17], 146, 45, 791997514, 'relu', 'identity');
    const { kinks, alternatives } = kinkAlternatives(pr);
    expect(kinks.length).toBe(2);
    const byMargin = [...kinks].sort((a, b) => a.margin - b.margin).map((k) => [k.at]);
    expect(alternatives.slice(0, 2).map((a) => a.flips)).toEqual(byMargin);
    expect(alternatives.length).toBeLessThanOrEqual(MAX_KINK_ALTERNATIVES);
    const ref = replayMlp(pr);
    for (const a of alternatives) {
      expect(a.flips).toEqual([...a.flips].sort((x, y) => x - y));
      expect(new Set(a.flips).size).toBe(a.flips.length);
      // A flip changes the training (the kinks are hidden units that matter).
      expect(ck.cpu.relativeError(a.outcome.params, ref.params)).toBeGreaterThan(1e-7);
    }
  }, 60_000);
});

describe('mlpMismatch (the family’s check)', () => {
  const pr = soak();
  const reference = cpuMlp(pr);
  const alternatives = (() => {
    const a = kinkAlternatives(pr);
    return () => a;
  })();
  const fround = (o: MlpOutcome): MlpOutcome => ({
    errors: Array.from(o.errors, Math.fround),
    params: Float32Array.from(o.params),
  });

  test('passes the reference and the training that took the other side of the kink, in float32', () => {
    expect(mlpMismatch(fround(reference), reference, 1e-4, alternatives)).toBeNull();
    const flipped = alternatives().alternatives[0].outcome;
    expect(ck.cpu.relativeError(flipped.params, reference.params)).toBeGreaterThan(1e-4);
    expect(mlpMismatch(fround(flipped), reference, 1e-4, alternatives)).toBeNull();
  }, 60_000);

  // Defects that move the weights 2–20× further than the flip does (2.8e-4) but less than 1e-2: a check
  // that loosened to 1e-2 at a kink let them all pass.
  const defects: [string, () => MlpOutcome][] = [
    ['η off by 1%', () => cpuMlp(pr, { ...pr.spec, eta: (pr.spec.eta as number) * 1.01 })],
    [
      'the momentum lost between epochs',
      () => {
        const net = new ck.cpu.Mlp(pr.spec);
        const e1 = net.train(pr.x, pr.t, { epochs: 1, batchSize: pr.batch })[0].error;
        const again = ck.cpu.Mlp.fromWeights(net.getWeights(), { eta: net.eta, alpha: net.alpha });
        const e2 = again.train(pr.x, pr.t, { epochs: 1, batchSize: pr.batch })[0].error;
        return { errors: [e1, e2], params: flatWeights(again.getWeights()) };
      },
    ],
    [
      'the last, partial batch dropped',
      () => {
        const [nIn, , , nOut] = SOAK[0];
        const whole = Math.floor(SOAK[1] / pr.batch) * pr.batch;
        return cpuMlp({ ...pr, x: Array.from(pr.x).slice(0, whole * nIn), t: Array.from(pr.t).slice(0, whole * nOut) });
      },
    ],
    [
      'one weight corrupted (a race)',
      () => {
        const params = Float64Array.from(reference.params);
        const norm = Math.hypot(...params);
        params[100] += 3e-3 * norm;
        return { errors: reference.errors, params };
      },
    ],
  ];
  test.each(defects)('fails %s', (_, make) => {
    const got = make();
    const e = ck.cpu.relativeError(got.params, reference.params);
    expect(e).toBeGreaterThan(5e-4);
    expect(e).toBeLessThan(1e-2);
    const why = mlpMismatch(fround(got), reference, 1e-4, alternatives);
    expect(why).toMatch(
      /\(compared at 0.0001\); nor within 0.0001 of any of 1 trainings taking the other side of relu kinks/,
    );
    expect(why).toMatch(/the first at epoch 1, pattern 104, hidden layer 1, unit 1: margin 1.92e-8/);
  });

  test('without a kink, a miss says so plainly', () => {
    const sig = problem([7, 5, 3], 23, 4, 11, 'sigmoid', 'identity');
    const ref = cpuMlp(sig);
    const bad = { errors: ref.errors, params: Array.from(ref.params, (v, i) => (i === 0 ? v + 1 : v)) };
    expect(mlpMismatch(bad, ref, 1e-4, () => kinkAlternatives(sig))).toMatch(
      /^weights: relative error [0-9.e-]+ \(compared at 0.0001\)$/,
    );
    const nan = { errors: [NaN, NaN], params: ref.params };
    expect(mlpMismatch(nan, ref, 1e-4, () => kinkAlternatives(sig))).toMatch(/^epoch 1 error NaN against/);
    const nanWeights = { errors: ref.errors, params: Array.from(ref.params, () => NaN) };
    expect(mlpMismatch(nanWeights, ref, 1e-4, () => kinkAlternatives(sig))).toMatch(/relative error NaN/);
  });
});

describeGpu('the soak’s relu-kink problem on the GPU', () => {
  // The H100 (run26) took the other side of the kink with every method: 2.8e-4 from cpu.Mlp. Whichever
  // side a device takes, it must lie within float32 rounding of that side's training.
  const methods = ck.cublasInfo().available ? ck.mlpMethods : (['custom'] as const);
  test.each(methods.flatMap((m) => [1, 3].map((streams) => [m, streams] as const)))(
    '%s on %i streams is within 1e-5 of cpu.Mlp or of the training across the kink, and the family check passes',
    (method, streams) => {
      const pr = soak();
      const reference = cpuMlp(pr);
      const alts = kinkAlternatives(pr);
      using net = new ck.Mlp({ ...pr.spec, method, streams });
      const errors = net.train(pr.x, pr.t, { epochs: pr.epochs, batchSize: pr.batch }).map((r) => r.error);
      const params = flatWeights(net.getWeights());
      const toRef = ck.cpu.relativeError(params, reference.params);
      const toAlt = ck.cpu.relativeError(params, alts.alternatives[0].outcome.params);
      report(
        `mlp soak kink ${method}/${streams}: ${toRef.toExponential(2)} from cpu.Mlp, ${toAlt.toExponential(2)} from across the kink`,
      );
      expect(Math.min(toRef, toAlt)).toBeLessThan(1e-5);
      expect(mlpMismatch({ errors, params }, reference, 1e-4, () => alts)).toBeNull();
    },
    60_000,
  );
});
