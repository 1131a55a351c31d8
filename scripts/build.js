#!/usr/bin/env node
// Builds the CUDA addon from source with cmake-js (build/Release/cuda_kernels.node).
// Finds nvcc first so that a missing toolkit gives one clear message instead of a CMake trace.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
// Keep in sync with CMakeLists.txt.
const DEFAULT_ARCHS = '75-real;80-real;86-real;89-real;90';

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

function build({ quiet = false } = {}) {
  const nvcc = findNvcc();
  if (!nvcc) {
    console.error(nvccMissingMessage());
    return 1;
  }
  const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
  const jobs = String(Math.max(1, os.availableParallelism ? os.availableParallelism() : os.cpus().length));
  // `cmake-js compile` reuses an existing configuration; when the requested architecture list or the
  // release switch (CUDA_KERNELS_RELEASE=1: no test hooks) differs from the one built, configure again.
  const wanted = process.env.CUDA_KERNELS_ARCHS || DEFAULT_ARCHS;
  const wantedHooks = process.env.CUDA_KERNELS_RELEASE === '1' ? 'OFF' : 'ON';
  const read = (name, fallback) => {
    const file = path.join(root, 'build', name);
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : fallback;
  };
  const same = read('cuda-archs.txt', wanted) === wanted && read('test-hooks.txt', wantedHooks) === wantedHooks;
  const command = same ? 'compile' : 'rebuild';
  const args = [cmakeJs, command, '--directory', root, '--parallel', jobs, `--CDCMAKE_CUDA_COMPILER=${nvcc}`];
  if (!quiet) console.error(`cuda-kernels: building the addon with ${nvcc} (${jobs} jobs)`);
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

module.exports = { build, findNvcc, nvccMissingMessage, DEFAULT_ARCHS };

if (require.main === module) process.exit(build());
