// The install step (scripts/install.js, package.json "install"): node-gyp-build's convention of
// building only where no binary loads, its switches, its one line without nvcc, and the reason it
// leaves for `npm test` when it skipped the build. The build itself and the build tools it fetches
// are exercised end to end by scripts/check-package.sh (CI); here the decisions and the pieces.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/* eslint-disable @typescript-eslint/no-require-imports -- the scripts are plain CommonJS */
const { decide, buildFromSource } = require('../scripts/install.js');
const { nestedNpmEnv, npmCommand, buildTools, TOOLS_DIR } = require('../scripts/build.js');
const { notBuiltReason } = require('./helpers/native-suites.js');
/* eslint-enable @typescript-eslint/no-require-imports */

const root = path.join(__dirname, '..');
const loads = () => ({ name: '@cuda-kernels/linux-x64-cuda13', file: '/x/cuda_kernels.glibc.node' });
const none = () => undefined;
const nvcc = () => '/usr/local/cuda/bin/nvcc';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-install-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('what the install step does', () => {
  test('a binary that loads (a prebuild, an earlier build): nothing to build', () => {
    const d = decide({ env: {}, argv: [], loads, nvcc });
    expect(d).toEqual({
      action: 'none',
      line: 'cuda-kernels: @cuda-kernels/linux-x64-cuda13 loads (/x/cuda_kernels.glibc.node); nothing to build.',
    });
  });

  test('no binary and nvcc: a build for the local toolkit', () => {
    expect(decide({ env: {}, argv: [], loads: none, nvcc })).toMatchObject({ action: 'build' });
  });

  test('--build-from-source, as npm passes it (npm_config_build_from_source=true), builds even so', () => {
    expect(buildFromSource({ npm_config_build_from_source: 'true' }, [])).toBe(true);
    expect(buildFromSource({}, ['node', 'install.js', '--build-from-source'])).toBe(true);
    expect(buildFromSource({ npm_config_build_from_source: 'false' }, [])).toBe(false);
    const env = { npm_config_build_from_source: 'true', CUDA_KERNELS_SKIP_BUILD: '1' };
    expect(decide({ env, argv: [], loads, nvcc })).toMatchObject({
      action: 'build',
      line: 'cuda-kernels: building from source (asked for) with /usr/local/cuda/bin/nvcc.',
    });
  });

  test('no binary and no nvcc: one line saying what is missing and that cuda-kernels/cpu works', () => {
    const d = decide({ env: {}, argv: [], loads: none, nvcc: none });
    expect(d.action).toBe('skip');
    expect(d.line).not.toContain('\n');
    expect(d.line).toMatch(/^cuda-kernels: no prebuilt binary for this system and no nvcc \(CUDA toolkit;/);
    expect(d.line).toMatch(/cuda-kernels\/cpu works\.$/);
    expect(d.reason).toBe('npm install found no nvcc to build it with');
  });

  test('CUDA_KERNELS_SKIP_BUILD: no build, and that is the reason given (not "nvcc missing?")', () => {
    const d = decide({ env: { CUDA_KERNELS_SKIP_BUILD: '1' }, argv: [], loads: none, nvcc });
    expect(d).toMatchObject({ action: 'skip', reason: 'CUDA_KERNELS_SKIP_BUILD was set for npm install' });
    expect(decide({ env: { CUDA_KERNELS_SKIP_BUILD: '0' }, argv: [], loads: none, nvcc }).action).toBe('build');
  });
});

describe('the reason npm test gives for the suites it leaves out', () => {
  test('the install step writes why it skipped the build, and npm test repeats it', () => {
    // A copy of the two scripts, so the run writes into a folder of its own.
    const pkg = path.join(dir, 'pkg');
    fs.mkdirSync(path.join(pkg, 'scripts'), { recursive: true });
    for (const f of ['install.js', 'build.js']) {
      fs.copyFileSync(path.join(root, 'scripts', f), path.join(pkg, 'scripts', f));
    }
    const r = spawnSync(process.execPath, [path.join(pkg, 'scripts', 'install.js')], {
      encoding: 'utf8',
      env: { ...process.env, CUDA_KERNELS_SKIP_BUILD: '1', npm_config_build_from_source: '' },
    });
    expect(r.status).toBe(0);
    expect(r.stderr.trim()).toBe(
      'cuda-kernels: CUDA_KERNELS_SKIP_BUILD is set: not building the addon; cuda-kernels/cpu works without it.',
    );
    const note = path.join(pkg, 'build', 'not-built.txt');
    expect(notBuiltReason(note)).toBe('not built: CUDA_KERNELS_SKIP_BUILD was set for npm install');
    // Without a note: what is missing now, never a guess with a question mark.
    expect(notBuiltReason(path.join(dir, 'no-note.txt'))).toMatch(/^not built(: no nvcc found|, though nvcc is at )/);
  });
});

describe('the build tools outside a clone', () => {
  test('are resolved from the package where it has them (a clone: its dev dependencies)', () => {
    expect(buildTools({ quiet: true })).toBe(root);
    expect(TOOLS_DIR).toBe(path.join(root, 'build-tools'));
  });

  test("the nested npm that fetches them drops the outer npm's global, prefix and omit settings", () => {
    const env = nestedNpmEnv({
      PATH: '/usr/bin',
      npm_config_global: 'true',
      npm_config_prefix: '/usr',
      npm_config_local_prefix: '/proj',
      npm_config_omit: 'optional',
      npm_config_build_from_source: 'true',
      npm_config_cache: '/root/.npm',
      npm_config_registry: 'https://registry.example/',
      npm_config_https_proxy: 'http://proxy:3128',
      npm_config_userconfig: '/root/.npmrc',
    });
    expect(env).toEqual({
      PATH: '/usr/bin',
      npm_config_cache: '/root/.npm',
      npm_config_registry: 'https://registry.example/',
      npm_config_https_proxy: 'http://proxy:3128',
      npm_config_userconfig: '/root/.npmrc',
    });
    expect(npmCommand({ npm_execpath: '/usr/lib/node_modules/npm/bin/npm-cli.js' })).toEqual([
      process.execPath,
      '/usr/lib/node_modules/npm/bin/npm-cli.js',
    ]);
    expect(npmCommand({})).toEqual(['npm']);
  });
});
