// CPU use of the process while apspAsync runs back to back, with a progress callback and without
// one, and of the blocking apsp: where a core's share goes (the pool thread's per-round waits, or
// the JS thread's progress reports), with each thread's share where /proc/self/task is readable
// (Linux: the thread's name and its user + system time, in ms). Uses the built package in dist/.
//   node bench/dev/overhead/async-cpu.js [n] [seconds] [stencil-first]
// stencil-first: stencilAsync back to back first, as test/async.test.ts does before its apsp part.
'use strict';
const { performance } = require('node:perf_hooks');
const ck = require('../../../dist/index.js');
const { threadTimes, threadsUsed } = require('../../../test/helpers/thread-cpu.js');

const n = Number(process.argv[2] ?? 4096);
const seconds = Number(process.argv[3] ?? 1.5);
const graph = ck.randomGraph(n, { density: 0.01, seed: 7 });
const rounds = ck.apspRounds('shared', n);

async function measure(name, call, steps = rounds) {
  await call(); // warm: kernels loaded, pool memory kept
  const th0 = threadTimes();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let calls = 0;
  while (performance.now() - t0 < seconds * 1000) {
    await call();
    calls++;
  }
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  const cpu = (c.user + c.system) / 1000;
  const line =
    `${name.padEnd(28)} ${calls} calls, ${((calls * steps) / (wall / 1000)).toFixed(0)} rounds/s, ` +
    `wall ${wall.toFixed(0)} ms, user ${(c.user / 1000).toFixed(0)} ms, system ${(c.system / 1000).toFixed(0)} ms, ` +
    `CPU/wall ${(cpu / wall).toFixed(3)}, CPU per round ${((cpu * 1000) / (calls * steps)).toFixed(1)} us`;
  console.log(line);
  const threads = threadsUsed(th0, threadTimes(), 1);
  if (threads) console.log(`  threads (ms): ${threads}`);
}

(async () => {
  if (process.argv[4] === 'stencil-first') {
    // As the test: a random grid (a constant one is converged at the first check and its call queues
    // only sweeps that exit at once), calls of about 0.3 s, back to back.
    const size = 2048;
    const host = new Float32Array(size * size);
    let x = 12345;
    for (let i = 0; i < host.length; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      host[i] = x / 2 ** 32;
    }
    const g = ck.upload(host);
    const opts = { tolerance: 0, weights: 'jacobi5', checkEvery: 4096 };
    ck.stencil(g, size, size, { ...opts, maxIterations: 500 }).grid.free();
    const t0 = performance.now();
    ck.stencil(g, size, size, { ...opts, maxIterations: 500 }).grid.free();
    const sweeps = Math.max(500, Math.round((300 / (performance.now() - t0)) * 500));
    // "rounds" are calls here.
    await measure(
      `stencilAsync ${size}², ${sweeps} sweeps`,
      async () => (await ck.stencilAsync(g, size, size, { ...opts, maxIterations: sweeps })).grid.free(),
      1,
    );
    g.free();
  }
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
