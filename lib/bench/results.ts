// The benchmark result file of DESIGN.md: bench/results/<gpu-slug>.json. A run merges its rows into
// it, replacing the rows it measured again (same family, op, method, size, GPU count and protocol).
import * as fs from 'node:fs';
import * as path from 'node:path';

import type { DeviceProperties } from '../device';
import type { GpuDuring } from './gpu-state';
import type { EnergyPerRun } from './energy';
import type { PairRatio } from './protocol';

/** One measured (op, method, size). */
export interface BenchRow {
  /** Family: ata, gemm, stencil, scan, reduce, mlp, apsp, peer, copy. */
  op: string;
  /** Variant name. */
  method: string;
  /** Size label: `RxC`, `MxKxN`, `N`, a byte size, or the layer list. */
  size: string;
  /** Median GPU milliseconds. */
  ms: number;
  /** Work per second in `unit`. */
  rate: number;
  unit: string;
  reps: number;
  /**
   * `ok` only if the result matched its reference; `ref` on the row that computed the reference
   * itself (compared with its own output, it proves nothing more than that it wrote every element);
   * `skipped` where nothing was compared (an outside measurement such as PyTorch's).
   */
  check: 'ok' | 'fail' | 'ref' | 'skipped';
  /** Anything a reader needs to interpret the row (reference used, floor, ...). */
  note?: string;
  /** GPUs the measurement used, where that is part of it (multi-GPU `apsp` and `peer` rows; 1 for single-GPU baselines). */
  gpus?: number;
  /**
   * The bench family (plug-in) that measured the row: `apsp`, `apsp-multi` and `apsp-dist` all
   * write op `apsp`. Rows of files written before it was recorded have none ({@link rowFamily}).
   */
  family?: string;
  /**
   * How the variants were ordered: `balanced`, every variant of the batch in a de Bruijn order (each
   * follows each, itself included, equally often); `pair`, two variants alone in rounds of A A B B,
   * the protocol of every ratio the documentation quotes. Rows without it come from the fixed
   * round-robin order used before, which favours the variant after the lightest one.
   */
  protocol?: 'balanced' | 'pair';
  /** Pair rows: the other variant, timed in the same rounds. */
  versus?: PairPartner;
  /** Pair rows: this row's rate over `versus`'s, per round (median, min, max over the rounds). */
  ratio?: PairRatio;
  /** SM clock and power while the row's own runs were timed (sampled by nvidia-smi), where read. */
  gpuDuring?: GpuDuring;
  /** Pair rows run with `--energy-ms`: joules per run from the GPU's energy counter (lib/bench/energy.ts). */
  energy?: EnergyPerRun;
  /** Pair rows with energy: this method's joules per run over `versus`'s (below 1: fewer joules per run). */
  energyRatio?: number;
  /**
   * The run that measured the row: one `bench` invocation (or outside script) has one id. Rows of
   * files written before runs were stamped have none; the report says so.
   */
  run?: string;
  /** The commit the row's run measured (`-dirty` when the tree had changes). */
  commit?: string;
  /** When the row's run started (ISO-8601). */
  date?: string;
  /** The GPU's state before and after the family's part of the run (nvidia-smi), where it could be read. */
  gpuState?: { start?: GpuState; end?: GpuState };
}

/** The second variant of a pair row, as measured in the same rounds. */
export interface PairPartner {
  /** Its method name (`copy`: a 1 GiB device-to-device copy, for bandwidth families). */
  method: string;
  ms: number;
  rate: number;
  unit: string;
  reps: number;
  check: BenchRow['check'];
  gpuDuring?: GpuDuring;
  energy?: EnergyPerRun;
}

/** Clocks, power and temperature of a GPU at one moment, as nvidia-smi reports them. */
export interface GpuState {
  smMHz: number;
  memMHz: number;
  powerW: number;
  tempC: number;
}

/** What one run stamps on each of its rows. */
export interface RunStamp {
  run: string;
  commit: string;
  date: string;
}

/** A new run's stamp: the id is the start time and the commit, unique per invocation. */
export function newRunStamp(commit: string, now = new Date()): RunStamp {
  const date = now.toISOString();
  return { run: `${date.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}-${commit}`, commit, date };
}

export interface BenchFile {
  device: Record<string, unknown>;
  createdAt: string;
  commit: string;
  rows: BenchRow[];
}

/** `NVIDIA H100 80GB HBM3` -> `nvidia-h100-80gb-hbm3`. */
export function gpuSlug(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/**
 * The family that measured a row: its `family`, or for rows written before that was recorded, what
 * its op, method and note say (the multi-GPU and distributed plug-ins write op `apsp` and `mlp` rows
 * whose notes name them).
 */
export function rowFamily(r: BenchRow): string {
  if (r.family) return r.family;
  const note = r.note ?? '';
  if (r.op === 'apsp') {
    if (/^nccl-/.test(r.method) || /^1 GPU, the baseline of this run|^in-process band scheme/.test(note))
      return 'apsp-dist';
    if ((r.gpus ?? 1) > 1 || /multi-GPU baseline/.test(note)) return 'apsp-multi';
  }
  if (r.op === 'mlp' && /-(1gpu|dp\d+)$/.test(r.method)) return 'mlp-dist';
  return r.op;
}

/**
 * What makes two rows the same measurement: family, op, method, size, GPU count, and for pair rows
 * the other variant (a table row and a pair row of one method are both kept).
 */
export function rowKey(r: BenchRow): string {
  const protocol = r.protocol === 'pair' ? `pair:${r.versus?.method ?? '?'}` : 'table';
  return [rowFamily(r), r.op, r.method, r.size, String(r.gpus ?? 1), protocol].join('\u0000');
}

/**
 * Rows of `base` with every measurement of `incoming` replaced by the incoming row (the last one,
 * where `incoming` measures one twice); every row comes back with its family recorded.
 */
export function mergeRows(base: readonly BenchRow[], incoming: readonly BenchRow[]): BenchRow[] {
  const latest = new Map<string, BenchRow>();
  for (const r of incoming) {
    const key = rowKey(r);
    latest.delete(key); // a repeat moves to the end, where it was measured
    latest.set(key, r);
  }
  const withFamily = (r: BenchRow): BenchRow => (r.family ? r : { ...r, family: rowFamily(r) });
  return [...base.filter((r) => !latest.has(rowKey(r))), ...latest.values()].map(withFamily);
}

/** The device summary stored in a result file. */
export function deviceSummary(p: DeviceProperties, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: p.name,
    computeCapability: p.computeCapability,
    smCount: p.smCount,
    totalGlobalMem: p.totalGlobalMem,
    l2CacheSize: p.l2CacheSize,
    clockRateKHz: p.clockRateKHz,
    memoryClockRateKHz: p.memoryClockRateKHz,
    memoryBusWidth: p.memoryBusWidth,
    ...extra,
  };
}

/** A result file that is not one: its path and what is wrong, so that nothing overwrites it. */
export class ResultsFileError extends Error {
  constructor(
    readonly file: string,
    why: string,
  ) {
    super(`${file}: ${why}`);
    this.name = 'ResultsFileError';
  }
}

/**
 * The text of a result file, checked: a JSON object whose `rows` is a list of rows (op, method and
 * size strings, ms a number) and whose `device` names the GPU. Throws {@link ResultsFileError}
 * naming `file` otherwise: a truncated file, a bare list, `rows` as an object.
 */
export function parseResultsFile(text: string, file: string): BenchFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new ResultsFileError(file, `not valid JSON (${(e as Error).message}); a truncated or hand-edited file?`);
  }
  const what = (v: unknown) => (Array.isArray(v) ? 'a list' : v === null ? 'null' : typeof v);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ResultsFileError(file, `not a result file: the JSON is ${what(parsed)}, not { device, rows, … }`);
  const f = parsed as Partial<BenchFile>;
  if (!Array.isArray(f.rows))
    throw new ResultsFileError(file, `not a result file: "rows" is ${what(f.rows)}, not a list of rows`);
  if (typeof f.device !== 'object' || f.device === null || typeof f.device.name !== 'string')
    throw new ResultsFileError(file, 'not a result file: "device" does not name the GPU');
  f.rows.forEach((r: unknown, i) => {
    const row = r as Partial<BenchRow> | null;
    if (
      typeof row !== 'object' ||
      row === null ||
      typeof row.op !== 'string' ||
      typeof row.method !== 'string' ||
      typeof row.size !== 'string' ||
      typeof row.ms !== 'number'
    )
      throw new ResultsFileError(file, `row ${i} is not a result row (op, method, size, ms)`);
  });
  return f as BenchFile;
}

/** Reads and checks a result file (see {@link parseResultsFile}); undefined where it does not exist. */
export function readResultsFile(file: string): BenchFile | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  return parseResultsFile(text, file);
}

/** Sleeps the thread (the bench is synchronous; nothing else runs meanwhile). */
function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Whether process `pid` on this host is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Runs `fn` holding `<file>.lock` (created exclusively, holding our pid): two bench processes on
 * one GPU model (devices 0 and 1) merge into one file, and each must read the rows the other wrote.
 * A lock whose process is gone is taken over; one held longer than `timeoutMs` is an error.
 */
export function withFileLock<T>(file: string, fn: () => T, timeoutMs = 60_000): T {
  const lock = `${file}.lock`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let holder: number;
    let age: number;
    try {
      holder = Number.parseInt(fs.readFileSync(lock, 'utf8'), 10);
      age = Date.now() - fs.statSync(lock).mtimeMs;
    } catch {
      continue; // released meanwhile
    }
    // An empty lock is one being written; only an old one is abandoned.
    const stale = Number.isInteger(holder) ? !alive(holder) : age > 10_000;
    if (stale) {
      fs.rmSync(lock, { force: true });
      continue;
    }
    if (Date.now() > deadline)
      throw new Error(`${file}: locked by process ${holder} for over ${timeoutMs / 1000} s (${lock})`);
    sleepMs(20);
  }
  try {
    return fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

/**
 * Merges `rows` into `<dir>/<slug>.json` (created if missing) and returns the file's path. Under
 * the file's lock it re-reads the file, merges, and replaces it through a temporary file and a
 * rename, so a reader never sees half a file and a concurrent writer's rows are kept. An existing
 * file that is not a result file (invalid JSON, another shape) is refused, not replaced.
 */
export function writeResults(
  dir: string,
  device: Record<string, unknown> & { name: string },
  commit: string,
  rows: readonly BenchRow[],
): string {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${gpuSlug(device.name)}.json`);
  return withFileLock(file, () => {
    const existing = readResultsFile(file)?.rows ?? [];
    const out: BenchFile = { device, createdAt: new Date().toISOString(), commit, rows: mergeRows(existing, rows) };
    const tmp = `${file}.${process.pid}.tmp`;
    try {
      fs.writeFileSync(tmp, JSON.stringify(out, null, 2) + '\n');
      fs.renameSync(tmp, file);
    } finally {
      fs.rmSync(tmp, { force: true });
    }
    return file;
  });
}
