// The summary tables of bench/results/README.md, generated from the committed result files so that
// they cannot drift from them. The page is written by `npx cuda-kernels report`, except for its
// hand-written summary between `<!-- notes -->` and `<!-- /notes -->`, which report keeps. Each
// table in the summary sits between `<!-- bench-table ID -->` and `<!-- /bench-table -->`; report
// rewrites every such block, and a test fails when the page's blocks differ from what the result
// files give. Ratio columns come from pair rows only (the pair protocol): `—` where none was measured.
import { rowFamily, type BenchFile, type BenchRow } from './results';
import { runsMarkdown } from './report';
import { fmt, fmtSpread, pairRatioOf, sortSizes } from './summary';

/** A column of times: `ms (rate)` of one method, the rate scaled (GFLOP/s → TFLOP/s, say). */
interface MethodColumn {
  header: string;
  method: string;
  /** Rate multiplier for the cell (default 1). */
  scale?: number;
  /** The headline method: bold. */
  bold?: boolean;
  /** Show the rate alone (bandwidth tables), not `ms (rate)`. */
  rateOnly?: boolean;
}

/** A column of ratios: rate of `num` over rate of `den` (or of a 1 GiB copy), from the pair row of the two. */
interface RatioColumn {
  header: string;
  num: string;
  den: string | 'copy';
}

/** One summary table. Methods named with `{dtype}` are looked up per dtype row. */
export interface ReadmeTable {
  /** The result file (GPU slug) the rows come from. */
  gpu: string;
  op: string;
  /** The families whose rows it shows, the first preferred where two measured the same (default: op). */
  families?: readonly string[];
  /** Header of the size column, and how a size label is shown. */
  sizeHeader: string;
  sizeLabel?: (size: string) => string;
  /** Dtype rows (methods carry `-<dtype>` suffixes), or none. */
  dtypes?: readonly string[];
  columns: readonly (MethodColumn | RatioColumn)[];
  /** Sizes to leave out. */
  skipSizes?: readonly string[];
}

const isRatio = (c: MethodColumn | RatioColumn): c is RatioColumn => 'num' in c;
const pow2 = (size: string) => {
  const n = Number(size);
  return Number.isInteger(Math.log2(n)) ? `2^${Math.log2(n)}` : size;
};
const square = (size: string) => `${size.split('x')[0]}²`;
const mine = (m: string, dtype: string | undefined) => (dtype ? m.replace('{dtype}', dtype) : m);

/**
 * The summary tables, by block id. A ratio column is a pair the family's claims measure (its
 * `pairs`): PyTorch's epoch and the multi-GPU rows have none, so they get no ratio column.
 */
export const README_TABLES: Record<string, ReadmeTable> = {
  'ata-h100': {
    gpu: 'nvidia-h100-80gb-hbm3',
    op: 'ata',
    sizeHeader: 'A',
    sizeLabel: (s) => s.replace('x', '×'),
    columns: [
      { header: 'cublas (DGEMM)', method: 'cublas', scale: 1e-3 },
      { header: 'cublas-syrk', method: 'cublas-syrk', scale: 1e-3 },
      { header: 'basic', method: 'basic', scale: 1e-3 },
      { header: 'tiled', method: 'tiled', scale: 1e-3 },
      { header: 'fast', method: 'fast', scale: 1e-3, bold: true },
      { header: 'fast vs DSYRK', num: 'fast', den: 'cublas-syrk' },
    ],
  },
  'gemm-h100': {
    gpu: 'nvidia-h100-80gb-hbm3',
    op: 'gemm',
    sizeHeader: 'n',
    sizeLabel: (s) => s.split('x')[0],
    columns: [
      { header: 'naive', method: 'naive', scale: 1e-3 },
      { header: 'shared 8', method: 'shared8', scale: 1e-3 },
      { header: 'shared 16', method: 'shared16', scale: 1e-3 },
      { header: 'shared 32', method: 'shared32', scale: 1e-3 },
      { header: 'fast', method: 'fast', scale: 1e-3, bold: true },
      { header: 'cublas (TF32 off)', method: 'cublas', scale: 1e-3 },
      { header: 'fast vs cuBLAS', num: 'fast', den: 'cublas' },
    ],
  },
  'scan-h100': {
    gpu: 'nvidia-h100-80gb-hbm3',
    op: 'scan',
    sizeHeader: 'n',
    sizeLabel: pow2,
    dtypes: ['int32', 'uint32', 'float32', 'float64'],
    columns: [
      { header: 'warp', method: 'warp-{dtype}', rateOnly: true },
      { header: 'blocks', method: 'blocks-{dtype}', rateOnly: true },
      { header: 'cub', method: 'cub-{dtype}', rateOnly: true },
      { header: 'lookback', method: 'lookback-{dtype}', rateOnly: true },
      { header: 'fast', method: 'fast-{dtype}', rateOnly: true, bold: true },
      { header: 'fast vs cub', num: 'fast-{dtype}', den: 'cub-{dtype}' },
      { header: 'fast vs copy', num: 'fast-{dtype}', den: 'copy' },
    ],
  },
  'stencil-h100': {
    gpu: 'nvidia-h100-80gb-hbm3',
    op: 'stencil',
    sizeHeader: 'grid',
    sizeLabel: square,
    dtypes: ['float32', 'float64'],
    columns: [
      { header: 'basic', method: 'basic-{dtype}' },
      { header: 'tiled', method: 'tiled-{dtype}' },
      { header: 'fast', method: 'fast-{dtype}', bold: true },
      { header: 'fast vs copy', num: 'fast-{dtype}', den: 'copy' },
    ],
  },
  'apsp-h100': {
    gpu: 'nvidia-h100-80gb-hbm3',
    op: 'apsp',
    sizeHeader: 'n',
    columns: [
      { header: 'basic (BF 256)', method: 'basic', scale: 1e-3 },
      { header: 'shared (32×32)', method: 'shared', scale: 1e-3 },
      { header: 'fast', method: 'fast', scale: 1e-3, bold: true },
      { header: 'fast vs shared', num: 'fast', den: 'shared' },
    ],
  },
  'mlp-h100': {
    gpu: 'nvidia-h100-80gb-hbm3',
    op: 'mlp',
    sizeHeader: 'net × patterns',
    sizeLabel: (s) => s.replace(/,/g, ', ').replace(']x', '] × '),
    columns: [
      { header: 'cublas', method: 'cublas', bold: true },
      { header: 'cublas, 2 streams', method: 'cublas-s2' },
      { header: 'custom', method: 'custom' },
      { header: 'custom, 2 streams', method: 'custom-s2' },
      { header: 'custom, 4 streams', method: 'custom-s4' },
      { header: 'sgemm-cublas', method: 'sgemm-cublas' },
      { header: 'PyTorch', method: 'pytorch' },
    ],
  },
  'apsp-multi-h200': {
    gpu: 'nvidia-h200',
    op: 'apsp',
    // The distributed family measured 32768 on one GPU and the band scheme again in a later run.
    families: ['apsp-multi', 'apsp-dist'],
    sizeHeader: 'n',
    columns: [
      { header: '1 GPU fast', method: 'fast', scale: 1e-3 },
      { header: '2 GPUs band', method: 'band-2gpu', scale: 1e-3, bold: true },
      { header: '4 GPUs band', method: 'band-4gpu', scale: 1e-3, bold: true },
      { header: '2 GPUs replicated', method: 'replicated-2gpu', scale: 1e-3 },
      { header: '4 GPUs replicated', method: 'replicated-4gpu', scale: 1e-3 },
    ],
  },
};

/** A table's markdown, from the rows of its GPU's result file: `ms (rate)` cells, ratio columns, and the runs. */
export function readmeTable(spec: ReadmeTable, file: BenchFile): string {
  const families = spec.families ?? [spec.op];
  const rank = (r: BenchRow) => families.indexOf(rowFamily(r));
  const all = file.rows.filter((r) => r.op === spec.op && rank(r) >= 0);
  const rows = all.filter((r) => r.protocol !== 'pair').sort((a, b) => rank(a) - rank(b));
  const find = (method: string, size: string): BenchRow | undefined =>
    rows.find((r) => r.method === method && r.size === size);
  const cell = (c: MethodColumn, r: BenchRow | undefined): string => {
    if (!r) return '—';
    const rate = fmt(r.rate * (c.scale ?? 1));
    const text = c.rateOnly ? rate : `${fmt(r.ms)} (${rate})`;
    const marked = r.check === 'fail' ? `${text} check failed` : text;
    return c.bold ? `**${marked}**` : marked;
  };
  const used: BenchRow[] = [];
  const ratio = (c: RatioColumn, dtype: string | undefined, size: string): string => {
    const where = {
      op: spec.op,
      size,
      method: mine(c.num, dtype),
      versus: c.den === 'copy' ? 'copy' : mine(c.den, dtype),
    };
    const pair = all.find(
      (r) =>
        r.protocol === 'pair' &&
        r.size === size &&
        ((r.method === where.method && r.versus?.method === where.versus) ||
          (r.method === where.versus && r.versus?.method === where.method)),
    );
    if (pair) used.push(pair);
    return fmtSpread(pairRatioOf(all, where));
  };
  const methods = new Set(spec.columns.filter((c) => !isRatio(c)).map((c) => (c as MethodColumn).method));
  const body: string[][] = [];
  for (const dtype of spec.dtypes ?? [undefined]) {
    const mineHere = new Set([...methods].map((m) => mine(m, dtype)));
    // Sizes with a table row, or a pair row, of this table's methods.
    const sizes = sortSizes(all.filter((r) => mineHere.has(r.method)).map((r) => r.size)).filter(
      (s) => !spec.skipSizes?.includes(s),
    );
    for (const size of sizes) {
      const line: string[] = dtype ? [dtype] : [];
      line.push((spec.sizeLabel ?? ((s: string) => s))(size));
      for (const c of spec.columns) {
        if (isRatio(c)) {
          line.push(ratio(c, dtype, size));
        } else {
          const r = find(mine(c.method, dtype), size);
          if (r) used.push(r);
          line.push(cell(c, r));
        }
      }
      body.push(line);
    }
  }
  const head = [...(spec.dtypes ? ['dtype'] : []), spec.sizeHeader, ...spec.columns.map((c) => c.header)];
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const table = [
    `| ${head.map(esc).join(' | ')} |`,
    `| ${head.map(() => '---').join(' | ')} |`,
    ...body.map((l) => `| ${l.map(esc).join(' | ')} |`),
  ].join('\n');
  return `${table}\n\n${runsMarkdown(used)}`;
}

const BLOCK = /<!-- bench-table ([\w-]+) -->\n[\s\S]*?<!-- \/bench-table -->/g;
// Prettier (npm run format) would re-pad the generated tables; it leaves these lines alone.
const IGNORE_START = '<!-- prettier-ignore-start -->';
const IGNORE_END = '<!-- prettier-ignore-end -->';

/**
 * `text` with every `<!-- bench-table ID -->…<!-- /bench-table -->` block regenerated from `files`
 * (result files by GPU slug). Unknown ids and missing files throw, naming them.
 */
export function updateReadmeTables(text: string, files: ReadonlyMap<string, BenchFile>): string {
  return text.replace(BLOCK, (_, id: string) => {
    const spec = README_TABLES[id];
    if (!spec) throw new RangeError(`block bench-table ${id}: no such table (lib/bench/readme-tables.ts)`);
    const file = files.get(spec.gpu);
    if (!file) throw new RangeError(`block bench-table ${id}: no result file ${spec.gpu}.json`);
    return `<!-- bench-table ${id} -->\n${IGNORE_START}\n${readmeTable(spec, file)}\n${IGNORE_END}\n<!-- /bench-table -->`;
  });
}

/** The markers around a results page's hand-written summary, which report keeps. */
export const NOTES_START = '<!-- notes -->';
export const NOTES_END = '<!-- /notes -->';

/** The hand-written block of a page, markers included, or undefined where it has none. */
export function notesBlock(text: string): string | undefined {
  const start = text.indexOf(`${NOTES_START}\n`);
  if (start < 0) return undefined;
  const end = text.indexOf(NOTES_END, start);
  if (end < 0) throw new RangeError(`${NOTES_START} without ${NOTES_END}`);
  return text.slice(start, end + NOTES_END.length);
}

/**
 * A freshly generated page with `notes` put back where report's pages keep it: before the first
 * `## ` heading (the first GPU's section), or at the end of a page without one.
 */
export function withNotes(page: string, notes: string): string {
  const at = page.search(/^## /m);
  return at < 0 ? `${page.replace(/\n*$/, '')}\n\n${notes}\n` : `${page.slice(0, at)}${notes}\n\n${page.slice(at)}`;
}
