// How the grid of elementwise() changes its rate: the generated saxpy (the source elementwise()
// launches, from elementwiseSource) launched as a raw kernel with 2 to 32 blocks of 256 threads per
// SM, beside a hand-written grid-stride kernel and the device copy, all in one process, CUDA events,
// median of 30. Prints one line per launch shape.
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
