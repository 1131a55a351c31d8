import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const root = path.join(__dirname, '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
/* eslint-disable @typescript-eslint/no-require-imports -- the scripts are plain CommonJS */
const build = require('../scripts/build.js');
const { findNvcc, nvccMissingMessage, missingBuildPackages, wantedConfig, builtConfig, DEFAULT_ARCHS, BUILD_TOOLS } =
  build;
const {
  compareVersions,
  glibcSymbolVersions,
  neededLibraries,
  MAX_BYTES,
  binaryOf,
} = require('../scripts/prebuild.js');
/* eslint-enable @typescript-eslint/no-require-imports */

describe('package.json', () => {
  test('exports put types first and point into dist/, with a cpu entry', () => {
    const dot = pkg.exports['.'];
    expect(Object.keys(dot)[0]).toBe('types');
    expect(dot.types).toBe('./dist/index.d.ts');
    expect(pkg.types).toBe('dist/index.d.ts');
    expect(pkg.main).toBe('dist/index.js');
    expect(pkg.exports['./cpu']).toEqual({ types: './dist/cpu/index.d.ts', default: './dist/cpu/index.js' });
  });

  test('ships the TypeScript build, the sources to build from and the install step, no binary', () => {
    expect(pkg.binary.napi_versions).toEqual([8]);
    for (const f of ['dist/', 'native/', 'CMakeLists.txt', 'binding.d.ts', 'scripts/build.js', 'scripts/install.js']) {
      expect(pkg.files).toContain(f);
    }
    expect(pkg.files).not.toContain('prebuilds/');
    // node-gyp-build's convention: an install step that builds only where no prebuild loads.
    expect(pkg.scripts.install).toBe('node scripts/install.js');
    for (const s of ['preinstall', 'postinstall', 'prepare']) expect(pkg.scripts[s]).toBeUndefined();
    // `npm run build` would first run the "prebuild" script (npm's pre- hook): no "build" script.
    expect(pkg.scripts.prebuild).toBe('node scripts/prebuild.js');
    expect(pkg.scripts.build).toBeUndefined();
    expect(pkg.bin['cuda-kernels']).toBe('dist/cli/main.js');
    expect(pkg.engines.node).toBeDefined();
    // The main package installs everywhere; the platform packages carry os/cpu/libc.
    expect(pkg.os).toBeUndefined();
    expect(pkg.cpu).toBeUndefined();
  });

  // The GPU hosts run the suites with Node alone: without npm this one skips, saying so (only a missing
  // program skips it; npm failing fails it).
  const npmMissing = spawnSync('npm', ['--version'], { encoding: 'utf8' }).error !== undefined;
  (npmMissing ? test.skip : test)(
    'the packed package runs only scripts it ships: each install-time script names a file in the tarball' +
      (npmMissing ? ' [skipped: no npm here]' : ''),
    () => {
      const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' });
      expect(r.status).toBe(0);
      const files = new Set((JSON.parse(r.stdout)[0].files as { path: string }[]).map((f) => f.path));
      expect(files.has('package.json')).toBe(true);
      const installTime = ['preinstall', 'install', 'postinstall', 'prepare'].filter((k) => pkg.scripts[k]);
      expect(installTime).toEqual(['install']);
      for (const k of installTime) {
        const [program, ...args] = pkg.scripts[k].split(' ');
        expect(program).toBe('node');
        expect({ script: k, file: args[0], shipped: files.has(args[0]) }).toEqual({
          script: k,
          file: args[0],
          shipped: true,
        });
      }
      // What the install step and the build it may start require at run time ships too.
      for (const f of ['scripts/build.js', 'dist/loader.js', 'CMakeLists.txt']) expect(files.has(f)).toBe(true);
    },
  );

  test('the platform packages are workspaces and optional dependencies, each declaring its system', () => {
    expect(pkg.workspaces).toEqual(['packages/*']);
    const dirs = fs.readdirSync(path.join(root, 'packages')).sort();
    expect(dirs).toEqual(['linux-x64-cuda12', 'linux-x64-cuda13']);
    for (const d of dirs) {
      const p = JSON.parse(fs.readFileSync(path.join(root, 'packages', d, 'package.json'), 'utf8'));
      expect(p.name).toBe(`@cuda-kernels/${d}`);
      expect(p.version).toBe(pkg.version);
      expect(pkg.optionalDependencies[p.name]).toBe(pkg.version);
      expect(p.os).toEqual(['linux']);
      expect(p.cpu).toEqual(['x64']);
      expect(p.libc).toEqual(['glibc']);
      // prebuildify's layout, where node-gyp-build looks: prebuilds/<platform>-<arch>/*.node.
      expect(p.files).toEqual(['prebuilds/', 'build-info.json']);
      expect(p.cudaKernels.maxGlibcSymbol).toMatch(/^2\.\d+$/);
      expect(p.description).toContain(`glibc ${p.cudaKernels.maxGlibcSymbol} or newer`);
      expect(p.description).toContain(`R${p.cudaKernels.minDriver} or newer`);
    }
  });

  test('the runtime dependencies are few: node-gyp-build finds the binary; charts are optional peers', () => {
    expect(Object.keys(pkg.dependencies).sort()).toEqual(['commander', 'node-gyp-build', 'string-width']);
    // node-gyp-build has no dependencies of its own (the install budget: check-package.sh).
    const ngb = JSON.parse(fs.readFileSync(require.resolve('node-gyp-build/package.json'), 'utf8'));
    expect(ngb.dependencies ?? {}).toEqual({});
    // prebuildify makes the release binaries: a development tool, never installed with the package.
    expect(pkg.devDependencies.prebuildify).toBeDefined();
    for (const dep of ['prebuildify', 'cmake-js', 'node-addon-api', 'node-api-headers', 'vega', 'vega-lite']) {
      expect(pkg.dependencies[dep]).toBeUndefined();
      expect(pkg.optionalDependencies[dep]).toBeUndefined();
    }
    // The build tools are fetched by the build that needs them, not declared for every install.
    for (const dep of ['cmake-js', 'node-addon-api', 'node-api-headers'])
      expect(pkg.peerDependencies[dep]).toBeUndefined();
  });

  test("the build tools a build fetches are pinned to the lockfile's versions", () => {
    expect(Object.keys(BUILD_TOOLS).sort()).toEqual(['cmake-js', 'node-addon-api', 'node-api-headers']);
    const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
    for (const [name, version] of Object.entries(BUILD_TOOLS)) {
      expect({ name, version }).toEqual({ name, version: lock.packages[`node_modules/${name}`].version });
      expect(pkg.devDependencies[name]).toBeDefined();
    }
  });

  test('lib/cpu loads nothing native (cuda-kernels/cpu works without a binary)', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { reachesNative } = require('./helpers/native-suites.js');
    expect(reachesNative(path.join(root, 'lib', 'cpu', 'index.ts'))).toBe(false);
    // The same scan does see the main entry load it, so the check above can fail.
    expect(reachesNative(path.join(root, 'lib', 'index.ts'))).toBe(true);
  });
});

describe('building from source', () => {
  test('finds nvcc from CUDA_PATH, then the default folders, then PATH', () => {
    expect(findNvcc({ PATH: '/nonexistent' }, [])).toBeUndefined();
    const nvcc = findNvcc();
    if (nvcc !== undefined) expect(path.basename(nvcc)).toBe('nvcc');
  });

  test('the default architecture list is the same in build.js and CMakeLists.txt', () => {
    const cmake = fs.readFileSync(path.join(root, 'CMakeLists.txt'), 'utf8');
    expect(DEFAULT_ARCHS).toBe('75-real;80-real;86-real;89-real;90');
    expect(cmake).toContain(`set(CMAKE_CUDA_ARCHITECTURES "${DEFAULT_ARCHS}" CACHE STRING`);
  });

  test('a missing nvcc gives one message with the fixes', () => {
    const msg: string = nvccMissingMessage();
    expect(msg).toMatch(/nvcc was not found/);
    expect(msg).toMatch(/CUDA_PATH/);
    expect(msg).toMatch(/PATH/);
    expect(msg).toMatch(/npx cuda-kernels build/);
  });
});

describe('build flavours', () => {
  test('release by default; CUDA_KERNELS_PROFILE keeps -lineinfo, CUDA_KERNELS_PORTABLE links the C++ runtime', () => {
    expect(wantedConfig({})).toEqual({ archs: DEFAULT_ARCHS, flavour: 'profile=OFF portable=OFF' });
    expect(wantedConfig({ CUDA_KERNELS_PROFILE: '1', CUDA_KERNELS_ARCHS: '90' })).toEqual({
      archs: '90',
      flavour: 'profile=ON portable=OFF',
    });
    expect(wantedConfig({ CUDA_KERNELS_PORTABLE: 'true', CUDA_KERNELS_PROFILE: '0' }).flavour).toBe(
      'profile=OFF portable=ON',
    );
    const cmake = fs.readFileSync(path.join(root, 'CMakeLists.txt'), 'utf8');
    // -lineinfo only inside the profiling branch, never in the common CUDA flags.
    expect(cmake).toMatch(/if\(CK_PROFILE\)\n\s+target_compile_options\([^)]*-lineinfo/);
    const code = cmake.replace(/#.*$/gm, '');
    expect(code.match(/-lineinfo/g)).toHaveLength(1);
    expect(cmake).toContain('--compress-mode=size');
  });

  test('a build folder records its configuration, so a different one configures afresh', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-build-'));
    try {
      expect(builtConfig(dir)).toBeUndefined();
      fs.writeFileSync(path.join(dir, 'cuda-archs.txt'), '90');
      fs.writeFileSync(path.join(dir, 'cuda-flavour.txt'), 'profile=ON portable=OFF');
      expect(builtConfig(dir)).toEqual({ archs: '90', flavour: 'profile=ON portable=OFF' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('building from source names the missing build packages', () => {
    expect(missingBuildPackages(os.tmpdir())).toEqual(['cmake-js', 'node-addon-api', 'node-api-headers']);
    expect(missingBuildPackages(root)).toEqual([]);
  });
});

describe('release binaries (npm run prebuild)', () => {
  test('the glibc floor is read off the dynamic symbols', () => {
    expect(compareVersions('2.17', '2.4')).toBeGreaterThan(0);
    expect(compareVersions('2.3.4', '2.3.4')).toBe(0);
    expect(compareVersions('2.28', '2.31')).toBeLessThan(0);
    // node itself needs glibc symbols; the highest is what its own floor is.
    const versions: string[] = glibcSymbolVersions(process.execPath);
    expect(versions.length).toBeGreaterThan(3);
    expect([...versions].sort(compareVersions)).toEqual(versions);
    expect(neededLibraries(process.execPath)).toContain('libc.so.6');
  });

  const pkgDir = (v: string) => path.join(root, 'packages', `linux-x64-${v}`);
  for (const v of ['cuda13', 'cuda12']) {
    const file: string = binaryOf(v);
    const present = fs.existsSync(file);
    (present ? test : test.skip)(
      `${v}: within 10 MB and the declared glibc, no libstdc++${present ? '' : ' [skipped: no npm run prebuild here]'}`,
      () => {
        const declared = JSON.parse(fs.readFileSync(path.join(pkgDir(v), 'package.json'), 'utf8')).cudaKernels;
        expect(fs.statSync(file).size).toBeLessThanOrEqual(MAX_BYTES);
        const versions: string[] = glibcSymbolVersions(file);
        expect(compareVersions(versions[versions.length - 1], declared.maxGlibcSymbol)).toBeLessThanOrEqual(0);
        expect(neededLibraries(file).filter((l: string) => /stdc\+\+|gcc_s/.test(l))).toEqual([]);
        const info = JSON.parse(fs.readFileSync(path.join(pkgDir(v), 'build-info.json'), 'utf8'));
        expect(info.cudaArchitectures).toBe(DEFAULT_ARCHS);
        expect(info.lineinfo).toBe(false);
      },
    );
  }
});
