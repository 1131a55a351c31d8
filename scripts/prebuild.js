#!/usr/bin/env node
// `npm run prebuild`: the release binaries of the platform packages (packages/linux-x64-cuda13 and
// -cuda12), made by prebuildify: `prebuildify --napi --strip --tag-libc`, once per CUDA toolkit,
// with --node-gyp pointing at scripts/prebuild-node-gyp.js, which builds with cmake-js in the
// old-glibc sysroot (scripts/release/sysroot.sh). prebuildify strips the binary and puts it where
// node-gyp-build looks: packages/<pkg>/prebuilds/linux-x64/cuda_kernels.glibc.node. Then it
// is measured: the size and the highest GLIBC_ symbol version must stay within what the package
// declares (package.json "cudaKernels"), and build-info.json records them beside prebuilds/.
//
//   node scripts/prebuild.js [cuda13] [cuda12]      build (both by default), measure, check
//   node scripts/prebuild.js --check [cuda13 ...]   only verify the binaries in place (npm pack)
//   --no-sysroot                                    build on this host (for trying; the glibc
//                                                   floor is then this host's and the check fails)
//
// CUDA_PATH (default /usr/local/cuda) is the CUDA 13 toolkit; CUDA_KERNELS_CUDA12 (default
// ~/.cache/cuda-kernels/cuda-12.4, made by scripts/release/cuda12.sh) the CUDA 12 one;
// CUDA_KERNELS_SYSROOT (default ~/.cache/cuda-kernels/sysroot-bullseye) the sysroot.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { DEFAULT_ARCHS, builtConfig } = require('./build.js');

const root = path.join(__dirname, '..');
const cache = path.join(os.homedir(), '.cache', 'cuda-kernels');
const MAX_BYTES = 10 * 1000 * 1000;

const VARIANTS = {
  cuda13: { cudaPath: () => process.env.CUDA_PATH || '/usr/local/cuda', major: 13 },
  cuda12: { cudaPath: () => process.env.CUDA_KERNELS_CUDA12 || path.join(cache, 'cuda-12.4'), major: 12 },
};

const packageDir = (variant) => path.join(root, 'packages', `${process.platform}-${process.arch}-${variant}`);
// prebuildify's name for it: --name, then the --tag-libc tag. An N-API build (--napi) carries no
// abi<N> tag, which is what lets node-gyp-build load it under any Node version.
const PREBUILD_NAME = 'cuda_kernels.glibc.node';
const binaryOf = (variant) =>
  path.join(packageDir(variant), 'prebuilds', `${process.platform}-${process.arch}`, PREBUILD_NAME);
// prebuildify's --cwd: it expects the hook's output in <stage>/build/Release.
const stageOf = (variant) => path.join(root, 'build', `prebuild-${variant}`);

/** prebuildify's command line for one package (the hook is a parameter for the tests). */
function prebuildifyArgs(variant, hook = path.join(__dirname, 'prebuild-node-gyp.js')) {
  const cli = require.resolve('prebuildify/bin.js', { paths: [root] });
  return [
    cli,
    '--napi',
    '--strip',
    '--tag-libc',
    '--name',
    'cuda_kernels',
    '--cwd',
    stageOf(variant),
    '--out',
    packageDir(variant),
    '--node-gyp',
    hook,
  ];
}

/** Compares dotted versions: negative, zero or positive. */
function compareVersions(a, b) {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] || 0) - (pb[i] || 0);
    if (d) return d;
  }
  return 0;
}

/** The dynamic symbols' GLIBC_ versions (objdump -T, or readelf where objdump is missing). */
function glibcSymbolVersions(file) {
  const big = { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 };
  let r = spawnSync('objdump', ['-T', file], big);
  if (r.error || r.status !== 0) r = spawnSync('readelf', ['--dyn-syms', '-W', file], big);
  if (r.error || r.status !== 0) throw new Error(`neither objdump nor readelf could read ${file}`);
  const versions = new Set(r.stdout.match(/GLIBC_[0-9.]+/g) || []);
  return [...versions].map((v) => v.slice('GLIBC_'.length)).sort(compareVersions);
}

/** The shared libraries a binary needs (readelf -d). */
function neededLibraries(file) {
  const r = spawnSync('readelf', ['-d', file], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return [];
  return [...r.stdout.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
}

/** Size, glibc floor and libraries of `file`, checked against what `variant`'s package declares. */
function measure(variant, file) {
  const declared = JSON.parse(fs.readFileSync(path.join(packageDir(variant), 'package.json'), 'utf8')).cudaKernels;
  const versions = glibcSymbolVersions(file);
  const maxGlibc = versions[versions.length - 1];
  const needed = neededLibraries(file);
  const bytes = fs.statSync(file).size;
  const problems = [];
  if (bytes > MAX_BYTES) problems.push(`${(bytes / 1e6).toFixed(2)} MB is over the 10 MB limit`);
  if (compareVersions(maxGlibc, declared.maxGlibcSymbol) > 0) {
    problems.push(
      `needs GLIBC_${maxGlibc}, newer than the declared ${declared.maxGlibcSymbol} (built outside the sysroot?)`,
    );
  }
  const cxx = needed.filter((l) => /^lib(stdc\+\+|gcc_s)\./.test(l));
  if (cxx.length) problems.push(`links ${cxx.join(', ')} dynamically (not a portable build)`);
  return { bytes, maxGlibc, needed, problems };
}

function check(variant) {
  const file = binaryOf(variant);
  const rel = path.relative(root, file);
  if (!fs.existsSync(file)) {
    console.error(`cuda-kernels: no ${rel}; run \`npm run prebuild\` first.`);
    return 1;
  }
  const info = JSON.parse(fs.readFileSync(path.join(packageDir(variant), 'build-info.json'), 'utf8'));
  const m = measure(variant, file);
  if (info.cudaArchitectures !== DEFAULT_ARCHS) m.problems.push(`covers only ${info.cudaArchitectures}`);
  if (info.lineinfo) m.problems.push('is a profiling build (-lineinfo)');
  // The layout bar: node-gyp-build, as the loader runs it, must pick exactly this file.
  let found;
  try {
    found = require('node-gyp-build').path(packageDir(variant));
  } catch (e) {
    found = e.message.split('\n')[0];
  }
  if (found !== file) m.problems.push(`is not what node-gyp-build finds in the package (${found})`);
  if (m.problems.length) {
    console.error(`cuda-kernels: ${rel} ${m.problems.join('; ')}; run \`npm run prebuild\`.`);
    return 1;
  }
  console.error(
    `cuda-kernels: ${rel}: ${(m.bytes / 1e6).toFixed(2)} MB, CUDA ${info.cuda}, highest symbol GLIBC_${m.maxGlibc}, ${info.cudaArchitectures}`,
  );
  return 0;
}

function prebuild(variant, { sysroot = true } = {}) {
  const cudaPath = VARIANTS[variant].cudaPath();
  const nvcc = path.join(cudaPath, 'bin', 'nvcc');
  if (!fs.existsSync(nvcc)) {
    const hint = variant === 'cuda12' ? ' (scripts/release/cuda12.sh assembles one)' : ' (set CUDA_PATH)';
    console.error(`cuda-kernels: no CUDA ${VARIANTS[variant].major} toolkit at ${cudaPath}${hint}`);
    return 1;
  }
  const version = spawnSync(nvcc, ['--version'], { encoding: 'utf8' }).stdout.match(/release (\d+)\.(\d+)/);
  if (!version || Number(version[1]) !== VARIANTS[variant].major) {
    console.error(`cuda-kernels: ${nvcc} is not CUDA ${VARIANTS[variant].major}.x`);
    return 1;
  }
  const stage = stageOf(variant);
  fs.mkdirSync(stage, { recursive: true });
  fs.rmSync(path.join(packageDir(variant), 'prebuilds'), { recursive: true, force: true });
  const env = { ...process.env, CUDA_PATH: cudaPath, CK_PREBUILD_SYSROOT: sysroot ? '1' : '0' };
  const args = prebuildifyArgs(variant);
  console.error(`cuda-kernels: ${variant}: prebuildify ${args.slice(1).join(' ')}`);
  const r = spawnSync(process.execPath, args, { cwd: root, env, stdio: 'inherit' });
  if (r.status !== 0) return r.status || 1;
  const built = binaryOf(variant);
  if (!fs.existsSync(built)) {
    console.error(`cuda-kernels: prebuildify made no ${path.relative(root, built)}`);
    return 1;
  }
  const config = builtConfig(path.join(stage, 'build'));
  const dir = packageDir(variant);
  fs.copyFileSync(path.join(root, 'LICENSE'), path.join(dir, 'LICENSE'));
  const m = measure(variant, built);
  const info = {
    cuda: `${version[1]}.${version[2]}`,
    cudaArchitectures: config.archs,
    lineinfo: /profile=ON/.test(config.flavour),
    bytes: m.bytes,
    glibc: {
      highestSymbolVersion: m.maxGlibc,
      sysroot: sysroot ? 'Debian 11 (bullseye), glibc 2.31 headers' : 'none (host)',
    },
    needed: m.needed,
    napiVersion: require('../package.json').binary.napi_versions[0],
    madeBy: `prebuildify ${require('prebuildify/package.json').version} --napi --strip --tag-libc`,
    builtWith: { node: process.version, platform: process.platform, arch: process.arch },
    createdAt: new Date().toISOString(),
  };
  fs.writeFileSync(path.join(dir, 'build-info.json'), JSON.stringify(info, null, 2) + '\n');
  return check(variant);
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const asked = args.filter((a) => !a.startsWith('--'));
  const unknown = asked.filter((v) => !(v in VARIANTS));
  if (unknown.length) {
    console.error(`cuda-kernels: unknown variant ${unknown.join(', ')} (known: ${Object.keys(VARIANTS).join(', ')})`);
    process.exit(2);
  }
  const variants = asked.length ? asked : Object.keys(VARIANTS);
  let status = 0;
  for (const v of variants) {
    status ||= args.includes('--check') ? check(v) : prebuild(v, { sysroot: !args.includes('--no-sysroot') });
  }
  process.exit(status);
}

module.exports = {
  compareVersions,
  glibcSymbolVersions,
  neededLibraries,
  prebuildifyArgs,
  binaryOf,
  packageDir,
  stageOf,
  PREBUILD_NAME,
  VARIANTS,
  MAX_BYTES,
};
