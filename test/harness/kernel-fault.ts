// Child process of test/kernels-gpu.test.ts: a user kernel that faults (`null`: a store through a null
// pointer, an illegal address; `trap`: __trap()). The CUDA context is then lost for the process: every
// later call on the device must throw a CudaError saying so, never crash or hang, and the process must
// exit cleanly with live arrays and kernels. Prints what each call reported, as JSON.
import * as ck from '../../lib';

const kind = process.argv[2] === 'trap' ? 'trap' : 'null';
const live = ck.upload(new Float64Array([1, 2, 3]));
const seen: Record<string, unknown> = { before: Array.from(live.toHostSync()) };
const describe = (e: unknown) => ({
  name: (e as Error).name,
  isCudaError: e instanceof ck.CudaError,
  code: (e as ck.CudaError).code,
  message: (e as Error).message,
});
const attempt = (what: string, fn: () => unknown) => {
  try {
    fn();
    seen[what] = 'no error';
  } catch (e) {
    seen[what] = describe(e);
  }
};
const mod = ck.compile(
  `extern "C" __global__ void fault(float* p, int trap) {
     if (trap) __trap();
     p[threadIdx.x] = 1.0f;
   }`,
  { name: 'fault.cu', cache: false },
);
const k = mod.kernel('fault');
attempt('launch', () => k.launch({ grid: 1, block: 32 }, null, kind === 'trap' ? 1 : 0));
attempt('fault', () => ck.synchronize());
attempt('relaunch', () => k.launch({ grid: 1, block: 32 }, null, 0));
attempt('after', () => live.toHostSync());
// Compiling is host work (NVRTC): what must fail is running what it made.
attempt('compile', () =>
  ck
    .compile('extern "C" __global__ void other(int* p) { if (p) p[0] = 1; }', { cache: false })
    .kernel('other')
    .launch({ grid: 1, block: 1 }, null),
);
attempt('elementwise', () => ck.elementwise({ in: 'float64 x', out: 'float64 y', body: 'y = x' })(live));
process.stdout.write(JSON.stringify(seen) + '\n');
