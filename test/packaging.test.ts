import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.join(__dirname, '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { findNvcc, nvccMissingMessage, DEFAULT_ARCHS } = require('../scripts/build.js');

describe('package.json', () => {
  test('exports put types first and point into dist/', () => {
    const dot = pkg.exports['.'];
    expect(Object.keys(dot)[0]).toBe('types');
    expect(dot.types).toBe('./dist/index.d.ts');
    expect(pkg.types).toBe('dist/index.d.ts');
    expect(pkg.main).toBe('dist/index.js');
  });

  test('builds against node-api-headers (no header download) and ships prebuilds and sources', () => {
    expect(pkg.binary.napi_versions).toEqual([8]);
    for (const f of ['dist/', 'prebuilds/', 'native/', 'CMakeLists.txt', 'binding.d.ts', 'scripts/install.js']) {
      expect(pkg.files).toContain(f);
    }
    expect(pkg.scripts.install).toBe('node scripts/install.js');
    expect(pkg.bin['cuda-kernels']).toBe('dist/cli/main.js');
    expect(pkg.engines.node).toBeDefined();
    expect(pkg.os).toEqual(['linux']);
    expect(pkg.cpu).toEqual(['x64']);
  });

  test('everything the addon needs at run time is a dependency, not a devDependency', () => {
    for (const dep of ['node-gyp-build', 'cmake-js', 'node-addon-api', 'node-api-headers']) {
      expect(pkg.dependencies[dep]).toBeDefined();
    }
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
