import * as ck from '../lib';
import { native } from '../lib/native';
import { HIDDEN_CODE, OUTPUT_CODE } from '../lib/ops/mlp';
import { flatWeights, freshSeed } from './harness/families';
import { expectThrows } from './helpers/errors';
import { describeGpu } from './helpers/gpu';
import { mlpData as data } from './helpers/reference-checks';

/** ‖a − b‖ / ‖b‖ over all parameters. */
const weightError = (a: ck.MlpWeights, b: ck.MlpWeights) => ck.cpu.relativeError(flatWeights(a), flatWeights(b));

const relative = (a: number, b: number) => (a === b ? 0 : (a > b ? a - b : b - a) / (b > 0 ? b : -b));

const XOR = { X: [0, 0, 0, 1, 1, 0, 1, 1], T: [0, 1, 1, 0] };

describe('cpu.Mlp (the reference)', () => {
  test('the gradient of every weight matches a central finite difference (float64)', () => {
    const spec = { layers: [3, 5, 4, 2], eta: 0.1, seed: 11, activation: 'tanh' as const };
    const { X, T } = data(7, 3, 2, 5);
    const net = new ck.cpu.Mlp(spec);
    const w0 = flatWeights(net.getWeights());
    net.train(X, T, { epochs: 1 }); // α = 0: ΔW = −η·∂E/∂W
    const grad = flatWeights(net.getWeights()).map((w, i) => -(w - w0[i]) / spec.eta);
    const base = new ck.cpu.Mlp(spec).getWeights();
    const h = 1e-6;
    const at = (i: number, delta: number) => {
      const w = structuredClone(base);
      let k = i;
      for (let l = 0; l < w.weights.length; l++) {
        if (k < w.weights[l].length) return ((w.weights[l][k] += delta), ck.cpu.Mlp.fromWeights(w, { eta: 0 }));
        k -= w.weights[l].length;
        if (k < w.biases[l].length) return ((w.biases[l][k] += delta), ck.cpu.Mlp.fromWeights(w, { eta: 0 }));
        k -= w.biases[l].length;
      }
      throw new Error('index out of range');
    };
    for (let i = 0; i < grad.length; i++) {
      const fd = (at(i, h).evaluate(X, T) - at(i, -h).evaluate(X, T)) / (2 * h);
      expect(Math.abs(fd - grad[i])).toBeLessThan(1e-6 * Math.max(1, Math.abs(fd)));
    }
  });

  test('the error falls on XOR with a [2, 4, 1] net, to a solution', () => {
    const net = new ck.cpu.Mlp({ layers: [2, 4, 1], eta: 0.5, alpha: 0.9, seed: 3 });
    const r = net.train(XOR.X, XOR.T, { epochs: 2000 });
    expect(r[1999].error).toBeLessThan(r[0].error / 10);
    const y = net.predict(XOR.X);
    expect(Array.from(y, (v) => (v > 0.5 ? 1 : 0))).toEqual(XOR.T);
  });

  test('same seed, same weights; another seed, other weights; JSON round trip', () => {
    const a = new ck.cpu.Mlp({ layers: [4, 6, 2], eta: 0.1, seed: 42 }).getWeights();
    const b = new ck.cpu.Mlp({ layers: [4, 6, 2], eta: 0.1, seed: 42 }).getWeights();
    const c = new ck.cpu.Mlp({ layers: [4, 6, 2], eta: 0.1, seed: 43 }).getWeights();
    expect(b).toEqual(a);
    expect(c.weights).not.toEqual(a.weights);
    expect(a.biases.flat().every((v) => v === 0)).toBe(true);
    const back = ck.cpu.Mlp.fromWeights(JSON.parse(JSON.stringify(a)) as ck.MlpWeights, { eta: 0.1 });
    expect(back.getWeights()).toEqual(a);
    // Glorot bound √(6/(4+6)) for the first layer.
    expect(Math.max(...a.weights[0].map(Math.abs))).toBeLessThanOrEqual(Math.sqrt(6 / 10));
  });

  test('batches: batchSize P equals the default; smaller batches update more often', () => {
    const { X, T } = data(5, 2, 1, 9);
    const spec = { layers: [2, 3, 1], eta: 0.2, alpha: 0.5, seed: 2 };
    const full = new ck.cpu.Mlp(spec);
    const fullB = new ck.cpu.Mlp(spec);
    expect(full.train(X, T, { epochs: 3 }).map((r) => r.error)).toEqual(
      fullB.train(X, T, { epochs: 3, batchSize: 5 }).map((r) => r.error),
    );
    const one = new ck.cpu.Mlp(spec);
    const epochs: number[] = [];
    one.train(X, T, { epochs: 2, batchSize: 2, onEpoch: (r) => epochs.push(r.epoch) });
    expect(epochs).toEqual([1, 2]);
    expect(weightError(one.getWeights(), full.getWeights())).toBeGreaterThan(0);
  });

  test('bad input is rejected with the argument named', () => {
    const ok = { layers: [2, 3, 1], eta: 0.1 };
    expect(() => new ck.cpu.Mlp({ ...ok, layers: [2] })).toThrow(/options.layers must be at least 2 entries/);
    expect(() => new ck.cpu.Mlp({ ...ok, layers: [2, 0, 1] })).toThrow(/options.layers\[1\]/);
    expect(() => new ck.cpu.Mlp({ ...ok, layers: [2, -3, 1] })).toThrow(RangeError);
    expect(() => new ck.cpu.Mlp({ ...ok, layers: [2, 1.5, 1] })).toThrow(RangeError);
    expect(() => new ck.cpu.Mlp({ ...ok, eta: NaN })).toThrow(/options.eta must be a finite number/);
    expect(() => new ck.cpu.Mlp({ ...ok, alpha: Infinity })).toThrow(/options.alpha/);
    expect(() => new ck.cpu.Mlp({ ...ok, activation: 'softmax' as 'relu' })).toThrow(/options.activation/);
    expect(() => new ck.cpu.Mlp({ ...ok, output: 'tanh' as 'identity' })).toThrow(/options.output/);
    const net = new ck.cpu.Mlp(ok);
    expect(() => net.train([1, 2, 3], [1], { epochs: 1 })).toThrow(/X must be a non-empty multiple of nIn = 2/);
    expect(() => net.train([1, 2], [1, 2], { epochs: 1 })).toThrow(/T must be 1 patterns/);
    expect(() => net.train([1, 2], [1], { epochs: 0 })).toThrow(/options.epochs/);
    expect(() => net.train([1, 2], [1], { epochs: 1, batchSize: 2 })).toThrow(/options.batchSize/);
    expect(() => net.train('12' as unknown as number[], [1], { epochs: 1 })).toThrow(TypeError);
    expect(() => ck.cpu.Mlp.fromWeights({ ...net.getWeights(), weights: [[1], [2, 3, 4]] }, { eta: 0 })).toThrow(
      /weights.weights\[0\] must be an array of 6 numbers/,
    );
  });

  test('train checks eta and alpha set after construction, at every epoch (onEpoch may change them)', () => {
    const net = new ck.cpu.Mlp({ layers: [2, 3, 1], eta: 0.1, seed: 4 });
    const before = net.getWeights();
    for (const [field, value] of [
      ['eta', NaN],
      ['eta', -0.5],
      ['alpha', Infinity],
      ['alpha', '0.9'],
    ] as const) {
      const saved = net[field];
      (net as unknown as Record<string, unknown>)[field] = value;
      expect(() => net.train(XOR.X, XOR.T, { epochs: 1 })).toThrow(
        new RangeError(
          `${field} must be a finite number ≥ 0, got ${typeof value === 'string' ? `the string "${value}"` : `number ${value}`}`,
        ),
      );
      (net as unknown as Record<string, unknown>)[field] = saved;
    }
    expect(net.getWeights()).toEqual(before); // refused before any update
    // Set in onEpoch: the next epoch is refused; a valid change is used (a learning-rate schedule).
    expect(() =>
      net.train(XOR.X, XOR.T, {
        epochs: 3,
        onEpoch: ({ epoch }) => {
          if (epoch === 2) net.eta = -1;
        },
      }),
    ).toThrow(/eta must be a finite number ≥ 0, got number -1/);
    const a = new ck.cpu.Mlp({ layers: [2, 3, 1], eta: 0.5, seed: 4 });
    const b = new ck.cpu.Mlp({ layers: [2, 3, 1], eta: 0.5, seed: 4 });
    a.train(XOR.X, XOR.T, { epochs: 2, onEpoch: () => void (a.eta = 0.25) });
    b.train(XOR.X, XOR.T, { epochs: 1 });
    b.eta = 0.25;
    b.train(XOR.X, XOR.T, { epochs: 1 });
    expect(a.getWeights()).toEqual(b.getWeights());
  });

  test('patterns with NaN, ±Infinity or non-numbers are refused (validate: false lets finite checks go)', () => {
    const net = new ck.cpu.Mlp({ layers: [2, 3, 1], eta: 0.1, seed: 4 });
    const before = net.getWeights();
    expect(() => net.train([0, 0, NaN, 1], [0, 1], { epochs: 1 })).toThrow(
      /X\[2\] must be a finite number \(or pass options.validate: false\), got number NaN/,
    );
    expect(() => net.train(new Float64Array([0, 0, 1, 1]), new Float32Array([0, -Infinity]), { epochs: 1 })).toThrow(
      /T\[1\] must be a finite number .*got number -Infinity/,
    );
    expect(() => net.train([0, 0, '1', 1] as never, [0, 1], { epochs: 1 })).toThrow(
      new TypeError('X[2] must be a number, got the string "1"'),
    );
    // eslint-disable-next-line no-sparse-arrays
    expect(() => net.train([0, 0, 1, 1], [0, ,] as never, { epochs: 1 })).toThrow(
      /T\[1\] must be a number, got undefined/,
    );
    expect(() => net.train(new BigInt64Array(4) as never, [0, 1], { epochs: 1 })).toThrow(TypeError);
    expect(() => net.train(XOR.X, XOR.T, { epochs: 1, validate: 'no' as never })).toThrow(
      /options.validate must be a boolean/,
    );
    expect(() => net.predict([0, 'x'] as never)).toThrow(/X\[1\] must be a number/);
    expect(net.getWeights()).toEqual(before);
    // Opting out: the NaN then reaches the weights, as the option's documentation warns.
    net.train([0, 0, NaN, 1], [0, 1], { epochs: 1, validate: false });
    expect(flatWeights(net.getWeights()).some(Number.isNaN)).toBe(true);
  });
});

describe('Mlp argument checks (no device needed)', () => {
  test('the method and activation codes lib/ passes are the ones native/ reads', () => {
    expect(native.mlpMethods()).toEqual([...ck.mlpMethods]);
    const names = native.mlpActivations();
    for (const a of ck.mlpActivations) expect(names[HIDDEN_CODE[a]]).toBe(a);
    for (const a of ck.mlpOutputs) expect(names[OUTPUT_CODE[a]]).toBe(a);
    // Every code the native side accepts has a name on the TS side, and no two share one.
    expect(new Set(Object.values(HIDDEN_CODE)).size).toBe(ck.mlpActivations.length);
    expect(Object.keys(HIDDEN_CODE).sort()).toEqual([...ck.mlpActivations].sort());
  });

  const ok = { layers: [2, 3, 1], eta: 0.1 };
  test.each([
    [{ ...ok, layers: [3] }, /options.layers/],
    [{ ...ok, layers: [3, 0] }, /options.layers\[1\]/],
    [{ ...ok, eta: Infinity }, /options.eta/],
    [{ ...ok, alpha: NaN }, /options.alpha/],
    [{ ...ok, method: 'fast' as 'custom' }, /options.method/],
    [{ ...ok, streams: 0, method: 'custom' as const }, /options.streams/],
    [{ ...ok, streams: 9, method: 'custom' as const }, /options.streams/],
  ])('%j', (options, message) => {
    expect(() => new ck.Mlp(options)).toThrow(message);
  });

  test('fromWeights refuses values a float32 network cannot hold (checked before any device work)', () => {
    const w = new ck.cpu.Mlp({ layers: [2, 1], eta: 0.1 }).getWeights();
    const big = { ...w, weights: [[1e39, 0]] };
    expect(() => ck.Mlp.fromWeights(big, { eta: 0.1 })).toThrow(
      /weights.weights\[0\]\[0\] must be a finite number within float32’s range \(\|w\| ≤ 3.4028235e38\), got number 1e\+39/,
    );
    expect(() => ck.Mlp.fromWeights({ ...w, biases: [[-3.5e38]] }, { eta: 0.1 })).toThrow(/weights.biases\[0\]\[0\]/);
    // The CPU reference computes in float64: any finite value will do there.
    expect(() => ck.cpu.Mlp.fromWeights(big, { eta: 0 })).not.toThrow();
  });
});

describeGpu('Mlp on the GPU', () => {
  const methods = ck.cublasInfo().available ? ck.mlpMethods : (['custom'] as const);

  describe.each(methods)('%s', (method) => {
    test.each([
      ['[4, 8, 3] × 16', [4, 8, 3], 16, 0.05],
      ['[20, 64, 64, 10] × 256', [20, 64, 64, 10], 256, 0.005],
    ])('%s matches cpu.Mlp after 1 and 5 epochs (weights and errors within 1e-4)', (_name, layers, P, eta) => {
      const seed = freshSeed();
      const { X, T } = data(P, layers[0], layers.at(-1) as number, seed);
      const spec = { layers, eta, alpha: 0.9, seed };
      using gpu = new ck.Mlp({ ...spec, method });
      const cpu = new ck.cpu.Mlp(spec);
      expect(gpu.getWeights()).toEqual(cpu.getWeights()); // same seed, same initial weights
      for (const epochs of [1, 4]) {
        const g = gpu.train(X, T, { epochs });
        const c = cpu.train(X, T, { epochs });
        g.forEach((r, i) => {
          expect(r.epoch).toBe(c[i].epoch);
          expect([seed, relative(r.error, c[i].error) < 1e-4]).toEqual([seed, true]);
          expect(r.ms).toBeGreaterThan(0);
        });
        expect(weightError(gpu.getWeights(), cpu.getWeights())).toBeLessThan(1e-4);
      }
    });

    test.each([
      ['tanh', 'sigmoid', [3, 67, 5], 131, 50, 3],
      ['relu', 'identity', [17, 33, 65, 2], 100, 100, 2],
      ['sigmoid', 'identity', [1, 1], 1, 1, 4],
      ['relu', 'sigmoid', [70, 129, 1], 77, 13, 8],
    ] as const)(
      'hidden %s, output %s, %j × %i, batches of %i on %i streams match cpu.Mlp',
      (activation, output, layers, P, batchSize, streams) => {
        const seed = freshSeed();
        const { X, T } = data(P, layers[0], layers.at(-1) as number, seed);
        const spec = { layers, eta: 0.05 / batchSize, alpha: 0.5, seed, activation, output };
        using gpu = new ck.Mlp({ ...spec, method, streams });
        const cpu = new ck.cpu.Mlp(spec);
        const g = gpu.train(X, T, { epochs: 3, batchSize });
        const c = cpu.train(X, T, { epochs: 3, batchSize });
        for (let i = 0; i < 3; i++) expect(relative(g[i].error, c[i].error)).toBeLessThan(1e-4);
        expect([seed, weightError(gpu.getWeights(), cpu.getWeights()) < 1e-4]).toEqual([seed, true]);
        const y = gpu.predict(X);
        expect(ck.cpu.relativeError(y, cpu.predict(X))).toBeLessThan(1e-4);
        expect(relative(gpu.evaluate(X, T), cpu.evaluate(X, T))).toBeLessThan(1e-4);
      },
    );

    test('streams 1, 2 and 4 give the same result within 1e-5', () => {
      const seed = freshSeed();
      const layers = [30, 100, 40, 6];
      const { X, T } = data(500, 30, 6, seed);
      const runs = [1, 2, 4].map((streams) => {
        using net = new ck.Mlp({ layers, eta: 0.002, alpha: 0.9, seed, method, streams });
        const errors = net.train(X, T, { epochs: 3 }).map((r) => r.error);
        return { errors, w: net.getWeights() };
      });
      for (const r of runs.slice(1)) {
        expect(weightError(r.w, runs[0].w)).toBeLessThan(1e-5);
        r.errors.forEach((e, i) => expect(relative(e, runs[0].errors[i])).toBeLessThan(1e-5));
      }
    });

    test('the gradient of one weight matches a finite difference (float32)', () => {
      const seed = freshSeed();
      const spec = { layers: [4, 8, 3], eta: 0.01, seed };
      const { X, T } = data(16, 4, 3, seed);
      using net = new ck.Mlp({ ...spec, method });
      const w0 = net.getWeights();
      net.train(X, T, { epochs: 1 });
      const w1 = net.getWeights();
      for (const [l, k] of [
        [0, 5],
        [1, 7],
      ]) {
        const grad = -(w1.weights[l][k] - w0.weights[l][k]) / spec.eta;
        const h = 1e-2;
        const shifted = (d: number) => {
          const w = structuredClone(w0);
          w.weights[l][k] += d;
          using m = ck.Mlp.fromWeights(w, { eta: 0, method });
          return m.evaluate(X, T);
        };
        const fd = (shifted(h) - shifted(-h)) / (2 * h);
        expect([seed, l, k, Math.abs(fd - grad) < 2e-3 * Math.max(1, Math.abs(fd))]).toEqual([seed, l, k, true]);
      }
    });

    test('the error falls on XOR with a [2, 4, 1] net', () => {
      using net = new ck.Mlp({ layers: [2, 4, 1], eta: 0.5, alpha: 0.9, seed: 3, method });
      const r = net.train(XOR.X, XOR.T, { epochs: 2000 });
      expect(r[1999].error).toBeLessThan(r[0].error / 10);
      expect(Array.from(net.predict(XOR.X), (v) => (v > 0.5 ? 1 : 0))).toEqual(XOR.T);
    });

    test('a larger net (several tiles in every dimension) matches cpu.Mlp', () => {
      const seed = freshSeed();
      const layers = [300, 130, 10];
      const { X, T } = data(700, 300, 10, seed);
      const spec = { layers, eta: 0.001, alpha: 0.9, seed };
      using gpu = new ck.Mlp({ ...spec, method, streams: 2 });
      const cpu = new ck.cpu.Mlp(spec);
      const g = gpu.train(X, T, { epochs: 2 });
      const c = cpu.train(X, T, { epochs: 2 });
      expect(relative(g[1].error, c[1].error)).toBeLessThan(1e-4);
      expect([seed, weightError(gpu.getWeights(), cpu.getWeights()) < 1e-4]).toEqual([seed, true]);
    });
  });

  test('device arrays in, device array out; onEpoch; fromWeights from the CPU', () => {
    const { X, T } = data(40, 5, 2, 77);
    using dX = ck.upload(X);
    using dT = ck.upload(T);
    const spec = { layers: [5, 7, 2], eta: 0.05, alpha: 0.9, seed: 8 };
    using net = new ck.Mlp(spec);
    const seen: number[] = [];
    net.train(dX, dT, { epochs: 3, onEpoch: (r) => seen.push(r.epoch) });
    net.train(X, T, { epochs: 1, onEpoch: (r) => seen.push(r.epoch) });
    expect(seen).toEqual([1, 2, 3, 4]);
    using y = net.predict(dX);
    expect(y).toBeInstanceOf(ck.DeviceArray);
    expect(y.length).toBe(80);
    expect(Array.from(y.toHostSync())).toEqual(Array.from(net.predict(X)));
    const cpu = new ck.cpu.Mlp(spec);
    cpu.train(X, T, { epochs: 4 });
    using back = ck.Mlp.fromWeights(cpu.getWeights(), { eta: 0.05 });
    expect(weightError(back.getWeights(), cpu.getWeights())).toBeLessThan(1e-7);
  });

  test('train and trainAsync refuse NaN and ±Infinity in X or T (checked on the device); validate: false skips it', async () => {
    const { X, T } = data(50, 3, 2, freshSeed());
    using net = new ck.Mlp({ layers: [3, 4, 2], eta: 0.1, seed: 3 });
    const w0 = net.getWeights();
    const withX = (v: number) => Float32Array.from(X, (x, i) => (i === 77 ? v : x));
    const withT = (v: number) => Float32Array.from(T, (t, i) => (i === 99 ? v : t));
    const cases: [string, ArrayLike<number>, ArrayLike<number>, RegExp][] = [
      ['NaN in X', withX(NaN), T, /^X must hold only finite numbers, but its sum on the device is NaN/],
      ['Infinity in T', X, withT(Infinity), /^T must hold only finite numbers, but its sum on the device is Infinity/],
      ['-Infinity in X', withX(-Infinity), T, /^X must hold only finite numbers/],
      // A float64 beyond float32's range becomes Infinity on upload.
      ['1e39 in a Float64Array T', X, Float64Array.from(withT(0), (t, i) => (i === 5 ? 1e39 : t)), /^T must hold/],
    ];
    for (const [what, x, t, message] of cases) {
      expectThrows(() => net.train(x, t, { epochs: 1 }), 'RangeError', message);
      using dx = ck.upload(Float32Array.from(x));
      using dt = ck.upload(Float32Array.from(t));
      expectThrows(() => net.train(dx, dt, { epochs: 1 }), 'RangeError', message);
      const e = await net.trainAsync(x, t, { epochs: 1 }).then(
        () => new Error(`${what}: trainAsync resolved`),
        (err: unknown) => err as Error,
      );
      expect([what, e.name, message.test(e.message)]).toEqual([what, 'RangeError', true]);
      await expect(net.trainAsync(dx, dt, { epochs: 1 })).rejects.toThrow(message);
    }
    expect(net.getWeights()).toEqual(w0); // nothing was trained
    expect(() => net.train([1, 2, 'x', 4, 5, 6] as never, [1, 2, 3, 4], { epochs: 1 })).toThrow(
      new TypeError('X[2] must be a number, got the string "x"'),
    );
    // Opting out: the NaN then reaches every weight, as the option warns.
    net.train(withX(NaN), T, { epochs: 1, validate: false });
    expect(flatWeights(net.getWeights()).every(Number.isNaN)).toBe(true);
  });

  test('eta and alpha set after construction are checked at every epoch of train (onEpoch may change them)', () => {
    const { X, T } = data(20, 2, 1, freshSeed());
    using net = new ck.Mlp({ layers: [2, 3, 1], eta: 0.1, seed: 5 });
    net.alpha = -0.5;
    expect(() => net.train(X, T, { epochs: 1 })).toThrow(/alpha must be a finite number ≥ 0, got number -0.5/);
    net.alpha = 0;
    expect(() =>
      net.train(X, T, {
        epochs: 3,
        onEpoch: ({ epoch }) => {
          if (epoch === 1) net.eta = -2; // negative: it used to reach the update kernel
        },
      }),
    ).toThrow(/eta must be a finite number ≥ 0, got number -2/);
  });

  test('custom: a layer wider than 4,194,240 columns (65,535 column tiles of the grid) trains like cpu.Mlp', () => {
    const wide = 65537 * 64 + 5; // 65,538 column tiles
    const layers = [1, wide, 1];
    const seed = freshSeed();
    const { X, T } = data(3, 1, 1, seed);
    const spec = { layers, eta: 0.5, alpha: 0.5, seed };
    using gpu = new ck.Mlp({ ...spec, method: 'custom', streams: 1 });
    const cpu = new ck.cpu.Mlp(spec);
    const w0 = flatWeights(cpu.getWeights());
    const g = gpu.train(X, T, { epochs: 2 });
    const c = cpu.train(X, T, { epochs: 2 });
    for (let e = 0; e < 2; e++) expect(relative(g[e].error, c[e].error)).toBeLessThan(1e-4);
    expect(ck.cpu.relativeError(gpu.predict(X), cpu.predict(X))).toBeLessThan(1e-4);
    // The updates of the last hidden units (column tiles past 65,535), in W_0, b_0 and W_1: a column the
    // grid missed would keep its initial weight.
    const gw = flatWeights(gpu.getWeights());
    const cw = flatWeights(cpu.getWeights());
    for (const start of [0, wide, 2 * wide]) {
      const idx = Array.from({ length: 2000 }, (_, k) => start + wide - 2000 + k);
      const gd = Float64Array.from(idx, (i) => gw[i] - w0[i]);
      const cd = Float64Array.from(idx, (i) => cw[i] - w0[i]);
      expect(cd.some((d) => d !== 0)).toBe(true);
      expect(ck.cpu.relativeError(gd, cd)).toBeLessThan(1e-3);
    }
  });

  test('bad input and use after free', () => {
    using net = new ck.Mlp({ layers: [2, 3, 1], eta: 0.1 });
    expect(() => net.train([1, 2, 3], [1], { epochs: 1 })).toThrow(/X must be a non-empty multiple of nIn = 2/);
    expect(() => net.train([1, 2, 3, 4], [1], { epochs: 1 })).toThrow(/T must be 2 patterns/);
    expect(() => net.train([1, 2], [1, 2, 3], { epochs: 1 })).toThrow(RangeError);
    expect(() => net.train([1, 2], [1], { epochs: 1.5 })).toThrow(/options.epochs/);
    using d64 = ck.upload(new Float64Array(2));
    expectThrows(() => net.train(d64 as unknown as ck.DeviceArray<'float32'>, [1], { epochs: 1 }), 'TypeError', /X/);
    expect(() => net.predict({} as unknown as number[])).toThrow(TypeError);
    net.eta = NaN;
    expect(() => net.train([1, 2], [1], { epochs: 1 })).toThrow(/eta must be a finite number/);
    net.eta = 0.1;
    const before = ck.memoryInfo().free;
    const other = new ck.Mlp({ layers: [2, 3, 1], eta: 0.1 });
    other.train([1, 2], [1], { epochs: 1 });
    other.free();
    other.free();
    expect(other.freed).toBe(true);
    expect(() => other.train([1, 2], [1], { epochs: 1 })).toThrow(/freed/);
    expect(() => other.predict([1, 2])).toThrow(/freed/);
    expect(() => other.getWeights()).toThrow(/freed/);
    expect(() => other.evaluate([1, 2], [1])).toThrow(/freed/);
    expect(ck.memoryInfo().free).toBeGreaterThanOrEqual(before - 2 ** 20);
  });
});
