// gemm `fast` with k forced into pieces (development build: the test hook debugGemmSplits) on the
// shapes the jest suite leaves out: float4 B with scalar A, k = 1..33 around the 16-deep slab, forced
// pieces above the slab count and 65535; each against the CPU within the float32 bound. Prints the
// failures and a summary (exit 1 on any).
//
//   node bench/dev/gemm/split-k-sweep.js
const ck = require('../../../dist');
const { native } = require('../../../dist/native');
const planned = (k, f) => { const s = Math.ceil(k / 16), w = Math.max(1, Math.min(f, 65535)); return Math.ceil(s / Math.ceil(s / w)); };
const shapes = [[130, 1001, 68], [64, 999, 128], [128, 1003, 256], [300, 4099, 132]];
for (let k = 1; k <= 33; k++) shapes.push([5, k, 4], [5, k, 3], [129, k, 132]);
let bad = 0, runs = 0;
for (const [m, k, n] of shapes) {
  const a = ck.cpu.randomArray(Float32Array, m * k, 11 + k), b = ck.cpu.randomArray(Float32Array, k * n, 23 + k);
  const ref = ck.cpu.gemm(a, b, m, k, n), mag = ck.cpu.gemm(a.map(Math.abs), b.map(Math.abs), m, k, n);
  const dA = ck.upload(a), dB = ck.upload(b);
  for (const f of [2, 3, 7, 64, 65535]) {
    const out = ck.full('float32', m * n, NaN);
    native.debugGemmSplits(f);
    ck.gemm(dA, dB, m, k, n, { method: 'fast', out });
    const pieces = native.debugGemmSplits(0);
    const got = out.toHostSync(); out.free(); runs++;
    let worst = -1;
    for (let i = 0; i < got.length; i++) if (!(Math.abs(got[i] - ref[i]) <= 2 * k * 2 ** -24 * mag[i] + 1e-30)) { worst = i; break; }
    if (worst >= 0 || pieces !== planned(k, f)) { bad++; console.log(`BAD ${m}x${k}x${n} forced ${f}: pieces ${pieces} (want ${planned(k, f)}), first wrong ${worst}`); }
  }
  dA.free(); dB.free();
}
console.log(`${runs} runs, ${bad} bad`);
process.exitCode = bad ? 1 : 0;
