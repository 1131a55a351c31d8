// Merges the rows a Python reference script printed (JSON lines; `clocks` lines are skipped) into a
// result file: the rows of op OP (methods such as `pytorch` and `cupy`), each note tagged with the
// GPU's clocks and the run. For bench/dev/overhead/torch_cupy_overhead.py (op `overhead`) and
// bench/dev/kernels/cupy_kernels.py (op `kernels`):
//   node bench/dev/merge-python-rows.js overhead bench/results/nvidia-h100-80gb-hbm3.json torch-cupy.jsonl "run 1a2b3c4"
'use strict';
const fs = require('node:fs');
const { mergeRows } = require('../../dist/bench/results.js');

const [op, file, rowsFile, tag = ''] = process.argv.slice(2);
if (!op || !file || !rowsFile) throw new Error('usage: merge-python-rows.js OP RESULTS.json ROWS.jsonl [TAG]');
const lines = fs.readFileSync(rowsFile, 'utf8').split('\n').filter((l) => l.trim().startsWith('{'));
const parsed = lines.map((l) => JSON.parse(l));
const clocks = parsed.filter((r) => r.clocks).map((r) => `${r.clocks} ${r.query}`);
const rows = parsed
  .filter((r) => r.op === op)
  .map((r) => ({ ...r, note: `${r.note}; GPU clocks ${clocks.join(', ')}${tag ? `; ${tag}` : ''}` }));
const data = JSON.parse(fs.readFileSync(file, 'utf8'));
data.rows = mergeRows(data.rows, rows);
fs.writeFileSync(file, JSON.stringify(data, null, 2) + '\n');
console.log(`merged ${rows.length} ${op} rows into ${file}`);
