// Does `scan` with method 'cub' scan every element of an int32 array past 2^32 elements? CUB before
// 2.7 takes DeviceScan's num_items as an int, so a longer count narrows at the call: run this under
// the CUDA 12 fallback binary (built against CUB 2.3.2) and under the CUDA 13 one. No NVRTC needed.
//
//   CUDA_KERNELS_BINARY=<cuda_kernels.node> node bench/dev/scan/cub-count-probe.js
//
// The input is all ones, so the inclusive prefix at i is (i + 1) mod 2^32 as an int32; out starts as
// -7 everywhere. Prints, per method, the last element and a few before it, against what they must be.
// The scan goes straight to the binding (native.scanRun), so a binary from before the length check
// runs the same call as one with it (whose binding refuses the array with a RangeError).
const ck = require('../../../dist');
const { native, binaryInfo } = require('../../../dist/native');

const n = 2 ** 32 + 1000;
const cub = native.scanCubInfo?.() ?? { version: '(no scanCubInfo: a binary from before it)', maxItems: '?' };
console.log(`binary ${binaryInfo.file}; CUB_VERSION ${cub.version}, cub maxItems ${cub.maxItems}; n = ${n}`);
const wrapped = (i) => ((i + 1) % 2 ** 32) | 0; // the int32 the inclusive sum at i must be
const probes = [0, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, n - 1];
const a = ck.full('int32', n, 1);
const out = ck.empty('int32', n);
const one = ck.empty('int32', 1);
let failures = 0;
for (const method of ['cub', 'fast']) {
  out.fill(-7);
  let outcome = 'returned';
  try {
    native.scanRun(a.handle('arr'), out.handle('out'), ck.scanMethods.indexOf(method), true);
  } catch (e) {
    outcome = `threw ${e.name}: ${e.message}`;
  }
  // Where the binary has the check, scan() refuses before the binding is reached.
  if (native.scanCubInfo && method === 'cub' && n > cub.maxItems) {
    try {
      ck.scan(a, { method, out });
      console.log('  scan(): returned');
    } catch (e) {
      console.log(`  scan(): threw ${e.name}: ${e.message}`);
    }
  }
  const got = probes.map((i) => {
    ck.copyDevice(one, out, { srcOffset: i, count: 1 });
    return one.toHostSync()[0];
  });
  const want = probes.map(wrapped);
  const right = got.every((g, k) => g === want[k]);
  const refused = outcome.startsWith('threw RangeError') && got.every((g) => g === -7);
  if (!right && !refused) failures++;
  console.log(`${method}: ${outcome}`);
  console.log(`  at ${probes.join(', ')}`);
  console.log(`  got  ${got.join(', ')}`);
  console.log(`  want ${want.join(', ')}  → ${right ? 'right' : refused ? 'refused, out untouched' : 'WRONG, no error'}`);
}
console.log(failures ? `${failures} method(s) wrong without an error` : 'every method right or refused');
for (const x of [a, out, one]) x.free();
process.exitCode = failures ? 1 : 0;
