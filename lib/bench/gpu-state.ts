// The GPU's SM clock and power draw, read with nvidia-smi: once before and after each family's run,
// and, while variants are timed, sampled continuously in a worker thread so that each result row can
// say at what clock and power its own runs ran (clocks drop under the power cap, and with power and
// temperature on a shared machine). Without nvidia-smi the rows simply lack it.
import { execFileSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';

import { spreadOf, type Spread, type TimedRun } from './protocol';
import type { GpuState } from './results';

const QUERY = 'pci.bus,clocks.sm,clocks.mem,power.draw,temperature.gpu';

/** Parses nvidia-smi's `--query-gpu=pci.bus,…` CSV (no header, no units) for the GPU on PCI bus `bus`. */
export function parseGpuState(csv: string, bus: number): GpuState | undefined {
  for (const line of csv.split('\n')) {
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length < 5 || Number.parseInt(cells[0], 16) !== bus) continue;
    const [smMHz, memMHz, powerW, tempC] = cells.slice(1, 5).map(Number);
    if ([smMHz, memMHz, powerW, tempC].some((v) => !Number.isFinite(v))) return undefined;
    return { smMHz, memMHz, powerW, tempC };
  }
  return undefined;
}

/** The state of the GPU on PCI bus `bus` now, or undefined where nvidia-smi is missing or says nothing. */
export function readGpuState(bus: number): GpuState | undefined {
  try {
    const csv = execFileSync('nvidia-smi', [`--query-gpu=${QUERY}`, '--format=csv,noheader,nounits'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 10_000,
    });
    return parseGpuState(csv, bus);
  } catch {
    return undefined;
  }
}

/** `1980 MHz, 112 W, 43 °C` (→ end state, where given). */
export function describeGpuState(s: { start?: GpuState; end?: GpuState } | undefined): string {
  const one = (g: GpuState) => `SM ${g.smMHz} MHz, ${Math.round(g.powerW)} W, ${g.tempC} °C`;
  if (!s?.start && !s?.end) return 'GPU state not recorded';
  if (s.start && s.end) return `${one(s.start)} → ${one(s.end)}`;
  return one((s.start ?? s.end) as GpuState);
}

/** One reading of the sampler: host time (ms since the epoch), SM clock, board power. */
export interface GpuSample {
  t: number;
  smMHz: number;
  powerW: number;
}

/**
 * SM clock and power over a row's timed runs: the samples taken while its runs were in flight
 * (`scope: 'runs'`), or, where none fell inside them (runs shorter than the sampling interval), the
 * samples over the whole batch of variants timed together (`scope: 'batch'`).
 */
export interface GpuDuring {
  smMHz: Spread;
  powerW: Spread;
  samples: number;
  scope: 'runs' | 'batch';
}

/** The samples inside any of the windows, summarized; undefined where none is. */
function summarize(samples: readonly GpuSample[], scope: GpuDuring['scope']): GpuDuring | undefined {
  if (samples.length === 0) return undefined;
  return {
    smMHz: spreadOf(samples.map((s) => s.smMHz)),
    powerW: spreadOf(samples.map((s) => s.powerW)),
    samples: samples.length,
    scope,
  };
}

/**
 * What the GPU ran at during `mine` (one variant's runs), from `samples`; falls back to the span of
 * `all` (every run of the batch) where no sample fell inside `mine`.
 */
export function gpuDuring(
  samples: readonly GpuSample[],
  mine: readonly Pick<TimedRun, 'start' | 'end'>[],
  all: readonly Pick<TimedRun, 'start' | 'end'>[] = mine,
): GpuDuring | undefined {
  const inside = samples.filter((s) => mine.some((w) => s.t >= w.start && s.t <= w.end));
  if (inside.length > 0) return summarize(inside, 'runs');
  if (all.length === 0) return undefined;
  const from = Math.min(...all.map((w) => w.start));
  const to = Math.max(...all.map((w) => w.end));
  return summarize(
    samples.filter((s) => s.t >= from && s.t <= to),
    'batch',
  );
}

/** `SM 1755 MHz (min 1650), 690 W (min 540)`, for notes and logs. */
export function describeGpuDuring(d: GpuDuring | undefined): string {
  if (!d) return 'clocks not sampled';
  return (
    `SM ${Math.round(d.smMHz.median)} MHz (min ${Math.round(d.smMHz.min)}), ` +
    `${Math.round(d.powerW.median)} W (min ${Math.round(d.powerW.min)}), ${d.samples} sample${d.samples === 1 ? '' : 's'}` +
    (d.scope === 'batch' ? ' over the batch' : '')
  );
}

// The sampling loop, run in a worker thread: the main thread is busy timing (synchronously) while it
// samples. Each reading is one nvidia-smi call, stamped at its midpoint; the worker stops at the
// first failure (no nvidia-smi, or no GPU on that bus).
const SAMPLER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { execFileSync } = require('node:child_process');
const { control, data, command, args, bus, intervalMs } = workerData;
const ctl = new Int32Array(control);
const buf = new Float64Array(data);
const capacity = buf.length / 3;
const now = () => performance.timeOrigin + performance.now();
while (Atomics.load(ctl, 1) === 0) {
  const t0 = now();
  let out;
  try {
    out = execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10000 });
  } catch {
    Atomics.store(ctl, 2, 2);
    break;
  }
  const t = (t0 + now()) / 2;
  let found = false;
  for (const line of out.split('\\n')) {
    const c = line.split(',').map((s) => s.trim());
    if (c.length < 3 || Number.parseInt(c[0], 16) !== bus) continue;
    const sm = Number(c[1]), w = Number(c[2]);
    if (!Number.isFinite(sm) || !Number.isFinite(w)) break;
    found = true;
    const i = Atomics.load(ctl, 0);
    if (i < capacity) {
      buf[3 * i] = t; buf[3 * i + 1] = sm; buf[3 * i + 2] = w;
      Atomics.store(ctl, 0, i + 1);
    }
    break;
  }
  if (!found) { Atomics.store(ctl, 2, 2); break; }
  Atomics.store(ctl, 2, 1);
  Atomics.wait(ctl, 1, 0, intervalMs);
}
`;

export interface SamplerOptions {
  /** The program and arguments that print `pci.bus, clocks.sm, power.draw` lines (default: nvidia-smi). */
  command?: string;
  args?: string[];
  /** Pause between readings (ms). */
  intervalMs?: number;
  /** Readings kept at most (later ones are dropped). */
  capacity?: number;
}

/**
 * Samples the SM clock and power of the GPU on PCI bus `bus` in a worker thread until {@link stop}.
 * Reading never blocks: {@link samples} returns what has been recorded so far.
 */
export class GpuSampler {
  readonly #ctl: Int32Array;
  readonly #buf: Float64Array;
  readonly #worker: Worker;

  constructor(bus: number, opts: SamplerOptions = {}) {
    const capacity = opts.capacity ?? 200_000;
    const control = new SharedArrayBuffer(3 * 4);
    const data = new SharedArrayBuffer(3 * 8 * capacity);
    this.#ctl = new Int32Array(control);
    this.#buf = new Float64Array(data);
    this.#worker = new Worker(SAMPLER_SOURCE, {
      eval: true,
      workerData: {
        control,
        data,
        bus,
        command: opts.command ?? 'nvidia-smi',
        args: opts.args ?? ['--query-gpu=pci.bus,clocks.sm,power.draw', '--format=csv,noheader,nounits'],
        intervalMs: opts.intervalMs ?? 100,
      },
    });
    // Never keeps the process alive, and a failure inside it only ends the sampling.
    this.#worker.unref();
    this.#worker.on('error', () => Atomics.store(this.#ctl, 2, 2));
  }

  /** `starting` until the first reading, `sampling` after it, `unavailable` once a reading failed. */
  get status(): 'starting' | 'sampling' | 'unavailable' {
    const s = Atomics.load(this.#ctl, 2);
    return s === 0 ? 'starting' : s === 1 ? 'sampling' : 'unavailable';
  }

  /** The readings recorded so far, in time order. */
  samples(): GpuSample[] {
    const n = Atomics.load(this.#ctl, 0);
    const out: GpuSample[] = [];
    for (let i = 0; i < n; i++)
      out.push({ t: this.#buf[3 * i], smMHz: this.#buf[3 * i + 1], powerW: this.#buf[3 * i + 2] });
    return out;
  }

  /** Ends the sampling (the worker finishes its current reading in the background). */
  stop(): void {
    Atomics.store(this.#ctl, 1, 1);
    Atomics.notify(this.#ctl, 1);
    void this.#worker.terminate();
  }

  [Symbol.dispose](): void {
    this.stop();
  }
}
