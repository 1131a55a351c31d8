#!/usr/bin/env node
// `npm install` in a clone of the repository (the `prepare` script; it never runs in a project
// that depends on cuda-kernels, which gets its binary from a platform package instead).
//
// Builds the addon from source when no binary loads yet and nvcc is there. Without nvcc it says
// so and succeeds: contributors without the CUDA toolkit still get a working clone in which
// `npm test` runs the CPU suites (jest.config.js skips the ones that need the binary, saying why).
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const { build, findNvcc } = require('./build.js');

/**
 * Whether a binary loads: the local build, or a release binary that `npm run prebuild` put into a
 * workspace package. Tried in a child process: a broken one must not stop the install.
 */
function binaryLoads() {
  if (process.env.CUDA_KERNELS_FORCE_BUILD) return false;
  const packages = path.join(root, 'packages');
  const files = [path.join(root, 'build', 'Release', 'cuda_kernels.node')];
  if (fs.existsSync(packages)) {
    for (const p of fs.readdirSync(packages)) files.push(path.join(packages, p, 'cuda_kernels.node'));
  }
  return files.some((file) => {
    if (!fs.existsSync(file)) return false;
    const r = spawnSync(process.execPath, ['-e', 'require(process.argv[1]).runtimeInfo()', file], { stdio: 'ignore' });
    return r.status === 0;
  });
}

function main() {
  if (process.env.CUDA_KERNELS_SKIP_BUILD) {
    console.error('cuda-kernels: CUDA_KERNELS_SKIP_BUILD is set: not building the addon.');
    return 0;
  }
  if (binaryLoads()) return 0;
  if (!findNvcc()) {
    console.error(
      [
        'cuda-kernels: nvcc not found, so the native addon is not built (this is not an error).',
        '  npm test runs the CPU suites and lists the others as skipped.',
        '  To build: install the CUDA toolkit 13 (or set CUDA_PATH), then npm run build:native.',
      ].join('\n'),
    );
    return 0;
  }
  return build();
}

process.exit(main());
