#!/usr/bin/env node
// Builds the CUDA addon from source with cmake-js (build/Release/cuda_kernels.node, where
// node-gyp-build finds it). Finds nvcc first so that a missing toolkit gives one clear message
// instead of a CMake trace. The build tools (cmake-js, node-addon-api, node-api-headers) are dev
// dependencies in a clone; where cuda-kernels is installed as a dependency they are not installed
// with it (they would triple the install), so the first build fetches the pinned versions below
// into build-tools/ with npm, once.
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
// The packages a build from source needs, at the versions of the lockfile (a test keeps them equal).
const BUILD_TOOLS = { 'cmake-js': '8.0.0', 'node-addon-api': '8.9.2', 'node-api-headers': '1.9.0' };
const BUILD_PACKAGES = Object.keys(BUILD_TOOLS);
// Where a build fetches them when they cannot be resolved from the package (not under build/,
// which cmake-js rebuild empties).
const TOOLS_DIR = path.join(root, 'build-tools');

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
    '  Then run: npx cuda-kernels build  (in a clone: npm run build:native)',
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

/**
 * The environment for a nested npm: without the npm_config_* of the npm that runs this script (its
 * global flag, prefix, omit or workspace settings would redirect the install), keeping those that
 * say how to reach the registry.
 */
function nestedNpmEnv(env = process.env) {
  const keep =
    /^npm_config_(cache|cafile|ca|cert|key|userconfig|globalconfig|registry|.*proxy|strict_ssl|offline|prefer_offline|prefer_online|fetch_.*|@.*|\/\/.*)$/i;
  return Object.fromEntries(Object.entries(env).filter(([k]) => !/^npm_config_/i.test(k) || keep.test(k)));
}

/** The npm command line: the npm running this script (npm_execpath), else npm on the PATH. */
function npmCommand(env = process.env) {
  return env.npm_execpath && /\.c?js$/.test(env.npm_execpath) ? [process.execPath, env.npm_execpath] : ['npm'];
}

/**
 * The folder to resolve the build tools from: the package's own (a clone's dev dependencies, or a
 * project that has them), else build-tools/, fetched there at the pinned versions when missing.
 * Returns undefined (having said why) when they cannot be had.
 */
function buildTools({ quiet = false } = {}) {
  if (missingBuildPackages(root).length === 0) return root;
  if (missingBuildPackages(TOOLS_DIR).length === 0) return TOOLS_DIR;
  const specs = BUILD_PACKAGES.map((name) => `${name}@${BUILD_TOOLS[name]}`);
  if (!quiet) console.error(`cuda-kernels: fetching the build tools into build-tools/: ${specs.join(' ')}`);
  fs.mkdirSync(TOOLS_DIR, { recursive: true });
  fs.writeFileSync(
    path.join(TOOLS_DIR, 'package.json'),
    JSON.stringify({ name: 'cuda-kernels-build-tools', private: true, dependencies: BUILD_TOOLS }, null, 2) + '\n',
  );
  const [cmd, ...pre] = npmCommand();
  const args = [
    ...pre,
    'install',
    '--prefix',
    TOOLS_DIR,
    '--no-package-lock',
    '--ignore-scripts',
    '--no-audit',
    '--no-fund',
  ];
  const r = spawnSync(cmd, args, {
    cwd: TOOLS_DIR,
    env: nestedNpmEnv(),
    stdio: quiet ? 'pipe' : 'inherit',
    encoding: 'utf8',
  });
  if (r.status !== 0 || missingBuildPackages(TOOLS_DIR).length) {
    if (quiet) process.stderr.write(String(r.stdout || '') + String(r.stderr || ''));
    console.error(
      `cuda-kernels: could not fetch the build tools (${r.error ? r.error.message : `npm exited with ${r.status}`}).\n` +
        `  Install them yourself and build: npm install --save-dev ${specs.join(' ')} && npx cuda-kernels build`,
    );
    return undefined;
  }
  return TOOLS_DIR;
}

function build({ quiet = false, out = path.join(root, 'build') } = {}) {
  const nvcc = findNvcc();
  if (!nvcc) {
    console.error(nvccMissingMessage());
    return 1;
  }
  const tools = buildTools({ quiet });
  if (!tools) return 1;
  const cmakeJs = require.resolve('cmake-js/bin/cmake-js', { paths: [tools] });
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
  // cmake-js finds node-addon-api from the package root; NODE_PATH adds build-tools/ to that search.
  const env = tools === root ? process.env : { ...process.env, NODE_PATH: path.join(tools, 'node_modules') };
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: quiet ? 'pipe' : 'inherit', env });
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
  buildTools,
  nestedNpmEnv,
  npmCommand,
  wantedConfig,
  builtConfig,
  DEFAULT_ARCHS,
  BUILD_PACKAGES,
  BUILD_TOOLS,
  TOOLS_DIR,
};

if (require.main === module) {
  const i = process.argv.indexOf('--out');
  process.exit(build(i > 0 ? { out: path.resolve(process.argv[i + 1]) } : {}));
}
