// Checking a kernel launch before anything is queued (lib/kernels/launch.ts): each argument against its
// parameter's type, written into the packed buffer, and the launch shape against the limits. No GPU:
// the DeviceArrays here wrap dummy handles and never reach the addon.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import fc from 'fast-check';

import type { BufferHandle, KernelHandle } from '../binding';
import { DeviceArray } from '../lib/array';
import { parseParam } from '../lib/kernels/ctypes';
import { argWriter, checkLaunchConfig, type LaunchLimits, toBfloat16Bits, toHalfBits } from '../lib/kernels/launch';
import { compile } from '../lib/kernels/module';
import { nvrtcInfo } from '../lib/kernels/nvrtc';
import { native } from '../lib/native';
import { H100_KERNEL_DEVICE_INFO } from './helpers/stand-in-device';
import { describeNeeding } from './helpers/gpu';

const fakeArray = (dtype: 'float32' | 'float64' | 'int32' | 'uint32', device = 0) =>
  new DeviceArray({ tag: `${dtype}@${device}` } as unknown as BufferHandle, dtype, 8, device);

function write(decl: string, value: unknown, device = 0) {
  const p = parseParam(decl, 'p');
  const view = new DataView(new ArrayBuffer(8));
  const handles: (BufferHandle | null)[] = [];
  argWriter('saxpy', p.name, p.type, 0, device)(view, value, handles);
  return { view, handles };
}

describe('argument checks', () => {
  test('a pointer takes a DeviceArray of its dtype (or null), on the launch device', () => {
    const x = fakeArray('float32');
    expect(write('const float* x', x).handles).toEqual([x.handle()]);
    expect(write('float* y', null).handles).toEqual([null]);
    expect(() => write('const float* x', fakeArray('float64'))).toThrow(
      new TypeError(
        'saxpy: parameter x (const float *) must be a DeviceArray of float32, got a DeviceArray of float64',
      ),
    );
    expect(() => write('float* y', 3)).toThrow(TypeError);
    expect(() => write('float* y', 3)).toThrow(/parameter y .* must be a DeviceArray of float32 or null, got number 3/);
    expect(() => write('int* idx', fakeArray('uint32'))).toThrow(/idx .* of int32/);
    expect(() => write('const float* x', fakeArray('float32', 1))).toThrow(RangeError);
    expect(() => write('const float* x', fakeArray('float32', 1))).toThrow(/must be on device 0/);
    // Pointees without a dtype take any array.
    expect(write('void* raw', fakeArray('float64')).handles).toHaveLength(1);
    expect(write('unsigned char* b', fakeArray('int32')).handles).toHaveLength(1);
  });

  test('a freed array is refused', () => {
    const a = fakeArray('float32');
    // Freeing needs the addon; mark it freed the way free() does without calling it.
    Object.defineProperty(a, 'freed', { get: () => true });
    expect(() => write('float* y', a)).toThrow(/has been freed/);
  });

  test('integers: in range, whole, numbers or bigints', () => {
    expect(write('int n', -5).view.getInt32(0, true)).toBe(-5);
    expect(write('unsigned n', 4294967295).view.getUint32(0, true)).toBe(4294967295);
    expect(write('long long n', 2n ** 62n).view.getBigInt64(0, true)).toBe(2n ** 62n);
    expect(write('size_t n', 2 ** 40).view.getBigUint64(0, true)).toBe(2n ** 40n);
    expect(write('unsigned long long n', 2n ** 64n - 1n).view.getBigUint64(0, true)).toBe(2n ** 64n - 1n);
    expect(write('short s', -32768).view.getInt16(0, true)).toBe(-32768);
    expect(write('unsigned char c', 255).view.getUint8(0)).toBe(255);
    expect(() => write('int n', 1.5)).toThrow(RangeError);
    expect(() => write('int n', 1.5)).toThrow(
      /parameter n \(int\) must be an integer in \[-2147483648, 2147483647\], got number 1.5/,
    );
    expect(() => write('int n', 2 ** 31)).toThrow(RangeError);
    expect(() => write('unsigned n', -1)).toThrow(RangeError);
    expect(() => write('int n', '3')).toThrow(TypeError);
    expect(() => write('int n', fakeArray('int32'))).toThrow(TypeError);
    expect(() => write('long long n', 2 ** 60)).toThrow(/a bigint beyond 2\^53/);
    expect(() => write('int8_t n', 128n)).toThrow(RangeError);
    expect(() => write('int n', NaN)).toThrow(RangeError);
  });

  test('every integer type is written at its offset, with its width and sign, and nothing beside it', () => {
    const cases: [string, number | bigint, number, (v: DataView) => number | bigint][] = [
      ['signed char n', -128, 1, (v) => v.getInt8(8)],
      ['unsigned char n', 200, 1, (v) => v.getUint8(8)],
      ['short n', -300, 2, (v) => v.getInt16(8, true)],
      ['unsigned short n', 65000, 2, (v) => v.getUint16(8, true)],
      ['int n', -70000, 4, (v) => v.getInt32(8, true)],
      ['unsigned n', 4000000000, 4, (v) => v.getUint32(8, true)],
      ['long long n', -(2n ** 40n) - 3n, 8, (v) => v.getBigInt64(8, true)],
      ['unsigned long long n', 2n ** 63n + 5n, 8, (v) => v.getBigUint64(8, true)],
    ];
    for (const [decl, value, width, read] of cases) {
      const p = parseParam(decl, 'p');
      const bytes = new Uint8Array(24).fill(0xa5);
      const view = new DataView(bytes.buffer);
      argWriter('k', p.name, p.type, 8, 0)(view, value, []);
      expect([decl, read(view)]).toEqual([decl, value]);
      // The poison around the parameter is untouched.
      expect([decl, [...bytes.subarray(0, 8), ...bytes.subarray(8 + width)].every((b) => b === 0xa5)]).toEqual([
        decl,
        true,
      ]);
    }
    // Bounds are named in the error only: the text is made when it is thrown.
    expect(() => write('unsigned long long n', -1n)).toThrow(
      /an integer in \[0, 18446744073709551615\], got bigint -1/,
    );
  });

  test('floats take numbers; bool takes booleans or 0/1', () => {
    expect(write('float a', 0.1).view.getFloat32(0, true)).toBeCloseTo(0.1, 7);
    expect(write('double a', Math.PI).view.getFloat64(0, true)).toBe(Math.PI);
    expect(Number.isNaN(write('double a', NaN).view.getFloat64(0, true))).toBe(true);
    expect(() => write('float a', 1n)).toThrow(TypeError);
    expect(() => write('double a', null)).toThrow(/parameter a \(double\) must be a number, got null/);
    expect(write('bool f', true).view.getUint8(0)).toBe(1);
    expect(write('bool f', 0).view.getUint8(0)).toBe(0);
    expect(() => write('bool f', 2)).toThrow(TypeError);
    expect(write('__half h', 1).view.getUint16(0, true)).toBe(0x3c00);
    expect(write('__nv_bfloat16 b', 1).view.getUint16(0, true)).toBe(0x3f80);
  });

  test('half and bfloat16 rounding', () => {
    expect(toHalfBits(0)).toBe(0);
    expect(toHalfBits(-0)).toBe(0x8000);
    expect(toHalfBits(65504)).toBe(0x7bff);
    expect(toHalfBits(65520)).toBe(0x7c00); // rounds up to infinity
    expect(toHalfBits(Infinity)).toBe(0x7c00);
    expect(toHalfBits(-Infinity)).toBe(0xfc00);
    expect(toHalfBits(NaN) & 0x7e00).toBe(0x7e00);
    expect(toHalfBits(2 ** -24)).toBe(1); // the smallest subnormal
    expect(toHalfBits(2 ** -26)).toBe(0); // below half of it
    expect(toHalfBits(2 ** -14)).toBe(0x0400); // the smallest normal
    expect(toHalfBits(1 + 2 ** -11)).toBe(0x3c00); // a tie rounds to even
    expect(toHalfBits(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(toHalfBits(-2.5)).toBe(0xc100);
    expect(toBfloat16Bits(1)).toBe(0x3f80);
    expect(toBfloat16Bits(-2)).toBe(0xc000);
    expect(toBfloat16Bits(1 + 2 ** -8)).toBe(0x3f80); // a tie rounds to even
    expect(toBfloat16Bits(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(toBfloat16Bits(NaN) & 0x7fc0).toBe(0x7fc0);
  });

  test('rounded once: a value just past a tie that float32 rounds onto the tie still rounds away', () => {
    expect(toHalfBits(1 + 2 ** -11 + 2 ** -40)).toBe(0x3c01);
    expect(toHalfBits(-(1 + 2 ** -11 + 2 ** -40))).toBe(0xbc01);
    expect(toHalfBits(1 + 2 ** -11 - 2 ** -40)).toBe(0x3c00);
    expect(toHalfBits(1 + 3 * 2 ** -11 - 2 ** -40)).toBe(0x3c01); // just below a tie that would round to even (up)
    expect(toHalfBits(2 ** -25 + 2 ** -60)).toBe(1); // subnormal tie, just above
    expect(toHalfBits(2 ** -25 - 2 ** -60)).toBe(0);
    expect(toBfloat16Bits(1 + 2 ** -8 + 2 ** -40)).toBe(0x3f81);
    expect(toBfloat16Bits(1 + 3 * 2 ** -8 - 2 ** -40)).toBe(0x3f81);
    expect(toBfloat16Bits(-(1 + 2 ** -8 + 2 ** -40))).toBe(0xbf81);
  });

  test('half and bfloat16 of any double are the nearest value, ties to even (the neighbours checked)', () => {
    const half = (h: number) => {
      const sign = h & 0x8000 ? -1 : 1;
      const e = (h >> 10) & 0x1f;
      const m = h & 0x3ff;
      if (e === 0x1f) return m ? NaN : sign * Infinity;
      return sign * (e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15));
    };
    const bf = (b: number) => new Float32Array(new Uint32Array([b << 16]).buffer)[0];
    // |v − decode(c)| is the least over c and its two neighbours, and on a tie c's last bit is 0.
    const nearest = (v: number, c: number, decode: (b: number) => number, top: number) => {
      const d = Math.abs(v - decode(c));
      for (const n of [c - 1, c + 1]) {
        if ((n & top) !== (c & top) || !Number.isFinite(decode(n))) continue; // across the sign, or infinity
        const dn = Math.abs(v - decode(n));
        if (dn < d || (dn === d && (c & 1) !== 0)) return false;
      }
      return true;
    };
    fc.assert(
      fc.property(fc.double({ min: -65000, max: 65000, noNaN: true }), (v) => nearest(v, toHalfBits(v), half, 0x8000)),
      { numRuns: 20000 },
    );
    fc.assert(
      fc.property(fc.double({ min: -1e30, max: 1e30, noNaN: true }), (v) => nearest(v, toBfloat16Bits(v), bf, 0x8000)),
      { numRuns: 20000 },
    );
  });
});

describe('launch shape checks', () => {
  const limits: LaunchLimits = {
    device: 0,
    maxGridDim: [2147483647, 65535, 65535],
    maxBlockDim: [1024, 1024, 64],
    maxThreadsPerBlock: 1024,
    kernelLimitsThreads: false,
    maxDynamicSharedMem: 232448,
  };
  const out = new Uint32Array(7);

  test('numbers and arrays of 1 to 3 dimensions, written in order', () => {
    checkLaunchConfig({ grid: 10, block: 256 }, limits, out);
    expect([...out]).toEqual([10, 1, 1, 256, 1, 1, 0]);
    checkLaunchConfig({ grid: [4, 5, 6], block: [8, 8, 4], sharedMem: 1024 }, limits, out);
    expect([...out]).toEqual([4, 5, 6, 8, 8, 4, 1024]);
  });

  test('each limit is named when exceeded', () => {
    expect(() => checkLaunchConfig({ grid: [1, 65536], block: 1 }, limits, out)).toThrow(/maxGridDim\[1\]/);
    expect(() => checkLaunchConfig({ grid: 1, block: [1, 1, 65] }, limits, out)).toThrow(/maxBlockDim\[2\]/);
    expect(() => checkLaunchConfig({ grid: 1, block: [64, 32] }, limits, out)).toThrow(
      /2048 threads per block is more than 1024, the most device 0 allows \(maxThreadsPerBlock\)/,
    );
    expect(() =>
      checkLaunchConfig(
        { grid: 1, block: 1024 },
        { ...limits, maxThreadsPerBlock: 768, kernelLimitsThreads: true },
        out,
      ),
    ).toThrow(/this kernel allows .*register/);
    expect(() => checkLaunchConfig({ grid: 1, block: 32, sharedMem: 232449 }, limits, out)).toThrow(
      /sharedMemPerBlockOptin/,
    );
    for (const bad of [
      { grid: 0, block: 1 },
      { grid: 1, block: 1.5 },
      { grid: [1, 1, 1, 1], block: 1 },
    ])
      expect(() => checkLaunchConfig(bad, limits, out)).toThrow(/config\.(grid|block)/);
    expect(() => checkLaunchConfig({ grid: 1, block: 1, sharedMem: -1 }, limits, out)).toThrow(RangeError);
    expect(() => checkLaunchConfig({ grid: '1', block: 1 } as never, limits, out)).toThrow(TypeError);
    expect(() => checkLaunchConfig(null as never, limits, out)).toThrow(TypeError);
  });

  test('a config whose getters check another launch meanwhile still gets its own shape, never a wrapped one', () => {
    // A check run from inside another (a getter, a Proxy) stops at the limits after writing its shape
    // down: 2^32 + 5 blocks must not reach the outer launch's Uint32Array as 5.
    const inner = () => {
      try {
        checkLaunchConfig({ grid: 2 ** 32 + 5, block: [2 ** 32 + 3, 1, 1] }, limits, new Uint32Array(7));
      } catch {
        // Refused, as it should be.
      }
    };
    const viaSharedMem = {
      grid: [7, 2],
      block: 32,
      get sharedMem() {
        inner();
        return 16;
      },
    };
    checkLaunchConfig(viaSharedMem, limits, out);
    expect([...out]).toEqual([7, 2, 1, 32, 1, 1, 16]);
    const block = new Proxy([8, 4], {
      get(t, k, r) {
        if (k === '1') inner();
        return Reflect.get(t, k, r) as unknown;
      },
    });
    checkLaunchConfig({ grid: [3, 2, 1], block }, limits, out);
    expect([...out]).toEqual([3, 2, 1, 8, 4, 1, 0]);
  });
});

// The test hook bench/dev/kernels/launch_overhead.ts times a launch + synchronize with, in C++.
const launchLoop = native.debugKernelLaunchLoop;
describeNeeding(
  'the launch loop test hook',
  () => {
    test('refuses a bad repetition count, then a value that is not a kernel, before anything runs', () => {
      const loop = launchLoop!;
      const kernel = {} as unknown as KernelHandle;
      // The addon's errors come from the main realm: compared by name and message.
      const thrown = (f: () => unknown) => {
        try {
          f();
        } catch (e) {
          return `${(e as Error).name}: ${(e as Error).message}`;
        }
        return 'nothing thrown';
      };
      for (const reps of [0, -1, 1_000_001])
        expect(thrown(() => loop(reps, kernel, new Uint32Array(7), new Uint8Array(0)))).toBe(
          'RangeError: reps must be in [1, 1000000]',
        );
      expect(thrown(() => loop(1.5, kernel, new Uint32Array(7), new Uint8Array(0)))).toBe(
        'RangeError: reps must be a 32-bit integer',
      );
      expect(thrown(() => loop(1, kernel, new Uint32Array(7), new Uint8Array(0)))).toBe(
        'TypeError: kernel must be a kernel handle',
      );
    });
  },
  launchLoop ? null : 'a release build has no test hooks',
);

// Kernel.launchArguments with the device calls stubbed: NVRTC compiles (no GPU needed), nothing loads.
describeNeeding(
  'launchArguments',
  () => {
    test('returns a snapshot that a later launch of the kernel does not rewrite', () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-launch-args-'));
      const env = process.env.CUDA_KERNELS_CACHE_DIR;
      process.env.CUDA_KERNELS_CACHE_DIR = dir;
      const kernel = { stub: 'kernel' } as unknown as KernelHandle;
      const spies = [
        jest.spyOn(native, 'kernelsDeviceInfo').mockReturnValue(H100_KERNEL_DEVICE_INFO),
        jest.spyOn(native, 'kernelsLoad').mockReturnValue({} as never),
        // [bytes, paramsChecked, maxThreadsPerBlock, sharedSizeBytes, maxDynamicSharedSizeBytes,
        //  constSizeBytes, localSizeBytes, numRegs, ptxVersion, binaryVersion, offsets…]
        jest.spyOn(native, 'kernelsGetKernel').mockImplementation((...args) => {
          args[6].set([24, 1, 1024, 0, 0, 0, 0, 8, 90, 90, 0, 4, 8, 16]);
          return kernel;
        }),
        jest.spyOn(native, 'kernelsLaunch').mockReturnValue(undefined),
      ];
      try {
        const k = compile(
          `extern "C" __global__ void axpy(int n, float a, const float* x, float* y) {
             int i = blockIdx.x * blockDim.x + threadIdx.x;
             if (i < n) y[i] = a * x[i] + y[i];
           }`,
          { name: `launch-args-${process.pid}.cu` },
        ).kernel('axpy');
        const hx = { tag: 'x' } as unknown as BufferHandle,
          hy = { tag: 'y' } as unknown as BufferHandle;
        const x = new DeviceArray(hx, 'float32', 8, 0),
          y = new DeviceArray(hy, 'float32', 8, 0);
        const first = k.launchArguments({ grid: 4, block: 256 }, 1000, 2, x, y);
        const copy = first.map((v) => (ArrayBuffer.isView(v) ? Array.from(v as Uint8Array) : v));
        k.launch({ grid: [5, 2], block: 128, sharedMem: 64 }, 7, 3, y, null);
        k.launchArguments({ grid: 9, block: 32 }, 1, 1, y, x);
        expect(first.map((v) => (ArrayBuffer.isView(v) ? Array.from(v as Uint8Array) : v))).toEqual(copy);
        expect(Array.from(first[1])).toEqual([4, 1, 1, 256, 1, 1, 0]);
        expect(new DataView(first[2].buffer).getInt32(0, true)).toBe(1000);
        expect(first[0]).toBe(kernel);
        expect(first.slice(3)).toEqual([hx, hy]);
      } finally {
        for (const s of spies) s.mockRestore();
        if (env === undefined) delete process.env.CUDA_KERNELS_CACHE_DIR;
        else process.env.CUDA_KERNELS_CACHE_DIR = env;
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  },
  nvrtcInfo().available ? null : 'NVRTC cannot be loaded (CUDA_KERNELS_NVRTC)',
);
