// gemm `fast` split against one piece at the split plan's edges (development build: the test hook
// debugGemmSplits forces one piece): each shape alternating the two, 20 ms apart, median of 21 rounds.
//
//   node bench/dev/gemm/split-k-edges.js
const ck = require('../../../dist');
const { native } = require('../../../dist/native');
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const med = (x) => [...x].sort((p, q) => p - q)[x.length >> 1];
const shapes = [[128, 1024, 128], [1024, 1024, 1024], [1408, 1024, 1408], [11 * 128, 1024, 12 * 128],
  [11 * 128, 4096, 12 * 128], [128, 16912, 128], [1536, 4096, 1536], [2048, 1024, 2048]];
for (const [m, k, n] of shapes) {
  const a = ck.empty('float32', m * k).fillRandom(1), b = ck.empty('float32', k * n).fillRandom(2);
  const c = ck.empty('float32', m * n), c1 = ck.empty('float32', m * n);
  const run = (f, out) => () => { native.debugGemmSplits(f); ck.gemm(a, b, m, k, n, { method: 'fast', out }); };
  run(0, c)(); const pieces = native.debugGemmSplits(0);
  const t = { split: [], whole: [] };
  for (let r = 0; r < 21; r++) for (const [name, f, out] of r % 2 ? [['split', 0, c], ['whole', 1, c1]] : [['whole', 1, c1], ['split', 0, c]]) {
    sleep(20); t[name].push(ck.timed(run(f, out)).ms);
  }
  native.debugGemmSplits(0);
  console.log(`${m}x${k}x${n}: pieces ${pieces}, split ${med(t.split).toFixed(4)} ms, one piece ${med(t.whole).toFixed(4)} ms, ` +
    `ratio ${(med(t.whole) / med(t.split)).toFixed(2)}, rel diff ${ck.deviceRelativeError(c, c1).toExponential(1)}`);
  for (const x of [a, b, c, c1]) x.free();
}
