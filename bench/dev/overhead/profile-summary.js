// Self time per function of a V8 .cpuprofile (node --cpu-prof), the top N lines:
//   node bench/dev/overhead/profile-summary.js file.cpuprofile [N]
'use strict';
const fs = require('node:fs');
const p = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const top = Number(process.argv[3] ?? 25);
const dt = (p.endTime - p.startTime) / p.samples.length; // µs per sample
const self = new Map();
for (const n of p.nodes) {
  const f = n.callFrame;
  const key = `${f.functionName || '(anonymous)'} ${f.url ? f.url.replace(/.*\/(dist|node_modules)\//, '$1/') + ':' + (f.lineNumber + 1) : ''}`;
  self.set(key, (self.get(key) ?? 0) + (n.hitCount ?? 0));
}
const total = p.samples.length;
const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
console.log(`${total} samples, ${((p.endTime - p.startTime) / 1e3).toFixed(0)} ms, ${dt.toFixed(0)} us/sample`);
for (const [k, v] of rows) console.log(`${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
