// `npm run prebuild` without its 1 GB of downloads: prebuildify itself runs here, with the command
// line scripts/prebuild.js gives it, but with a stand-in for the hook that would build in the
// sysroot. It checks what prebuildify hands the hook (which the real hook's parser must accept),
// where the binary lands in the platform package, that node-gyp-build and the loader find it there,
// and that a real addon in that place loads. The hook's own build command is checked as data.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { binaryCandidates, platformPackages, probeInChild } from '../lib/loader';

/* eslint-disable @typescript-eslint/no-require-imports -- the scripts are plain CommonJS */
const { parseNodeGypArgs, buildCommand } = require('../scripts/prebuild-node-gyp.js');
const { prebuildifyArgs, binaryOf, packageDir, stageOf, PREBUILD_NAME } = require('../scripts/prebuild.js');
const findBuild = require('node-gyp-build').path as (dir: string) => string;
/* eslint-enable @typescript-eslint/no-require-imports */

const root = path.join(__dirname, '..');
const hook = path.join(root, 'scripts', 'prebuild-node-gyp.js');
const tuple = `${process.platform}-${process.arch}`;
const localBuild = path.join(root, 'build', 'Release', 'cuda_kernels.node');

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-prebuild-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the command lines', () => {
  test('prebuildify: N-API, stripped, libc-tagged, named cuda_kernels, into the platform package, our hook', () => {
    const args: string[] = prebuildifyArgs('cuda13');
    expect(args[0]).toBe(require.resolve('prebuildify/bin.js'));
    expect(args.slice(1)).toEqual([
      '--napi',
      '--strip',
      '--tag-libc',
      '--name',
      'cuda_kernels',
      '--cwd',
      path.join(root, 'build', 'prebuild-cuda13'),
      '--out',
      path.join(root, 'packages', `${tuple}-cuda13`),
      '--node-gyp',
      hook,
    ]);
    expect(binaryOf('cuda12')).toBe(path.join(packageDir('cuda12'), 'prebuilds', tuple, 'cuda_kernels.glibc.node'));
    // prebuildify spawns the hook without a shell: it must be an executable file.
    expect(fs.statSync(hook).mode & 0o111).not.toBe(0);
    expect(fs.readFileSync(hook, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });

  test("the hook takes node-gyp's arguments and refuses what it cannot build", () => {
    expect(
      parseNodeGypArgs(['rebuild', '--target=24.0.0', '--devdir=/tmp/x', `--arch=${process.arch}`, '--release']),
    ).toEqual({
      target: '24.0.0',
      arch: process.arch,
    });
    expect(() => parseNodeGypArgs(['configure'])).toThrow(/expected node-gyp's "rebuild"/);
    expect(() => parseNodeGypArgs(['rebuild', '--debug'])).toThrow(/only release builds/);
    expect(() => parseNodeGypArgs(['rebuild', '--arch=riscv64'])).toThrow(/cannot cross-compile/);
    expect(() => parseNodeGypArgs(['rebuild', '--runtime=electron'])).toThrow(/electron is not supported/);
    expect(() => parseNodeGypArgs(['rebuild', 'stray'])).toThrow(/unexpected argument/);
  });

  test('the hook builds a release binary with cmake-js into <cwd>/build, in the sysroot unless told not to', () => {
    const env = { CUDA_PATH: root, CUDA_KERNELS_ARCHS: '90', CUDA_KERNELS_PROFILE: '1', PATH: '/usr/bin' };
    const [program, args, childEnv] = buildCommand({ cwd: '/stage', env });
    expect(program).toBe('bash');
    expect(args).toEqual([
      path.join(root, 'scripts', 'release', 'sysroot.sh'),
      'run',
      'node',
      path.join(root, 'scripts', 'build.js'),
      '--out',
      '/stage/build',
    ]);
    // Every architecture of the default list, no -lineinfo, the C++ runtime linked in.
    expect(childEnv).toMatchObject({ CUDA_KERNELS_PORTABLE: '1', CUDA_PATH: root, CK_SYSROOT_BIND: root });
    expect(childEnv.CUDA_KERNELS_ARCHS).toBeUndefined();
    expect(childEnv.CUDA_KERNELS_PROFILE).toBeUndefined();
    const [hostProgram, hostArgs] = buildCommand({ cwd: '/stage', env: { ...env, CK_PREBUILD_SYSROOT: '0' } });
    expect([hostProgram, ...hostArgs]).toEqual([
      process.execPath,
      path.join(root, 'scripts', 'build.js'),
      '--out',
      '/stage/build',
    ]);
    expect(() => buildCommand({ cwd: '/stage', env: {} })).toThrow(/CUDA_PATH/);
  });
});

describe('prebuildify with a stand-in hook', () => {
  // The real addon where this clone has one (then it must also load from its new place), else any
  // shared object: prebuildify strips it, node-gyp-build only looks at its name.
  const source = fs.existsSync(localBuild) ? localBuild : '/usr/lib/x86_64-linux-gnu/libz.so.1';
  const haveSource = fs.existsSync(source);

  (haveSource ? test : test.skip)('puts the stripped binary where node-gyp-build and the loader find it', () => {
    const project = path.join(dir, 'project');
    const [cuda13] = platformPackages();
    const out = path.join(project, 'node_modules', cuda13);
    fs.mkdirSync(out, { recursive: true });
    fs.copyFileSync(path.join(packageDir('cuda13'), 'package.json'), path.join(out, 'package.json'));
    const stage = path.join(dir, 'stage');
    fs.mkdirSync(stage);
    const record = path.join(dir, 'hook-call.json');
    const stub = path.join(dir, 'stub-node-gyp.js');
    fs.writeFileSync(
      stub,
      [
        '#!/usr/bin/env node',
        `const fs = require('fs');`,
        `const { parseNodeGypArgs } = require(${JSON.stringify(hook)});`,
        'const argv = process.argv.slice(2);',
        `fs.writeFileSync(${JSON.stringify(record)}, JSON.stringify({ argv, cwd: process.cwd(), parsed: parseNodeGypArgs(argv) }));`,
        `fs.mkdirSync('build/Release', { recursive: true });`,
        `fs.copyFileSync(${JSON.stringify(source)}, 'build/Release/cuda_kernels.node');`,
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    // scripts/prebuild.js's command line, with the stand-in and temporary folders.
    const args: string[] = prebuildifyArgs('cuda13', stub);
    args[args.indexOf('--cwd') + 1] = stage;
    args[args.indexOf('--out') + 1] = out;
    expect(stageOf('cuda13')).toBe(path.join(root, 'build', 'prebuild-cuda13'));
    const r = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);

    const call = JSON.parse(fs.readFileSync(record, 'utf8'));
    expect(fs.realpathSync(call.cwd)).toBe(fs.realpathSync(stage));
    expect(call.argv[0]).toBe('rebuild');
    expect(call.argv).toContain('--release');
    expect(call.parsed.arch).toBe(process.arch);

    const file = path.join(out, 'prebuilds', tuple, PREBUILD_NAME);
    expect(fs.readdirSync(path.join(out, 'prebuilds', tuple))).toEqual([PREBUILD_NAME]);
    // --strip: no symbol table left (the dynamic symbols a loader needs stay).
    const sections = spawnSync('readelf', ['-S', '-W', file], { encoding: 'utf8' }).stdout;
    expect(sections).not.toMatch(/\.symtab/);
    expect(sections).toMatch(/\.dynsym/);

    expect(findBuild(out)).toBe(file);
    const candidates = binaryCandidates(project, {});
    expect(candidates.find((c) => c.name === cuda13)).toMatchObject({ file, declared: { cuda: '13.0' } });
    if (source === localBuild) {
      // The addon, stripped and moved, still loads; without a GPU it says why there is none.
      const probe = probeInChild(file);
      expect(probe.ok).toBe(true);
    }
  });
});
