// Energy per run, beside the time: the board's energy counter (NVML's total energy consumption, in
// millijoules, read by native/core/nvml.cc) over a phase in which one method runs back to back. Under
// the power cap two kernels of the same speed can differ in joules per flop, and that is the lever
// that decides which one is faster when both run at the cap (GPU-FACTS.md, "Power cap and the order
// of runs"). The counter advances every 20–100 ms, so a phase lasts at least `phaseMs` (default 2 s)
// and the error is a few percent at most; phases run in the order A B B A, so each method's two
// phases follow both the other method and itself. Nothing here needs a GPU to be tested: the meter
// and the runs are injected.
import { spreadOf, type Spread } from './protocol';

/** Reads a GPU's energy counter in millijoules, or undefined where it cannot. */
export interface EnergyMeter {
  read(): number | undefined;
  /** Why there are no readings, where there are none. */
  reason?: string;
}

/** What one method's phases measured. */
export interface EnergyPerRun {
  /** Joules per run: median (of the phases), min, max. */
  joules: Spread;
  /** Runs in each phase. */
  runs: number[];
  /** Each phase's length in ms (host clock, synchronized). */
  phaseMs: number[];
  /** Work per joule (the row's work unit per J, e.g. GFLOP/J), where the work per run is known. */
  workPerJoule?: number;
  /** Its unit: the row's unit with `/s` replaced by `/J`. */
  unit?: string;
}

/** The energy meter of a device, from the native binding's gpuEnergy. */
export function nvmlMeter(
  gpuEnergy: (device: number) => { available: boolean; millijoules?: number; reason?: string },
  device: number,
): EnergyMeter {
  const first = gpuEnergy(device);
  if (!first.available || first.millijoules === undefined)
    return { read: () => undefined, reason: first.reason ?? 'the energy counter cannot be read' };
  return {
    read: () => {
      const r = gpuEnergy(device);
      return r.available ? r.millijoules : undefined;
    },
  };
}

/** One phase: `run` back to back `count` times between two counter readings. */
export interface PhaseDriver {
  /** Runs one method once (queued; `sync` waits for it). */
  run(): void;
  /** Waits for the device. */
  sync(): void;
  /** Host clock in ms. */
  now(): number;
}

/** Both methods' energy per run, and a's joules per run over b's. */
export interface PairEnergy {
  a: EnergyPerRun;
  b: EnergyPerRun;
  ratio: number;
}

/** Why a pair has no energy: no reading, or a counter that went backwards or did not advance. */
export interface NoEnergy {
  missing: string;
}

/**
 * Joules per run of two methods, in phases A B B A of at least `phaseMs` each (runs per phase from
 * each method's median time `ms`, topped up until the phase lasted `phaseMs` on the host clock). `workA`/`workB`: work per run in the row's unit-seconds
 * (GFLOP for a GFLOP/s row), for the work per joule. {@link NoEnergy} where a phase has no measure.
 */
export function pairEnergy(
  meter: EnergyMeter,
  a: PhaseDriver & { ms: number; work?: number; unit?: string },
  b: PhaseDriver & { ms: number; work?: number; unit?: string },
  phaseMs = 2000,
): PairEnergy | NoEnergy {
  if (!(phaseMs > 0)) throw new RangeError(`pairEnergy: phaseMs must be > 0, got ${phaseMs}`);
  const phases: { a: number[]; b: number[]; runsA: number[]; runsB: number[]; msA: number[]; msB: number[] } = {
    a: [],
    b: [],
    runsA: [],
    runsB: [],
    msA: [],
    msB: [],
  };
  for (const which of ['a', 'b', 'b', 'a'] as const) {
    const m = which === 'a' ? a : b;
    // Runs from the median time, then more until the phase really lasted phaseMs: back to back, a
    // method can run slower than its timed median (the clock drops under the cap).
    const perRun = Number.isFinite(m.ms) && m.ms > 0 ? m.ms : 1;
    let count = 0;
    let batch = Math.max(1, Math.ceil(phaseMs / perRun));
    m.sync();
    const before = meter.read();
    const t0 = m.now();
    let t1 = t0;
    while (batch > 0) {
      const tBatch = t1;
      for (let i = 0; i < batch; i++) m.run();
      count += batch;
      m.sync();
      t1 = m.now();
      // A batch the clock did not see (a stand-in run) cannot be topped up by time.
      if (t1 === tBatch) break;
      const left = phaseMs - (t1 - t0);
      // At most doubling what ran so far: a first batch that took no measurable time says little.
      batch = left > 0 ? Math.min(2 * count, Math.max(1, Math.ceil(left / ((t1 - t0) / count || perRun)))) : 0;
    }
    const after = meter.read();
    const phase = `a phase of ${which.toUpperCase()} (${count} runs, ${(t1 - t0).toFixed(1)} ms)`;
    if (before === undefined || after === undefined)
      return { missing: meter.reason ?? 'the counter stopped answering' };
    if (!(after >= before)) return { missing: `the counter went backwards in ${phase}: the driver reloaded?` };
    // A counter that did not move is a phase shorter than its update period, not 0 J (and a ratio of 0/0).
    if (after === before)
      return { missing: `the counter did not advance in ${phase}: phases shorter than its update period read 0 J` };
    const joules = (after - before) / 1e3 / count;
    if (which === 'a') {
      phases.a.push(joules);
      phases.runsA.push(count);
      phases.msA.push(t1 - t0);
    } else {
      phases.b.push(joules);
      phases.runsB.push(count);
      phases.msB.push(t1 - t0);
    }
  }
  const per = (j: number[], runs: number[], ms: number[], m: { work?: number; unit?: string }): EnergyPerRun => {
    const joules = spreadOf(j);
    const out: EnergyPerRun = { joules, runs, phaseMs: ms };
    if (m.work !== undefined && m.unit !== undefined && joules.median > 0) {
      out.workPerJoule = m.work / joules.median;
      out.unit = m.unit.replace(/\/s$/, '/J');
    }
    return out;
  };
  const ea = per(phases.a, phases.runsA, phases.msA, a);
  const eb = per(phases.b, phases.runsB, phases.msB, b);
  return { a: ea, b: eb, ratio: ea.joules.median / eb.joules.median };
}

/**
 * The rate ratio of a over b in their energy phases, each method run back to back for the whole phase
 * (both orders, A B B A): work per run over mean time per run, a's over b's. `workA`/`workB` are each
 * method's work per run in one unit (rate × time of the timed median); equal work (the same problem)
 * leaves b's time per run over a's. Under a power cap this is what a long job of one kind sees, where
 * the rounds' ratio has each run follow the other method. Undefined without runs or work.
 */
export function sustainedRatio(a: EnergyPerRun, b: EnergyPerRun, workA = 1, workB = 1): number | undefined {
  const perRun = (e: EnergyPerRun) => {
    const runs = e.runs.reduce((s, n) => s + n, 0);
    const ms = e.phaseMs.reduce((s, n) => s + n, 0);
    return runs > 0 && ms > 0 ? ms / runs : undefined;
  };
  const pa = perRun(a);
  const pb = perRun(b);
  if (pa === undefined || pb === undefined || !(workA > 0) || !(workB > 0)) return undefined;
  return workA / pa / (workB / pb);
}

/** `12.3 mJ/run (12.1–12.5), 81.2 GFLOP/J`. */
export function describeEnergy(e: EnergyPerRun): string {
  const j = (v: number) => (v >= 1 ? `${v.toFixed(3)} J` : `${(v * 1e3).toFixed(2)} mJ`);
  return (
    `${j(e.joules.median)}/run (${j(e.joules.min)}–${j(e.joules.max)})` +
    (e.workPerJoule !== undefined ? `, ${e.workPerJoule.toFixed(1)} ${e.unit}` : '')
  );
}

/**
 * {@link sustainedRatio} for a pair row: each side's work per run from its rate and timed median (so
 * a kernel against a copy of other bytes compares rates, as the rounds do). Undefined without both
 * energies, or when the two rates are in different units.
 */
export function pairSustainedRatio(r: {
  rate: number;
  ms: number;
  unit: string;
  energy?: EnergyPerRun;
  versus?: { rate: number; ms: number; unit: string; energy?: EnergyPerRun };
}): number | undefined {
  const v = r.versus;
  if (!r.energy || !v?.energy || r.unit !== v.unit) return undefined;
  return sustainedRatio(r.energy, v.energy, r.rate * r.ms, v.rate * v.ms);
}
