#!/usr/bin/env node
// What `npm run prebuild` gives prebuildify as its --node-gyp: prebuildify calls it as it would call
// node-gyp (`rebuild --target=<node> --devdir=<dir> --arch=<arch> --release`, in its --cwd) and then
// takes <cwd>/build/Release/*.node. This builds that file with cmake-js (scripts/build.js) instead,
// as a release binary: every architecture of the default list, no -lineinfo, the C++ runtime linked
// in (CUDA_KERNELS_PORTABLE), inside the old-glibc sysroot (scripts/release/sysroot.sh) unless
// CK_PREBUILD_SYSROOT=0. The CUDA toolkit is CUDA_PATH's, set by scripts/prebuild.js per package.
// --target is not used: the addon is built against Node-API (node-api-headers), not one Node's ABI.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

/** node-gyp's arguments as prebuildify passes them; throws on any this build cannot honour. */
function parseNodeGypArgs(argv) {
  const [command, ...rest] = argv;
  if (command !== 'rebuild') throw new Error(`expected node-gyp's "rebuild", got ${JSON.stringify(command)}`);
  const opts = {};
  for (const arg of rest) {
    const m = /^--([\w-]+)(?:=(.*))?$/.exec(arg);
    if (!m) throw new Error(`unexpected argument ${JSON.stringify(arg)}`);
    opts[m[1]] = m[2] === undefined ? true : m[2];
  }
  if (opts.debug) throw new Error('only release builds are made (prebuildify --debug is not supported)');
  const arch = opts.arch || process.arch;
  if (arch !== process.arch) throw new Error(`cannot cross-compile: asked for ${arch} on ${process.arch}`);
  if (opts.runtime && opts.runtime !== 'node') throw new Error(`runtime ${opts.runtime} is not supported`);
  return { target: opts.target, arch };
}

/**
 * The command that builds <cwd>/build/Release/cuda_kernels.node: [program, args, env]. Inside the
 * sysroot only the toolkit's real folder is bind-mounted, not a /usr/local/cuda link to it.
 */
function buildCommand({ cwd = process.cwd(), env = process.env } = {}) {
  const out = path.join(cwd, 'build');
  const childEnv = { ...env, CUDA_KERNELS_PORTABLE: '1' };
  delete childEnv.CUDA_KERNELS_ARCHS; // every architecture of the default list
  delete childEnv.CUDA_KERNELS_PROFILE; // no -lineinfo
  const build = path.join(__dirname, 'build.js');
  if (env.CK_PREBUILD_SYSROOT === '0') return [process.execPath, [build, '--out', out], childEnv];
  if (!env.CUDA_PATH) throw new Error('CUDA_PATH must name the CUDA toolkit to build with');
  childEnv.CUDA_PATH = childEnv.CK_SYSROOT_BIND = fs.realpathSync(env.CUDA_PATH);
  return ['bash', [path.join(__dirname, 'release', 'sysroot.sh'), 'run', 'node', build, '--out', out], childEnv];
}

function main(argv) {
  let parsed;
  try {
    parsed = parseNodeGypArgs(argv);
  } catch (e) {
    console.error(`prebuild-node-gyp: ${e.message}`);
    return 2;
  }
  const [program, args, env] = buildCommand();
  console.error(
    `prebuild-node-gyp: Node-API build (prebuildify's target ${parsed.target} not needed): ${program} ${args.join(' ')}`,
  );
  const r = spawnSync(program, args, { env, stdio: 'inherit' });
  if (r.status !== 0 && env.CK_PREBUILD_SYSROOT !== '0') {
    console.error(
      'prebuild-node-gyp: no sysroot? bash scripts/release/sysroot.sh create (or npm run prebuild -- --no-sysroot)',
    );
  }
  return r.status ?? 1;
}

module.exports = { parseNodeGypArgs, buildCommand };

if (require.main === module) process.exit(main(process.argv.slice(2)));
