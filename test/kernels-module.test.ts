// Module and Kernel (lib/kernels/module.ts) with NVRTC and every device call stood in, so they run
// without a GPU and without NVRTC: which parameters and which symbol kernel() takes (an extern "C"
// kernel's kept parameters, a signature, a name expression), and the numbers attributes() and the
// launch limits take from kernelsGetKernel. test/kernels-gpu.test.ts checks the same on a GPU.
import type { BufferHandle, KernelHandle } from '../binding';
import { DeviceArray } from '../lib/array';
import { elementwise } from '../lib/kernels/elementwise';
import { compile, type Kernel, kernelCache } from '../lib/kernels/module';
import { reduction } from '../lib/kernels/reduction';
import { native } from '../lib/native';
import { H100_KERNEL_DEVICE_INFO, standInKernelInfo } from './helpers/stand-in-device';
import { tempDirs } from './helpers/temp-dirs';

// The cache folder is made in beforeAll (the kernel cache reads the variable at the first compile, in a
// test): made at load, it was left behind where -t filters out every test and jest runs no hook.
let dir = '';
const envBefore = process.env.CUDA_KERNELS_CACHE_DIR;
const tmp = tempDirs('ck-kmodule-');

/** What each kernelsGetKernel call was asked for: the symbol and the parameters' [size, kind]. */
const gets: { symbol: string; layout: number[] }[] = [];
// [bytes, paramsChecked, maxThreadsPerBlock, sharedSizeBytes, maxDynamicSharedSizeBytes,
//  constSizeBytes, localSizeBytes, numRegs, ptxVersion, binaryVersion]: all different, so a number read
// from the wrong place shows.
const FIXED = [0, 1, 384, 1000, 47000, 72, 16, 40, 86, 89];
const spies: jest.SpyInstance[] = [];
/** What the stood-in NVRTC gives for a source: its text as the "cubin", each name expression lowered. */
const standInCompile = (source: string, expressions: string[]) => ({
  ok: true,
  result: 'NVRTC_SUCCESS',
  failedCall: '',
  log: '',
  code: new TextEncoder().encode(`cubin of ${source}`),
  lowered: expressions.map((e) => `lowered(${e})`),
});

beforeAll(() => {
  dir = tmp();
  process.env.CUDA_KERNELS_CACHE_DIR = dir;
  spies.push(
    jest.spyOn(native, 'nvrtcLocate').mockReturnValue({ identity: 'stand-in', includeDirs: [], loaded: true }),
    jest.spyOn(native, 'nvrtcInfo').mockReturnValue({
      available: true,
      identity: 'stand-in',
      archs: [80, 90],
      includeDirs: [],
    }),
    jest
      .spyOn(native, 'nvrtcCompile')
      .mockImplementation((source, _name, _options, _hn, _hs, expressions) => standInCompile(source, expressions)),
    jest
      .spyOn(native, 'nvrtcCompileAsync')
      .mockImplementation((source, _name, _options, _hn, _hs, expressions) =>
        Promise.resolve(standInCompile(source, expressions)),
      ),
    jest.spyOn(native, 'kernelsDeviceInfo').mockReturnValue(H100_KERNEL_DEVICE_INFO),
    jest.spyOn(native, 'kernelsLoad').mockReturnValue({} as never),
    jest
      .spyOn(native, 'kernelsGetKernel')
      .mockImplementation((_lib, _device, symbol, _display, layout, _names, out) => {
        gets.push({ symbol, layout: [...layout] });
        standInKernelInfo(layout, out, FIXED);
        return { symbol } as unknown as KernelHandle;
      }),
    jest.spyOn(native, 'kernelsLaunch').mockReturnValue(undefined),
  );
});

afterAll(() => {
  for (const s of spies) s.mockRestore();
  if (envBefore === undefined) delete process.env.CUDA_KERNELS_CACHE_DIR;
  else process.env.CUDA_KERNELS_CACHE_DIR = envBefore;
});

const SAXPY = `extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
`;

/** A source of its own per test, so the in-process memo does not answer for another test's. */
let serial = 0;
const source = () => `${SAXPY}// ${serial++}\n`;
const types = (k: Kernel) => k.params.map((p) => p.type);

describe('kernel()', () => {
  test('an extern "C" kernel takes its declared parameters and its own symbol, from a compile and from the disk', () => {
    const src = source();
    const compiled = compile(src, { name: 'a.cu' });
    kernelCache().forgetMemory();
    const hit = compile(src, { name: 'a.cu' });
    expect([compiled.from, hit.from]).toEqual(['compiled', 'disk']);
    for (const mod of [compiled, hit]) {
      const k = mod.kernel('saxpy');
      expect(types(k)).toEqual(['int', 'float', 'const float *', 'float *']);
      expect(mod.kernel('saxpy')).toBe(k);
      gets.length = 0;
      k.launchArguments({ grid: 1, block: 32 }, 1, 2, null, null);
      expect(gets).toEqual([{ symbol: 'saxpy', layout: [4, 0, 4, 0, 8, 1, 8, 2] }]);
    }
  });

  test('a signature given to kernel() or in options.signatures wins over the declared parameters', () => {
    const sig = 'int n, double a, const double* x, double* y';
    const src = source();
    const given = compile(src).kernel('saxpy', sig);
    expect(types(given)).toEqual(['int', 'double', 'const double *', 'double *']);
    // The same module's plain kernel() is still the declared one.
    expect(types(compile(src).kernel('saxpy'))).toEqual(['int', 'float', 'const float *', 'float *']);
    expect(types(compile(src, { signatures: { saxpy: sig } }).kernel('saxpy'))).toEqual(types(given));
  });

  test('an extern "C" name that is also a name expression is launched through its lowered name', () => {
    const k = compile(source(), { nameExpressions: ['saxpy'] }).kernel('saxpy');
    gets.length = 0;
    k.launchArguments({ grid: 1, block: 32 }, 1, 2, null, null);
    expect(gets.map((g) => g.symbol)).toEqual(['lowered(saxpy)']);
  });
});

describe('arrays for pointees the scan resolves or cannot tell (checked before any launch)', () => {
  const fake = (dtype: 'float32' | 'float64') =>
    new DeviceArray({ tag: dtype } as unknown as BufferHandle, dtype, 12, 0);
  const cfg = { grid: 1, block: 32 };

  test('a float64 array for `const float3* xyz` is refused, from a compile and from the disk', () => {
    const src = `extern "C" __global__ void norm3(const float3* xyz, float* out, int n) {}\n// ${serial++}\n`;
    for (const from of ['compiled', 'disk']) {
      if (from === 'disk') kernelCache().forgetMemory();
      const mod = compile(src);
      expect(mod.from).toBe(from);
      const k = mod.kernel('norm3');
      expect(() => k.launchArguments(cfg, fake('float64'), fake('float32'), 4)).toThrow(TypeError);
      expect(() => k.launchArguments(cfg, fake('float32'), fake('float32'), 4)).not.toThrow();
    }
  });

  test('options.defines name the dtype; a source #define is left to the compiler (any array)', () => {
    const viaDefine = compile(`extern "C" __global__ void scale(real* x, int n) { }\n// ${serial++}\n`, {
      defines: { real: 'double' },
    }).kernel('scale');
    expect(() => viaDefine.launchArguments(cfg, fake('float32'), 12)).toThrow(TypeError);
    expect(() => viaDefine.launchArguments(cfg, fake('float64'), 12)).not.toThrow();
    const own = compile(`#define REAL float
extern "C" __global__ void fill(REAL* x, int n) { }\n// ${serial++}\n`).kernel('fill');
    expect(() => own.launchArguments(cfg, fake('float64'), 12)).not.toThrow();
  });

  test('a pointee it cannot resolve takes any array, as a struct does; options.signatures can name its dtype', () => {
    const src = `#include "types.h"\nextern "C" __global__ void k(const Particle* p, int n) {}\n// ${serial++}\n`;
    const mod = compile(src, { headers: { 'types.h': '#pragma once\n' } });
    expect(() => mod.kernel('k').launchArguments(cfg, fake('float64'), 3)).not.toThrow();
    expect(() => mod.kernel('k', 'const float* p, int n').launchArguments(cfg, fake('float64'), 3)).toThrow(TypeError);
  });

  test('a kernel declared before it is defined can be used', () => {
    const mod = compile(`extern "C" __global__ void k(float*, int);
extern "C" __global__ void k(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = 0; }\n// ${serial++}\n`);
    expect(mod.kernel('k').params.map((p) => p.name)).toEqual(['x', 'n']);
  });
});

describe('elementwise and reduction: prepare() compiles off the JS thread, then a call compiles nothing', () => {
  const fake = (dtype: 'float32' | 'float64', length = 12) =>
    new DeviceArray({ tag: dtype } as unknown as BufferHandle, dtype, length, 0);

  test('an element-wise kernel', async () => {
    const sync = native.nvrtcCompile as jest.Mock;
    const async = native.nvrtcCompileAsync as jest.Mock;
    const k = elementwise({ in: 'T x, T a', out: 'T y', body: `y = a * x /* ${serial++} */`, name: 'scale' });
    const [s0, a0] = [sync.mock.calls.length, async.mock.calls.length];
    await k.prepare(fake('float32'), 2);
    expect([sync.mock.calls.length - s0, async.mock.calls.length - a0]).toEqual([0, 1]);
    // A second prepare and the call itself (launched on the stand-in) compile nothing more.
    await k.prepare(fake('float32'), 3);
    k(fake('float32'), 2, { out: fake('float32') });
    expect([sync.mock.calls.length - s0, async.mock.calls.length - a0]).toEqual([0, 1]);
    // Another dtype is another instance: not prepared, so the call compiles it, synchronously.
    k(fake('float64'), 2, { out: fake('float64') });
    expect(sync.mock.calls.length - s0).toBe(1);
    // Bad arguments reject as a call throws.
    await expect(k.prepare(fake('float32'))).rejects.toThrow(TypeError);
  });

  test('a reduction', async () => {
    const sync = native.nvrtcCompile as jest.Mock;
    const async = native.nvrtcCompileAsync as jest.Mock;
    const r = reduction({ in: 'T x', out: 'T s', map: `x /* ${serial++} */`, reduce: 'a + b', identity: '0' });
    const [s0, a0] = [sync.mock.calls.length, async.mock.calls.length];
    await r.prepare(fake('float64'));
    expect([sync.mock.calls.length - s0, async.mock.calls.length - a0]).toEqual([0, 1]);
  });
});

describe('what kernelsGetKernel says', () => {
  test('attributes() gives each number from its place', () => {
    const k = compile(source()).kernel('saxpy');
    expect(k.attributes()).toEqual({
      maxThreadsPerBlock: 384,
      numRegs: 40,
      sharedSizeBytes: 1000,
      maxDynamicSharedSizeBytes: 47000,
      localSizeBytes: 16,
      constSizeBytes: 72,
      ptxVersion: 86,
      binaryVersion: 89,
    });
    // A copy each time.
    const a = k.attributes();
    a.numRegs = 0;
    expect(k.attributes().numRegs).toBe(40);
  });

  test('the launch limits: the kernel’s thread limit, and the opt-in shared memory less its static shared memory', () => {
    const k = compile(source()).kernel('saxpy');
    expect(() => k.launch({ grid: 1, block: 385 }, 1, 2, null, null)).toThrow(/385 threads per block .* this kernel/);
    k.launch({ grid: 1, block: 384, sharedMem: 232448 - 1000 }, 1, 2, null, null);
    expect(() => k.launch({ grid: 1, block: 32, sharedMem: 232448 - 999 }, 1, 2, null, null)).toThrow(
      /sharedMemPerBlockOptin/,
    );
    const [, config, params] = k.launchArguments({ grid: [3, 2], block: [8, 4], sharedMem: 5 }, 7, 0.5, null, null);
    expect([...config]).toEqual([3, 2, 1, 8, 4, 1, 5]);
    const view = new DataView(params.buffer);
    expect([params.length, view.getInt32(0, true), view.getFloat32(4, true)]).toEqual([24, 7, 0.5]);
  });
});
