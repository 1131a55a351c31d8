#!/usr/bin/env node
// Formats native/ (C++ and CUDA) with the clang-format binary shipped by the clang-format package.
//   node scripts/clang-format.js          rewrite files in place
//   node scripts/clang-format.js --check  fail, listing the files, if any is not formatted
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const binary = require('clang-format').getNativeBinary();

function sources(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return /\.(cc|cu|h|cuh)$/.test(e.name) ? [p] : [];
  });
}

const files = sources(path.join(root, 'native'));
const check = process.argv.includes('--check');
const args = check ? ['--dry-run', '-Werror', ...files] : ['-i', ...files];
const r = spawnSync(binary, args, { stdio: 'inherit' });
if (r.status !== 0 && check) console.error('clang-format: run `npm run format` to fix the files above.');
process.exit(r.status ?? 1);
