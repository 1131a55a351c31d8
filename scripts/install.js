#!/usr/bin/env node
// The package's install step: use a binary that already loads (a prebuild shipped in prebuilds/,
// or an earlier local build); otherwise build from source with nvcc.
//
// Nothing here is required for the package to work: where a package manager blocks install
// scripts, the shipped prebuild is found at run time all the same (lib/native.ts).
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
// A development checkout (a clone of the repository) has sources the published tarball lacks.
const isCheckout = fs.existsSync(path.join(root, 'tsconfig.json'));

function binaryLoads() {
  if (process.env.CUDA_KERNELS_FORCE_BUILD) return false;
  try {
    require('node-gyp-build')(root);
    return true;
  } catch {
    return false;
  }
}

if (binaryLoads()) {
  process.exit(0);
}
const { build } = require('./build.js');
const status = build();
if (status !== 0 && !isCheckout) {
  // In a dependent project, do not fail its whole install: the error at require() says what to do.
  console.error(
    'cuda-kernels: continuing without a native binary; require("cuda-kernels") will explain how to build it.',
  );
  process.exit(0);
}
process.exit(status);
