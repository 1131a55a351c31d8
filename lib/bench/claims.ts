// The ratios the repository's prose quotes, tied to the result files. A ratio in the README, docs/,
// bench/results/README.md, CHANGELOG.md, lib/ops/ or a kernel file's comments must come from a pair
// row (the pair protocol, harness.ts's benchPair), written as a mark that `cuda-kernels report
// --prose` fills from the result files:
//
//   <!-- pair nvidia-h100-80gb-hbm3 ata fast/cublas-syrk 8000x8000 -->1.00× (0.98–1.02)<!-- /pair -->
//
// (GPU slug, family, method/versus, size; a sixth word `median` leaves out the range). A ratio
// written any other way fails test/bench-claims.test.ts, unless it is listed in NOT_MEASURED (a
// bound, not a measurement). Generated pages (the results page's tables, docs/study.md) take their
// ratios from pair rows by construction and are checked against their generators.
import * as fs from 'node:fs';
import * as path from 'node:path';

import type { BenchFile } from './results';
import { fmtSpread, pairRatioOf } from './summary';

/** What a mark says where its pair has not been measured (yet) on that GPU. */
export const NOT_MEASURED_TEXT = 'pending';

// A mark's text is short: no newline, no `<`. A mark inside inline code is an example, not a mark.
const CODE_OR_MARK =
  /`[^`\n]*`|<!-- pair ([\w.-]+) ([\w.-]+) ([\w.-]+)\/([\w.-]+) ([\w.[\],-]+)( median)? -->([^<\n]*)<!-- \/pair -->/g;

/** One pair mark of a text. */
export interface PairMark {
  gpu: string;
  family: string;
  method: string;
  versus: string;
  size: string;
  medianOnly: boolean;
  /** The text between the markers. */
  text: string;
  /** Where the whole mark starts and ends in the text. */
  start: number;
  end: number;
}

/** The pair marks of a text, in order. */
export function pairMarks(text: string): PairMark[] {
  return [...text.matchAll(CODE_OR_MARK)]
    .filter((m) => !m[0].startsWith('`'))
    .map((m) => ({
      gpu: m[1],
      family: m[2],
      method: m[3],
      versus: m[4],
      size: m[5],
      medianOnly: !!m[6],
      text: m[7],
      start: m.index,
      end: m.index + m[0].length,
    }));
}

/** What a mark should say, from the result files by GPU slug (the op is the family's, or `ops[family]`). */
export function markText(
  mark: Omit<PairMark, 'text' | 'start' | 'end'>,
  files: ReadonlyMap<string, BenchFile>,
  op: string,
): string {
  const file = files.get(mark.gpu);
  if (!file) throw new RangeError(`pair mark for ${mark.gpu}: no result file ${mark.gpu}.json`);
  const ratio = pairRatioOf(file.rows, {
    op,
    method: mark.method,
    versus: mark.versus,
    size: mark.size,
    family: mark.family,
  });
  if (!ratio) return NOT_MEASURED_TEXT;
  return mark.medianOnly ? fmtSpread(ratio).replace(/ \(.*\)$/, '') : fmtSpread(ratio);
}

/** The op a family's rows carry, where it is not the family's name. */
const OP_OF: Record<string, string> = { 'apsp-multi': 'apsp', 'apsp-dist': 'apsp', 'mlp-dist': 'mlp' };

/** `text` with every pair mark's text regenerated from `files` (result files by GPU slug). */
export function updatePairMarks(
  text: string,
  files: ReadonlyMap<string, BenchFile>,
  opOf: (family: string) => string = (f) => OP_OF[f] ?? f,
): string {
  return text.replace(
    CODE_OR_MARK,
    (whole, gpu: string, family: string, method: string, versus: string, size: string, median?: string) => {
      if (whole.startsWith('`')) return whole;
      const head = whole.slice(0, whole.indexOf('-->') + 3);
      const body = markText({ gpu, family, method, versus, size, medianOnly: !!median }, files, opOf(family));
      return `${head}${body}<!-- /pair -->`;
    },
  );
}

/**
 * A ratio as prose writes it: a number (or a range of two) right before `×`, not followed by a
 * letter, digit or parenthesis, so that `128×128`, `3×3`, `128×n`, `3×(C + 2)` and `4 × H200` are
 * dimensions and counts, not ratios.
 */
const RATIO = /(?<![\w.×])\d+(?:\.\d+)?(?:\s*[–-]\s*\d+(?:\.\d+)?)?×(?![\w(])/g;

/** A ratio that is not a measurement: a bound or an error's size, with why it stands. */
export interface NotMeasured {
  file: string;
  /** Text around the ratio, as the file has it (one line). */
  context: string;
  why: string;
}

/** The ratios of the prose that are not measured (so no pair row can give them). */
export const NOT_MEASURED: readonly NotMeasured[] = [
  {
    file: 'native/scan/2_reduce_then_scan.cu',
    context: 'which caps it at 0.67× a copy',
    why: 'a bound from the traffic (2·n over 3·n elements), not a timing',
  },
  {
    file: 'lib/cpu/stencil.ts',
    context: 'hot loops run ~60× slower with Math calls inside jest',
    why: 'why the CPU reference avoids Math.abs, observed in the test runner, not a claim about the GPU',
  },
];

/** A ratio written in a scoped file outside a pair mark, and not listed as not measured. */
export interface UnmarkedRatio {
  file: string;
  line: number;
  ratio: string;
  text: string;
}

/** The parts of a text that are prose: all of it for markdown, the comments of source files. */
function proseOf(file: string, text: string): string {
  if (file.endsWith('.md')) {
    // The results page's generated part and its generated tables: pair-only by their generators.
    if (file === 'bench/results/README.md') {
      const start = text.indexOf('<!-- notes -->');
      const end = text.indexOf('<!-- /notes -->');
      const notes =
        start >= 0 && end > start ? text.slice(0, start).replace(/[^\n]/g, ' ') + text.slice(start, end) : '';
      return notes.replace(/<!-- bench-table [\s\S]*?<!-- \/bench-table -->/g, (m) => m.replace(/[^\n]/g, ' '));
    }
    return text;
  }
  // Source: keep comments, blank the code (line by line, so positions stay).
  return text
    .split('\n')
    .map((l) => {
      const at = l.indexOf('//');
      const star = /^\s*\*/.test(l) || /^\s*\/\*/.test(l);
      if (star) return l;
      return at >= 0 ? ' '.repeat(at) + l.slice(at) : '';
    })
    .join('\n');
}

/** Ratios in `text` (a file's contents) outside pair marks and not in NOT_MEASURED. */
export function unmarkedRatios(
  file: string,
  text: string,
  notMeasured: readonly NotMeasured[] = NOT_MEASURED,
): UnmarkedRatio[] {
  const prose = proseOf(file, text).replace(CODE_OR_MARK, (m) => (m.startsWith('`') ? m : m.replace(/[^\n]/g, ' ')));
  const lines = text.split('\n');
  const out: UnmarkedRatio[] = [];
  for (const m of prose.matchAll(RATIO)) {
    const line = prose.slice(0, m.index).split('\n').length;
    const whole = lines[line - 1];
    if (notMeasured.some((n) => n.file === file && whole.includes(n.context) && n.context.includes(m[0]))) continue;
    out.push({ file, line, ratio: m[0], text: whole.trim() });
  }
  return out;
}

/** The files whose prose may quote ratios (relative to the repository root), in a stable order. */
export function proseFiles(root: string): string[] {
  const list = (dir: string, keep: (f: string) => boolean): string[] => {
    const full = path.join(root, dir);
    if (!fs.existsSync(full)) return [];
    return fs
      .readdirSync(full, { withFileTypes: true })
      .flatMap((e) =>
        e.isDirectory() ? list(path.join(dir, e.name), keep) : keep(e.name) ? [path.join(dir, e.name)] : [],
      );
  };
  return [
    'README.md',
    'CHANGELOG.md',
    'bench/results/README.md',
    // docs/study.md is generated from the results by scripts/study.js (pair rows only), checked by
    // test/study.test.ts; docs/api/ is TypeDoc's output (npm run docs), copies of these files.
    ...list('docs', (f) => f.endsWith('.md') && f !== 'study.md').filter(
      (f) => !f.startsWith(path.join('docs', 'api') + path.sep),
    ),
    ...list('native', (f) => /\.(cu|cuh|h|cc)$/.test(f)),
    ...list('lib/ops', (f) => f.endsWith('.ts')),
    ...list('lib/cpu', (f) => f.endsWith('.ts')),
  ]
    .map((f) => f.split(path.sep).join('/'))
    .sort();
}
