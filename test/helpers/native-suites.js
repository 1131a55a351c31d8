// For a clone without the native binary (no nvcc, or `npm install --ignore-scripts`): which
// suites can run anyway. A suite needs the binary when its static imports reach lib/native.ts,
// which loads the binary on import; the rest (CPU references, packaging, the loader) run.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');
const nativeModule = path.join(root, 'lib', 'native.ts');

/** Where a binary may be in a clone: what node-gyp-build finds where lib/loader.ts looks. */
function binaryFiles() {
  if (process.env.CUDA_KERNELS_BINARY) return [path.resolve(process.env.CUDA_KERNELS_BINARY)];
  const find = require('node-gyp-build').path;
  const dirs = [root];
  for (const v of ['cuda13', 'cuda12']) {
    dirs.push(path.join(root, 'node_modules', '@cuda-kernels', `${process.platform}-${process.arch}-${v}`));
  }
  return dirs.flatMap((dir) => {
    try {
      return [find(dir)];
    } catch {
      return [];
    }
  });
}

/** Why there is no build: what the install step wrote (scripts/install.js), else what is missing. */
function notBuiltReason(note = require('../../scripts/install.js').NOT_BUILT) {
  if (fs.existsSync(note)) return `not built: ${fs.readFileSync(note, 'utf8').trim()}`;
  const nvcc = require('../../scripts/build.js').findNvcc();
  return nvcc
    ? `not built, though nvcc is at ${nvcc} (npm install ran without its install step?): npm run build:native`
    : 'not built: no nvcc found ($CUDA_PATH/bin, /usr/local/cuda/bin, PATH)';
}

/** `{ ok: true }` when some binary loads (tried in a child process), else why not. */
function binaryStatus() {
  const present = binaryFiles().filter((f) => fs.existsSync(f));
  if (present.length === 0) {
    const why = process.env.CUDA_KERNELS_BINARY
      ? `CUDA_KERNELS_BINARY=${process.env.CUDA_KERNELS_BINARY} does not exist`
      : `${notBuiltReason()}, and no platform package`;
    return { ok: false, reason: `no native binary: ${why}` };
  }
  for (const f of present) {
    const r = spawnSync(process.execPath, ['-e', 'require(process.argv[1])', f], { encoding: 'utf8' });
    if (r.status === 0) return { ok: true };
  }
  return { ok: false, reason: `no native binary loads (${present.map((f) => path.relative(root, f)).join(', ')})` };
}

/** Runtime (not type-only) relative imports of a TS/JS file, resolved to files. */
function importsOf(file) {
  const text = fs.readFileSync(file, 'utf8');
  const specs = [];
  const patterns = [
    /^\s*import\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm,
    /^\s*export\s+(?!type\s)[^'";]*?\sfrom\s+['"]([^'"]+)['"]/gm,
    /\brequire\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) specs.push(m[1]);
  const out = [];
  for (const spec of specs) {
    const base =
      spec === 'cuda-kernels'
        ? path.join(root, 'lib', 'index')
        : spec.startsWith('.')
          ? path.resolve(path.dirname(file), spec)
          : null;
    if (!base) continue;
    const hit = ['', '.ts', '.js', '/index.ts', '/index.js']
      .map((ext) => base + ext)
      .find((f) => fs.existsSync(f) && fs.statSync(f).isFile());
    if (hit) out.push(hit);
  }
  return out;
}

/** Whether `file` reaches lib/native.ts through its runtime imports. */
function reachesNative(file, seen = new Set()) {
  if (file === nativeModule) return true;
  if (seen.has(file)) return false;
  seen.add(file);
  return importsOf(file).some((f) => reachesNative(f, seen));
}

/** The test files that need the binary. */
function suitesNeedingNative() {
  const dir = path.join(root, 'test');
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => path.join(dir, f))
    .filter((f) => reachesNative(f));
}

module.exports = { binaryStatus, notBuiltReason, suitesNeedingNative, reachesNative, importsOf };
