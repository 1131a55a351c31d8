// gemm `fast` with k in pieces (split-K) against the same kernel unsplit and against cuBLAS, on C's of
// a few tiles and long k, and on shapes the plan leaves whole. Uses the development build's test hook
// debugGemmSplits (1 forces one piece). Each round runs the three in a rotated order with 100 ms idle
// before each run; the median of the rounds is printed with the pieces the plan chose.
//
//   node bench/dev/gemm/split-k-timing.js [rounds]       (default 7)
const ck = require('../../../dist');
const { native } = require('../../../dist/native');

const rounds = Number(process.argv[2] ?? 7);
const shapes = [
  [1024, 1024, 1024],
  [128, 16384, 128],
  [256, 2 ** 20, 256],
  [512, 2 ** 18, 512],
  [64, 2 ** 22, 64],
  [1000, 100000, 1000],
  [2000, 50000, 2000],
  [4096, 4096, 4096],
];
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const cublas = ck.cublasInfo().available;
const p = ck.deviceProperties(0);
console.log(`${p.name}, ${p.smCount} SMs; rounds ${rounds}; ms (median), GFLOP/s`);
console.log('| m×k×n | pieces | fast (split) | fast (1 piece) | cuBLAS | split/1 piece | split/cuBLAS |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const [m, k, n] of shapes) {
  const a = ck.empty('float32', m * k).fillRandom(1);
  const b = ck.empty('float32', k * n).fillRandom(2);
  const c = ck.empty('float32', m * n);
  const c1 = ck.empty('float32', m * n);
  const runs = {
    split: () => (native.debugGemmSplits(0), ck.gemm(a, b, m, k, n, { method: 'fast', out: c })),
    whole: () => (native.debugGemmSplits(1), ck.gemm(a, b, m, k, n, { method: 'fast', out: c1 })),
    ...(cublas ? { cublas: () => ck.gemm(a, b, m, k, n, { method: 'cublas', out: c1 }) } : {}),
  };
  const names = Object.keys(runs);
  for (const name of names) runs[name](); // warm-up (compiles nothing; first-touch of the pool)
  native.debugGemmSplits(0);
  ck.gemm(a, b, m, k, n, { method: 'fast', out: c });
  const pieces = native.debugGemmSplits(1);
  const times = Object.fromEntries(names.map((x) => [x, []]));
  for (let r = 0; r < rounds; r++) {
    for (let j = 0; j < names.length; j++) {
      const name = names[(r + j) % names.length];
      sleep(100);
      times[name].push(ck.timed(runs[name]).ms);
    }
  }
  native.debugGemmSplits(0);
  const err = ck.deviceRelativeError(c, c1);
  const med = Object.fromEntries(names.map((x) => [x, median(times[x])]));
  const gflops = (ms) => ((2 * m * k * n) / ms / 1e6).toFixed(0);
  const cell = (x) => (med[x] === undefined ? '—' : `${med[x].toFixed(3)} (${gflops(med[x])})`);
  console.log(
    `| ${m}×${k}×${n} | ${pieces} | ${cell('split')} | ${cell('whole')} | ${cell('cublas')} | ` +
      `${(med.whole / med.split).toFixed(2)} | ${cublas ? (med.cublas / med.split).toFixed(2) : '—'} |` +
      ` rel. diff to cuBLAS/1 piece ${err.toExponential(1)}`,
  );
  for (const x of [a, b, c, c1]) x.free();
}
// The one-tile C with the longest k: one block took 213 s before split-K (H200).
{
  const [m, k, n] = [2, 2 ** 31 - 1, 2];
  const a = ck.full('float32', m * k, 1);
  const b = ck.full('float32', k * n, 1);
  const c = ck.empty('float32', m * n);
  native.debugGemmSplits(0);
  const t = ck.timed(() => ck.gemm(a, b, m, k, n, { method: 'fast', out: c }));
  const pieces = native.debugGemmSplits(0);
  console.log(`${m}×${k}×${n} (ones): fast ${t.ms.toFixed(1)} ms in ${pieces} pieces, C = ${Array.from(c.toHostSync()).join(', ')}`);
}
