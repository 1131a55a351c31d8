import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { createProgress, type Progress } from './progress';
import { CHART_PACKAGES, requirePackages } from './optional';
import { makeTable } from './table';

import { deviceCount, deviceProperties, runtimeInfo } from '../device';
import { writeChart } from '../bench/chart';
import {
  type BenchContext,
  type BenchFamily,
  type BenchRow,
  deviceSummary,
  families,
  gpuSlug,
  writeResults,
} from '../bench/index';
import { readGpuState } from '../bench/gpu-state';
import { newRunStamp, type RunStamp } from '../bench/results';
import { copyReference, fmt, fmtRatio, rateRows, sortSizes, type FamilyMeta } from '../bench/summary';

export interface BenchOptions {
  sizes?: number[];
  methods?: string[];
  reps: number;
  warmup: number;
  quick: boolean;
  out: string;
  device: number;
  /** Skip the SVG and PNG charts. */
  charts?: boolean;
}

function currentCommit(): string {
  if (process.env.CK_COMMIT) return process.env.CK_COMMIT;
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return 'unknown';
  }
}

/** One table per family: ms, rate, unit, the ratio to the reference method and to copy, the check. */
export function familyTable(meta: FamilyMeta | undefined, rows: readonly BenchRow[], all: readonly BenchRow[]): string {
  const rated = rateRows(meta, rows, all);
  const showCopy = rated.some((r) => r.vsCopy !== undefined);
  const refName = meta?.reference;
  const head = ['method', 'size', 'ms', 'rate', 'unit'];
  if (refName) head.push(`vs ${refName}`);
  if (showCopy) head.push('vs copy');
  head.push('check');
  const t = makeTable(head);
  const order = sortSizes(rated.map((r) => r.size));
  const sorted = [...rated].sort((a, b) => order.indexOf(a.size) - order.indexOf(b.size));
  for (const r of sorted) {
    const cells = [r.method, r.size, fmt(r.ms), fmt(r.rate), r.unit];
    if (refName) cells.push(r.reference === r.method ? 'ref' : fmtRatio(r.vsReference));
    if (showCopy) cells.push(fmtRatio(r.vsCopy));
    cells.push(r.check);
    t.push(cells);
  }
  return t.toString();
}

/**
 * Runs the families with a progress display; returns the rows per family in run order, each row
 * stamped with the run and the GPU's state before and after its family's part.
 */
function runFamilies(
  wanted: string[],
  ctxFor: (name: string) => Omit<BenchContext, 'progress'>,
  progress: Progress,
  stamp: RunStamp,
  pciBus: number,
): [BenchFamily, BenchRow[]][] {
  const results: [BenchFamily, BenchRow[]][] = [];
  for (const name of wanted) {
    const family = families[name];
    const base = ctxFor(name);
    const planned = family.plan ? family.plan({ ...base, progress: () => {} }) : undefined;
    let seen = 0;
    const ctx: BenchContext = {
      ...base,
      progress: (item) => {
        seen++;
        // A family without a plan, or one that steps more often than planned, grows the total.
        if (planned === undefined || seen > planned) progress.grow(1);
        progress.step(item);
      },
    };
    const start = readGpuState(pciBus);
    const rows = family.run(ctx);
    const gpuState = { start, end: readGpuState(pciBus) };
    results.push([family, rows.map((r) => ({ ...r, ...stamp, gpuState }))]);
    if (planned !== undefined && seen < planned) progress.grow(seen - planned);
  }
  return results;
}

/**
 * `cuda-kernels bench [family...]`: runs the families with a progress bar, prints a table per
 * family, merges the rows into `<out>/<gpu-slug>.json` and draws `<out>/<gpu-slug>/<family>.svg`
 * and `.png` from the merged file.
 */
export async function bench(
  names: string[],
  opts: BenchOptions,
  out: (line: string) => void = console.log,
): Promise<BenchRow[]> {
  // A copy: `copy` is prepended below, and `names` must keep saying what the caller asked for.
  const wanted = names.length === 0 || names.includes('all') ? Object.keys(families) : [...names];
  for (const n of wanted) {
    if (!families[n])
      throw new RangeError(`unknown benchmark family ${JSON.stringify(n)}; known: ${Object.keys(families).join(', ')}`);
  }
  // The GPU first: without one, installing the chart packages would not help.
  if (deviceCount() === 0) {
    const reason = (runtimeInfo().noDeviceReason ?? 'no CUDA device').replace(/\s+/g, ' ');
    throw new Error(`cannot benchmark without a GPU: ${reason}`);
  }
  // Before the GPU work, not after it: a long run must not end on a missing chart package.
  if (opts.charts !== false) requirePackages(CHART_PACKAGES, 'drawing the charts', 'pass --no-charts');
  // The copy row is every figure's memory-bandwidth reference, so each run measures it.
  if (!wanted.includes('copy')) wanted.unshift('copy');
  const base: Omit<BenchContext, 'progress'> = {
    device: opts.device,
    reps: opts.reps,
    warmup: opts.warmup,
    quick: opts.quick,
    sizes: opts.sizes,
    methods: opts.methods,
  };
  // Sizes and methods on the command line belong to the named families, not to the copy reference.
  const ctxFor = (n: string) =>
    n === 'copy' && !names.includes('copy') ? { ...base, sizes: undefined, methods: undefined } : base;
  const planned = wanted.reduce((sum, n) => sum + (families[n].plan?.({ ...ctxFor(n), progress: () => {} }) ?? 0), 0);
  const props = deviceProperties(opts.device);
  const stamp = newRunStamp(currentCommit());
  const progress = createProgress(planned);
  let results: [BenchFamily, BenchRow[]][];
  try {
    results = runFamilies(wanted, ctxFor, progress, stamp, props.pciBusId);
  } finally {
    progress.stop();
  }
  const rows = results.flatMap(([, r]) => r);

  const dir = path.resolve(opts.out);
  const file = writeResults(
    dir,
    deviceSummary(props, { driver: runtimeInfo().driverVersion }) as never,
    stamp.commit,
    rows,
  );
  for (const [family, familyRows] of results) {
    out(`\n${family.op}: ${family.description}`);
    out(familyTable(family, familyRows, rows));
  }
  out(`\nrun ${stamp.run}: results merged into ${file}`);

  if (opts.charts !== false) {
    // Charts show the merged file, so a partial run keeps the other sizes and methods on the chart.
    const merged = (JSON.parse(fs.readFileSync(file, 'utf8')) as { rows: BenchRow[] }).rows;
    const chartDir = path.join(dir, gpuSlug(props.name));
    const copy = copyReference(merged);
    for (const [family] of results) {
      const familyRows = merged.filter((r) => r.op === family.op);
      const written = await writeChart(chartDir, family.op, familyRows, {
        title: `${family.op} on ${props.name}`,
        subtitle: family.description,
        copyRate: family.bandwidth && family.op !== 'copy' ? copy?.rate : undefined,
      });
      const files = [written.svg, written.png]
        .filter((f): f is string => !!f)
        .map((f) => path.relative(process.cwd(), f));
      out(`${family.op} chart: ${files.join(', ') || 'none'}${written.note ? ` (${written.note})` : ''}`);
    }
  }
  if (rows.some((r) => r.check === 'fail')) process.exitCode = 1;
  return rows;
}
