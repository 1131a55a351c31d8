// The fair timing protocols of the bench harness, with the GPU stubbed: a fake EventTimer whose
// "GPU time" for a run depends on the run before it, as on a power-capped GPU (a heavy kernel runs
// faster after a light one), and fake device arrays. No GPU needed.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The fake GPU: what ran last, and the time a run takes given what ran before it. */
interface FakeGpu {
  current?: string;
  previous?: string;
  base: Record<string, number>;
  /** Time multiplier for a run right after `light` (the headroom a light kernel leaves). */
  afterLight: number;
  light?: string;
  errors: Record<string, number>;
}
const fake = (): FakeGpu => (globalThis as unknown as { fakeGpu: FakeGpu }).fakeGpu;

jest.mock('../lib/timing', () => ({
  EventTimer: class {
    start() {
      return this;
    }
    stop() {
      return this;
    }
    elapsedMs() {
      const g = (globalThis as unknown as { fakeGpu: FakeGpu }).fakeGpu;
      const v = g.current as string;
      const ms = g.base[v] * (g.previous !== undefined && g.previous === g.light && v !== g.light ? g.afterLight : 1);
      g.previous = v;
      return ms;
    }
    [Symbol.dispose]() {}
  },
}));

// benchPair's energy phases wait for the device between readings.
jest.mock('../lib/device', () => ({ ...jest.requireActual('../lib/device'), synchronize: () => {} }));

jest.mock('../lib/array', () => {
  const actual = jest.requireActual('../lib/array');
  const arr = (name: string) => ({
    name,
    dtype: 'float32',
    fill() {
      return this;
    },
    fillRandom() {
      return this;
    },
    free() {},
  });
  return {
    ...actual,
    empty: () => arr('copy-buffer'),
    copyDevice: () => {
      (globalThis as unknown as { fakeGpu: FakeGpu }).fakeGpu.current = 'copy';
    },
    deviceRelativeError: (out: { name: string }) =>
      (globalThis as unknown as { fakeGpu: FakeGpu }).fakeGpu.errors[out.name] ?? 0,
  };
});

import { benchPair, benchVariants, timeBalanced, timeInterleaved, type VariantSpec } from '../lib/bench/harness';
import { gpuDuring, GpuSampler, type GpuSample } from '../lib/bench/gpu-state';
import { deBruijnOrder, pairRatio, spreadOf } from '../lib/bench/protocol';
import { tempDirs } from './helpers/temp-dirs';

const tmp = tempDirs('ck-smi-');

beforeEach(() => {
  (globalThis as unknown as { fakeGpu: FakeGpu }).fakeGpu = { base: {}, afterLight: 0.86, errors: {} };
});

/** A variant function that "runs" `name` on the fake GPU. */
const runs = (name: string) => () => {
  fake().current = name;
};

/** A spec over fake outputs named after their variants; rate = 1/ms (the same work). */
function spec(labels: string[], extra: Partial<VariantSpec> = {}): VariantSpec {
  let made = 0;
  return {
    op: 'test',
    size: '8',
    labels,
    run: (i) => {
      fake().current = labels[i];
    },
    makeOut: () => {
      const name = `out${made++}`;
      return {
        name,
        dtype: 'float32',
        fill() {
          return this;
        },
        free() {},
      } as never;
    },
    ref: {} as never,
    refName: 'ref',
    tolerance: 1e-6,
    rate: (ms) => 1 / ms,
    unit: 'x/ms',
    reps: 4,
    ...extra,
  };
}

const ctx = { device: 0, reps: 4, warmup: 1, quick: true, progress: () => {} };

describe('the de Bruijn order', () => {
  test.each([1, 2, 3, 4, 5, 6, 7])('n = %i: every ordered pair, repeats included, once per cycle', (n) => {
    const order = deBruijnOrder(n);
    expect(order).toHaveLength(n * n);
    const seen = new Map<string, number>();
    order.forEach((v, i) => {
      const key = `${v}>${order[(i + 1) % order.length]}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    });
    expect(seen.size).toBe(n * n);
    expect([...seen.values()].every((c) => c === 1)).toBe(true);
    // Each variant n times; the cycle starts with 0 and ends with n − 1 (the warm-up's last).
    for (let v = 0; v < n; v++) expect(order.filter((x) => x === v)).toHaveLength(n);
    expect([order[0], order[order.length - 1]]).toEqual([0, n - 1]);
  });

  test('rejects a count that is not a positive integer', () => {
    expect(() => deBruijnOrder(0)).toThrow(RangeError);
    expect(() => deBruijnOrder(1.5)).toThrow(RangeError);
  });
});

describe('timing that does not favour the variant after a light one', () => {
  // Two equal heavy kernels and a light one; a heavy kernel right after the light one takes 14% less.
  const setup = () => Object.assign(fake(), { base: { a: 10, b: 10, light: 1 }, light: 'light' });
  const median = (xs: number[]) => spreadOf(xs).median;

  test('the fixed round-robin order makes two equal kernels look 16% apart (the defect)', () => {
    setup();
    const s = timeInterleaved([runs('a'), runs('light'), runs('b')], { device: 0, reps: 6, warmup: 1 });
    expect(median(s[0]) / median(s[2])).toBeCloseTo(10 / 8.6, 5);
  });

  test('the balanced order times them alike: each follows each variant equally often', () => {
    setup();
    const t = timeBalanced([runs('a'), runs('light'), runs('b')], { device: 0, reps: 6, warmup: 1 });
    expect(t.samples.map((s) => s.length)).toEqual([6, 6, 6]);
    expect(median(t.samples[0])).toBe(median(t.samples[2]));
    // The same predecessors for each: every variant's runs follow a, light and b twice each.
    const before = (v: number) => t.runs.map((r, i) => (r.variant === v ? (t.runs[i - 1]?.variant ?? 2) : -1));
    for (const v of [0, 1, 2])
      expect(
        before(v)
          .filter((p) => p >= 0)
          .sort(),
      ).toEqual([0, 0, 1, 1, 2, 2]);
  });

  test('reps round up to whole cycles, and at least one warm-up run precedes the first timed run', () => {
    setup();
    const seen: string[] = [];
    const t = timeBalanced(
      ['a', 'b'].map((v) => () => {
        seen.push(v);
        fake().current = v;
      }),
      { device: 0, reps: 3, warmup: 0 },
    );
    expect(t.samples.map((s) => s.length)).toEqual([4, 4]);
    expect(t.rounds).toHaveLength(2);
    expect(seen.join('')).toBe('ab' + 'aabb' + 'aabb');
    expect(() => timeBalanced([runs('a')], { device: 0, reps: 0, warmup: 1 })).toThrow(/reps must be ≥ 1/);
  });
});

describe('benchVariants and the pair protocol', () => {
  test('a batch row says its protocol, the reps it got and its error', () => {
    Object.assign(fake(), { base: { x: 2, y: 4 } });
    const rows = benchVariants(ctx, spec(['x', 'y']));
    expect(rows.map((r) => [r.method, r.ms, r.reps, r.protocol, r.check])).toEqual([
      ['x', 2, 4, 'balanced', 'ok'],
      ['y', 4, 4, 'balanced', 'ok'],
    ]);
    expect(rows[0].note).toMatch(/2 variants in a balanced order/);
  });

  test('a pair row has the other method, the ratio per round with its range, and both checks', () => {
    // out1 is the other's output (the reference's own method here): a NaN left in it fails it.
    Object.assign(fake(), { base: { fast: 9, ref: 10, slow: 30 }, errors: { out1: NaN } });
    const rows = benchVariants({ ...ctx, pair: { a: 'fast', b: 'ref', rounds: 7 } }, spec(['slow', 'fast', 'ref']));
    expect(rows).toHaveLength(1);
    const [r] = rows;
    expect(r).toMatchObject({ method: 'fast', protocol: 'pair', reps: 14, ms: 9, check: 'ok' });
    expect(r.versus).toMatchObject({ method: 'ref', ms: 10, reps: 14, check: 'fail' });
    expect(r.ratio?.rounds).toBe(7);
    expect(r.ratio?.median).toBeCloseTo(10 / 9, 12);
    expect(r.ratio?.min).toBeCloseTo(10 / 9, 12);
    expect(r.note).toMatch(/7 rounds of fast fast ref ref/);
  });

  test("with an energy meter, a pair row has both methods' joules per run and their ratio", () => {
    Object.assign(fake(), { base: { fast: 2, ref: 4 } });
    // The counter advances by each method's energy per run (fast 3 mJ, ref 5 mJ).
    let mj = 0;
    const energyOf: Record<string, number> = { fast: 3, ref: 5 };
    const s = spec(['fast', 'ref'], {
      run: (i) => {
        const v = ['fast', 'ref'][i];
        fake().current = v;
        mj += energyOf[v];
      },
      rate: () => 1,
      unit: 'GFLOP/s',
    });
    const [r] = benchVariants(
      { ...ctx, pair: { a: 'fast', b: 'ref', rounds: 2 }, energy: { meter: { read: () => mj }, phaseMs: 50 } },
      s,
    );
    expect(r.energy?.joules.median).toBeCloseTo(0.003, 12);
    expect(r.versus?.energy?.joules.median).toBeCloseTo(0.005, 12);
    expect(r.energyRatio).toBeCloseTo(0.6, 12);
    expect(r.note).toMatch(/energy \(NVML counter, phases A B B A of ≥ 50 ms\): fast 3\.00 mJ\/run/);
    // Without readings the row says so and has no energy fields.
    const [none] = benchVariants(
      {
        ...ctx,
        pair: { a: 'fast', b: 'ref', rounds: 2 },
        energy: { meter: { read: () => undefined, reason: 'NVML could not be loaded' }, phaseMs: 50 },
      },
      s,
    );
    expect(none.energy).toBeUndefined();
    expect(none.note).toMatch(/energy: not measured \(NVML could not be loaded\)/);
    // A counter that does not move during a phase (shorter than its update period): no energy fields,
    // not 0 J and a ratio of 0/0 (NaN, which a results file stores as null).
    const [stuck] = benchVariants(
      { ...ctx, pair: { a: 'fast', b: 'ref', rounds: 2 }, energy: { meter: { read: () => 7 }, phaseMs: 50 } },
      s,
    );
    expect(stuck.energy).toBeUndefined();
    expect(stuck.energyRatio).toBeUndefined();
    expect(stuck.versus?.energy).toBeUndefined();
    expect(stuck.note).toMatch(/energy: not measured \(the counter did not advance in a phase of A/);
  });

  test('a pair is fair where the fixed order was not: equal kernels, one after a light one', () => {
    Object.assign(fake(), { base: { a: 10, b: 10, light: 1 }, light: 'light' });
    // The light kernel is not part of the pair, so the pair never runs after it.
    const r = benchPair(ctx, spec(['a', 'light', 'b']), { a: 'a', b: 'b', rounds: 5 });
    expect(r.ratio).toEqual({ median: 1, min: 1, max: 1, rounds: 5 });
  });

  test('the copy partner is a device copy timed in the same rounds, its rate in GB/s', () => {
    Object.assign(fake(), { base: { fast: 8, copy: 0.5 } });
    const r = benchPair(ctx, spec(['fast'], { rate: () => 5000, unit: 'GB/s' }), { a: 'fast', b: 'copy', rounds: 3 });
    const copyRate = (2 * 2 ** 30) / (0.5e-3 * 1e9);
    expect(r.versus).toMatchObject({ method: 'copy', unit: 'GB/s', check: 'ok' });
    expect(r.versus?.rate).toBeCloseTo(copyRate, 6);
    expect(r.ratio?.median).toBeCloseTo(5000 / copyRate, 12);
  });

  test('a pair naming a method the batch lacks is a RangeError that lists the methods', () => {
    expect(() => benchPair(ctx, spec(['x', 'y']), { a: 'x', b: 'z', rounds: 3 })).toThrow(/z is not among .* \(x, y\)/);
  });

  test('pairRatio takes each round’s mean time per variant', () => {
    const rounds = [
      [
        [1, 3],
        [4, 4],
      ],
      [
        [2, 2],
        [2, 2],
      ],
      [
        [1, 1],
        [3, 3],
      ],
    ];
    const inv = (ms: number) => 1 / ms;
    expect(pairRatio(rounds, 0, 1, inv, inv)).toEqual({ median: 2, min: 1, max: 3, rounds: 3 });
  });
});

describe('clocks and power over a row’s runs', () => {
  const samples: GpuSample[] = [
    { t: 5, smMHz: 1980, powerW: 120 },
    { t: 15, smMHz: 1700, powerW: 690 },
    { t: 25, smMHz: 1650, powerW: 700 },
    { t: 35, smMHz: 1980, powerW: 300 },
  ];

  test('are the samples inside the row’s own runs, min and median', () => {
    expect(gpuDuring(samples, [{ start: 10, end: 30 }])).toEqual({
      smMHz: { median: 1675, min: 1650, max: 1700 },
      powerW: { median: 695, min: 690, max: 700 },
      samples: 2,
      scope: 'runs',
    });
  });

  test('or, where no sample fell inside its runs, the samples over the whole batch', () => {
    const d = gpuDuring(
      samples,
      [{ start: 16, end: 17 }],
      [
        { start: 0, end: 20 },
        { start: 16, end: 17 },
      ],
    );
    expect(d).toMatchObject({ scope: 'batch', samples: 2, smMHz: { min: 1700 } });
    expect(gpuDuring([], [{ start: 0, end: 1 }])).toBeUndefined();
  });

  test('a sampler reads in a worker thread while the main thread is busy, for its bus only', async () => {
    const script = path.join(tmp(), 'smi.js');
    fs.writeFileSync(script, 'console.log("0x1B, 1755, 650.5\\n0x2C, 345, 70.1")\n');
    const sampler = new GpuSampler(0x2c, { command: process.execPath, args: [script], intervalMs: 10 });
    try {
      const until = Date.now() + 20_000;
      while (sampler.samples().length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(sampler.status).toBe('sampling');
      const s = sampler.samples();
      expect(s.length).toBeGreaterThanOrEqual(2);
      expect(s[0]).toMatchObject({ smMHz: 345, powerW: 70.1 });
      expect(s[1].t).toBeGreaterThan(s[0].t);
    } finally {
      sampler.stop();
    }
  });

  test('a sampler without nvidia-smi, or without that GPU, says so and records nothing', async () => {
    const missing = new GpuSampler(0x2c, { command: '/nonexistent/nvidia-smi', intervalMs: 10 });
    const other = new GpuSampler(0x3d, { command: process.execPath, args: ['-e', 'console.log("0x1B, 1, 2")'] });
    try {
      const until = Date.now() + 20_000;
      while ((missing.status === 'starting' || other.status === 'starting') && Date.now() < until)
        await new Promise((r) => setTimeout(r, 20));
      expect([missing.status, other.status]).toEqual(['unavailable', 'unavailable']);
      expect([missing.samples(), other.samples()]).toEqual([[], []]);
    } finally {
      missing.stop();
      other.stop();
    }
  });
});
