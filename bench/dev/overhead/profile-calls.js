// Times the small calls of the overhead table in a loop (wall clock, median), for a CPU profile:
//   node --cpu-prof --cpu-prof-dir=DIR bench/dev/overhead/profile-calls.js [call] [count]
// call: empty | upload | scan | reduce | all (default). Uses the built package in dist/.
'use strict';
const ck = require('../../../dist/index.js');

const which = process.argv[2] ?? 'all';
const count = Number(process.argv[3] ?? 3000);
const h1k = new Float32Array(256).fill(1);
const s = ck.empty('int32', 4096).fill(1);
const r = ck.empty('float32', 4096).fill(1);
const calls = {
  empty: () => ck.empty('float32', 1024).free(),
  upload: () => ck.upload(h1k).free(),
  scan: () => {
    ck.scan(s, { out: s });
    ck.synchronize();
  },
  reduce: () => ck.reduce(r, 'sum'),
};
for (const [name, fn] of Object.entries(calls)) {
  if (which !== 'all' && which !== name) continue;
  for (let i = 0; i < 50; i++) fn();
  const t = [];
  for (let i = 0; i < count; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    t.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  t.sort((a, b) => a - b);
  console.log(`${name}: median ${t[t.length >> 1].toFixed(1)} us, min ${t[0].toFixed(1)}, p90 ${t[Math.floor(t.length * 0.9)].toFixed(1)}`);
}
