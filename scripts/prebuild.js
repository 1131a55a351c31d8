#!/usr/bin/env node
// `npm run prebuild`: puts the N-API prebuild where node-gyp-build looks for it,
// prebuilds/<platform>-<arch>/node.napi.glibc.node (prebuildify's layout), from the cmake-js build.
// prebuildify itself drives node-gyp, not CMake, so this script does the one step we need from it.
//
//   node scripts/prebuild.js           build with the default architecture list if needed, then copy
//   node scripts/prebuild.js --check   only verify that a prebuild for this platform is in place
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const built = path.join(root, 'build', 'Release', 'cuda_kernels.node');
const archsFile = path.join(root, 'build', 'cuda-archs.txt');
const { DEFAULT_ARCHS } = require('./build.js');
const dir = path.join(root, 'prebuilds', `${process.platform}-${process.arch}`);
const target = path.join(dir, 'node.napi.glibc.node');
const infoFile = path.join(dir, 'build-info.json');

function check() {
  if (!fs.existsSync(target)) {
    console.error(
      `cuda-kernels: no prebuild at ${path.relative(root, target)}; run \`npm run prebuild\` before packing.`,
    );
    return 1;
  }
  const info = JSON.parse(fs.readFileSync(infoFile, 'utf8'));
  if (info.cudaArchitectures !== DEFAULT_ARCHS) {
    console.error(`cuda-kernels: the prebuild covers only ${info.cudaArchitectures}; run \`npm run prebuild\`.`);
    return 1;
  }
  console.error(
    `cuda-kernels: prebuild ${path.relative(root, target)} (${(fs.statSync(target).size / 1e6).toFixed(2)} MB, ${info.cudaArchitectures})`,
  );
  return 0;
}

function prebuild() {
  const archs = fs.existsSync(archsFile) ? fs.readFileSync(archsFile, 'utf8').trim() : '';
  const hooksFile = path.join(root, 'build', 'test-hooks.txt');
  const hooks = fs.existsSync(hooksFile) ? fs.readFileSync(hooksFile, 'utf8').trim() : 'ON';
  // The shipped binary is a release build: every architecture, no test-only code.
  process.env.CUDA_KERNELS_RELEASE = '1';
  if (!fs.existsSync(built) || archs !== DEFAULT_ARCHS || hooks !== 'OFF') {
    // A local build may cover only the architectures named in CUDA_KERNELS_ARCHS: rebuild them all.
    delete process.env.CUDA_KERNELS_ARCHS;
    const status = require('./build.js').build();
    if (status !== 0) return status;
  }
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(built, target);
  const info = {
    cudaArchitectures: fs.readFileSync(archsFile, 'utf8').trim(),
    napiVersion: require('../package.json').binary.napi_versions[0],
    builtWith: { node: process.version, platform: process.platform, arch: process.arch },
    createdAt: new Date().toISOString(),
  };
  fs.writeFileSync(infoFile, JSON.stringify(info, null, 2) + '\n');
  return check();
}

if (require.main === module) process.exit(process.argv.includes('--check') ? check() : prebuild());
