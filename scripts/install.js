#!/usr/bin/env node
// The install step (package.json "install"): in a clone on `npm install`, and in a project that
// installs cuda-kernels. node-gyp-build's convention: nothing to build when a binary already loads
// (a platform package's prebuild, or an earlier build); otherwise build one for the local CUDA
// toolkit (scripts/build.js: cmake-js, fetching the build tools when they are not installed).
// `npm install --build-from-source` (npm_config_build_from_source=true) builds in any case;
// CUDA_KERNELS_SKIP_BUILD=1 builds nothing. Without nvcc it prints one line and succeeds: the CPU
// references (cuda-kernels/cpu) need no binary, and `npm test` runs the suites that need none.
//
// Where the install was skipped, build/not-built.txt says why, for test/helpers/native-suites.js
// (`npm test`) to repeat. In a clone it first compiles the TypeScript (dist/), which the CLI runs.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const { build, findNvcc } = require('./build.js');

const NOT_BUILT = path.join(root, 'build', 'not-built.txt');

function truthy(value) {
  return /^(1|on|true|yes)$/i.test(value || '');
}

/** node-gyp-build's switch for a build even where a prebuild loads. */
function buildFromSource(env = process.env, argv = process.argv) {
  return env.npm_config_build_from_source === 'true' || argv.includes('--build-from-source');
}

/** What the install step does, and the one line it says about it. Parameters exist for the tests. */
function decide({ env = process.env, argv = process.argv, loads = loadedBinary, nvcc = findNvcc } = {}) {
  const forced = buildFromSource(env, argv);
  if (!forced) {
    const loaded = loads();
    if (loaded)
      return { action: 'none', line: `cuda-kernels: ${loaded.name} loads (${loaded.file}); nothing to build.` };
    if (truthy(env.CUDA_KERNELS_SKIP_BUILD)) {
      return {
        action: 'skip',
        reason: 'CUDA_KERNELS_SKIP_BUILD was set for npm install',
        line: 'cuda-kernels: CUDA_KERNELS_SKIP_BUILD is set: not building the addon; cuda-kernels/cpu works without it.',
      };
    }
  }
  const found = nvcc(env);
  if (!found) {
    return {
      action: 'skip',
      reason: 'npm install found no nvcc to build it with',
      line:
        'cuda-kernels: no prebuilt binary for this system and no nvcc (CUDA toolkit; looked in $CUDA_PATH/bin, ' +
        '/usr/local/cuda/bin, PATH) to build one: the GPU functions are unavailable, cuda-kernels/cpu works.',
    };
  }
  return {
    action: 'build',
    line: forced
      ? `cuda-kernels: building from source (asked for) with ${found}.`
      : `cuda-kernels: no binary loads here; building one for the local CUDA toolkit (${found}).`,
  };
}

/**
 * The binary the package would load, tried in a child process (a broken one must not stop the
 * install), through the same loader as at run time; undefined when none loads or the loader is not
 * compiled yet.
 */
function loadedBinary() {
  const loader = path.join(root, 'dist', 'loader.js');
  if (!fs.existsSync(loader)) return undefined;
  const script = `
    const { binaryCandidates, loadBinary } = require(process.argv[1]);
    const { info } = loadBinary(binaryCandidates(process.argv[2]));
    process.stdout.write(JSON.stringify({ name: info.name, file: info.file }));`;
  const r = spawnSync(process.execPath, ['-e', script, loader, root], { encoding: 'utf8' });
  if (r.status !== 0) return undefined;
  try {
    return JSON.parse(r.stdout);
  } catch {
    return undefined;
  }
}

/** In a clone (lib/ and the TypeScript config are there, not shipped): compile dist/. */
function compileTypeScript() {
  if (!fs.existsSync(path.join(root, 'tsconfig.build.json'))) return 0;
  let tsc;
  try {
    tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
  } catch {
    console.error('cuda-kernels: typescript is not installed (npm install --omit=dev?): dist/ not compiled.');
    return 0;
  }
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) console.error('cuda-kernels: compiling the TypeScript (dist/) failed; see above.');
  return r.status ?? 1;
}

function main() {
  const compiled = compileTypeScript();
  if (compiled !== 0) return compiled;
  const d = decide();
  console.error(d.line);
  if (d.action === 'skip') {
    fs.mkdirSync(path.dirname(NOT_BUILT), { recursive: true });
    fs.writeFileSync(NOT_BUILT, `${d.reason}\n`);
    return 0;
  }
  fs.rmSync(NOT_BUILT, { force: true });
  if (d.action === 'none') return 0;
  const status = build();
  if (status !== 0) {
    console.error(
      'cuda-kernels: the install failed building the addon. To install without it (cuda-kernels/cpu works, the GPU ' +
        'functions throw): CUDA_KERNELS_SKIP_BUILD=1 npm install',
    );
  }
  return status;
}

module.exports = { decide, buildFromSource, loadedBinary, NOT_BUILT };

if (require.main === module) process.exit(main());
