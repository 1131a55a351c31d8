// Timing with CUDA events: warm-up, then the median of several repetitions.
import { type DeviceArray, deviceRelativeError } from '../array';
import { EventTimer } from '../timing';
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
 * Times several variants round-robin — one run of each per repetition — so that clock and power
 * drift over the run affects all of them alike instead of favouring whichever ran first. Each
 * variant is warmed up `warmup` times first. Returns the samples (ms) per variant, in input order.
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

/**
 * Times the variants round-robin ({@link timeInterleaved}), then checks each one's output against
 * `ref` on the device and returns one row per variant with the median, the spread and the error.
 */
export function benchVariants(ctx: BenchContext, spec: VariantSpec): BenchRow[] {
  // NaN for floats; for integers a sentinel no correct result is likely to equal everywhere.
  const outs = spec.labels.map(() => {
    const out = spec.makeOut();
    return out.fill(out.dtype.startsWith('float') ? NaN : 0x5eedbeef);
  });
  try {
    const samples = timeInterleaved(
      spec.labels.map((_, i) => () => spec.run(i, outs[i])),
      { device: ctx.device, reps: spec.reps, warmup: 1 },
    );
    return spec.labels.map((method, i) => {
      const ms = median(samples[i]);
      const err = deviceRelativeError(outs[i], spec.ref);
      const spread = `${Math.min(...samples[i]).toFixed(3)}–${Math.max(...samples[i]).toFixed(3)} ms`;
      const isRef = method === (spec.refLabel ?? spec.refName);
      // The reference's own row still fails if it left an element unwritten (NaN) or is not repeatable.
      const check = verdict(err, spec.tolerance);
      return {
        op: spec.op,
        method,
        size: spec.size,
        ms,
        rate: spec.rate(ms, i),
        unit: spec.unit,
        reps: samples[i].length,
        check: isRef && check === 'ok' ? 'ref' : check,
        note: isRef
          ? `${spread}; the reference (its own output against another run of it: ${err.toExponential(2)}); variants interleaved`
          : `${spread}; relative error vs ${spec.refName}: ${err.toExponential(2)}; variants interleaved`,
      };
    });
  } finally {
    for (const o of outs) o.free();
  }
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
  /** Methods asked for on the command line, if any. */
  methods?: string[];
  /**
   * Reports progress: call it once at the start of each step (one size, or one batch of variants
   * timed together), naming the step. The CLI's progress bar counts these calls against
   * {@link BenchFamily.plan}.
   */
  progress(item: string): void;
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
  /**
   * The number of times `run(ctx)` will call `ctx.progress()`, computed without touching the GPU.
   * The CLI sizes its progress bar (and its ETA) with it; a family without `plan` still works, its
   * steps are then counted as they come.
   */
  plan?(ctx: BenchContext): number;
  run(ctx: BenchContext): BenchRow[];
}
