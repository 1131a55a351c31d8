// Merges the rows printed by cupy_kernels.py (JSON lines; `clocks` lines are skipped) into a result
// file, as methods `cupy` and `pytorch` of op `kernels`, tagging each note with the run:
//   node bench/dev/kernels/merge.js bench/results/nvidia-h100-80gb-hbm3.json cupy-kernels.jsonl "run 1a2b3c4"
'use strict';
const fs = require('node:fs');
const { mergeRows } = require('../../../dist/bench/results.js');

const [file, rowsFile, tag = ''] = process.argv.slice(2);
if (!file || !rowsFile) throw new Error('usage: merge.js RESULTS.json ROWS.jsonl [TAG]');
const lines = fs.readFileSync(rowsFile, 'utf8').split('\n').filter((l) => l.trim().startsWith('{'));
const parsed = lines.map((l) => JSON.parse(l));
const clocks = parsed.filter((r) => r.clocks).map((r) => `${r.clocks} ${r.query}`);
const rows = parsed
  .filter((r) => r.op === 'kernels')
  .map((r) => ({ ...r, note: `${r.note}; GPU clocks ${clocks.join(', ')}${tag ? `; ${tag}` : ''}` }));
const data = JSON.parse(fs.readFileSync(file, 'utf8'));
data.rows = mergeRows(data.rows, rows);
fs.writeFileSync(file, JSON.stringify(data, null, 2) + '\n');
console.log(`merged ${rows.length} rows into ${file}`);
