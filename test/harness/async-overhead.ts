// What the Promise forms cost over the blocking ones, in wall time: the same work through stencil /
// stencilAsync, apsp / apspAsync and Mlp.train / trainAsync, interleaved, several repetitions, the
// median and the spread (min–max) of each, and the longest stall of a 1 ms timer during each form.
// A measurement, not a test. Needs a GPU:
//   node -r ./test/harness/ts-register.js test/harness/async-overhead.ts [reps]
import * as ck from '../../lib';

const reps = Number(process.argv[2] ?? 5);

async function stall(run: () => unknown): Promise<{ ms: number; worst: number }> {
  let last = performance.now();
  let worst = 0;
  const t = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 1);
  await new Promise((r) => setTimeout(r, 5));
  last = performance.now();
  const t0 = performance.now();
  await run();
  const ms = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 5));
  clearInterval(t);
  return { ms, worst };
}

const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const fmt = (a: number[]) => `${median(a).toFixed(1)} ms [${Math.min(...a).toFixed(1)}–${Math.max(...a).toFixed(1)}]`;

async function compare(label: string, sync: () => unknown, async: () => Promise<unknown>): Promise<void> {
  const s: number[] = [];
  const a: number[] = [];
  const ss: number[] = [];
  const as: number[] = [];
  await sync(); // warm-up
  await async();
  for (let i = 0; i < reps; i++) {
    const x = await stall(sync);
    const y = await stall(async);
    s.push(x.ms);
    ss.push(x.worst);
    a.push(y.ms);
    as.push(y.worst);
  }
  console.log(
    `${label.padEnd(46)} blocking ${fmt(s)} (timer stall ${median(ss).toFixed(0)} ms) | ` +
      `async ${fmt(a)} (stall ${median(as).toFixed(1)} ms) | async/blocking ${(median(a) / median(s)).toFixed(3)}`,
  );
}

async function main(): Promise<void> {
  const p = ck.deviceProperties(0);
  console.log(`${p.name}, ${reps} repetitions, interleaved; median [min–max] wall time`);
  for (const [n, sweeps] of [
    [256, 20000],
    [1024, 5000],
    [4096, 500],
    [4096, 5000],
  ]) {
    const g = ck.upload(ck.cpu.randomArray(Float32Array, n * n, 1));
    const o = { tolerance: 0, maxIterations: sweeps };
    await compare(
      `stencil ${n}×${n} float32, ${sweeps} sweeps`,
      () => ck.stencil(g, n, n, o).grid.free(),
      async () => (await ck.stencilAsync(g, n, n, o)).grid.free(),
    );
    g.free();
  }
  for (const [n, method] of [
    [2048, 'fast'],
    [8192, 'fast'],
    [2048, 'shared'],
  ] as const) {
    const g = ck.randomGraph(n, { density: 0.05, seed: 3 });
    const o = { method, validate: false };
    await compare(
      `apsp n=${n} ${method}`,
      () => {
        // The blocking apsp only enqueues (without onRound): wait for it, as the Promise form does.
        ck.apsp(g, n, o).free();
        ck.synchronize(0);
      },
      async () => (await ck.apspAsync(g, n, o)).free(),
    );
    g.free();
  }
  const P = 4096;
  const X = ck.upload(ck.cpu.randomArray(Float32Array, P * 64, 5));
  const T = ck.upload(ck.cpu.randomArray(Float32Array, P * 10, 6).map((v) => (v + 1) / 2));
  const net = new ck.Mlp({ layers: [64, 256, 10], eta: 0.01, seed: 1 });
  const o = { epochs: 20, batchSize: 64 };
  await compare(
    `mlp [64, 256, 10], ${P} patterns, 20 epochs of 64 batches`,
    () => net.train(X, T, o),
    () => net.trainAsync(X, T, o),
  );
  net.free();
  X.free();
  T.free();
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
