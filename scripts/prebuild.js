#!/usr/bin/env node
// `npm run prebuild`: the release binaries of the platform packages (packages/linux-x64-cuda13 and
// -cuda12), built in the old-glibc sysroot (scripts/release/sysroot.sh) with every architecture of
// the default list, no -lineinfo, compressed GPU code and the C++ runtime linked in. Then measured:
// the size and the highest GLIBC_ symbol version must stay within what the package declares
// (package.json "cudaKernels"), and build-info.json records them next to the binary.
//
//   node scripts/prebuild.js [cuda13] [cuda12]      build (both by default), measure, copy
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
const binaryOf = (variant) => path.join(packageDir(variant), 'cuda_kernels.node');

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
  const out = path.join(root, 'build', `release-${variant}`);
  const env = { ...process.env, CUDA_PATH: cudaPath, CUDA_KERNELS_PORTABLE: '1' };
  delete env.CUDA_KERNELS_ARCHS; // every architecture of the default list
  delete env.CUDA_KERNELS_PROFILE; // no -lineinfo
  let command = [process.execPath, path.join(__dirname, 'build.js'), '--out', out];
  if (sysroot) {
    // Inside the sysroot only the real folder exists (bind-mounted), not a /usr/local/cuda link to it.
    env.CUDA_PATH = env.CK_SYSROOT_BIND = fs.realpathSync(cudaPath);
    command = ['bash', path.join(__dirname, 'release', 'sysroot.sh'), 'run', 'node', ...command.slice(1)];
  }
  console.error(`cuda-kernels: ${variant}: ${command.join(' ')}`);
  const r = spawnSync(command[0], command.slice(1), { cwd: root, env, stdio: 'inherit' });
  if (r.status !== 0) {
    if (sysroot) console.error('cuda-kernels: no sysroot? scripts/release/sysroot.sh create (or --no-sysroot)');
    return r.status || 1;
  }
  const built = path.join(out, 'Release', 'cuda_kernels.node');
  const config = builtConfig(out);
  const dir = packageDir(variant);
  fs.copyFileSync(built, binaryOf(variant));
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

module.exports = { compareVersions, glibcSymbolVersions, neededLibraries, VARIANTS, MAX_BYTES };
