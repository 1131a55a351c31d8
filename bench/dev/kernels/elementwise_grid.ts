// How the grid of elementwise() changes its rate: the generated saxpy (the source elementwise()
// launches, from elementwiseSource) launched as a raw kernel with 2 to 32 blocks of 256 threads per
// SM, beside hand-written grid-stride kernels (scalar; float4 loads and stores; float4 with streaming
// cache hints) and the device copy, all in one process, CUDA events, median of 30. Prints one line per
// launch shape. The float4 rows say whether vector accesses would lift the generator's rate.
//
//   node -r ./test/harness/ts-register.js bench/dev/kernels/elementwise_grid.ts [log2 n = 28]
import { copyDevice, empty } from '../../../lib';
import { median, timeGpu } from '../../../lib/bench/harness';
import { elementwiseSource } from '../../../lib/kernels/elementwise';
import { compile, deviceLimits } from '../../../lib/kernels/module';

const n = 2 ** Number(process.argv[2] ?? 28);
const device = 0;
const sms = deviceLimits(device).smCount;

const medianMs = (fn: () => void) => median(timeGpu(fn, { device, reps: 30, warmup: 3 }));

using x = empty('float32', n, { device }).fillRandom(1);
using y = empty('float32', n, { device }).fillRandom(2);
using z = empty('float32', n, { device }).fill(0);
using src = empty('float32', n, { device }).fillRandom(3);
const gbs = (arrays: number, ms: number) => (arrays * 4 * n) / (ms * 1e-3) / 1e9;
const copyRate = gbs(2, medianMs(() => copyDevice(z, src)));
console.log(`n = ${n}, ${sms} SMs; device copy ${copyRate.toFixed(0)} GB/s (2 arrays)`);

const spec = { in: 'float32 x, float32 y, float32 a', out: 'float32 z', body: 'z = a * x + y', name: 'saxpy' };
const generated = compile(elementwiseSource(spec, ['float32', 'float32', 'float32', 'float32'], [true, true, false]).source, {
  device,
  name: 'saxpy.generated.cu',
}).kernel('ck_elementwise');
const raw = compile(
  `extern "C" __global__ void axpy(long long n, float a, const float* x, const float* y, float* z) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    z[i] = a * x[i] + y[i];
}`,
  { device, name: 'axpy.cu' },
).kernel('axpy');

for (const perSm of [2, 4, 8, 16, 32]) {
  const grid = Math.min(Math.ceil(n / 256), sms * perSm);
  const ms = medianMs(() => generated.launch({ grid, block: 256, device }, x, y, 2, z, n));
  console.log(`generated  ${String(perSm).padStart(2)} blocks/SM (grid ${grid}): ${gbs(3, ms).toFixed(0)} GB/s, ${(gbs(3, ms) / copyRate).toFixed(3)}× copy`);
}
for (const grid of [sms * 8, 4096, sms * 32, Math.ceil(n / 256)]) {
  const ms = medianMs(() => raw.launch({ grid, block: 256, device }, n, 2, x, y, z));
  console.log(`raw        grid ${grid}: ${gbs(3, ms).toFixed(0)} GB/s, ${(gbs(3, ms) / copyRate).toFixed(3)}× copy`);
}

// 16-byte accesses: a quarter of the load and store instructions, the same bytes (n is a multiple of 4
// here; the generator would need a scalar tail and an alignment check).
const vec = compile(
  `extern "C" __global__ void axpy4(long long n4, float a, const float4* x, const float4* y, float4* z) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
    const float4 u = x[i], v = y[i];
    z[i] = make_float4(a * u.x + v.x, a * u.y + v.y, a * u.z + v.z, a * u.w + v.w);
  }
}
extern "C" __global__ void axpy4cs(long long n4, float a, const float4* x, const float4* y, float4* z) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
    const float4 u = __ldcs(x + i), v = __ldcs(y + i);
    __stcs(z + i, make_float4(a * u.x + v.x, a * u.y + v.y, a * u.z + v.z, a * u.w + v.w));
  }
}`,
  { device, name: 'axpy4.cu' },
);
for (const name of ['axpy4', 'axpy4cs']) {
  const k = vec.kernel(name);
  for (const grid of [sms * 4, sms * 8, sms * 16, Math.ceil(n / 4 / 256)]) {
    const ms = medianMs(() => k.launch({ grid, block: 256, device }, n / 4, 2, x, y, z));
    console.log(`${name.padEnd(10)} grid ${grid}: ${gbs(3, ms).toFixed(0)} GB/s, ${(gbs(3, ms) / copyRate).toFixed(3)}× copy`);
  }
}
// The copy again: the rates above are compared with the copy at both ends of the run.
console.log(`device copy again ${gbs(2, medianMs(() => copyDevice(z, src))).toFixed(0)} GB/s`);
