// CPU use of the process while apspAsync runs back to back, with a progress callback and without
// one, and of the blocking apsp: where a core's share goes (the pool thread's per-round waits, or
// the JS thread's progress reports). Uses the built package in dist/.
//   node bench/dev/overhead/async-cpu.js [n] [seconds]
'use strict';
const { performance } = require('node:perf_hooks');
const ck = require('../../../dist/index.js');

const n = Number(process.argv[2] ?? 4096);
const seconds = Number(process.argv[3] ?? 1.5);
const graph = ck.randomGraph(n, { density: 0.01, seed: 7 });
const rounds = ck.apspRounds('shared', n);

async function measure(name, call) {
  await call(); // warm: kernels loaded, pool memory kept
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let calls = 0;
  while (performance.now() - t0 < seconds * 1000) {
    await call();
    calls++;
  }
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  const line =
    `${name.padEnd(28)} ${calls} calls, ${((calls * rounds) / (wall / 1000)).toFixed(0)} rounds/s, ` +
    `wall ${wall.toFixed(0)} ms, user ${(c.user / 1000).toFixed(0)} ms, system ${(c.system / 1000).toFixed(0)} ms, ` +
    `CPU/wall ${((c.user + c.system) / 1000 / wall).toFixed(3)}`;
  console.log(line);
}

(async () => {
  console.log(`apsp 'shared', n = ${n}, ${rounds} rounds per call, ${seconds} s each`);
  let reports = 0;
  for (let pass = 0; pass < 2; pass++) {
    await measure('apspAsync + onProgress', async () => {
      (await ck.apspAsync(graph, n, { method: 'shared', onProgress: () => reports++ })).free();
    });
    await measure('apspAsync, no onProgress', async () => {
      (await ck.apspAsync(graph, n, { method: 'shared' })).free();
    });
    await measure('apsp (blocking)', async () => {
      ck.apsp(graph, n, { method: 'shared' }).free();
    });
  }
  console.log(`progress reports seen: ${reports}`);
  graph.free();
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
