#!/usr/bin/env node
// A release binary on a GPU host, as a user's project gets it: run from a project where the packed
// tarballs are installed (scripts/check-package.sh makes such projects), or with
// CUDA_KERNELS_BINARY=<file> to check one binary (e.g. the CUDA 12 fallback). Prints which binary
// loaded and how it was built, then runs AᵀA (every method), SGEMM and scan on fresh random inputs
// of odd sizes, outputs filled with NaN first, against the CPU references. Exit 1 on any mismatch.
'use strict';
const ck = require('cuda-kernels');
const cpu = require('cuda-kernels/cpu');

const info = ck.runtimeInfo();
console.log(`binary: ${info.binary.name} (${info.binary.file})`);
console.log(`  why: ${info.binary.reason}`);
if (info.binary.declared) console.log(`  declared: ${JSON.stringify(info.binary.declared)}`);
for (const t of info.binary.tried.filter((x) => x.error)) console.log(`  tried: ${t.name} [${t.how}]: ${t.error}`);
console.log(`  CUDA ${info.runtimeVersion}, driver ${info.driverVersion}, build ${JSON.stringify(info.build)}`);
const cublas = ck.cublasInfo();
console.log(`  cuBLAS: ${cublas.available ? `${cublas.version} from ${cublas.path}` : cublas.code}`);
if (ck.deviceCount() === 0) {
  console.log(`no GPU: ${info.noDeviceReason}`);
  process.exit(1);
}
console.log(`  device 0: ${ck.deviceProperties(0).name}`);

let failures = 0;
const seed = Date.now() % 100000;
function check(label, err, tol) {
  const ok = err < tol;
  if (!ok) failures++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${label}: relative error ${err.toExponential(2)} (tolerance ${tol})`);
}

// AᵀA, float64, every method; cuBLAS ones only where cuBLAS loads.
for (const [rows, cols] of [
  [257, 33],
  [1, 7],
  [1031, 17],
]) {
  const a = cpu.randomArray(Float64Array, rows * cols, seed + rows);
  const ref = cpu.atA(a, rows, cols);
  const d = ck.upload(a);
  for (const method of ck.ataMethods) {
    if (method.startsWith('cublas') && !cublas.available) continue;
    const out = ck.full('float64', cols * cols, NaN);
    ck.atA(d, rows, cols, { method, out });
    check(`atA ${method} ${rows}x${cols}`, cpu.relativeError(out.toHostSync(), ref), 1e-12);
    out.free();
  }
  d.free();
}

// SGEMM, float32, the methods that need no cuBLAS.
{
  const [m, k, n] = [37, 19, 23];
  const a = cpu.randomArray(Float32Array, m * k, seed + 1);
  const b = cpu.randomArray(Float32Array, k * n, seed + 2);
  const ref = cpu.gemm(a, b, m, k, n);
  const da = ck.upload(a);
  const db = ck.upload(b);
  for (const method of ck.gemmMethods.filter((x) => x !== 'cublas')) {
    const out = ck.full('float32', m * n, NaN);
    ck.gemm(da, db, m, k, n, { method, out });
    check(`gemm ${method} ${m}x${k}x${n}`, cpu.relativeError(out.toHostSync(), ref), 1e-5);
    out.free();
  }
  da.free();
  db.free();
}

// Inclusive scan, int32, a length past one block and not a multiple of any tile: exact.
{
  const n = 1000003;
  const a = Int32Array.from(cpu.randomArray(Float64Array, n, seed + 3), (x) => Math.floor(x * 1000));
  const ref = cpu.scan(a, true);
  const d = ck.upload(a);
  for (const method of ck.scanMethods.filter((x) => x !== 'warp')) {
    const out = ck.full('int32', n, -1);
    ck.scan(d, { method, out });
    const got = out.toHostSync();
    const at = cpu.firstMismatch(got, ref);
    if (at !== -1) failures++;
    console.log(
      `${at === -1 ? 'ok  ' : 'FAIL'} scan ${method} n=${n}: ${at === -1 ? 'exact' : `first mismatch at ${at}`}`,
    );
    out.free();
  }
  d.free();
}

console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
