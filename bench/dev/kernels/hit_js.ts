// The JavaScript of a disk-cache hit, with every device and NVRTC call replaced by a stand-in, so it
// runs on a machine without a GPU: in a fresh process whose first kernel came from the disk cache, a
// second cached source goes through compile() + kernel() + launch, timed. The native file read is the
// real one. What the stand-ins cost is nothing, so the time is the package's JavaScript and the N-API
// crossings; compare variants of the code on one machine, many processes, alternating.
//
//   node -r ./test/harness/ts-register.js bench/dev/kernels/hit_js.ts populate DIR SALT
//   node -r ./test/harness/ts-register.js bench/dev/kernels/hit_js.ts hit DIR SALT     # prints one JSON line
//   node bench/dev/kernels/hit_js.js ... (the same from dist/ when built)
import { saxpySource } from '../../../lib/bench/kernels';
import { native } from '../../../lib/native';
import { H100_KERNEL_DEVICE_INFO, standInKernelInfo } from '../../../test/helpers/stand-in-device';

const [mode, dir, salt] = process.argv.slice(2);
process.env.CUDA_KERNELS_CACHE_DIR = dir;

const table = native as unknown as Record<string, unknown>;
let handles = 0;
const standIns: Record<string, (...args: unknown[]) => unknown> = {
  nvrtcLocate: () => ({ identity: 'stand-in NVRTC 13.0', includeDirs: [], loaded: false }),
  nvrtcInfo: () => ({ available: true, identity: 'stand-in NVRTC 13.0', includeDirs: [], archs: [90], path: 'x' }),
  nvrtcCompile: (source: unknown) => ({
    ok: true,
    result: 'NVRTC_SUCCESS',
    log: '',
    failedCall: '',
    lowered: [],
    // A cubin-sized payload that depends on the source, as the real one does.
    code: new TextEncoder().encode(String(source).repeat(8).padEnd(6000, '#')),
  }),
  kernelsDeviceInfo: () => H100_KERNEL_DEVICE_INFO,
  kernelsLoad: () => ({ library: ++handles }),
  kernelsGetKernel: (_lib, _device, _name, _display, layout, _names, out) => {
    // bytes, paramsChecked, maxThreadsPerBlock, sharedSizeBytes, maxDynamicSharedSizeBytes, const, local, regs, ptx, binary
    standInKernelInfo(layout as Int32Array, out as Float64Array, [0, 1, 1024, 0, 232448, 0, 0, 16, 90, 90]);
    return { kernel: ++handles };
  },
  kernelsLaunch: () => undefined,
};
for (const [name, fn] of Object.entries(standIns)) table[name] = fn;

// After the stand-ins: module.ts keeps a reference to `native`, whose properties were replaced above.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { compile } = require('../../../lib/kernels/module') as typeof import('../../../lib/kernels/module');

const source = (which: string) => saxpySource(`${salt} ${which}`);
const n = 1024;

function call(which: string): number {
  const t0 = process.hrtime.bigint();
  const mod = compile(source(which), { name: 'saxpy.cu' });
  mod.kernel('saxpy').launch({ grid: Math.ceil(n / 256), block: 256 }, n, 2, null, null);
  const us = Number(process.hrtime.bigint() - t0) / 1e3;
  if (mode === 'hit' && mod.from !== 'disk') throw new Error(`expected a disk hit, got ${mod.from}`);
  return us;
}

function secondHit(): number {
  return call('second');
}

if (mode === 'populate') {
  call('first');
  call('second');
  console.log(JSON.stringify({ populated: salt }));
} else if (mode === 'hit') {
  const first = call('first');
  const second = secondHit(); // its own frame, for a --cpu-prof of the hit alone (hit_js_profile.js)
  console.log(JSON.stringify({ first, second }));
} else {
  throw new Error('usage: hit_js.ts populate|hit DIR SALT');
}
