#!/usr/bin/env node
// Compares the rows of one or more bench runs with the committed rows of the same GPU, row by row:
// ratio = committed ms / run ms (above 1: faster now). Used to check that a refactor left the
// figures within noise (issue 22).
//   node bench/dev/compare-runs.js bench/results/<gpu>.json runA.json[,runA2.json…] [runB.json …]
// A run file is the JSON a `bench --out DIR` wrote: committed rows plus the run's; only rows whose
// `run` field the committed file lacks are compared. Commas join the files of one run (one file
// per family when each family ran in its own process).
'use strict';
const fs = require('node:fs');

const [committedPath, ...runPaths] = process.argv.slice(2);
if (!committedPath || runPaths.length === 0) {
  console.error('usage: compare-runs.js COMMITTED.json RUN.json [RUN.json …]');
  process.exit(2);
}
const load = (p) => JSON.parse(fs.readFileSync(p, 'utf8')).rows;
const key = (r) => `${r.op}\t${r.method}\t${r.size}`;
const committed = new Map(load(committedPath).map((r) => [key(r), r]));
const committedRuns = new Set([...committed.values()].map((r) => r.run));

// Each run file: its own rows (runs the committed file does not have), keyed like the committed ones.
const runs = runPaths.map((arg) => {
  const rows = arg
    .split(',')
    .flatMap(load)
    .filter((r) => !committedRuns.has(r.run));
  return new Map(rows.map((r) => [key(r), r]));
});
const keys = [...new Set(runs.flatMap((m) => [...m.keys()]))].sort();
const pad = (s, n) => String(s).padEnd(n);
const num = (x, d) => (x === undefined ? '—' : x.toFixed(d)).padStart(9);
console.log(
  `${pad('op', 9)} ${pad('method', 16)} ${pad('size', 26)} ` +
    runs.map((_, i) => `run${i + 1} ms`.padStart(9)).join(' ') +
    ` ${'committed'.padStart(9)} ${pad('commit', 13)} ` +
    runs.map((_, i) => `r${i + 1}`.padStart(6)).join(' '),
);
for (const k of keys) {
  const [op, method, size] = k.split('\t');
  const ref = committed.get(k);
  const ms = runs.map((m) => m.get(k)?.ms);
  const ratios = ms.map((x) => (ref && x ? (ref.ms / x).toFixed(3) : '—').padStart(6));
  console.log(
    `${pad(op, 9)} ${pad(method, 16)} ${pad(size, 26)} ${ms.map((x) => num(x, 4)).join(' ')} ` +
      `${num(ref?.ms, 4)} ${pad(ref ? String(ref.commit) : 'no row', 13)} ${ratios.join(' ')}`,
  );
}
