import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { createProgress } from './progress';
import { CHART_PACKAGES, requirePackages } from './optional';
import { makeTable } from './table';

import { deviceCount, deviceProperties, runtimeInfo } from '../device';
import { writeChart } from '../bench/chart';
import { type BenchContext, type BenchFamily, type BenchRow, deviceSummary, families, gpuSlug } from '../bench/index';
import { nvmlMeter, pairSustainedRatio } from '../bench/energy';
import { native } from '../native';
import { GpuSampler } from '../bench/gpu-state';
import { planJobs, withPairs } from '../bench/options';
import { newRunStamp, readResultsFile } from '../bench/results';
import { clocksLine, rowSink, runJobs } from '../bench/run';
import { copyReference, fmt, fmtRatio, fmtSpread, rateRows, sortSizes, type FamilyMeta } from '../bench/summary';

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
  /** `--pair A,B`: only those two methods, in rounds of A A B B; `--pair` alone (true): each family's claims. */
  pair?: boolean | string;
  /** Rounds of the pair protocol (default 20). */
  rounds?: number;
  /** With `pair`: each method's joules per run over energy-counter phases of at least this many ms (0: off). */
  energyMs?: number;
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

/** The back-to-back rate ratio of a pair's energy phases (see sustainedRatio), or a dash. */
function fmtSustained(r: BenchRow): string {
  const s = pairSustainedRatio(r);
  return s === undefined ? '—' : `${s.toFixed(2)}×`;
}

/** Pair rows: each method against the other, the ratio of their rates over the rounds, and the clocks. */
export function pairTable(rows: readonly BenchRow[]): string {
  const withEnergy = rows.some((r) => r.energyRatio !== undefined);
  const t = makeTable([
    'method',
    'versus',
    'size',
    'ms',
    'versus ms',
    'rate ratio (min–max)',
    'rounds',
    'SM MHz',
    'W',
    'check',
    ...(withEnergy ? ['J/run', 'energy ratio', 'sustained ratio'] : []),
  ]);
  const both = (a: number | undefined, b: number | undefined) =>
    a === undefined && b === undefined
      ? '—'
      : `${a === undefined ? '—' : Math.round(a)} / ${b === undefined ? '—' : Math.round(b)}`;
  for (const r of rows) {
    if (r.protocol !== 'pair' || !r.versus || !r.ratio) continue;
    const [a, b] = [r.gpuDuring, r.versus.gpuDuring];
    t.push([
      r.method,
      r.versus.method,
      r.size,
      fmt(r.ms),
      fmt(r.versus.ms),
      fmtSpread(r.ratio),
      String(r.ratio.rounds),
      both(a?.smMHz.median, b?.smMHz.median),
      both(a?.powerW.median, b?.powerW.median),
      `${r.check} / ${r.versus.check}`,
      ...(withEnergy
        ? [
            r.energy && r.versus.energy
              ? `${r.energy.joules.median.toPrecision(3)} / ${r.versus.energy.joules.median.toPrecision(3)}`
              : '—',
            r.energyRatio === undefined ? '—' : r.energyRatio.toFixed(3),
            fmtSustained(r),
          ]
        : []),
    ]);
  }
  return t.toString();
}

/** One table per family: ms, rate, unit, the ratio to the reference method and to copy, the check. */
export function familyTable(meta: FamilyMeta | undefined, rows: readonly BenchRow[], all: readonly BenchRow[]): string {
  if (rows.length > 0 && rows.every((r) => r.protocol === 'pair')) return pairTable(rows);
  const rated = rateRows(meta, rows, all);
  const showCopy = rated.some((r) => r.batchVsCopy !== undefined);
  const refName = meta?.reference;
  const head = ['method', 'size', 'ms', 'rate', 'unit'];
  // This batch's medians against each other: a quick look, not a claim (claims come from --pair).
  if (refName) head.push(`vs ${refName} (batch)`);
  if (showCopy) head.push('vs copy (batch)');
  head.push('check');
  const t = makeTable(head);
  const order = sortSizes(rated.map((r) => r.size));
  const sorted = [...rated].sort((a, b) => order.indexOf(a.size) - order.indexOf(b.size));
  for (const r of sorted) {
    const cells = [r.method, r.size, fmt(r.ms), fmt(r.rate), r.unit];
    if (refName) cells.push(r.reference === r.method ? 'ref' : fmtRatio(r.batchVsReference));
    if (showCopy) cells.push(fmtRatio(r.batchVsCopy));
    cells.push(r.check);
    t.push(cells);
  }
  return t.toString();
}

/**
 * `cuda-kernels bench [family...]`: runs the families with a progress bar, prints a table per
 * family, merges the rows into `<out>/<gpu-slug>.json` family by family and draws
 * `<out>/<gpu-slug>/<family>.svg` and `.png` from the merged file. With `pair`, only two methods
 * of each family, in rounds of A A B B ({@link benchPair}); without names, each family's claims.
 */
export async function bench(
  names: string[],
  opts: BenchOptions,
  out: (line: string) => void = console.log,
): Promise<BenchRow[]> {
  const pairing = opts.pair !== undefined && opts.pair !== false;
  const everything = names.length === 0 || names.includes('all');
  // A copy: `copy` is prepended below, and `names` must keep saying what the caller asked for.
  const wanted = everything ? Object.keys(families).filter((k) => !pairing || families[k].pairs) : [...names];
  for (const n of wanted) {
    if (!families[n])
      throw new RangeError(`unknown benchmark family ${JSON.stringify(n)}; known: ${Object.keys(families).join(', ')}`);
  }
  if (pairing && wanted.length === 0) throw new RangeError(`--pair: no family has one (${withPairs(families)})`);
  // The copy row is every figure's memory-bandwidth reference, so each run measures it (a pair run
  // brings its own copy where it compares with one).
  if (!pairing && !wanted.includes('copy')) wanted.unshift('copy');
  // Every option, before anything touches the GPU.
  const jobs = planJobs(families, wanted, names, opts);
  const energyMs = opts.energyMs ?? 0;
  if (!Number.isInteger(energyMs) || energyMs < 0 || energyMs > 600_000)
    throw new RangeError(`--energy-ms must be an integer in [0, 600000], got ${energyMs}`);
  if (energyMs > 0 && !pairing)
    throw new RangeError('--energy-ms needs --pair (energy is measured for the two methods of a pair)');
  // The GPU next: without one, installing the chart packages would not help.
  if (deviceCount() === 0) {
    const reason = (runtimeInfo().noDeviceReason ?? 'no CUDA device').replace(/\s+/g, ' ');
    throw new Error(`cannot benchmark without a GPU: ${reason}`);
  }
  if (opts.device >= deviceCount())
    throw new RangeError(`--device ${opts.device}: there are ${deviceCount()} device(s), 0 to ${deviceCount() - 1}`);
  // Before the GPU work, not after it: a long run must not end on a missing chart package.
  if (opts.charts !== false) requirePackages(CHART_PACKAGES, 'drawing the charts', 'pass --no-charts');
  const planned = jobs.reduce((sum, j) => sum + (j.family.plan?.({ ...j.ctx, progress: () => {} }) ?? 0), 0);
  const props = deviceProperties(opts.device);
  const stamp = newRunStamp(currentCommit());
  const dir = path.resolve(opts.out);
  const device = deviceSummary(props, { driver: runtimeInfo().driverVersion }) as Record<string, unknown> & {
    name: string;
  };
  // The file this run merges into must be one (or not exist) and the folder writable: a run that
  // cannot keep its rows should not start.
  fs.mkdirSync(dir, { recursive: true });
  fs.accessSync(dir, fs.constants.W_OK);
  readResultsFile(path.join(dir, `${gpuSlug(props.name)}.json`));
  const sink = rowSink(dir, device, stamp, out);
  // CK_BENCH_SAMPLE_MS: the pause between nvidia-smi readings (default 100; 0 samples nothing).
  const sampleMs = Number(process.env.CK_BENCH_SAMPLE_MS ?? 100);
  let sampler: GpuSampler | undefined;
  try {
    sampler = sampleMs > 0 ? new GpuSampler(props.pciBusId, { intervalMs: sampleMs }) : undefined;
  } catch {
    sampler = undefined; // no worker threads: rows go without clocks
  }
  let energy: BenchContext['energy'];
  if (energyMs > 0) {
    const meter = nvmlMeter((d) => native.gpuEnergy(d), opts.device);
    if (meter.reason !== undefined) out(`energy: no readings, the rows will say so (${meter.reason})`);
    energy = { meter, phaseMs: energyMs };
  }
  const progress = createProgress(planned);
  let results: [BenchFamily, BenchRow[]][];
  try {
    results = runJobs(jobs, progress, stamp, props.pciBusId, sink, sampler, out, energy);
  } finally {
    progress.stop();
    sampler?.stop();
  }
  const rows = results.flatMap(([, r]) => r);

  for (const [family, familyRows] of results) {
    out(`\n${family.op}: ${family.description}`);
    out(familyTable(family, familyRows, rows));
  }
  out(`\n${clocksLine(rows, sampler)}`);
  if (sink.failure !== undefined) {
    out(`\nrun ${stamp.run}: could not write ${path.join(dir, `${gpuSlug(props.name)}.json`)} (${sink.failure})`);
    out(`its rows are in ${sink.file}`);
    process.exitCode = 1;
    return rows;
  }
  const file = sink.file;
  out(`\nrun ${stamp.run}: results merged into ${file}`);

  if (opts.charts !== false) {
    // Charts show the merged file, so a partial run keeps the other sizes and methods on the chart.
    const merged = (JSON.parse(fs.readFileSync(file, 'utf8')) as { rows: BenchRow[] }).rows;
    const chartDir = path.join(dir, gpuSlug(props.name));
    const copy = copyReference(merged);
    for (const family of new Set(results.map(([f]) => f))) {
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
  if (rows.some((r) => r.check === 'fail' || r.versus?.check === 'fail')) process.exitCode = 1;
  return rows;
}
