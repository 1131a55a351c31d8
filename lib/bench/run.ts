// One bench run's families, run one after another: each family's rows stamped and written to the
// results file as soon as it finishes (to a fallback file when that cannot be written), the GPU's
// state read around each, its clocks and power sampled throughout.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { Progress } from '../cli/progress';
import { describeGpuDuring, type GpuSampler, readGpuState } from './gpu-state';
import type { BenchContext, BenchFamily } from './harness';
import type { BenchJob } from './options';
import { gpuSlug, writeResults, type BenchRow, type RunStamp } from './results';

/** Where a family's rows go: the results file, or, once that cannot be written, a fallback folder. */
export interface RowSink {
  /** Merges the rows into the results (or fallback) file; says so on `out` when it falls back. */
  write(rows: readonly BenchRow[]): void;
  /** The file every row of the run so far is in. */
  readonly file: string;
  /** Why the results file could not be written, if it could not. */
  readonly failure?: string;
}

/**
 * Writes each family's rows as it finishes, so that a family failing late (out of memory at a large
 * size) or a write failing keeps what was measured before. When the results file cannot be written
 * (a full disk, a file another process left malformed), the run's rows go to
 * `<tmpdir>/cuda-kernels-bench-<run>-<6 random characters>/<gpu>.json` instead (a new folder, named
 * from the run id's first 80 characters), and the run ends with an error naming it.
 */
export function rowSink(
  dir: string,
  device: Record<string, unknown> & { name: string },
  stamp: RunStamp,
  out: (line: string) => void,
): RowSink {
  const all: BenchRow[] = [];
  // Made when first needed, named for the run and unique (mkdtemp): the run id holds the commit label,
  // which CK_COMMIT may set to any text, so the name keeps only file-name characters of its first 80
  // (a '/' would nest it, a space would split the message that names it, a long one would not fit),
  // and two runs started in the same second (devices 0 and 1 of one model) never share it. The
  // temporary directory itself is made first if it is missing (as the recursive mkdir of writeResults
  // did for the earlier fixed name).
  let fallbackDir: string | undefined;
  const fallback = () => {
    if (fallbackDir === undefined) {
      fs.mkdirSync(os.tmpdir(), { recursive: true });
      const name = `cuda-kernels-bench-${stamp.run.slice(0, 80).replace(/[^\w.-]+/g, '_')}-`;
      fallbackDir = fs.mkdtempSync(path.join(os.tmpdir(), name));
    }
    return fallbackDir;
  };
  const sink = {
    file: path.join(dir, `${gpuSlug(device.name)}.json`),
    failure: undefined as string | undefined,
    write(rows: readonly BenchRow[]) {
      all.push(...rows);
      if (sink.failure === undefined) {
        try {
          sink.file = writeResults(dir, device, stamp.commit, rows);
          return;
        } catch (e) {
          sink.failure = `${(e as Error).message}`;
          // The reason first: it is shown even if the fallback cannot be made either.
          out(`\ncould not write the results (${sink.failure})`);
          out(`this run's rows go to ${fallback()}`);
        }
      }
      sink.file = writeResults(fallback(), device, stamp.commit, all);
    },
  };
  return sink;
}

/**
 * Runs the jobs with a progress display; returns the rows per family in run order, each row
 * stamped with its family, the run and the GPU's state before and after its family's part, and
 * written to `sink` as soon as its family has finished.
 */
export function runJobs(
  jobs: readonly BenchJob[],
  progress: Progress,
  stamp: RunStamp,
  pciBus: number,
  sink: RowSink,
  sampler: GpuSampler | undefined,
  out: (line: string) => void,
  energy?: BenchContext['energy'],
): [BenchFamily, BenchRow[]][] {
  const results: [BenchFamily, BenchRow[]][] = [];
  for (const { name, family, ctx: base } of jobs) {
    const planned = family.plan ? family.plan({ ...base, progress: () => {} }) : undefined;
    let seen = 0;
    const ctx: BenchContext = {
      ...base,
      ...(sampler ? { sampler } : {}),
      ...(energy && base.pair ? { energy } : {}),
      progress: (item) => {
        seen++;
        // A family without a plan, or one that steps more often than planned, grows the total.
        if (planned === undefined || seen > planned) progress.grow(1);
        progress.step(base.pair ? `${item} (pair ${base.pair.a}/${base.pair.b})` : item);
      },
    };
    const start = readGpuState(pciBus);
    let rows: BenchRow[];
    try {
      rows = family.run(ctx);
    } catch (e) {
      const done = results.reduce((n, [, r]) => n + r.length, 0);
      out(`\n${name} failed; the ${done} row(s) measured before it are in ${sink.file}`);
      throw e;
    }
    const gpuState = { start, end: readGpuState(pciBus) };
    const stamped = rows.map((r) => ({ ...r, family: name, ...stamp, gpuState }));
    sink.write(stamped);
    results.push([family, stamped]);
    if (planned !== undefined && seen < planned) progress.grow(seen - planned);
  }
  return results;
}

/** The clocks line of a run: what the sampler saw over every row, or why nothing. */
export function clocksLine(rows: readonly BenchRow[], sampler: GpuSampler | undefined): string {
  if (!sampler) return 'clocks and power: not sampled';
  if (sampler.status !== 'sampling') return 'clocks and power: not sampled (nvidia-smi gave no readings)';
  const all = sampler.samples();
  const sampled = rows.filter((r) => r.gpuDuring).length;
  const overall = { smMHz: all.map((s) => s.smMHz), powerW: all.map((s) => s.powerW) };
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  return (
    `clocks and power over the run (${all.length} readings): SM ${Math.round(med(overall.smMHz))} MHz median, ` +
    `${Math.round(Math.min(...overall.smMHz))} min; ${Math.round(med(overall.powerW))} W median; ` +
    `${sampled} of ${rows.length} rows carry their own (e.g. ${describeGpuDuring(rows.find((r) => r.gpuDuring)?.gpuDuring)})`
  );
}
