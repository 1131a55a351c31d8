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
  /** `ok` only if the result matched its reference. */
  check: 'ok' | 'fail' | 'skipped';
  /** Anything a reader needs to interpret the row (reference used, floor, ...). */
  note?: string;
  /** GPUs the measurement used, where that is part of it (multi-GPU `apsp` and `peer` rows; 1 for single-GPU baselines). */
  gpus?: number;
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
