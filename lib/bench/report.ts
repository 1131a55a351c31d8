// bench/results/README.md, generated from the committed result files alone (no GPU): for each GPU
// measured, a table and a chart per family, and beside each of the reports' own tables
// (bench/reports.json) our numbers for the same work.
import * as fs from 'node:fs';
import * as path from 'node:path';

import { writeChart } from './chart';
import { describeEnergy, pairSustainedRatio } from './energy';
import { describeGpuDuring, describeGpuState } from './gpu-state';
import { parseResultsFile, type BenchFile, type BenchRow } from './results';
import { copyReference, fmt, fmtSpread, rateRows, sortSizes, splitMethod, type FamilyMeta } from './summary';

/** A method of ours that does a report column's work: a name, or a name at another size. */
export type OursCell = string | { method: string; size: string } | null;

/** One of a report's tables, transcribed. */
export interface ReportTable {
  title: string;
  /** Unit of the report's numbers: `ms` or `s` (converted to ms beside ours). */
  unit: 'ms' | 's';
  /** Per column, where the columns differ (`''` for a number without unit, such as an error). */
  units?: string[];
  rowHeader: string;
  columns: string[];
  rows: { label: string; size?: string; report: (number | null)[]; ours?: OursCell[] }[];
  /** Our methods with no counterpart in the report, shown beside it at each row's size. */
  also?: string[];
  /** Dtype suffixes tried, in order, when a method name has no exact match. */
  dtypes?: string[];
  /**
   * Whether the report's work is ours. No `report ÷ ours` column is shown for it any more: a ratio
   * on a page comes from the pair protocol, and the report's GPU is not ours.
   */
  compare?: boolean;
  note?: string;
}

/** One report: its family, its source text and the GPU its tables were measured on. */
export interface ReportEntry {
  op: string;
  source: string;
  gpu: string;
  tables: ReportTable[];
}

export interface ReportsFile {
  about?: string;
  reports: ReportEntry[];
}

/** A GPU's result file and where it came from. */
export interface GpuResults {
  slug: string;
  file: BenchFile;
}

/**
 * The result files of a folder (`<slug>.json`), in name order. A file that is not one (truncated,
 * another shape) throws a ResultsFileError that names it.
 */
export function readResults(dir: string): GpuResults[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const file = path.join(dir, f);
      return { slug: f.replace(/\.json$/, ''), file: parseResultsFile(fs.readFileSync(file, 'utf8'), file) };
    });
}

/** A markdown table. */
function mdTable(head: string[], rows: string[][]): string {
  const esc = (c: string) => c.replace(/\|/g, '\\|');
  return [
    `| ${head.map(esc).join(' | ')} |`,
    `| ${head.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.map(esc).join(' | ')} |`),
  ].join('\n');
}

/**
 * A family's rows as one table: a row per size (and dtype, where method names carry one), a column
 * per method; each cell gives ms, rate and the ratios to the reference method and to copy.
 */
export function familyMarkdown(
  meta: FamilyMeta | undefined,
  rows: readonly BenchRow[],
  all: readonly BenchRow[],
): string {
  const rated = rateRows(meta, rows, all);
  if (rated.length === 0) return '';
  const methods = [...new Set(rated.map((r) => splitMethod(r.method).base))];
  const dtypes = [...new Set(rated.map((r) => splitMethod(r.method).dtype ?? ''))];
  const sizes = sortSizes(rated.map((r) => r.size));
  const byDtype = dtypes.length > 1 || dtypes[0] !== '';
  const out: string[][] = [];
  for (const dtype of dtypes) {
    for (const size of sizes) {
      const here = rated.filter((r) => r.size === size && (splitMethod(r.method).dtype ?? '') === dtype);
      if (here.length === 0) continue;
      const cells = methods.map((m) => {
        const r = here.find((x) => splitMethod(x.method).base === m);
        if (!r) return '—';
        const parts = [`${fmt(r.ms)} ms`, `${fmt(r.rate)} ${r.unit}`];
        if (r.reference === r.method) parts.push('reference');
        else if (r.vsReference !== undefined) parts.push(`${fmtSpread(r.vsReference)} ref`);
        if (r.vsCopy !== undefined) parts.push(`${fmtSpread(r.vsCopy)} copy`);
        if (r.check !== 'ok' && r.check !== 'ref') parts.push(`**check ${r.check}**`);
        return parts.join('<br>');
      });
      out.push([...(byDtype ? [dtype] : []), size, ...cells]);
    }
  }
  return mdTable([...(byDtype ? ['dtype'] : []), 'size', ...methods], out);
}

/**
 * A family's pair rows (the pair protocol: two methods alone, in rounds of A A B B) as one table:
 * the ratio of their rates (median over the rounds, min–max), each one's median time, and the SM
 * clock and power over each one's runs. Empty where the family has none.
 */
export function pairsMarkdown(rows: readonly BenchRow[]): string {
  const pairs = rows.filter((r) => r.protocol === 'pair' && r.versus && r.ratio);
  if (pairs.length === 0) return '';
  const order = sortSizes(pairs.map((r) => r.size));
  const sorted = [...pairs].sort(
    (a, b) => a.method.localeCompare(b.method) || order.indexOf(a.size) - order.indexOf(b.size),
  );
  const clocks = (r: BenchRow) => describeGpuDuring(r.gpuDuring).replace(/, \d+ samples?( over the batch)?$/, '$1');
  // Energy per run (bench --energy-ms) where any pair of the family has it. A ratio that is not a
  // number is a file's null: 0 J over 0 J from a counter that stood still, written before such a
  // phase gave no energy.
  const withEnergy = sorted.some((r) => r.energy && r.versus?.energy);
  const sustained = (r: BenchRow) => {
    const x = pairSustainedRatio(r);
    return x === undefined ? '' : `; rate ratio back to back ${x.toFixed(2)}×`;
  };
  const energy = (r: BenchRow) =>
    r.energy && r.versus?.energy && typeof r.energyRatio === 'number' && Number.isFinite(r.energyRatio)
      ? `${describeEnergy(r.energy)} / ${describeEnergy(r.versus.energy)}; ratio ${r.energyRatio.toFixed(3)}` +
        sustained(r)
      : 'not measured';
  return mdTable(
    [
      'pair',
      'size',
      'rate ratio (min–max)',
      'rounds',
      'ms',
      'clocks and power',
      ...(withEnergy ? ['energy per run (NVML)'] : []),
    ],
    sorted.map((r) => [
      `${r.method} / ${r.versus!.method}`,
      r.size,
      fmtSpread(r.ratio),
      String(r.ratio!.rounds),
      `${fmt(r.ms)} / ${fmt(r.versus!.ms)}`,
      `${clocks(r)} / ${clocks({ ...r, gpuDuring: r.versus!.gpuDuring })}`,
      ...(withEnergy ? [energy(r)] : []),
    ]),
  );
}

/**
 * Which runs a family's rows come from: each run's id, commit, date and GPU state, and how many rows
 * predate the per-row stamps (their commit is unknown: a file's own commit is only its last merge's).
 */
export function runsMarkdown(rows: readonly BenchRow[]): string {
  const runs = new Map<string, { row: BenchRow; count: number }>();
  let unstamped = 0;
  for (const r of rows) {
    if (!r.run) {
      unstamped++;
      continue;
    }
    const seen = runs.get(r.run);
    if (seen) seen.count++;
    else runs.set(r.run, { row: r, count: 1 });
  }
  const parts = [...runs.values()]
    .sort((a, b) => (a.row.date ?? '').localeCompare(b.row.date ?? ''))
    .map(
      ({ row, count }) =>
        `run \`${row.run}\` (commit \`${row.commit ?? '?'}\`, ${describeGpuState(row.gpuState)}): ${count} row${count === 1 ? '' : 's'}`,
    );
  if (unstamped)
    parts.push(
      `${unstamped} row${unstamped === 1 ? '' : 's'} from before runs were stamped (run and commit not recorded)`,
    );
  return `Measured in: ${parts.join('; ')}.`;
}

/** Finds our row for a method name at a size, trying the table's dtype suffixes. */
function findOurs(
  rows: readonly BenchRow[],
  method: string,
  size: string,
  dtypes: readonly string[] = [],
): BenchRow | undefined {
  for (const name of [method, ...dtypes.map((d) => `${method}-${d}`)]) {
    const r = rows.find(
      (x) => x.method === name && x.size === size && x.protocol !== 'pair' && (x.check === 'ok' || x.check === 'ref'),
    );
    if (r) return r;
  }
  return undefined;
}

/** A report's table with our numbers beside each column (and `also` methods after them). */
export function comparisonMarkdown(table: ReportTable, gpu: string, ours: readonly BenchRow[], ourGpu: string): string {
  const unitOf = (i: number) => table.units?.[i] ?? table.unit;
  const mapped = table.columns.map((_, i) => table.rows.some((r) => r.ours?.[i]));
  const head = [table.rowHeader];
  table.columns.forEach((c, i) => {
    const u = unitOf(i);
    head.push(`${c} (report${u ? `, ${u}` : ''})`);
    if (mapped[i]) head.push(`ours, ms`);
  });
  for (const m of table.also ?? []) head.push(`ours: ${m}, ms`);
  const body = table.rows.map((row) => {
    const cells = [row.label];
    table.columns.forEach((_, i) => {
      const v = row.report[i];
      cells.push(v === null || v === undefined ? '—' : String(v));
      if (!mapped[i]) return;
      const cell = row.ours?.[i] ?? null;
      const spec = typeof cell === 'string' ? { method: cell, size: row.size } : cell;
      const r = spec?.size ? findOurs(ours, spec.method, spec.size, table.dtypes) : undefined;
      cells.push(spec ? (r ? `${fmt(r.ms)} (${r.method})` : `not measured yet (${spec.method})`) : '—');
    });
    for (const m of table.also ?? []) {
      const r = row.size ? findOurs(ours, m, row.size, table.dtypes) : undefined;
      cells.push(r ? fmt(r.ms) : '—');
    }
    return cells;
  });
  const lines = [`**${table.title}**. The report's GPU: ${gpu}. Ours: ${ourGpu}.`, '', mdTable(head, body)];
  if (table.note) lines.push('', table.note);
  return lines.join('\n');
}

/** The order families appear in: the registry's, then any other the files or reports name. */
function familyOrder(
  registry: readonly string[],
  results: readonly GpuResults[],
  reports: ReportsFile | undefined,
): string[] {
  const seen = new Set<string>(registry);
  for (const op of ['stencil', 'mlp', 'apsp']) seen.add(op);
  for (const r of reports?.reports ?? []) seen.add(r.op);
  for (const g of results) for (const row of g.file.rows) seen.add(row.op);
  return [...seen];
}

export interface ReportOptions {
  /** The folder of `<slug>.json` files; README.md and the charts are written there unless `outDir` is given. */
  resultsDir: string;
  /** Where README.md and the charts go (default: `resultsDir`). */
  outDir?: string;
  /** The transcribed reports (bench/reports.json); without it the comparisons are left out. */
  reports?: ReportsFile;
  /** Where the reports file is, for the README's link (relative to the output folder). */
  reportsLink?: string;
  /** Family metadata: reference method, bandwidth flag, description. */
  families: Record<string, FamilyMeta>;
  /** Draw the charts (default true). */
  charts?: boolean;
}

/** Writes `<outDir>/README.md` and `<outDir>/<slug>/<family>.svg|png`; returns the files written. */
export async function writeReport(opts: ReportOptions): Promise<string[]> {
  const results = readResults(opts.resultsDir);
  const outDir = opts.outDir ?? opts.resultsDir;
  const written: string[] = [];
  const order = familyOrder(Object.keys(opts.families), results, opts.reports);
  const md: string[] = [
    '# Benchmark results',
    '',
    '<!-- Generated by `npx cuda-kernels report` (lib/bench/report.ts) from the result files in this folder' +
      (opts.reportsLink ? ` and ${opts.reportsLink}` : '') +
      '. Edit those, not this file. -->',
    '',
    'Every figure is a median of CUDA-event timings after warm-up, each result checked on the device against a reference ' +
      '(`npx cuda-kernels bench`), the variants of a batch timed in a balanced order (each follows each equally often). ' +
      'Cells give ms and the rate. A ratio comes only from the pair protocol (`bench --pair`: two methods alone, in rounds ' +
      'of A A B B, so that neither is favoured by what ran before it): the median of the per-round ratios of the rates, ' +
      'with their range, to the family’s reference method at the same size (`ref`) or to a 1 GiB device-to-device copy ' +
      '(`copy`); no ratio is shown where no pair was measured.' +
      (opts.reports
        ? ` Beside each family, the tables of the report it grew from (transcribed in ${opts.reportsLink ?? 'reports.json'}), with our numbers for the same work.`
        : ''),
    '',
  ];
  if (results.length === 0) md.push('No results yet: run `npx cuda-kernels bench all` on a GPU.', '');
  for (const g of results) md.push(`- [${String(g.file.device.name)}](#${anchor(String(g.file.device.name))})`);
  md.push('');

  for (const g of results) {
    const d = g.file.device as Record<string, unknown>;
    const all = g.file.rows;
    md.push(`## ${d.name}`, '');
    const facts = [
      d.computeCapability && `compute capability ${d.computeCapability}`,
      d.smCount && `${d.smCount} SMs`,
      typeof d.totalGlobalMem === 'number' && `${(d.totalGlobalMem / 2 ** 30).toFixed(0)} GiB`,
      d.driver && `driver CUDA ${d.driver}`,
      `last merged by commit \`${g.file.commit}\` on ${g.file.createdAt} (each family names the runs its rows come from)`,
    ].filter(Boolean);
    md.push(`${facts.join(', ')}. Raw rows: [${g.slug}.json](${g.slug}.json).`, '');
    const copy = copyReference(all);
    for (const op of order) {
      const meta = opts.families[op];
      const reportEntry = opts.reports?.reports.find((r) => r.op === op);
      const rows = all.filter((r) => r.op === op);
      md.push(`### ${op}${meta?.description ? `: ${meta.description}` : ''}`, '');
      if (rows.length === 0) {
        md.push(`Not measured yet on the ${d.name}.`, '');
      } else {
        if (opts.charts !== false) {
          const files = await writeChart(path.join(outDir, g.slug), op, rows, {
            title: `${op} on ${d.name}`,
            subtitle: meta?.description,
            copyRate: meta?.bandwidth && op !== 'copy' ? copy?.rate : undefined,
          });
          written.push(...[files.svg, files.png].filter((f): f is string => !!f));
          if (files.svg) {
            const rel = path.relative(outDir, files.svg).split(path.sep).join('/');
            const png = files.png && path.relative(outDir, files.png).split(path.sep).join('/');
            md.push(`![${op} on ${d.name}](${rel})`, '', png ? `[PNG](${png})` : `(no PNG: ${files.note})`, '');
          }
        }
        const notes: string[] = [];
        if (meta?.reference)
          notes.push(
            `ref = ${meta.reference}${rows.some((r) => splitMethod(r.method).dtype) ? ' of the same dtype' : ''}`,
          );
        if (meta?.bandwidth && op !== 'copy')
          notes.push('copy = a 1 GiB device-to-device copy, timed in the same rounds');
        if (notes.length) md.push(`Ratios, from the pair protocol only, are rates over the ${notes.join('; ')}.`, '');
        if (meta?.bandwidth && op !== 'copy' && copy)
          md.push(`This file's copy row: ${fmt(copy.rate)} ${copy.unit} (${copy.size}).`, '');
        const table = familyMarkdown(meta ?? { op }, rows, all);
        if (table) md.push(table, '');
        const pairs = pairsMarkdown(rows);
        if (pairs) md.push('Pair protocol:', '', pairs, '');
        md.push(runsMarkdown(rows), '');
      }
      for (const table of reportEntry?.tables ?? []) {
        md.push(comparisonMarkdown(table, reportEntry!.gpu, rows, String(d.name)), '');
      }
      if (reportEntry) md.push(`Source: ${reportEntry.source}.`, '');
    }
  }
  const readme = path.join(outDir, 'README.md');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(readme, md.join('\n').replace(/\n{3,}/g, '\n\n'));
  written.push(readme);
  return written;
}

/** GitHub's heading anchor for a heading text. */
function anchor(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .replace(/ /g, '-');
}
