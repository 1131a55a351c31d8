// Module and Kernel (lib/kernels/module.ts) with NVRTC and every device call stood in, so they run
// without a GPU and without NVRTC: which parameters and which symbol kernel() takes (an extern "C"
// kernel's kept parameters, a signature, a name expression), and the numbers attributes() and the
// launch limits take from kernelsGetKernel. test/kernels-gpu.test.ts checks the same on a GPU.
import type { KernelHandle } from '../binding';
import { compile, type Kernel, kernelCache } from '../lib/kernels/module';
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
    jest.spyOn(native, 'nvrtcCompile').mockImplementation((source, _name, _options, _hn, _hs, expressions) => ({
      ok: true,
      result: 'NVRTC_SUCCESS',
      failedCall: '',
      log: '',
      code: new TextEncoder().encode(`cubin of ${source}`),
      lowered: expressions.map((e) => `lowered(${e})`),
    })),
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
