// Where the JavaScript of a disk-cache hit goes, by function: runs hit_js.ts (the hit with every device
// call stood in, so no GPU is needed) in PROCESSES fresh processes under V8's sampling profiler, keeps
// the samples taken inside hit_js.ts's secondHit() (the hit after the process's first kernel, which is
// what `bench kernels` times), and prints the mean time per process of each function, by itself (self)
// and with what it calls (inclusive). The profiler's sampling slows the code it samples (about 1.5x at a
// 5 µs interval), so compare the functions with each other, not with hit_js.ts's own timings.
//
//   node bench/dev/kernels/hit_js_profile.js [PROCESSES=30] [INTERVAL_US=5]
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..', '..', '..');
const processes = Number(process.argv[2] ?? 30);
const interval = Number(process.argv[3] ?? 5);
if (!Number.isInteger(processes) || processes < 1)
  throw new RangeError(`PROCESSES must be a whole number ≥ 1, got ${process.argv[2]}`);
if (!Number.isInteger(interval) || interval < 1)
  throw new RangeError(`INTERVAL_US must be a whole number of microseconds ≥ 1, got ${process.argv[3]}`);

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-hit-js-profile-'));
const cache = path.join(work, 'cache');
const profiles = path.join(work, 'profiles');
const hitJs = (mode, extra = []) =>
  execFileSync(
    process.execPath,
    [...extra, '-r', path.join(root, 'test/harness/ts-register.js'), path.join(__dirname, 'hit_js.ts'), mode, cache, 'p'],
    { cwd: root, encoding: 'utf8' },
  );

hitJs('populate');
for (let i = 0; i < processes; i++)
  hitJs('hit', ['--cpu-prof', `--cpu-prof-dir=${profiles}`, `--cpu-prof-interval=${interval}`]);

const self = new Map();
const inclusive = new Map();
let total = 0;
const files = fs.readdirSync(profiles).filter((f) => f.endsWith('.cpuprofile'));
for (const f of files) {
  const p = JSON.parse(fs.readFileSync(path.join(profiles, f), 'utf8'));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const label = (n) =>
    `${n.callFrame.functionName || '(anonymous)'} ${path.relative(root, n.callFrame.url.replace(/^file:\/\//, '')) || n.callFrame.url}:${n.callFrame.lineNumber + 1}`;
  for (let i = 0; i < p.samples.length; i++) {
    // timeDeltas[i] is the time before sample i; the time a sample stands for is the next delta.
    const dt = p.timeDeltas[i + 1] ?? 0;
    const stack = [];
    for (let id = p.samples[i]; id !== undefined; id = parent.get(id)) stack.push(byId.get(id));
    const top = stack.findIndex((n) => n.callFrame.functionName === 'secondHit');
    if (top < 0) continue;
    total += dt;
    const leaf = label(stack[0]);
    self.set(leaf, (self.get(leaf) ?? 0) + dt);
    // A function on the stack twice (recursion) counts once per sample.
    const seen = new Set();
    for (let j = 0; j < top; j++) {
      const l = label(stack[j]);
      if (seen.has(l)) continue;
      seen.add(l);
      inclusive.set(l, (inclusive.get(l) ?? 0) + dt);
    }
  }
}
fs.rmSync(work, { recursive: true, force: true });
const table = (m, n) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${(v / files.length).toFixed(1).padStart(8)} µs  ${k}`)
    .join('\n');
console.log(
  `${files.length} processes, ${interval} µs sampling: secondHit ${(total / files.length).toFixed(1)} µs a process\n` +
    `-- self\n${table(self, 25)}\n-- inclusive\n${table(inclusive, 35)}`,
);
