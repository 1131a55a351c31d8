// Timing with CUDA events: warm-up, then the median of several repetitions, the variants of a batch
// in an order that treats them alike (protocol.ts), and the pair protocol every quoted ratio uses.
import { copyDevice, type DeviceArray, deviceRelativeError, empty } from '../array';
import { synchronize } from '../device';
import { EventTimer } from '../timing';
import { describeEnergy, type EnergyMeter, pairEnergy } from './energy';
import { gpuDuring, type GpuSample } from './gpu-state';
import { deBruijnOrder, nowMs, pairRatio, type TimedRun } from './protocol';
import type { BenchRow } from './results';

/** Median of a non-empty list. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of an empty list');
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export interface TimingOptions {
  device: number;
  reps: number;
  warmup: number;
}

/** `ok` when `error` is below `tolerance`; `fail` otherwise, NaN included (a comparison with NaN is false). */
export function verdict(error: number, tolerance: number): 'ok' | 'fail' {
  return error < tolerance ? 'ok' : 'fail';
}

/** Runs `fn` `warmup` times, then times each of `reps` runs with events; returns every sample (ms). */
export function timeGpu(fn: () => void, { device, reps, warmup }: TimingOptions): number[] {
  for (let i = 0; i < warmup; i++) fn();
  using timer = new EventTimer(device);
  const samples: number[] = [];
  for (let i = 0; i < reps; i++) {
    timer.start();
    fn();
    timer.stop();
    samples.push(timer.elapsedMs());
  }
  return samples;
}

/**
 * Times several variants round-robin in a fixed order, one run of each per repetition: the order the
 * families used before {@link timeBalanced}. On a power-capped GPU it favours the variant that runs
 * after the lightest one (test/bench-protocol.test.ts shows by how much); kept for comparison.
 */
export function timeInterleaved(
  variants: readonly (() => void)[],
  { device, reps, warmup }: TimingOptions,
): number[][] {
  for (const fn of variants) for (let i = 0; i < warmup; i++) fn();
  using timer = new EventTimer(device);
  const samples: number[][] = variants.map(() => []);
  for (let r = 0; r < reps; r++) {
    variants.forEach((fn, v) => {
      timer.start();
      fn();
      timer.stop();
      samples[v].push(timer.elapsedMs());
    });
  }
  return samples;
}

export interface BalancedTiming {
  /** GPU ms per variant, in run order. */
  samples: number[][];
  /** Per cycle (a round), the GPU ms of each variant's runs in that cycle. */
  rounds: number[][][];
  /** Every timed run, in order. */
  runs: TimedRun[];
}

export interface BalancedOptions {
  device: number;
  /** Timed runs wanted per variant; rounded up to whole cycles (n runs of each per cycle). */
  reps: number;
  /** Untimed runs of each variant first (at least 1, so that the first timed run has a predecessor). */
  warmup: number;
}

/**
 * Times the variants in the de Bruijn order of protocol.ts, cycle after cycle, until each has at
 * least `reps` samples: every variant then follows every variant, itself included, equally often.
 * The warm-up runs the variants in index order, so it ends with the variant each cycle ends with,
 * and the first timed run follows what every later cycle's first run follows.
 */
export function timeBalanced(
  variants: readonly (() => void)[],
  { device, reps, warmup }: BalancedOptions,
): BalancedTiming {
  const n = variants.length;
  if (n === 0) throw new RangeError('timeBalanced: no variants');
  if (!Number.isInteger(reps) || reps < 1) throw new RangeError(`timeBalanced: reps must be ≥ 1, got ${reps}`);
  const order = deBruijnOrder(n);
  const cycles = Math.ceil(reps / (order.length / n));
  for (let w = 0; w < Math.max(1, warmup); w++) for (const fn of variants) fn();
  using timer = new EventTimer(device);
  const samples: number[][] = variants.map(() => []);
  const rounds: number[][][] = [];
  const runs: TimedRun[] = [];
  for (let c = 0; c < cycles; c++) {
    const round: number[][] = variants.map(() => []);
    for (const v of order) {
      const start = nowMs();
      timer.start();
      variants[v]();
      timer.stop();
      const ms = timer.elapsedMs();
      const end = nowMs();
      samples[v].push(ms);
      round[v].push(ms);
      runs.push({ variant: v, ms, start, end });
    }
    rounds.push(round);
  }
  return { samples, rounds, runs };
}

/** Several variants of one computation at one size, timed together and each checked. */
export interface VariantSpec {
  op: string;
  size: string;
  labels: readonly string[];
  /** Runs variant `index`, writing its result into `out`. */
  run(index: number, out: DeviceArray): void;
  /** A fresh output array (poisoned with NaN before timing, so unwritten elements fail the check). */
  makeOut(): DeviceArray;
  ref: DeviceArray;
  refName: string;
  /**
   * The label of the variant that computes `ref` the same way (default `refName`): its row says
   * `ref` instead of a check that compares it with itself.
   */
  refLabel?: string;
  tolerance: number;
  /** Rate from the median time of variant `index`. */
  rate(ms: number, index: number): number;
  unit: string;
  reps: number;
}

/** A fresh output, poisoned: NaN for floats; for integers a sentinel no correct result is likely to equal everywhere. */
function poisoned(spec: VariantSpec): DeviceArray {
  const out = spec.makeOut();
  return out.fill(out.dtype.startsWith('float') ? NaN : 0x5eedbeef);
}

/** `check` and the error text of variant `method`'s output against the spec's reference. */
function checkOutput(spec: VariantSpec, method: string, out: DeviceArray): { check: BenchRow['check']; text: string } {
  const err = deviceRelativeError(out, spec.ref);
  const isRef = method === (spec.refLabel ?? spec.refName);
  // The reference's own row still fails if it left an element unwritten (NaN) or is not repeatable.
  const check = verdict(err, spec.tolerance);
  return isRef
    ? {
        check: check === 'ok' ? 'ref' : check,
        text: `the reference (its own output against another run of it: ${err.toExponential(2)})`,
      }
    : { check, text: `relative error vs ${spec.refName}: ${err.toExponential(2)}` };
}

const msRange = (xs: readonly number[]) => `${Math.min(...xs).toFixed(3)}–${Math.max(...xs).toFixed(3)} ms`;

/**
 * Times the variants together ({@link timeBalanced}), then checks each one's output against `ref`
 * on the device and returns one row per variant with the median, the spread, the error and the
 * clocks and power its runs saw. With `ctx.pair` set, times only that pair ({@link benchPair}).
 */
export function benchVariants(ctx: BenchContext, spec: VariantSpec): BenchRow[] {
  if (ctx.pair) return [benchPair(ctx, spec, ctx.pair)];
  const outs = spec.labels.map(() => poisoned(spec));
  try {
    const timing = timeBalanced(
      spec.labels.map((_, i) => () => spec.run(i, outs[i])),
      { device: ctx.device, reps: spec.reps, warmup: 1 },
    );
    const sampled = ctx.sampler?.samples() ?? [];
    return spec.labels.map((method, i) => {
      const samples = timing.samples[i];
      const ms = median(samples);
      const { check, text } = checkOutput(spec, method, outs[i]);
      const during = gpuDuring(
        sampled,
        timing.runs.filter((r) => r.variant === i),
        timing.runs,
      );
      return {
        op: spec.op,
        method,
        size: spec.size,
        ms,
        rate: spec.rate(ms, i),
        unit: spec.unit,
        reps: samples.length,
        check,
        protocol: 'balanced' as const,
        ...(during ? { gpuDuring: during } : {}),
        note: `${msRange(samples)}; ${text}; ${spec.labels.length} variants in a balanced order`,
      };
    });
  } finally {
    for (const o of outs) o.free();
  }
}

/** The pair partner of bandwidth families: a 1 GiB device-to-device copy (the family's `copy` row). */
export const COPY_PARTNER = 'copy';
const COPY_BYTES = 2 ** 30;

/** `bench --pair A,B`: the two methods compared, and how many rounds of A A B B. */
export interface PairSpec {
  a: string;
  /** A method of the family, or {@link COPY_PARTNER}. */
  b: string;
  rounds: number;
}

/**
 * The pair protocol: only variants `a` and `b` of the batch, in `rounds` rounds of A A B B (each
 * timed after itself and after the other, in both orders; harness.ts's de Bruijn order for two).
 * One row, for `a`, with `b` as its `versus` and the ratio of their rates per round. `b` may be
 * {@link COPY_PARTNER}: a 1 GiB device-to-device copy, rate counting bytes read and written.
 */
export function benchPair(ctx: BenchContext, spec: VariantSpec, pair: PairSpec): BenchRow {
  const ia = spec.labels.indexOf(pair.a);
  const copy = pair.b === COPY_PARTNER;
  const ib = copy ? -1 : spec.labels.indexOf(pair.b);
  for (const [name, i] of [
    [pair.a, ia],
    [pair.b, copy ? 0 : ib],
  ] as const) {
    if (i < 0)
      throw new RangeError(
        `--pair: ${name} is not among the methods of ${spec.op} ${spec.size} (${spec.labels.join(', ')})`,
      );
  }
  const outA = poisoned(spec);
  const outB = copy ? undefined : poisoned(spec);
  const src = copy ? empty('uint32', COPY_BYTES / 4, { device: ctx.device }).fillRandom(17) : undefined;
  const dst = copy ? empty('uint32', COPY_BYTES / 4, { device: ctx.device }) : undefined;
  try {
    const runB = copy ? () => copyDevice(dst!, src!) : () => spec.run(ib, outB!);
    const rateA = (ms: number) => spec.rate(ms, ia);
    const rateB = copy ? (ms: number) => (2 * COPY_BYTES) / (ms * 1e-3) / 1e9 : (ms: number) => spec.rate(ms, ib);
    const timing = timeBalanced([() => spec.run(ia, outA), runB], {
      device: ctx.device,
      reps: 2 * pair.rounds,
      warmup: 1,
    });
    const ratio = pairRatio(timing.rounds, 0, 1, rateA, rateB);
    const sampled = ctx.sampler?.samples() ?? [];
    const duringOf = (v: number) =>
      gpuDuring(
        sampled,
        timing.runs.filter((r) => r.variant === v),
        timing.runs,
      );
    const a = checkOutput(spec, pair.a, outA);
    const b = copy
      ? { check: deviceRelativeError(dst!, src!) === 0 ? ('ok' as const) : ('fail' as const), text: 'copy' }
      : checkOutput(spec, pair.b, outB!);
    const [msA, msB] = [median(timing.samples[0]), median(timing.samples[1])];
    const duringA = duringOf(0);
    const duringB = duringOf(1);
    // Energy per run (bench --energy-ms): each method alone in phases A B B A, after the timing.
    const driver = (run: () => void) => ({ run, sync: () => synchronize(ctx.device), now: nowMs });
    const measured = ctx.energy
      ? pairEnergy(
          ctx.energy.meter,
          { ...driver(() => spec.run(ia, outA)), ms: msA, work: rateA(msA) * msA * 1e-3, unit: spec.unit },
          {
            ...driver(runB),
            ms: msB,
            work: rateB(msB) * msB * 1e-3,
            unit: copy ? 'GB/s' : spec.unit,
          },
          ctx.energy.phaseMs,
        )
      : undefined;
    const energy = measured && 'ratio' in measured ? measured : undefined;
    return {
      op: spec.op,
      method: pair.a,
      size: spec.size,
      ms: msA,
      rate: rateA(msA),
      unit: spec.unit,
      reps: timing.samples[0].length,
      check: a.check,
      protocol: 'pair',
      versus: {
        method: pair.b,
        ms: msB,
        rate: rateB(msB),
        unit: copy ? 'GB/s' : spec.unit,
        reps: timing.samples[1].length,
        check: b.check,
        ...(duringB ? { gpuDuring: duringB } : {}),
        ...(energy ? { energy: energy.b } : {}),
      },
      ratio,
      ...(duringA ? { gpuDuring: duringA } : {}),
      ...(energy ? { energy: energy.a, energyRatio: energy.ratio } : {}),
      note:
        `pair protocol, ${ratio.rounds} rounds of ${pair.a} ${pair.a} ${pair.b} ${pair.b}: ` +
        `rate ratio ${ratio.median.toFixed(3)} (${ratio.min.toFixed(3)}–${ratio.max.toFixed(3)}); ` +
        `${pair.a} ${msRange(timing.samples[0])}, ${a.text}; ` +
        `${pair.b} ${msRange(timing.samples[1])}${copy ? ` (${COPY_BYTES / 2 ** 30} GiB device-to-device copy, checked: ${b.check})` : `, ${b.text}`}` +
        (energy
          ? `; energy (NVML counter, phases A B B A of ≥ ${ctx.energy!.phaseMs} ms): ${pair.a} ${describeEnergy(energy.a)}, ` +
            `${pair.b} ${describeEnergy(energy.b)}, ${pair.a}/${pair.b} ${energy.ratio.toFixed(3)}`
          : measured && 'missing' in measured
            ? `; energy: not measured (${measured.missing})`
            : ''),
    };
  } finally {
    outA.free();
    outB?.free();
    src?.free();
    dst?.free();
  }
}

/**
 * A row of a family whose method names carry the dtype (`fast-int32`): the suffix on the method and
 * on a pair's other method (not on {@link COPY_PARTNER}, which has no dtype).
 */
export function withDtype(row: BenchRow, dtype: string): BenchRow {
  const out: BenchRow = { ...row, method: `${row.method}-${dtype}` };
  if (row.versus && row.versus.method !== COPY_PARTNER)
    out.versus = { ...row.versus, method: `${row.versus.method}-${dtype}` };
  return out;
}

/** What a family's benchmark receives. */
export interface BenchContext {
  device: number;
  reps: number;
  warmup: number;
  /** Small sizes only (the `--quick` run). */
  quick: boolean;
  /** Sizes asked for on the command line, if any (the family interprets them). */
  sizes?: number[];
  /**
   * Matrix shapes rows × cols, for the families whose size is one (ata): run after `sizes`'
   * squares. Set from a family's {@link PairClaim}s.
   */
  shapes?: [number, number][];
  /** Methods asked for on the command line, if any. */
  methods?: string[];
  /** The pair protocol: time only these two methods ({@link benchPair}). */
  pair?: PairSpec;
  /**
   * Energy per run for pair rows (`bench --energy-ms N`): the GPU's energy counter and the least
   * length of each phase (lib/bench/energy.ts). Unset: no energy phases.
   */
  energy?: { meter: EnergyMeter; phaseMs: number };
  /** The SM clock and power readings of this run so far (lib/bench/gpu-state.ts's GpuSampler), if sampled. */
  sampler?: { samples(): GpuSample[] };
  /**
   * Reports progress: call it once at the start of each step (one size, or one batch of variants
   * timed together), naming the step. The CLI's progress bar counts these calls against
   * {@link BenchFamily.plan}.
   */
  progress(item: string): void;
}

/** One "ours vs reference" claim of a family: the pair and the sizes the documentation quotes it at. */
export interface PairClaim {
  a: string;
  b: string;
  /** Sizes as `--sizes` gives them (the family says what a size means). */
  sizes: number[];
  /** Matrix shapes rows × cols beside the sizes (ata's tall shapes). */
  shapes?: [number, number][];
}

/** A family's benchmark plug-in. Only `op`, `description` and `run` are required. */
export interface BenchFamily {
  op: string;
  description: string;
  /**
   * The method the ratio columns compare against (`cublas-syrk` for ata, `cublas` for gemm, `cub`
   * for scan). Where a family's method names carry a dtype suffix (`fast-int32`), the reference is
   * taken with the same suffix (`cub-int32`).
   */
  reference?: string;
  /**
   * The rate is a memory bandwidth in GB/s, so tables and the report add its ratio to the run's
   * device-to-device `copy` rate.
   */
  bandwidth?: boolean;
  /** The family's ours-vs-reference claims, which `bench --pair` (without A,B) measures. */
  pairs?: readonly PairClaim[];
  /**
   * The names `--methods` and `--pair` may give, checked before any GPU work (a name here may stand
   * for several variants: gemm's `shared` is shared8, shared16 and shared32). Without it the names
   * are not checked.
   */
  methodNames?(): readonly string[];
  /** `--methods` picks every variant whose name starts with a given one (gemm's `shared`). */
  methodsByPrefix?: boolean;
  /** The largest `--sizes` value the family takes, and its unit in a message (`MiB`, `per side`). */
  maxSize?: { value: number; what: string };
  /**
   * The number of times `run(ctx)` will call `ctx.progress()`, computed without touching the GPU.
   * The CLI sizes its progress bar (and its ETA) with it; a family without `plan` still works, its
   * steps are then counted as they come.
   */
  plan?(ctx: BenchContext): number;
  run(ctx: BenchContext): BenchRow[];
}
