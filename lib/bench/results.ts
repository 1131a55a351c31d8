// The benchmark result file of DESIGN.md: bench/results/<gpu-slug>.json, merged by op/method/size.
import * as fs from 'node:fs';
import * as path from 'node:path';

import type { DeviceProperties } from '../device';

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

/** Rows of `base` with every op/method/size of `incoming` replaced by the incoming row. */
export function mergeRows(base: readonly BenchRow[], incoming: readonly BenchRow[]): BenchRow[] {
  const key = (r: BenchRow) => `${r.op}\u0000${r.method}\u0000${r.size}`;
  const replaced = new Set(incoming.map(key));
  return [...base.filter((r) => !replaced.has(key(r))), ...incoming];
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

/** Merges `rows` into `<dir>/<slug>.json` (created if missing) and returns the file's path. */
export function writeResults(
  dir: string,
  device: Record<string, unknown> & { name: string },
  commit: string,
  rows: readonly BenchRow[],
): string {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${gpuSlug(device.name)}.json`);
  let existing: BenchRow[] = [];
  if (fs.existsSync(file)) {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<BenchFile>;
    if (Array.isArray(parsed.rows)) existing = parsed.rows;
  }
  const out: BenchFile = { device, createdAt: new Date().toISOString(), commit, rows: mergeRows(existing, rows) };
  fs.writeFileSync(file, JSON.stringify(out, null, 2) + '\n');
  return file;
}
