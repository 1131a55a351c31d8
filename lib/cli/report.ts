import * as fs from 'node:fs';
import * as path from 'node:path';

import { updateReadmeTables } from '../bench/readme-tables';
import { readResults, writeReport, type ReportsFile } from '../bench/report';
import type { FamilyMeta } from '../bench/summary';

/** The registry's families as metadata; loading them loads the addon, which needs no GPU. */
function familyMeta(): Record<string, FamilyMeta> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { families } = require('../bench/index') as typeof import('../bench/index');
  return Object.fromEntries(
    // A plug-in that writes another family's rows (apsp-multi writes op apsp) has no section of its own.
    Object.entries(families)
      .filter(([k, f]) => f.op === k)
      .map(([k, f]) => [k, { op: f.op, description: f.description, reference: f.reference, bandwidth: f.bandwidth }]),
  );
}

/**
 * `cuda-kernels report`: bench/results/README.md and the charts, from the committed JSON; with
 * `readme`, also that file's `<!-- bench-table ID -->` blocks.
 */
export async function report(
  opts: { results: string; reports: string; charts?: boolean; readme?: string },
  out: (line: string) => void = console.log,
): Promise<string[]> {
  const resultsDir = path.resolve(opts.results);
  const reportsFile = path.resolve(opts.reports);
  const reports = fs.existsSync(reportsFile)
    ? (JSON.parse(fs.readFileSync(reportsFile, 'utf8')) as ReportsFile)
    : undefined;
  if (!reports) out(`no ${opts.reports}: the comparisons with the reports are left out`);
  const written = await writeReport({
    resultsDir,
    reports,
    reportsLink: reports ? path.relative(resultsDir, reportsFile).split(path.sep).join('/') : undefined,
    families: familyMeta(),
    charts: opts.charts,
  });
  if (opts.readme) {
    const files = new Map(readResults(resultsDir).map((g) => [g.slug, g.file]));
    const text = fs.readFileSync(opts.readme, 'utf8');
    const updated = updateReadmeTables(text, files);
    if (updated !== text) fs.writeFileSync(opts.readme, updated);
    written.push(path.resolve(opts.readme));
  }
  for (const f of written) out(`wrote ${path.relative(process.cwd(), f)}`);
  return written;
}
