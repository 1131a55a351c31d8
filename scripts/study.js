#!/usr/bin/env node
// Writes docs/study.md, the kernels as a study: for each family, its variant files in study order
// (native/<family>/<N>_<name>.cu|cc, then the library's file), the first sentence of each file's
// opening comment, and what the benchmark measured for that variant on the H100 at one size, and
// its rate against the previous variant's and the library's where the pair protocol measured those
// pairs (`bench --pair`; a ratio is never taken from two medians of a batch). Everything comes from
// the files and from bench/results/<gpu>.json, so the page cannot drift from them:
//
//   node scripts/study.js          print the page
//   node scripts/study.js --write  write docs/study.md
//   node scripts/study.js --check  exit 1 when docs/study.md differs from what would be written
//
// A variant file names its benchmark method(s) in its opening comment with a line
// `// Bench method: fast` (several, comma-separated, when one file holds more than one method).
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const RESULTS = 'bench/results/nvidia-h100-80gb-hbm3.json';
const OUT = 'docs/study.md';

/**
 * Families in study order; `size` is the benchmark size the page quotes, `suffix` the dtype part of
 * the method names in the result rows (stencil and scan rows are per dtype), `library` the method
 * the variants are compared with.
 */
const FAMILIES = [
  { name: 'ata', title: 'C = AᵀA in float64', size: '8000x8000', library: 'cublas-syrk', libraryName: 'cuBLAS DSYRK' },
  {
    name: 'gemm',
    title: 'SGEMM, C = A·B in float32',
    size: '4096x4096x4096',
    library: 'cublas',
    libraryName: 'cuBLAS',
  },
  {
    name: 'stencil',
    title: 'Periodic 3×3 stencil on a torus, float32, 100 sweeps',
    size: '8192x8192',
    suffix: '-float32',
  },
  {
    name: 'scan',
    title: 'Prefix sum (scan), int32',
    size: '268435456',
    suffix: '-int32',
    library: 'cub',
    libraryName: 'CUB',
  },
  { name: 'apsp', title: 'All-pairs shortest paths (blocked Floyd–Warshall)', size: '16384' },
  {
    name: 'mlp',
    title: 'Multilayer network training, one epoch',
    size: '[784,1024,1024,10]x60000',
    library: 'pytorch',
    libraryName: 'PyTorch',
  },
];

/** The leading `//` comment of a source file, without the slashes. */
function openingComment(text) {
  const lines = [];
  for (const line of text.split('\n')) {
    const m = /^\/\/ ?(.*)$/.exec(line);
    if (!m) break;
    lines.push(m[1]);
  }
  return lines;
}

/** The first sentence of the opening comment (two when the first is short), without a "Step N," lead. */
function firstSentence(lines) {
  const prose = lines
    .filter((l) => !/^Bench method:/i.test(l))
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim()
    // "Step 3, ours: …" / "Stencil step 3, `fast` (ours): …" → "Ours: …" (the step and method have columns)
    .replace(/^(?:\w+ )?step \d+[,:.]? *(?:`[^`]+`)? *(\(ours\))?[,:.]? */i, (_, ours) => (ours ? 'Ours: ' : ''));
  const m = /^(.*?[.!?])(\s|$)(.*?[.!?])?(\s|$)/.exec(prose);
  const text = m ? (m[1].length < 60 && m[3] ? `${m[1]} ${m[3]}` : m[1]) : prose;
  const short = text.length > 200 ? `${text.slice(0, text.lastIndexOf(' ', 200))} …` : text;
  return short.charAt(0).toUpperCase() + short.slice(1).replace(/\|/g, '\\|');
}

/** The variant files of a family: numbered ones in order, then the unnumbered ones that name a method. */
function variantFiles(family) {
  const dir = path.join(root, 'native', family);
  if (!fs.existsSync(dir)) return [];
  const files = fs
    .readdirSync(dir)
    .filter((f) => /\.(cu|cc)$/.test(f))
    .map((f) => {
      const comment = openingComment(fs.readFileSync(path.join(dir, f), 'utf8'));
      const tag = comment.map((l) => /^Bench method:\s*(.+)$/i.exec(l)).find(Boolean);
      const step = /^(\d+)_/.exec(f);
      return {
        file: `native/${family}/${f}`,
        step: step ? Number(step[1]) : null,
        methods: tag ? tag[1].split(',').map((s) => s.trim().replace(/`/g, '')) : [],
        summary: firstSentence(comment),
      };
    });
  const numbered = files.filter((f) => f.step !== null).sort((a, b) => a.step - b.step || a.file.localeCompare(b.file));
  const library = files.filter((f) => f.step === null && f.methods.length);
  return [...numbered, ...library];
}

function fmt(x, digits = 3) {
  return x >= 100 ? x.toFixed(1) : x.toPrecision(digits);
}

/** A pair ratio as "1.44× (1.40–1.47)", small ones with two significant digits ("0.0041×"). */
function ratio(x) {
  const f = (v) => (v >= 0.1 ? v.toFixed(2) : v.toPrecision(2));
  return `${f(x.median)}× (${f(x.min)}–${f(x.max)})`;
}

/** The pair protocol's ratio of `method`'s rate over `versus`'s (from either pair row), or undefined. */
function pairRatio(rows, op, method, versus, size) {
  const find = (a, b) =>
    rows.find(
      (r) =>
        r.protocol === 'pair' && r.ratio && r.op === op && r.size === size && r.method === a && r.versus?.method === b,
    )?.ratio;
  const direct = find(method, versus);
  if (direct) return direct;
  const rev = find(versus, method);
  return rev && { median: 1 / rev.median, min: 1 / rev.max, max: 1 / rev.min };
}

function render() {
  const results = JSON.parse(fs.readFileSync(path.join(root, RESULTS), 'utf8'));
  const row = (op, method, size) =>
    results.rows.find((r) => r.op === op && r.method === method && r.size === size && r.protocol !== 'pair');
  const out = [
    '# The kernels as a study',
    '',
    '<!-- Generated by scripts/study.js from the variant files and ' +
      RESULTS +
      '; edit those, then run `node scripts/study.js --write`. test/study.test.ts fails when this page is stale. -->',
    '',
    'Each family below is a sequence of files, one per variant, in the order in which they are best read:',
    "the reports' textbook kernels first, then each step of ours, then the library the family is measured",
    'against. Each file opens with what it adds over the previous one. The figures are the benchmark rows',
    `of \`${RESULTS}\` (${results.device?.name ?? 'the H100'}) at one size per family; "× previous" is the rate of`,
    'this variant over the previous measured one, "× reference" over the reference named in the family\'s heading',
    '(above 1: faster), each from the pair protocol (`bench --pair`: the two alone, in rounds of A A B B; the',
    'median of the per-round ratios and their range) and "—" where that pair has not been measured.',
    'Other sizes, the other GPUs and the run each figure comes from are in',
    '[bench/results/README.md](../bench/results/README.md).',
  ];
  for (const fam of FAMILIES) {
    const files = variantFiles(fam.name);
    const ref = fam.library ? `; reference: ${fam.libraryName}` : '';
    out.push('', `## ${fam.title} (\`native/${fam.name}/\`, ${fam.size}${ref})`, '');
    if (files.length === 0) {
      out.push('Not split into variant files yet.');
      continue;
    }
    const suffix = fam.suffix ?? '';
    const lib = fam.library ? row(fam.name, fam.library + suffix, fam.size) : undefined;
    out.push('| step | file | what it adds | method | ms | rate | × previous | × reference |');
    out.push('| --- | --- | --- | --- | ---: | ---: | ---: | ---: |');
    let previous;
    const pairCell = (method, versus) => {
      const x = pairRatio(results.rows, fam.name, method, versus, fam.size);
      return x ? ratio(x) : '—';
    };
    for (const f of files) {
      const methods = f.methods.length ? f.methods : [''];
      for (const [i, m] of methods.entries()) {
        const r = m ? row(fam.name, m + suffix, fam.size) : undefined;
        const cells = [
          i > 0 ? '' : f.step === null ? 'library' : String(f.step),
          i > 0 ? '' : `[${path.basename(f.file)}](../${f.file})`,
          i > 0 ? '' : f.summary,
          m ? `\`${m}\`` : '—',
          r ? fmt(r.ms) : 'not measured',
          r ? `${fmt(r.rate)} ${r.unit}` : '—',
          r && previous && f.step !== null ? pairCell(r.method, previous.method) : '—',
          r && lib ? (r.method === lib.method ? 'reference' : pairCell(r.method, lib.method)) : '—',
        ];
        out.push(`| ${cells.join(' | ')} |`);
        if (r && f.step !== null) previous = r;
      }
    }
  }
  return out.join('\n') + '\n';
}

function main(argv) {
  const page = render();
  const target = path.join(root, OUT);
  if (argv.includes('--write')) {
    fs.writeFileSync(target, page);
    console.log(`wrote ${OUT}`);
    return 0;
  }
  if (argv.includes('--check')) {
    const now = fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : '';
    if (now === page) return 0;
    console.error(`${OUT} is stale: run node scripts/study.js --write`);
    return 1;
  }
  process.stdout.write(page);
  return 0;
}

if (require.main === module) process.exit(main(process.argv.slice(2)));

module.exports = { render, variantFiles, FAMILIES };
