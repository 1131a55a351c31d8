// Energy per run in the pair protocol (lib/bench/energy.ts), with the meter and the runs faked: the
// phases' order and lengths, joules per run, work per joule, and what happens without readings. No
// GPU needed; the native counter itself (NVML) is read on a GPU host by `bench --pair --energy-ms`.
import { deviceCount, empty, runtimeInfo, synchronize } from '../lib';
import { bench } from '../lib/cli/bench';
import { native } from '../lib/native';
import { describeGpu, describeNoGpu } from './helpers/gpu';
import {
  describeEnergy,
  type EnergyMeter,
  nvmlMeter,
  type NoEnergy,
  type PairEnergy,
  pairEnergy,
  pairSustainedRatio,
  sustainedRatio,
} from '../lib/bench/energy';

/** The energy of a pair that must have been measured. */
function measured(e: PairEnergy | NoEnergy): PairEnergy {
  if ('missing' in e) throw new Error(`no energy: ${e.missing}`);
  return e;
}

/** A fake board: a counter in mJ that each run advances by its method's energy. */
function board(mj: Record<string, number>, ms: Record<string, number>) {
  const state = { counter: 1_000_000, clock: 0, log: [] as string[], syncs: 0 };
  const meter: EnergyMeter = { read: () => state.counter };
  const driver = (name: string, work?: number) => ({
    run: () => {
      state.counter += mj[name];
      state.clock += ms[name];
      state.log.push(name);
    },
    sync: () => {
      state.syncs++;
    },
    now: () => state.clock,
    ms: ms[name],
    ...(work !== undefined ? { work, unit: 'GFLOP/s' } : {}),
  });
  return { state, meter, driver };
}

describe('pairEnergy', () => {
  test('phases A B B A, each at least phaseMs long, joules per run and their ratio', () => {
    const { state, meter, driver } = board({ a: 30, b: 40 }, { a: 7, b: 10 });
    const e = measured(pairEnergy(meter, driver('a', 2.5), driver('b', 2.5), 100));
    // ceil(100 / 7) = 15 runs of a, ceil(100 / 10) = 10 of b, in the order a b b a.
    const phases = state.log.join('').match(/(a+|b+)/g)!;
    expect(phases).toEqual(['a'.repeat(15), 'b'.repeat(20), 'a'.repeat(15)]);
    expect(e.a.runs).toEqual([15, 15]);
    expect(e.b.runs).toEqual([10, 10]);
    expect(e.a.phaseMs.every((t) => t >= 100)).toBe(true);
    expect(e.a.joules.median).toBeCloseTo(0.03, 12);
    expect(e.b.joules.median).toBeCloseTo(0.04, 12);
    expect(e.ratio).toBeCloseTo(0.75, 12);
    // 2.5 GFLOP a run over 0.03 J.
    expect(e.a.workPerJoule).toBeCloseTo(2.5 / 0.03, 9);
    expect(e.a.unit).toBe('GFLOP/J');
    // Synchronized before and after every phase.
    expect(state.syncs).toBe(8);
    expect(describeEnergy(e.a)).toBe('30.00 mJ/run (30.00 mJ–30.00 mJ), 83.3 GFLOP/J');
  });

  test('a phase runs on until it lasted phaseMs when the runs are slower than their timed median', () => {
    // The timed median says 10 ms, back to back they take 25 (the clock dropped under the cap).
    const { meter, driver } = board({ a: 30, b: 40 }, { a: 25, b: 10 });
    const e = pairEnergy(meter, { ...driver('a'), ms: 10 }, driver('b'), 100);
    if (!('a' in e)) throw new Error(e.missing);
    // 10 runs (250 ms) already exceed 100 ms: no top-up; the other way round, the phase is topped up.
    expect(e.a.runs).toEqual([10, 10]);
    const fast = board({ a: 30, b: 40 }, { a: 4, b: 10 });
    const f = pairEnergy(fast.meter, { ...fast.driver('a'), ms: 10 }, fast.driver('b'), 100);
    if (!('a' in f)) throw new Error(f.missing);
    // 10 runs of 4 ms = 40 ms, then ceil(60 / 4) = 15 more: 25 runs, 100 ms.
    expect(f.a.runs).toEqual([25, 25]);
    expect(f.a.phaseMs.every((t) => t >= 100)).toBe(true);
    expect(f.a.joules.median).toBeCloseTo(0.03, 12);
    // A median that is not a positive number still runs and measures.
    const odd = board({ a: 30, b: 40 }, { a: 4, b: 10 });
    const g = pairEnergy(odd.meter, { ...odd.driver('a'), ms: NaN }, odd.driver('b'), 100);
    if (!('a' in g)) throw new Error(g.missing);
    expect(g.a.joules.median).toBeCloseTo(0.03, 12);
  });

  test('a method slower than the phase still runs once per phase', () => {
    const { meter, driver } = board({ a: 5000, b: 10 }, { a: 5000, b: 1 });
    const e = measured(pairEnergy(meter, driver('a'), driver('b'), 100));
    expect(e.a.runs).toEqual([1, 1]);
    expect(e.a.joules.median).toBe(5);
    expect(e.a.workPerJoule).toBeUndefined();
  });

  test('no reading, or a counter that went backwards (a driver reload), gives no energy', () => {
    const { driver } = board({ a: 1, b: 1 }, { a: 1, b: 1 });
    expect(
      pairEnergy({ read: () => undefined, reason: 'NVML could not be loaded' }, driver('a'), driver('b'), 10),
    ).toEqual({
      missing: 'NVML could not be loaded',
    });
    expect(pairEnergy({ read: () => undefined }, driver('a'), driver('b'), 10)).toEqual({
      missing: 'the counter stopped answering',
    });
    let v = 100;
    const backwards: EnergyMeter = { read: () => (v -= 10) };
    expect(pairEnergy(backwards, driver('a'), driver('b'), 10)).toEqual({
      missing: 'the counter went backwards in a phase of A (10 runs, 10.0 ms): the driver reloaded?',
    });
    expect(() => pairEnergy({ read: () => 0 }, driver('a'), driver('b'), 0)).toThrow(/phaseMs must be > 0/);
  });

  test('a counter that does not advance in a phase (shorter than its update period) gives no energy, not 0 J', () => {
    // The board's counter steps every 100 ms; phases of 10 ms mostly fall between two steps.
    const { state, driver } = board({ a: 0, b: 0 }, { a: 1, b: 1 });
    const stepping: EnergyMeter = { read: () => 1000 + 100 * Math.floor(state.clock / 100) };
    expect(pairEnergy(stepping, driver('a', 1), driver('b', 1), 10)).toEqual({
      missing:
        'the counter did not advance in a phase of A (10 runs, 10.0 ms): phases shorter than its update period read 0 J',
    });
    // Only B's phases stuck: no energy either, not a ratio of Infinity.
    let mj = 0;
    const onlyA: EnergyMeter = { read: () => mj };
    const a = { ...driver('a'), run: () => (mj += 5) };
    expect(pairEnergy(onlyA, a, driver('b'), 10)).toEqual({
      missing:
        'the counter did not advance in a phase of B (10 runs, 10.0 ms): phases shorter than its update period read 0 J',
    });
  });
});

describe('sustainedRatio', () => {
  const e = (runs: number[], phaseMs: number[]) => ({ joules: { median: 1, min: 1, max: 1 }, runs, phaseMs });
  test("b's mean time per run over a's, over both phases; undefined without runs or time", () => {
    // a: 200 runs in 2000 ms (10 ms each); b: 180 runs in 1980 ms (11 ms each).
    expect(sustainedRatio(e([100, 100], [1000, 1000]), e([90, 90], [990, 990]))).toBeCloseTo(1.1, 12);
    // Phases of different lengths weigh by their runs, not as a mean of per-phase ratios.
    expect(sustainedRatio(e([1, 3], [10, 30]), e([2, 2], [40, 40]))).toBeCloseTo(2, 12);
    expect(sustainedRatio(e([0, 0], [5, 5]), e([1, 1], [5, 5]))).toBeUndefined();
    expect(sustainedRatio(e([1, 1], [5, 5]), e([1, 1], [0, 0]))).toBeUndefined();
    // Different work per run (a kernel against a copy of fewer bytes): rates are compared.
    expect(sustainedRatio(e([100, 100], [1000, 1000]), e([100, 100], [500, 500]), 4, 1)).toBeCloseTo(2, 12);
  });

  test('for a pair row: work from rate × timed ms of each side; other units or no energy give none', () => {
    const a = e([100, 100], [1000, 1000]);
    const b = e([100, 100], [500, 500]);
    // a does 2 GB in 10 ms per timed run, b 0.5 GB in 5 ms: a's 2 GB per 10 ms back to back against b's 0.5 per 5.
    const row = { rate: 200, ms: 10, unit: 'GB/s', energy: a, versus: { rate: 100, ms: 5, unit: 'GB/s', energy: b } };
    expect(pairSustainedRatio(row)).toBeCloseTo(2, 12);
    expect(pairSustainedRatio({ ...row, versus: { ...row.versus, unit: 'GFLOP/s' } })).toBeUndefined();
    expect(pairSustainedRatio({ ...row, energy: undefined })).toBeUndefined();
  });
});

describe('nvmlMeter', () => {
  test('reads the counter of the device asked for, and says why when there is none', () => {
    const asked: number[] = [];
    let mj = 10;
    const m = nvmlMeter((d) => (asked.push(d), { available: true, millijoules: (mj += 5) }), 3);
    expect(m.reason).toBeUndefined();
    expect([m.read(), m.read()]).toEqual([20, 25]);
    expect(asked).toEqual([3, 3, 3]);
    const none = nvmlMeter(() => ({ available: false, reason: 'NVML could not be loaded' }), 0);
    expect(none.reason).toBe('NVML could not be loaded');
    expect(none.read()).toBeUndefined();
  });
});

describe('bench --energy-ms', () => {
  const opts = { reps: 1, warmup: 0, quick: true, out: '/nonexistent-results', device: 0, charts: false };
  test('needs --pair, and a length in range, checked before anything touches the GPU', async () => {
    await expect(bench(['ata'], { ...opts, energyMs: 2000 }, () => {})).rejects.toThrow(/--energy-ms needs --pair/);
    await expect(bench(['ata'], { ...opts, pair: true, energyMs: 1.5 }, () => {})).rejects.toThrow(
      /--energy-ms must be an integer in \[0, 600000\], got 1.5/,
    );
  });
});

describeNoGpu('gpuEnergy without a GPU', () => {
  test('says why for any index instead of throwing; a non-integer index is refused', () => {
    for (const d of [0, -1, 7]) {
      const e = native.gpuEnergy(d);
      expect(e).toMatchObject({ available: false, code: expect.any(String) });
      expect(e.reason).toBe(runtimeInfo().noDeviceReason);
    }
    expect(() => native.gpuEnergy(0.5)).toThrow(/device must be a 32-bit integer/);
  });
});

describeGpu('gpuEnergy on a GPU (NVML, from the driver)', () => {
  test('an index CUDA does not know is unavailable and leaves no error behind for the next launch', () => {
    const a = empty('float32', 1 << 16);
    try {
      for (const d of [-1, deviceCount()]) {
        expect(native.gpuEnergy(d)).toMatchObject({ available: false, code: 'cudaErrorInvalidDevice' });
        // A launch checked with cudaGetLastError: a failed cudaDeviceGetPCIBusId(d) made it throw.
        a.fillRandom(1);
      }
      synchronize(0);
    } finally {
      a.free();
    }
  });

  test("reads device 0's counter in millijoules, by its PCI address, and the counter advances under work", () => {
    const first = native.gpuEnergy(0);
    expect(first).toMatchObject({ available: true, millijoules: expect.any(Number) });
    expect(first.pciBusId).toMatch(/^[0-9a-f]+:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$/i);
    const a = empty('float32', 1 << 26);
    try {
      const t0 = Date.now();
      while (Date.now() - t0 < 500) {
        a.fillRandom(2);
        synchronize(0);
      }
    } finally {
      a.free();
    }
    const second = native.gpuEnergy(0);
    expect(second.millijoules!).toBeGreaterThan(first.millijoules!);
  });
});
