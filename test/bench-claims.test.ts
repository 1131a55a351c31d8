// Every ratio the repository's prose quotes comes from a pair row of a committed result file
// (lib/bench/claims.ts): written as a `<!-- pair … -->` mark that `npm run bench:report` fills, and
// a ratio written by hand fails here. Needs no native binary.
import * as fs from 'node:fs';
import * as path from 'node:path';

import {
  NOT_MEASURED,
  NOT_MEASURED_TEXT,
  pairMarks,
  proseFiles,
  unmarkedRatios,
  updatePairMarks,
} from '../lib/bench/claims';
import { parseResultsFile, type BenchFile, type BenchRow } from '../lib/bench/results';

const root = path.join(__dirname, '..');
const resultsDir = path.join(root, 'bench', 'results');
const committed = new Map(
  fs
    .readdirSync(resultsDir)
    .filter((f) => f.endsWith('.json'))
    .map((f): [string, BenchFile] => {
      const file = path.join(resultsDir, f);
      return [f.replace(/\.json$/, ''), parseResultsFile(fs.readFileSync(file, 'utf8'), file)];
    }),
);
const files = proseFiles(root);

describe('the prose quotes no ratio without a pair row', () => {
  test('the files checked include the guides, the changelog, the results page and the kernels', () => {
    for (const f of [
      'README.md',
      'CHANGELOG.md',
      'bench/results/README.md',
      'docs/api.md',
      'native/ata/3_tensor_core.cu',
      'lib/ops/gemm.ts',
    ])
      expect(files).toContain(f);
    expect(files).not.toContain('docs/study.md');
  });

  test.each(files)(
    '%s: no ratio outside a pair mark (write it as <!-- pair GPU FAMILY A/B SIZE -->…<!-- /pair -->)',
    (f) => {
      const found = unmarkedRatios(f, fs.readFileSync(path.join(root, f), 'utf8')).map(
        (u) => `${f}:${u.line}: ${u.ratio} in "${u.text}"`,
      );
      expect(found).toEqual([]);
    },
  );

  test.each(files)('%s: every pair mark says what the result files give (regenerate: npm run bench:report)', (f) => {
    const text = fs.readFileSync(path.join(root, f), 'utf8');
    expect(updatePairMarks(text, committed)).toBe(text);
  });

  test('each ratio listed as not measured is still in its file (else drop it from the list)', () => {
    for (const n of NOT_MEASURED)
      expect([n.file, fs.readFileSync(path.join(root, n.file), 'utf8').includes(n.context)]).toEqual([n.file, true]);
  });
});

describe('pair marks and the ratio finder', () => {
  const pair = (method: string, versus: string, size: string, median: number, min: number, max: number): BenchRow => ({
    op: 'ata',
    family: 'ata',
    method,
    size,
    ms: 1,
    rate: 1,
    unit: 'GFLOP/s',
    reps: 40,
    check: 'ok',
    protocol: 'pair',
    versus: { method: versus, ms: 1, rate: 1, unit: 'GFLOP/s', reps: 40, check: 'ref' },
    ratio: { median, min, max, rounds: 20 },
  });
  const file = (rows: BenchRow[]): BenchFile => ({ device: { name: 'Test GPU' }, createdAt: '', commit: '', rows });
  const mark = (size: string, extra = '') =>
    `<!-- pair test-gpu ata fast/cublas-syrk ${size}${extra} -->x<!-- /pair -->`;

  test('a mark takes the median and range of its pair row, or the reverse row inverted', () => {
    const files = new Map([
      [
        'test-gpu',
        file([
          pair('fast', 'cublas-syrk', '8000x8000', 1.004, 0.98, 1.02),
          pair('cublas-syrk', 'fast', '16000x16000', 0.8, 0.5, 1),
        ]),
      ],
    ]);
    expect(updatePairMarks(`at 8000²: ${mark('8000x8000')}.`, files)).toBe(
      `at 8000²: <!-- pair test-gpu ata fast/cublas-syrk 8000x8000 -->1.00× (0.98–1.02)<!-- /pair -->.`,
    );
    expect(updatePairMarks(mark('16000x16000', ' median'), files)).toBe(
      '<!-- pair test-gpu ata fast/cublas-syrk 16000x16000 median -->1.25×<!-- /pair -->',
    );
    expect(updatePairMarks(mark('4000x4000'), files)).toContain(`-->${NOT_MEASURED_TEXT}<!--`);
    expect(() => updatePairMarks('<!-- pair no-gpu ata a/b 1 -->x<!-- /pair -->', files)).toThrow(
      /no result file no-gpu\.json/,
    );
    // An example in inline code is not a mark, and a mark's text never spans lines or other marks.
    const example = '`<!-- pair GPU FAMILY a/b SIZE -->…<!-- /pair -->`';
    expect([pairMarks(example), updatePairMarks(example, files)]).toEqual([[], example]);
    expect(pairMarks('<!-- pair g f a/b 1 -->\n<!-- /pair -->')).toEqual([]);
    expect(pairMarks(mark('8000x8000'))).toMatchObject([
      { gpu: 'test-gpu', method: 'fast', versus: 'cublas-syrk', size: '8000x8000' },
    ]);
  });

  test('a table row of the same methods is not a pair: the mark stays pending', () => {
    const table: BenchRow = {
      ...pair('fast', 'cublas-syrk', '8000x8000', 1.2, 1.2, 1.2),
      protocol: 'balanced',
      versus: undefined,
    };
    expect(updatePairMarks(mark('8000x8000'), new Map([['test-gpu', file([table])]]))).toContain(NOT_MEASURED_TEXT);
  });

  test('finds ratios written by hand, not dimensions, counts or ratios inside marks', () => {
    const text = [
      'fast runs at 1.17× DSYRK and 0.94–1.02× a copy, 2x slower', // two ratios ("2x" is not one of ours)
      '128×128 tiles, a 3×3 stencil, 128×n panels, 3×(C + 2) windows, 4 × H200',
      `level: ${mark('8000x8000')}`,
    ].join('\n');
    expect(unmarkedRatios('docs/x.md', text).map((u) => [u.line, u.ratio])).toEqual([
      [1, '1.17×'],
      [1, '0.94–1.02×'],
    ]);
  });

  test('in sources only comments count, and a listed bound is not a measurement', () => {
    const src = 'const s = `${x}×`; // 2.5× faster\n * 1.5× in a doc comment\nconst y = 3; /* code */';
    expect(unmarkedRatios('native/x.cu', src).map((u) => u.ratio)).toEqual(['2.5×', '1.5×']);
    const bound = '// which caps it at 0.67× a copy.';
    expect(unmarkedRatios('native/scan/2_reduce_then_scan.cu', bound)).toEqual([]);
    expect(unmarkedRatios('native/other.cu', bound)).toHaveLength(1);
  });

  test('on the results page only the hand-written summary counts, outside its generated tables', () => {
    const page = [
      '# Benchmark results',
      'intro 9.9×',
      '<!-- notes -->',
      'summary 1.5×',
      '<!-- bench-table x -->',
      '| 0.83× |',
      '<!-- /bench-table -->',
      '<!-- /notes -->',
      'generated 2.2×',
    ].join('\n');
    expect(unmarkedRatios('bench/results/README.md', page).map((u) => [u.line, u.ratio])).toEqual([[4, '1.5×']]);
  });
});
