import * as fs from 'node:fs';
import * as path from 'node:path';

import * as ck from '../lib';
import { native } from '../lib/native';
import { expectThrows } from './helpers/errors';
import { describeNoGpu, gpuCount } from './helpers/gpu';

describe('addon', () => {
  test('loads and exports every function binding.d.ts declares, and nothing else', () => {
    const dts = fs.readFileSync(path.join(__dirname, '..', 'binding.d.ts'), 'utf8');
    const body = dts.slice(dts.indexOf('export interface NativeBinding'));
    const declared = [...body.matchAll(/^\s{2}(\w+)(?:<[^>]*>)?\(/gm)].map((m) => m[1]).sort();
    // `name?(` marks what only development builds have (the test hooks).
    const optional = [...body.matchAll(/^\s{2}(\w+)\?\(/gm)].map((m) => m[1]);
    expect(declared.length).toBeGreaterThan(10);
    expect(optional.sort()).toEqual([
      'debugCublasKChunk',
      'debugCurrentDevice',
      'debugFailStagedUploads',
      'debugFault',
      'debugGemmSplits',
      'debugHoldStream',
      'debugHostCopy',
      'debugKernelLaunchLoop',
      'debugReleaseStream',
      'debugStreamBusy',
    ]);
    expect(
      Object.keys(native)
        .filter((k) => !optional.includes(k))
        .sort(),
    ).toEqual(declared);
    for (const name of [...declared, ...optional.filter((k) => k in native)])
      expect(typeof (native as unknown as Record<string, unknown>)[name]).toBe('function');
  });

  test('runtimeInfo reports the CUDA version the binary was built with', () => {
    const info = ck.runtimeInfo();
    expect(info.runtimeVersion).toMatch(/^1[2-9]\.\d$/);
    expect(info.deviceCount).toBe(gpuCount);
    if (gpuCount === 0) expect(info.noDeviceReason).toMatch(/no CUDA device was found|driver is too old/);
    else expect(info.noDeviceReason).toBeNull();
  });

  test('cuBLAS is either loaded with a version, or its absence is a clear CudaError', () => {
    const info = ck.cublasInfo();
    if (info.available) {
      expect(info.version).toMatch(/^\d+\.\d+\.\d+$/);
      expect(native.cublasLoad()).toBe(info.version);
    } else {
      expect(info.code).toBe('cublasLibraryNotFound');
      let caught: unknown;
      try {
        native.cublasLoad();
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(ck.CudaError);
      expect((caught as ck.CudaError).code).toBe('cublasLibraryNotFound');
      expect((caught as ck.CudaError).message).toMatch(/libcublas\.so\.13/);
    }
  });

  test('native argument re-checks reject foreign handles without crashing', () => {
    expectThrows(() => native.free({} as never), 'TypeError', /device buffer handle/);
    expectThrows(() => native.download(42 as never, new Float32Array(1)), 'TypeError');
    expectThrows(() => native.timerElapsed({} as never), 'TypeError', /event timer handle/);
    expectThrows(() => native.alloc(0, 9 as never, 1), 'RangeError', /dtype/);
    expectThrows(() => native.alloc(0, 0, -1), 'RangeError', /length/);
    expectThrows(() => native.alloc(0, 0, 0.5), 'RangeError', /length/);
    expectThrows(() => native.alloc('0' as never, 0, 1), 'TypeError', /device/);
  });
});

describeNoGpu('without a GPU', () => {
  const gpuCalls: [string, () => unknown][] = [
    ['upload', () => ck.upload(new Float32Array(4))],
    ['empty', () => ck.empty('float64', 4)],
    ['zeros', () => ck.zeros('int32', 0)],
    ['deviceProperties', () => ck.deviceProperties(0)],
    ['memoryInfo', () => ck.memoryInfo(0)],
    ['synchronize', () => ck.synchronize(0)],
    ['EventTimer', () => new ck.EventTimer(0)],
    ['timed', () => ck.timed(() => 1)],
  ];

  test('deviceCount() is 0', () => {
    expect(ck.deviceCount()).toBe(0);
  });

  test.each(gpuCalls)('%s throws a CudaError saying no CUDA device was found', (_name, call) => {
    let caught: unknown;
    try {
      call();
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ck.CudaError);
    const err = caught as ck.CudaError;
    expect(err.message).toMatch(/no CUDA device was found/);
    expect(err.code).toMatch(/^cudaError/);
    expect(err.call).toBe('cudaGetDeviceCount');
  });

  test('the CPU references still work', () => {
    const a = ck.cpu.randomArray(Float64Array, 100, 7);
    expect(ck.cpu.relativeError(a, a)).toBe(0);
  });
});
