#!/usr/bin/env node
// Builds the CUDA addon from source with cmake-js (build/Release/cuda_kernels.node).
// Finds nvcc first so that a missing toolkit gives one clear message instead of a CMake trace.
//
//   node scripts/build.js                 release build, the architectures of CUDA_KERNELS_ARCHS or all
//   CUDA_KERNELS_PROFILE=1 node scripts/build.js   keeps -lineinfo, for ncu and compute-sanitizer
//   node scripts/build.js --out build-cuda12       another build folder (scripts/prebuild.js)
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
// Keep in sync with CMakeLists.txt.
const DEFAULT_ARCHS = '75-real;80-real;86-real;89-real;90';
// The packages a build from source needs; a dependent project does not get them with cuda-kernels
// (they are optional peers), so `npx cuda-kernels build` asks for them.
const BUILD_PACKAGES = ['cmake-js', 'node-addon-api', 'node-api-headers'];

// CUDA_PATH, then the usual install folder, then PATH. Parameters exist for the tests.
function findNvcc(env = process.env, defaults = ['/usr/local/cuda/bin/nvcc']) {
  const candidates = [];
  if (env.CUDA_PATH) candidates.push(path.join(env.CUDA_PATH, 'bin', 'nvcc'));
  candidates.push(...defaults);
  for (const dir of (env.PATH || '').split(path.delimiter)) if (dir) candidates.push(path.join(dir, 'nvcc'));
  return candidates.find((c) => {
    try {
      fs.accessSync(c, fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

function nvccMissingMessage() {
  return [
    'cuda-kernels: cannot build the CUDA addon from source: nvcc was not found.',
    '  Looked in $CUDA_PATH/bin, /usr/local/cuda/bin and on PATH.',
    '  Fix one of:',
    '    - install the CUDA toolkit 13.x (https://developer.nvidia.com/cuda-downloads);',
    '    - export CUDA_PATH=/path/to/cuda (the folder holding bin/nvcc);',
    '    - add the toolkit bin/ folder to PATH.',
    '  Then run: npm run build:native  (or, in a project that depends on this one: npx cuda-kernels build)',
  ].join('\n');
}

/** The build packages that cannot be resolved from `from` (the package root by default). */
function missingBuildPackages(from = root) {
  return BUILD_PACKAGES.filter((name) => {
    try {
      require.resolve(`${name}/package.json`, { paths: [from] });
      return false;
    } catch {
      return true;
    }
  });
}

function truthy(value) {
  return /^(1|on|true|yes)$/i.test(value || '');
}

/** What a build with this environment produces; a different one than last time means a fresh configure. */
function wantedConfig(env = process.env) {
  return {
    archs: env.CUDA_KERNELS_ARCHS || DEFAULT_ARCHS,
    flavour: `profile=${truthy(env.CUDA_KERNELS_PROFILE) ? 'ON' : 'OFF'} portable=${truthy(env.CUDA_KERNELS_PORTABLE) ? 'ON' : 'OFF'}`,
  };
}

/** The configuration of the build in `out`, as CMakeLists.txt recorded it, or undefined. */
function builtConfig(out = path.join(root, 'build')) {
  const read = (f) =>
    fs.existsSync(path.join(out, f)) ? fs.readFileSync(path.join(out, f), 'utf8').trim() : undefined;
  const archs = read('cuda-archs.txt');
  return archs === undefined ? undefined : { archs, flavour: read('cuda-flavour.txt') };
}

function build({ quiet = false, out = path.join(root, 'build') } = {}) {
  const missing = missingBuildPackages();
  if (missing.length) {
    console.error(
      `cuda-kernels: building from source needs ${missing.join(', ')}, which are not installed.\n` +
        `  Run: npm install --save-dev ${BUILD_PACKAGES.join(' ')}`,
    );
    return 1;
  }
  const nvcc = findNvcc();
  if (!nvcc) {
    console.error(nvccMissingMessage());
    return 1;
  }
  const cmakeJs = require.resolve('cmake-js/bin/cmake-js', { paths: [root] });
  const jobs = String(Math.max(1, os.availableParallelism ? os.availableParallelism() : os.cpus().length));
  // `cmake-js compile` reuses an existing configuration; when the requested architectures or
  // flavour differ from the ones built (an environment variable set or unset since), configure
  // again from scratch.
  const wanted = wantedConfig();
  const built = builtConfig(out);
  const same = built && built.archs === wanted.archs && built.flavour === wanted.flavour;
  const command = same || !built ? 'compile' : 'rebuild';
  const args = [
    cmakeJs,
    command,
    '--directory',
    root,
    '--out',
    out,
    '--parallel',
    jobs,
    `--CDCMAKE_CUDA_COMPILER=${nvcc}`,
  ];
  if (!quiet)
    console.error(`cuda-kernels: building the addon with ${nvcc} (${jobs} jobs; ${wanted.archs}; ${wanted.flavour})`);
  const started = Date.now();
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: quiet ? 'pipe' : 'inherit', env: process.env });
  if (r.status !== 0) {
    if (quiet) process.stderr.write(String(r.stdout || '') + String(r.stderr || ''));
    console.error('cuda-kernels: the build failed (see the output above).');
    return r.status || 1;
  }
  if (!quiet) console.error(`cuda-kernels: built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return 0;
}

module.exports = {
  build,
  findNvcc,
  nvccMissingMessage,
  missingBuildPackages,
  wantedConfig,
  builtConfig,
  DEFAULT_ARCHS,
  BUILD_PACKAGES,
};

if (require.main === module) {
  const i = process.argv.indexOf('--out');
  process.exit(build(i > 0 ? { out: path.resolve(process.argv[i + 1]) } : {}));
}
