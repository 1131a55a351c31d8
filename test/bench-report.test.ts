// The bench command's parts that need no GPU: ratios, size labels, progress lines, tables, charts,
// the generated report, and the one-line failure without a GPU.
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { families, type BenchRow } from '../lib/bench';
import { axisValue, chartFont, chartSpec, writeChart } from '../lib/bench/chart';
import { pairMarks, proseFiles } from '../lib/bench/claims';
import { notesBlock, README_TABLES, readmeTable, updateReadmeTables, withNotes } from '../lib/bench/readme-tables';
import {
  comparisonMarkdown,
  familyMarkdown,
  pairsMarkdown,
  readResults,
  runsMarkdown,
  writeReport,
  type ReportsFile,
} from '../lib/bench/report';
import { parseResultsFile } from '../lib/bench/results';
import {
  copyReference,
  fmt,
  fmtSpread,
  rateRows,
  referenceFor,
  sizeValue,
  sortSizes,
  splitMethod,
} from '../lib/bench/summary';
import { bench, familyTable } from '../lib/cli/bench';
import { familyMeta } from '../lib/cli/report';
import { createProgress, eta } from '../lib/cli/progress';
import { describeGpu, describeNoGpu } from './helpers/gpu';
import { tempDirs } from './helpers/temp-dirs';

const tmp = tempDirs('ck-report-');

const row = (op: string, method: string, size: string, ms: number, rate: number, unit = 'GFLOP/s'): BenchRow => ({
  op,
  method,
  size,
  ms,
  rate,
  unit,
  reps: 5,
  check: 'ok',
});

/** A pair row of `method` against `versus` whose per-round ratios were median ±0.05 (±0.2 at 2). */
const pairRow = (op: string, method: string, versus: string, size: string, median: number): BenchRow => ({
  ...row(op, method, size, 1, 1),
  protocol: 'pair',
  versus: { method: versus, ms: 1, rate: 1, unit: 'GFLOP/s', reps: 40, check: 'ok' },
  ratio: {
    median,
    min: median >= 2 ? median - 0.2 : median - 0.05,
    max: median >= 2 ? median + 0.2 : median + 0.05,
    rounds: 20,
  },
});

const rows: BenchRow[] = [
  row('copy', 'device', '16MiB', 0.03, 1200, 'GB/s'),
  row('copy', 'device', '1GiB', 0.72, 3000, 'GB/s'),
  row('ata', 'cublas-syrk', '2000x2000', 0.2, 80000),
  row('ata', 'fast', '2000x2000', 0.25, 64000),
  row('ata', 'fast', '4000x4000', 1.4, 90000),
  row('ata', 'cublas-syrk', '4000x4000', 1.3, 100000),
  row('ata', 'fast', '1000000x64', 0.6, 12000),
  row('scan', 'cub-int32', '1048576', 0.06, 1500, 'GB/s'),
  row('scan', 'fast-int32', '1048576', 0.05, 1800, 'GB/s'),
  row('scan', 'fast-float64', '1048576', 0.08, 2100, 'GB/s'),
];

describe('result summaries', () => {
  test('method names split off their dtype suffix, and the reference follows it', () => {
    expect(splitMethod('fast-int32')).toEqual({ base: 'fast', dtype: 'int32' });
    expect(splitMethod('cublas-syrk')).toEqual({ base: 'cublas-syrk' });
    expect(referenceFor({ op: 'scan', reference: 'cub' }, 'fast-uint32')).toBe('cub-uint32');
    expect(referenceFor({ op: 'ata', reference: 'cublas-syrk' }, 'fast')).toBe('cublas-syrk');
    expect(referenceFor({ op: 'x' }, 'fast')).toBeUndefined();
  });

  test('size labels become numbers: product of dims, bytes, or NaN', () => {
    expect(sizeValue('8000x8000')).toBe(64e6);
    expect(sizeValue('4096x4096x4096')).toBe(4096 ** 3);
    expect(sizeValue('268435456')).toBe(268435456);
    expect(sizeValue('16MiB')).toBe(16 * 2 ** 20);
    expect(sizeValue('784-1024-10')).toBeNaN();
    expect(axisValue('8000x8000')).toBe(8000);
    expect(axisValue('1000000x64')).toBe(64e6);
    expect(sortSizes(['4000x4000', '1000000x64', 'layers', '2000x2000', '4000x4000'])).toEqual([
      '2000x2000',
      '4000x4000',
      '1000000x64',
      'layers',
    ]);
  });

  test("ratios of one batch's medians, for the bench's own table, to the reference and the largest copy", () => {
    expect(copyReference(rows)?.size).toBe('1GiB');
    const ata = rateRows(
      families.ata,
      rows.filter((r) => r.op === 'ata'),
      rows,
    );
    const fast2000 = ata.find((r) => r.method === 'fast' && r.size === '2000x2000');
    expect(fast2000?.batchVsReference).toBeCloseTo(0.8);
    expect(fast2000?.batchVsCopy).toBeUndefined();
    expect(ata.find((r) => r.size === '1000000x64')?.batchVsReference).toBeUndefined();
    const scan = rateRows(
      families.scan,
      rows.filter((r) => r.op === 'scan'),
      rows,
    );
    expect(scan.find((r) => r.method === 'fast-int32')?.batchVsReference).toBeCloseTo(1.2);
    expect(scan.find((r) => r.method === 'fast-int32')?.batchVsCopy).toBeCloseTo(0.6);
    expect(scan.find((r) => r.method === 'fast-float64')?.batchVsReference).toBeUndefined();
    // Without a pair row there is no ratio a page may quote.
    expect(scan.map((r) => [r.vsReference, r.vsCopy])).toEqual(scan.map(() => [undefined, undefined]));
  });

  test('the ratios pages quote come from pair rows, either way round, and pair rows are not table rows', () => {
    const all = [
      ...rows,
      pairRow('scan', 'fast-int32', 'cub-int32', '1048576', 1.25),
      pairRow('scan', 'copy', 'fast-int32', '1048576', 2),
    ];
    const scan = rateRows(
      families.scan,
      all.filter((r) => r.op === 'scan'),
      all,
    );
    const fast = scan.find((r) => r.method === 'fast-int32');
    expect(fast?.vsReference).toEqual({ median: 1.25, min: 1.2, max: 1.3, rounds: 20 });
    expect(fast?.vsCopy).toEqual({ median: 0.5, min: 1 / 2.2, max: 1 / 1.8, rounds: 20 });
    expect(scan).toHaveLength(3);
    expect(fmtSpread(fast?.vsReference)).toBe('1.25× (1.20–1.30)');
    expect(fmtSpread({ median: 0.004, min: 0.0039, max: 0.0041, rounds: 3 })).toBe('0.0040× (0.0039–0.0041)');
  });

  test('numbers keep about three significant digits', () => {
    expect([fmt(0.02861), fmt(4.412), fmt(562.61), fmt(4882.3), fmt(undefined)]).toEqual([
      '0.0286',
      '4.41',
      '562.6',
      '4882',
      '—',
    ]);
  });

  test('the families that have a reference and a plan declare them', () => {
    expect(families.ata.reference).toBe('cublas-syrk');
    expect(families.gemm.reference).toBe('cublas');
    expect(families.scan).toMatchObject({ reference: 'cub', bandwidth: true });
    expect(families.copy.bandwidth).toBe(true);
    const ctx = { device: 0, reps: 1, warmup: 0, quick: true, progress: () => {} };
    // Plans need no GPU: --quick is 2 AᵀA shapes, 2 SGEMM sizes, 4 dtypes × 2 scan lengths, 1 copy.
    expect([families.ata, families.gemm, families.scan, families.copy].map((f) => f.plan?.(ctx))).toEqual([2, 2, 8, 1]);
    expect(families.scan.plan?.({ ...ctx, quick: false })).toBe(13);
    expect(families.gemm.plan?.({ ...ctx, sizes: [64, 128, 64] })).toBe(2);
  });

  test('the bench table has the ratio columns and marks the reference', () => {
    const text = familyTable(
      families.scan,
      rows.filter((r) => r.op === 'scan'),
      rows,
    );
    expect(text).toMatch(/vs cub/);
    expect(text).toMatch(/vs copy/);
    expect(text).toMatch(/1\.20×/);
    expect(text).toMatch(/ref/);
    // A family without the optional fields still gets a table.
    expect(familyTable(undefined, [row('peer', 'p2p', '1GiB', 1, 40, 'GB/s')], [])).toMatch(/p2p/);
  });
});

describe("the results page's summary tables", () => {
  // bench/results/README.md: written by `npm run bench:report`, except its hand-written summary
  // (<!-- notes -->), whose bench-table blocks the report regenerates from the result files.
  const root = path.join(__dirname, '..');
  const resultsDir = path.join(root, 'bench', 'results');
  const page = fs.readFileSync(path.join(resultsDir, 'README.md'), 'utf8');
  const notes = notesBlock(page) ?? '';
  const files = new Map(readResults(resultsDir).map((g) => [g.slug, g.file]));

  test('are what the committed result files give (regenerate: npm run bench:report)', () => {
    const ids = [...notes.matchAll(/<!-- bench-table ([\w-]+) -->/g)].map((m) => m[1]);
    expect(ids.sort()).toEqual(Object.keys(README_TABLES).sort());
    // Every block is in the summary, where the report keeps it.
    expect(page.match(/<!-- bench-table /g)).toHaveLength(ids.length);
    expect(updateReadmeTables(page, files)).toBe(page);
  });

  test('a cell edited by hand is found and put back', () => {
    const edited = page.replace(/(<!-- bench-table gemm-h100 -->[\s\S]*?\n\| 4096 \| )[^|]*/, '$1 9.99 (99.99) ');
    expect(edited).not.toBe(page);
    expect(updateReadmeTables(edited, files)).toBe(page);
  });

  test('take their ratio columns from pair rows only', () => {
    // The committed file without its pair rows: the ratio column then has nothing to show.
    const h100 = structuredClone(files.get('nvidia-h100-80gb-hbm3')!);
    h100.rows = h100.rows.filter((r) => r.protocol !== 'pair');
    const spec = README_TABLES['gemm-h100'];
    const plain = readmeTable(spec, h100);
    expect(plain).toMatch(/\| 4096 \| [^\n]* \| — \|\n/);
    const paired = structuredClone(h100);
    paired.rows.push({
      ...paired.rows.find((r) => r.op === 'gemm' && r.method === 'fast' && r.size === '4096x4096x4096')!,
      protocol: 'pair',
      family: 'gemm',
      run: 'R-pair',
      versus: { method: 'cublas', ms: 2.7, rate: 51000, unit: 'GFLOP/s', reps: 40, check: 'ref' },
      ratio: { median: 0.972, min: 0.96, max: 0.981, rounds: 20 },
    });
    const md = readmeTable(spec, paired);
    expect(md).toMatch(/\| 4096 \| [^\n]* \| 0\.97× \(0\.96–0\.98\) \|\n/);
    expect(md).toContain('run `R-pair`');
    // The pair row is not a table row: the time cells stay those of the batch run.
    const line4096 = (t: string) =>
      (t.split('\n').find((l) => l.startsWith('| 4096 |')) ?? '').replace(/\| [^|]* \|$/, '');
    expect(line4096(md)).toBe(line4096(plain));
  });

  test('every pair mark of the prose names a pair and a size its family claims (so `bench --pair` fills it)', () => {
    const marks = proseFiles(root).flatMap((f) =>
      pairMarks(fs.readFileSync(path.join(root, f), 'utf8')).map((m) => ({ ...m, file: f })),
    );
    expect(marks.length).toBeGreaterThan(20);
    const claimed = (m: (typeof marks)[number]) => {
      const family = families[m.family];
      const dtype = /-(int32|uint32|float32|float64)$/.exec(m.method)?.[1];
      const base = (x: string) => (dtype ? x.replace(`-${dtype}`, '') : x);
      return (family?.pairs ?? []).some(
        (c) =>
          c.a === base(m.method) &&
          c.b === base(m.versus) &&
          [
            ...c.sizes.map((n) => String(n)),
            ...c.sizes.map((n) => `${n}x${n}`),
            ...c.sizes.map((n) => `${n}x${n}x${n}`),
            ...(c.shapes ?? []).map(([r, k]) => `${r}x${k}`),
          ].includes(m.size),
      );
    };
    expect(
      marks.filter((m) => !claimed(m)).map((m) => `${m.file}: ${m.family} ${m.method}/${m.versus} ${m.size}`),
    ).toEqual([]);
  });

  test('change when a result changes, and name unknown blocks', () => {
    const h100 = files.get('nvidia-h100-80gb-hbm3')!;
    const changed = structuredClone(h100);
    const row = changed.rows.find((r) => r.op === 'gemm' && r.method === 'cublas' && r.size === '4096x4096x4096')!;
    row.ms *= 1.5;
    row.rate /= 1.5;
    const updated = updateReadmeTables(page, new Map([...files, ['nvidia-h100-80gb-hbm3', changed]]));
    expect(updated).not.toBe(page);
    expect(updated).toContain(`| 4096 |`);
    expect(() => updateReadmeTables('<!-- bench-table nope -->\n<!-- /bench-table -->', files)).toThrow(/nope/);
    expect(() => updateReadmeTables('<!-- bench-table gemm-h100 -->\n<!-- /bench-table -->', new Map())).toThrow(
      /no result file nvidia-h100-80gb-hbm3\.json/,
    );
  });

  // The page links a PNG per chart only where a font for its text exists (the committed page was
  // written on such a machine); without one (the GPU hosts have none) the page differs by design.
  const pageTest = chartFont() ? test : test.skip;
  pageTest(
    `the rest of the page and its charts are what the report writes from the committed files${
      chartFont() ? '' : ' [skipped: no font for the PNG text here, so the page would say so]'
    }`,
    async () => {
      const out = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-page-'));
      try {
        const reports = JSON.parse(fs.readFileSync(path.join(root, 'bench', 'reports.json'), 'utf8')) as ReportsFile;
        const written = await writeReport({
          resultsDir,
          outDir: out,
          reports,
          reportsLink: '../reports.json',
          families: familyMeta(() => {}),
          charts: true,
        });
        expect(withNotes(fs.readFileSync(path.join(out, 'README.md'), 'utf8'), notes)).toBe(page);
        const svgs = written.filter((f) => f.endsWith('.svg'));
        expect(svgs.length).toBeGreaterThan(0);
        for (const f of svgs) {
          const rel = path.relative(out, f);
          expect([rel, fs.readFileSync(f, 'utf8')]).toEqual([rel, fs.readFileSync(path.join(resultsDir, rel), 'utf8')]);
        }
      } finally {
        fs.rmSync(out, { recursive: true, force: true });
      }
    },
  );
});

describe('the hand-written summary of a results page', () => {
  const generated = '# Benchmark results\n\nintro\n\n- [GPU](#gpu)\n\n## GPU\n\n### copy\n';
  const notes = '<!-- notes -->\n## Summary\n\ntext\n<!-- /notes -->';

  test('is found with its markers, and absent where there is none', () => {
    expect(notesBlock(`before\n${notes}\nafter`)).toBe(notes);
    expect(notesBlock(generated)).toBeUndefined();
    expect(() => notesBlock('<!-- notes -->\nno end')).toThrow(/without <!-- \/notes -->/);
  });

  test('goes back before the first GPU section, or at the end of a page without one', () => {
    const page = withNotes(generated, notes);
    expect(page).toBe(`# Benchmark results\n\nintro\n\n- [GPU](#gpu)\n\n${notes}\n\n## GPU\n\n### copy\n`);
    expect(notesBlock(page)).toBe(notes);
    expect(withNotes('# Benchmark results\n\nNo results yet.\n', notes)).toBe(
      `# Benchmark results\n\nNo results yet.\n\n${notes}\n`,
    );
  });
});

describe('progress', () => {
  test('eta assumes the remaining steps take as long as the done ones', () => {
    expect(eta(2, 10, 20)).toBe(80);
    expect(eta(0, 10, 5)).toBeNaN();
  });

  test('without a terminal it prints one plain line per step with the ETA', () => {
    const lines: string[] = [];
    const stream = { isTTY: false, write: (s: string) => lines.push(s) } as unknown as NodeJS.WriteStream;
    let t = 0;
    const p = createProgress(4, stream, () => t);
    p.step('copy 64MiB');
    t = 10_000;
    p.step('ata 2000x2000');
    p.grow(1);
    t = 20_000;
    p.step('gemm 512');
    p.stop();
    expect(lines[0]).toBe('[1/4 0%] copy 64MiB (0 s elapsed)\n');
    expect(lines[1]).toBe('[2/4 25%] ata 2000x2000 (10 s elapsed, ETA 30 s)\n');
    expect(lines[2]).toBe('[3/5 40%] gemm 512 (20 s elapsed, ETA 30 s)\n');
    expect(lines[3]).toMatch(/^5 steps in 20 s/);
  });
});

describe('charts', () => {
  // Made in beforeAll, not while jest collects the tests: with every test filtered out (-t) no hook
  // runs, and a folder made here would be left.
  let dir = '';
  beforeAll(() => {
    dir = tmp();
  });

  test('the spec charts rate against size, squares only, log where it spans decades', () => {
    const spec = chartSpec(
      rows.filter((r) => r.op === 'ata'),
      { title: 'ata' },
    ) as { layer: { encoding: Record<string, { scale?: { type: string } }> }[]; title: { subtitle: string[] } };
    expect(spec.title.subtitle).toEqual(['not charted (not square): 1000000x64']);
    expect(spec.layer[0].encoding.x.scale?.type).toBe('linear');
    // Sizes that are not numbers (the MLP's layer lists) get one bar panel per size instead.
    const bars = chartSpec(
      [row('mlp', 'cublas', '[784,1024,10]x600', 1, 1), row('mlp', 'custom', '[784,1024,10]x600', 2, 0.5)],
      { title: 'mlp' },
    ) as { facet: { field: string }; spec: { mark: { type: string } }; data: { values: unknown[] } };
    expect(bars.facet.field).toBe('size');
    expect(bars.spec.mark.type).toBe('bar');
    expect(bars.data.values).toHaveLength(2);
    expect(
      chartSpec([{ ...row('mlp', 'cublas', '[784,10]x6', 1, 1), check: 'fail' }], { title: 'mlp' }),
    ).toBeUndefined();
    const scan = chartSpec(
      rows.filter((r) => r.op === 'scan'),
      { title: 'scan', copyRate: 3000 },
    ) as { facet: { field: string }; spec: { layer: unknown[] } };
    expect(scan.facet.field).toBe('dtype');
    expect(scan.spec.layer).toHaveLength(3);
  });

  test('writes an SVG with the labels, and a PNG where a font exists', async () => {
    const files = await writeChart(
      dir,
      'ata',
      rows.filter((r) => r.op === 'ata'),
      { title: 'ata on Test GPU' },
    );
    const svg = fs.readFileSync(files.svg!, 'utf8');
    expect(svg).toMatch(/^<svg/);
    expect(svg).toContain('4000x4000');
    expect(svg).toContain('cublas-syrk');
    if (chartFont()) {
      const png = fs.readFileSync(files.png!);
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      expect(png.readUInt32BE(16)).toBeGreaterThan(1000); // width: drawn at twice the SVG's size
    } else {
      expect(files.note).toMatch(/no font/);
    }
  });
});

describe('report', () => {
  const reports: ReportsFile = {
    reports: [
      {
        op: 'ata',
        source: 'ata.txt',
        gpu: 'Old GPU',
        tables: [
          {
            title: 'AᵀA',
            unit: 's',
            rowHeader: 'A',
            columns: ['tiled'],
            rows: [
              { label: '2000²', size: '2000x2000', report: [0.5], ours: ['fast'] },
              { label: '9000²', size: '9000x9000', report: [9], ours: ['fast'] },
            ],
            also: ['cublas-syrk'],
            compare: true,
          },
        ],
      },
      { op: 'apsp', source: 'apsp.txt', gpu: 'Older GPU', tables: [] },
    ],
  };

  test('a report table gets our numbers beside it, converted to ms', () => {
    const md = comparisonMarkdown(
      reports.reports[0].tables[0],
      'Old GPU',
      rows.filter((r) => r.op === 'ata'),
      'Test',
    );
    expect(md).toContain("The report's GPU: Old GPU");
    // Times side by side, no ratio: the report's GPU is not ours, and no pair protocol joins them.
    expect(md).toContain('| 2000² | 0.5 | 0.250 (fast) | 0.200 |');
    expect(md).toContain('| 9000² | 9 | not measured yet (fast) | — |');
    expect(md).not.toMatch(/×/);
  });

  test("the report names the runs a family's rows come from, and the rows that predate stamps", () => {
    const stamped = (run: string, date: string): BenchRow => ({
      op: 'gemm',
      method: 'fast',
      size: '8x8x8',
      ms: 1,
      rate: 1,
      unit: 'GFLOP/s',
      reps: 3,
      check: 'ok',
      run,
      commit: run.split('-')[1],
      date,
      gpuState: { start: { smMHz: 345, memMHz: 2619, powerW: 70, tempC: 30 } },
    });
    const old: BenchRow = { ...stamped('x', ''), run: undefined, commit: undefined, date: undefined };
    const md = runsMarkdown([
      stamped('R2-bbb', '2026-11-24'),
      old,
      stamped('R1-aaa', '2026-11-23'),
      stamped('R2-bbb', '2026-11-24'),
    ]);
    expect(md).toBe(
      'Measured in: run `R1-aaa` (commit `aaa`, SM 345 MHz, 70 W, 30 °C): 1 row; ' +
        'run `R2-bbb` (commit `bbb`, SM 345 MHz, 70 W, 30 °C): 2 rows; 1 row from before runs were stamped (run and commit not recorded).',
    );
  });

  test('a family table has a row per size and dtype and a column per method', () => {
    const md = familyMarkdown(
      families.scan,
      rows.filter((r) => r.op === 'scan'),
      rows,
    );
    expect(md.split('\n')[0]).toBe('| dtype | size | cub | fast |');
    expect(md).toContain('| int32 | 1048576 | 0.0600 ms<br>1500 GB/s<br>reference |');
    // No pair rows: no ratio in any cell.
    expect(md).not.toMatch(/×/);
    const withPair = [...rows, pairRow('scan', 'fast-int32', 'cub-int32', '1048576', 1.25)];
    const paired = familyMarkdown(
      families.scan,
      withPair.filter((r) => r.op === 'scan'),
      withPair,
    );
    expect(paired).toContain(
      '| int32 | 1048576 | 0.0600 ms<br>1500 GB/s<br>reference | 0.0500 ms<br>1800 GB/s<br>1.25× (1.20–1.30) ref |',
    );
    expect(pairsMarkdown(withPair)).toBe(
      [
        '| pair | size | rate ratio (min–max) | rounds | ms | clocks and power |',
        '| --- | --- | --- | --- | --- | --- |',
        '| fast-int32 / cub-int32 | 1048576 | 1.25× (1.20–1.30) | 20 | 1.00 / 1.00 | clocks not sampled / clocks not sampled |',
      ].join('\n'),
    );
    // A pair measured with --energy-ms gets the energy column; one without it in the same family says so.
    const energy = (mj: number) => ({
      joules: { median: mj / 1e3, min: mj / 1e3, max: mj / 1e3 },
      runs: [9, 9],
      phaseMs: [2e3, 2e3],
    });
    const measured = {
      ...pairRow('scan', 'fast-int32', 'cub-int32', '2097152', 1.1),
      energy: energy(8),
      energyRatio: 0.8,
    };
    // b ran 10% longer per run back to back than a: the sustained rate ratio is 1.10×.
    measured.versus = { ...measured.versus!, energy: { ...energy(10), phaseMs: [2.2e3, 2.2e3] } };
    const lines = pairsMarkdown([...withPair, measured]).split('\n');
    expect(lines[0]).toBe(
      '| pair | size | rate ratio (min–max) | rounds | ms | clocks and power | energy per run (NVML) |',
    );
    expect(lines).toContain(
      '| fast-int32 / cub-int32 | 2097152 | 1.10× (1.05–1.15) | 20 | 1.00 / 1.00 | clocks not sampled / clocks not sampled | ' +
        '8.00 mJ/run (8.00 mJ–8.00 mJ) / 10.00 mJ/run (10.00 mJ–10.00 mJ); ratio 0.800; rate ratio back to back 1.10× |',
    );
    expect(lines.find((l) => l.includes('| 1048576 |'))).toMatch(/\| not measured \|$/);
    // A row of a file written before a counter that stood still gave no energy: 0 J and the ratio
    // 0/0, which JSON stores as null. The page says it was not measured instead of throwing.
    const stood = parseResultsFile(
      JSON.stringify({
        device: { name: 'NVIDIA H100 80GB HBM3' },
        rows: [{ ...measured, energy: energy(0), versus: { ...measured.versus, energy: energy(0) }, energyRatio: NaN }],
      }),
      'stood.json',
    ).rows;
    expect(stood[0].energyRatio).toBeNull();
    expect(pairsMarkdown(stood).split('\n')[2]).toMatch(/\| not measured \|$/);
  });

  test('writes README.md and charts from the JSON alone; families without rows say so', async () => {
    const dir = tmp();
    const file = { device: { name: 'Test GPU 1', smCount: 2 }, createdAt: 'then', commit: 'abc', rows };
    fs.writeFileSync(path.join(dir, 'test-gpu-1.json'), JSON.stringify(file));
    const written = await writeReport({ resultsDir: dir, reports, families, charts: true });
    const readme = fs.readFileSync(path.join(dir, 'README.md'), 'utf8');
    expect(written).toContain(path.join(dir, 'test-gpu-1', 'ata.svg'));
    expect(readme).toContain('## Test GPU 1');
    expect(readme).toContain('![ata on Test GPU 1](test-gpu-1/ata.svg)');
    expect(readme).toMatch(/### gemm[^\n]*\n\nNot measured yet on the Test GPU 1\./);
    expect(readme).toMatch(/### apsp[^\n]*\n\nNot measured yet/);
    expect(readme).toContain('Source: apsp.txt.');
    expect(readme).toContain("The report's GPU: Old GPU");
  });

  test('the committed reports file names a GPU and a source for every table', () => {
    const committed = JSON.parse(
      fs.readFileSync(path.join(__dirname, '..', 'bench', 'reports.json'), 'utf8'),
    ) as ReportsFile;
    expect(committed.reports.map((r) => r.op).sort()).toEqual(['apsp', 'ata', 'gemm', 'mlp', 'stencil']);
    for (const r of committed.reports) {
      expect(r.gpu).toBeTruthy();
      expect(r.source).toBeTruthy();
      for (const t of r.tables) for (const x of t.rows) expect(x.report).toHaveLength(t.columns.length);
    }
  });
});

describeNoGpu('bench without a GPU', () => {
  const root = path.join(__dirname, '..');
  const main = path.join(root, 'dist', 'cli', 'main.js');

  beforeAll(() => {
    // The command as users run it: the compiled CLI (CI builds it before the tests).
    if (!fs.existsSync(main)) execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: root });
  }, 120000);

  test('says so on one line and exits non-zero, without a stack trace', () => {
    const r = spawnSync(process.execPath, [main, 'bench', 'ata', '--quick'], { cwd: root, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^cuda-kernels: cannot benchmark without a GPU: /);
    expect(r.stderr).not.toMatch(/\bat .*\.js:\d+/);
  });

  test('an unknown family is one line too', () => {
    const r = spawnSync(process.execPath, [main, 'bench', 'nosuch'], { cwd: root, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe(
      `cuda-kernels: RangeError: unknown benchmark family "nosuch"; known: ${Object.keys(families).join(', ')}`,
    );
  });
});

describeGpu('bench on the GPU', () => {
  test.each(Object.keys(families))('the %s family calls progress() as often as its plan says', (name) => {
    const family = families[name];
    const items: string[] = [];
    const ctx = {
      device: 0,
      reps: 2,
      warmup: 1,
      quick: true,
      // Small sizes for the families whose size meaning is known here; the others' --quick plan.
      sizes: ({ copy: [4], scan: [4099], ata: [256], gemm: [256] } as Record<string, number[]>)[name],
      progress: (item: string) => items.push(item),
    };
    const planned = family.plan?.(ctx);
    family.run(ctx);
    if (planned !== undefined) expect(items).toHaveLength(planned);
  });

  test('writes the merged JSON, an SVG and a PNG per family, and prints the tables', async () => {
    const out = tmp();
    const lines: string[] = [];
    const result = await bench(['gemm'], { sizes: [128, 256], reps: 2, warmup: 1, quick: true, out, device: 0 }, (l) =>
      lines.push(l),
    );
    expect(result.filter((r) => r.op === 'gemm').length).toBeGreaterThanOrEqual(8);
    const [json] = fs.readdirSync(out).filter((f) => f.endsWith('.json'));
    const slug = json.replace(/\.json$/, '');
    for (const f of ['gemm.svg', 'copy.svg']) expect(fs.existsSync(path.join(out, slug, f))).toBe(true);
    if (chartFont()) expect(fs.existsSync(path.join(out, slug, 'gemm.png'))).toBe(true);
    expect(lines.join('\n')).toMatch(/vs cublas/);
  });
});
