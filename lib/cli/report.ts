import * as fs from 'node:fs';
import * as path from 'node:path';

import { CHART_PACKAGES, requirePackages } from './optional';

import { proseFiles, updatePairMarks } from '../bench/claims';
import { notesBlock, updateReadmeTables, withNotes } from '../bench/readme-tables';
import { readResults, writeReport, type ReportsFile } from '../bench/report';
import type { FamilyMeta } from '../bench/summary';

/**
 * The registry's families as metadata; loading them loads the addon, which needs no GPU. Without a
 * binary the report is still written, without the families' descriptions and references.
 */
export function familyMeta(out: (line: string) => void): Record<string, FamilyMeta> {
  let families: (typeof import('../bench/index'))['families'];
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    families = (require('../bench/index') as typeof import('../bench/index')).families;
  } catch (e) {
    out(`no native binary loads, so the families' descriptions are left out (${String(e).split('\n')[0]})`);
    return {};
  }
  return Object.fromEntries(
    // A plug-in that writes another family's rows (apsp-multi writes op apsp) has no section of its own.
    Object.entries(families)
      .filter(([k, f]) => f.op === k)
      .map(([k, f]) => [k, { op: f.op, description: f.description, reference: f.reference, bandwidth: f.bandwidth }]),
  );
}

/** Options of `cuda-kernels report`. */
export interface ReportCliOptions {
  /** The folder of result files (`bench --out`). */
  results: string;
  /** Where README.md and the charts go; default: the results folder. */
  out?: string;
  reports: string;
  charts?: boolean;
  /** Another file whose `<!-- bench-table ID -->` blocks and pair marks are regenerated too. */
  readme?: string;
  /**
   * Regenerate the pair marks (`<!-- pair … -->`, lib/bench/claims.ts) of the prose of the
   * repository in the current folder from the result files: README.md, CHANGELOG.md, docs/,
   * lib/ops/, native/.
   */
  prose?: boolean;
}

/**
 * `cuda-kernels report`: `<out>/README.md` and the charts, from the result files alone, and with
 * `readme` that file's benchmark tables. The hand-written summary of the README it replaces
 * (`<!-- notes -->`…`<!-- /notes -->`) is kept, its tables regenerated. Writes nothing when the
 * results folder holds no result file (a wrong folder, or no bench run yet), or when the summary
 * names a table the result files cannot give.
 */
export async function report(opts: ReportCliOptions, out: (line: string) => void = console.log): Promise<string[]> {
  const resultsDir = path.resolve(opts.results);
  if (readResults(resultsDir).length === 0) {
    throw new Error(
      `no result files (<gpu>.json from \`cuda-kernels bench\`) in ${resultsDir}: nothing to report; ` +
        'pass --results <dir> where bench wrote them (bench --out)',
    );
  }
  if (opts.charts !== false) requirePackages(CHART_PACKAGES, 'drawing the charts', 'pass --no-charts');
  const outDir = path.resolve(opts.out ?? opts.results);
  const files = new Map(readResults(resultsDir).map((g) => [g.slug, g.file]));
  // The summary's tables are regenerated before anything is written, so an error cannot lose it.
  const page = path.join(outDir, 'README.md');
  const oldNotes = fs.existsSync(page) ? notesBlock(fs.readFileSync(page, 'utf8')) : undefined;
  const notes = oldNotes && updatePairMarks(updateReadmeTables(oldNotes, files), files);
  const reportsFile = path.resolve(opts.reports);
  const reports = fs.existsSync(reportsFile)
    ? (JSON.parse(fs.readFileSync(reportsFile, 'utf8')) as ReportsFile)
    : undefined;
  if (!reports) out(`no ${opts.reports}: the comparisons with the reports are left out`);
  const written = await writeReport({
    resultsDir,
    reports,
    outDir,
    reportsLink: reports ? path.relative(outDir, reportsFile).split(path.sep).join('/') : undefined,
    families: familyMeta(out),
    charts: opts.charts,
  });
  if (notes) fs.writeFileSync(page, withNotes(fs.readFileSync(page, 'utf8'), notes));
  if (opts.readme) {
    const text = fs.readFileSync(opts.readme, 'utf8');
    const updated = updatePairMarks(updateReadmeTables(text, files), files);
    if (updated !== text) fs.writeFileSync(opts.readme, updated);
    written.push(path.resolve(opts.readme));
  }
  if (opts.prose) {
    // Every mark first, then the writes: a mark naming a GPU without a result file writes nothing.
    const root = process.cwd();
    const changed = proseFiles(root)
      .map((f) => path.join(root, f))
      .filter((f) => f !== page)
      .map((f) => {
        const text = fs.readFileSync(f, 'utf8');
        return { f, text, updated: updatePairMarks(text, files) };
      })
      .filter((x) => x.updated !== x.text);
    for (const { f, updated } of changed) fs.writeFileSync(f, updated);
    written.push(...changed.map((x) => x.f));
  }
  for (const f of written) out(`wrote ${path.relative(process.cwd(), f)}`);
  return written;
}
