// The binary loader (lib/loader.ts): where it looks, in which order, how fallbacks are proven in a
// child process first, and what it says when nothing loads. Runs without a native binary: the
// "binaries" here are small files made for each case (a corrupt .node, JS modules standing in for
// the addon: one that crashes its process, one that reports a driver too old, one that works).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { NativeBinding } from '../binding';
import {
  BinaryLoadError,
  binaryCandidates,
  loadBinary,
  noBinaryMessage,
  platformPackages,
  probeInChild,
  type BinaryCandidate,
} from '../lib/loader';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-loader-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A JS module standing in for the addon; `body` runs when it is loaded. */
function fakeBinary(name: string, body: string): string {
  const file = path.join(dir, `${name}.js`);
  fs.writeFileSync(file, body);
  return file;
}

const works = (count: number) => `
module.exports = {
  runtimeInfo: () => ({ deviceCount: ${count}, noDeviceCode: ${count ? 'null' : "'cudaErrorNoDevice'"},
                        noDeviceReason: ${count ? 'null' : "'no CUDA device was found'"} }),
  setErrorClass() {},
};`;
const tooOld = `
module.exports = {
  runtimeInfo: () => ({ deviceCount: 0, noDeviceCode: 'cudaErrorInsufficientDriver',
                        noDeviceReason: 'the NVIDIA driver is too old: it supports CUDA 12.2' }),
  setErrorClass() {},
};`;
// Dies the way a binary with a broken static initialiser would: by a signal, not an exception.
const crashes = "process.kill(process.pid, 'SIGSEGV');";

describe('binaryCandidates', () => {
  test('a local build first, then the CUDA 13 and CUDA 12 platform packages, each with why it is absent', () => {
    const root = path.join(dir, 'pkg-empty');
    fs.mkdirSync(root, { recursive: true });
    const c = binaryCandidates(root, {});
    expect(c.map((x) => x.name)).toEqual(['local build', ...platformPackages()]);
    expect(platformPackages('linux', 'x64')).toEqual([
      '@cuda-kernels/linux-x64-cuda13',
      '@cuda-kernels/linux-x64-cuda12',
    ]);
    expect(c[0]).toMatchObject({
      file: path.join(root, 'build', 'Release', 'cuda_kernels.node'),
      missing: 'not built',
    });
    expect(c[1].missing).toBe('not installed');
    expect(c[2].missing).toBe('not installed');
  });

  test("node-gyp-build finds a local build in build/Release and each package's prebuilds/<platform>-<arch>/ file", () => {
    const root = path.join(dir, 'pkg-with-packages');
    fs.mkdirSync(path.join(root, 'build', 'Release'), { recursive: true });
    fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'cuda-kernels' }));
    fs.writeFileSync(path.join(root, 'build', 'Release', 'cuda_kernels.node'), '');
    const [cuda13, cuda12] = platformPackages();
    const tuple = `${process.platform}-${process.arch}`;
    for (const name of [cuda13, cuda12]) {
      fs.mkdirSync(path.join(root, 'node_modules', name, 'prebuilds', tuple), { recursive: true });
      const cudaKernels = { cuda: '13.0', minDriver: '580', maxGlibcSymbol: '2.17' };
      fs.writeFileSync(path.join(root, 'node_modules', name, 'package.json'), JSON.stringify({ name, cudaKernels }));
    }
    // prebuildify's names (--napi --tag-libc): the CUDA 12 package here has a build for musl only,
    // and one for another Node ABI (not N-API), neither of which node-gyp-build may pick.
    const prebuild = path.join(root, 'node_modules', cuda13, 'prebuilds', tuple, 'cuda_kernels.glibc.node');
    fs.writeFileSync(prebuild, '');
    for (const other of ['cuda_kernels.musl.node', 'cuda_kernels.abi1.glibc.node'])
      fs.writeFileSync(path.join(root, 'node_modules', cuda12, 'prebuilds', tuple, other), '');
    const c = binaryCandidates(root, {});
    expect(c[0]).toEqual({ name: 'local build', file: path.join(root, 'build', 'Release', 'cuda_kernels.node') });
    expect(c[1]).toEqual({
      name: cuda13,
      file: prebuild,
      declared: { cuda: '13.0', minDriver: '580', maxGlibcSymbol: '2.17' },
    });
    expect(c[2]).toMatchObject({
      name: cuda12,
      file: path.join(root, 'node_modules', cuda12, 'prebuilds', tuple),
      missing: expect.stringMatching(/^installed without a prebuild for platform=\S+ arch=\S+ .*libc=glibc/),
    });
  });

  test('CUDA_KERNELS_BINARY replaces every other candidate', () => {
    const c = binaryCandidates(path.join(dir, 'pkg-empty'), { CUDA_KERNELS_BINARY: path.join(dir, 'nope.node') });
    expect(c).toEqual([{ name: 'CUDA_KERNELS_BINARY', file: path.join(dir, 'nope.node'), missing: 'no such file' }]);
  });
});

describe('probeInChild', () => {
  test('reports what a working binary sees', () => {
    expect(probeInChild(fakeBinary('works-1', works(1)))).toEqual({
      ok: true,
      info: { deviceCount: 1, noDeviceCode: null, noDeviceReason: null },
    });
  });

  test('a binary that kills its process costs the child, not this process', () => {
    const p = probeInChild(fakeBinary('crashes', crashes));
    expect(p.ok).toBe(false);
    expect(!p.ok && p.error).toMatch(/^child process killed by SIGSEGV/);
  });

  test('a file that is not a loadable binary fails with the loader error', () => {
    const file = path.join(dir, 'corrupt.node');
    fs.writeFileSync(file, 'not an ELF file');
    const p = probeInChild(file);
    expect(p.ok).toBe(false);
    expect(!p.ok && p.error).toMatch(/exit code 1: .*(invalid ELF header|file too short)/);
  });
});

describe('loadBinary', () => {
  const candidate = (name: string, file: string): BinaryCandidate => ({ name, file });

  test('loads the first binary present in this process, without a child', () => {
    let probes = 0;
    const r = loadBinary(
      [
        { name: 'local build', file: '/x', missing: 'not built' },
        candidate('@cuda-kernels/a', fakeBinary('first', works(1))),
      ],
      undefined,
      () => {
        probes++;
        return { ok: false, error: 'unused' };
      },
    );
    expect(probes).toBe(0);
    expect(r.info.name).toBe('@cuda-kernels/a');
    expect(r.info.reason).toBe('the first binary present for this platform');
    expect(r.info.tried.map((t) => [t.name, t.how, t.error])).toEqual([
      ['local build', 'absent', 'not built'],
      ['@cuda-kernels/a', 'in-process', null],
    ]);
  });

  test('when the first fails to load, proves the others in a child before loading one: a crash is survived', () => {
    const corrupt = path.join(dir, 'corrupt.node');
    fs.writeFileSync(corrupt, 'not an ELF file');
    const r = loadBinary([
      candidate('local build', corrupt),
      candidate('@cuda-kernels/crashes', fakeBinary('crashes', crashes)),
      candidate('@cuda-kernels/works', fakeBinary('works-2', works(2))),
    ]);
    expect(r.info.name).toBe('@cuda-kernels/works');
    expect(r.binding.runtimeInfo().deviceCount).toBe(2);
    const [first, second, third] = r.info.tried;
    expect(first).toMatchObject({ how: 'in-process' });
    expect(first.error).toMatch(/invalid ELF header|file too short/);
    expect(second).toMatchObject({ how: 'child process' });
    expect(second.error).toMatch(/killed by SIGSEGV/);
    expect(third).toMatchObject({ how: 'child process', error: null });
    expect(r.info.reason).toMatch(/local build, @cuda-kernels\/crashes did not work/);
  });

  test('a driver too old for the first binary moves on to the CUDA 12 fallback', () => {
    const r = loadBinary([
      candidate('@cuda-kernels/linux-x64-cuda13', fakeBinary('too-old', tooOld)),
      candidate('@cuda-kernels/linux-x64-cuda12', fakeBinary('works-3', works(1))),
    ]);
    expect(r.info.name).toBe('@cuda-kernels/linux-x64-cuda12');
    expect(r.info.tried[0].error).toMatch(/driver is too old/);
  });

  test('keeps the first binary when the driver is too old for every one (it explains the driver)', () => {
    const first = fakeBinary('too-old-a', tooOld);
    const r = loadBinary([candidate('a', first), candidate('b', fakeBinary('too-old-b', tooOld))]);
    expect(r.info.name).toBe('a');
    expect(r.info.reason).toMatch(/no other binary works with this driver/);
    expect(r.binding.runtimeInfo().noDeviceCode).toBe('cudaErrorInsufficientDriver');
  });

  test('no GPU is not a reason to fall back: the binary works, the device is absent', () => {
    const r = loadBinary([
      candidate('a', fakeBinary('no-gpu', works(0))),
      candidate('b', fakeBinary('works-4', works(1))),
    ]);
    expect(r.info.name).toBe('a');
  });

  test('nothing loads: an error listing every candidate and the possible solutions', () => {
    const load = (): NativeBinding => {
      throw new Error('libcuda_kernels: version `GLIBC_2.99` not found');
    };
    let error: unknown;
    try {
      loadBinary(
        [
          { name: 'local build', file: '/nowhere', missing: 'not built' },
          candidate('@cuda-kernels/linux-x64-cuda13', '/pkg/cuda_kernels.node'),
        ],
        load,
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(BinaryLoadError);
    const e = error as BinaryLoadError;
    expect(e.tried).toHaveLength(2);
    expect(e.message).toMatch(/^cuda-kernels: no native binary could be loaded on /);
    expect(e.message).toContain('  - local build (/nowhere): not built');
    // A package that is not installed has no file to show: its name alone.
    const absent = noBinaryMessage([
      { name: '@cuda-kernels/x', file: '@cuda-kernels/x', how: 'absent', error: 'not installed' },
    ]);
    expect(absent).toContain('  - @cuda-kernels/x: not installed\n');
    expect(e.message).toContain(
      '  - @cuda-kernels/linux-x64-cuda13 (/pkg/cuda_kernels.node): libcuda_kernels: version `GLIBC_2.99` not found',
    );
    expect(e.message).toContain('Possible solutions:');
    expect(e.message).toContain("require('cuda-kernels/cpu')");
    // The first solution is one that works before anything is on the registry: a build from source.
    const solutions = e.message.split('Possible solutions:\n')[1].split('\n');
    expect(solutions[0]).toBe("  - Build one for this system's CUDA toolkit (needs nvcc): npx cuda-kernels build");
    expect(e.message).not.toMatch(/npm install --include=optional cuda-kernels/);
  });

  test('the solutions fit the system: a platform package packed from a clone on linux-x64 with glibc', () => {
    const msg = noBinaryMessage([{ name: 'x', file: '/x', how: 'absent', error: 'not installed' }]);
    if (`${process.platform}-${process.arch}` === 'linux-x64') {
      expect(msg).toMatch(/npm pack -w @cuda-kernels\/linux-x64-cuda13/);
    } else {
      expect(msg).toMatch(/made for linux-x64 only/);
    }
    expect(
      noBinaryMessage([{ name: 'CUDA_KERNELS_BINARY', file: '/x', how: 'absent', error: 'no such file' }]),
    ).toMatch(/unset it to use the others/);
  });
});
