// bench/dev/kernels/hit_pair.js's settings, run here with stand-in children: a python3 on PATH that
// prints CuPy's child's line, and .js children that print ours' and log how they were started. What
// the script times needs a GPU and CuPy; what it starts, and what it refuses, does not.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const root = path.join(__dirname, '..');
const script = path.join(root, 'bench', 'dev', 'kernels', 'hit_pair.js');
let dir: string;
let tmp: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-hit-pair-test-'));
  // The script's own temporary folder goes here, to see that none is left behind.
  tmp = path.join(dir, 'tmp');
  fs.mkdirSync(tmp);
  fs.mkdirSync(path.join(dir, 'bin'));
  fs.writeFileSync(
    path.join(dir, 'bin', 'python3'),
    '#!/bin/sh\ncat > /dev/null\necho \'{"first":{"ok":true,"us":90},"second":{"ok":true,"us":40}}\'\n',
    { mode: 0o755 },
  );
  fs.writeFileSync(
    path.join(dir, 'child.js'),
    `require('fs').appendFileSync(${JSON.stringify(path.join(dir, 'log'))}, JSON.stringify({
      variant: require('path').basename(process.env.CUDA_KERNELS_CACHE_DIR),
      binary: process.env.CUDA_KERNELS_BINARY ?? null,
      execArgv: process.execArgv,
      args: process.argv.length - 2,
    }) + '\\n');
    console.log(JSON.stringify({ first: { ok: true, us: 100 }, second: { ok: true, us: 60, from: 'disk' } }));\n`,
  );
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function hitPair(env: Record<string, string>, rounds = '2') {
  return spawnSync(process.execPath, [script, rounds], {
    encoding: 'utf8',
    env: { ...process.env, PATH: `${path.join(dir, 'bin')}:${process.env.PATH}`, TMPDIR: tmp, ...env },
  });
}

test('a .js variant runs without ts-register, with CUDA_KERNELS_BINARY only when it names an addon; CK_HIT_ONLY keeps the named ones', () => {
  const child = path.join(dir, 'child.js');
  const r = hitPair({ CK_HIT_VARIANTS: `a=${child}:build/x.node,b=${child}`, CK_HIT_ONLY: 'a,b,cupy' });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  expect(r.stdout).toMatch(/# a \/ cupy per round: median 1\.50×/);
  expect(r.stdout).toMatch(/# b \/ cupy per round: median 1\.50×/);
  expect(r.stdout).not.toMatch(/# ours/);
  const log = fs
    .readFileSync(path.join(dir, 'log'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { variant: string; binary: string | null; execArgv: string[]; args: number });
  // One filling process and two rounds each.
  expect(log.filter((l) => l.variant === 'a')).toEqual(
    Array(3).fill({ variant: 'a', binary: path.join(root, 'build/x.node'), execArgv: [], args: 3 }),
  );
  expect(log.filter((l) => l.variant === 'b')).toEqual(
    Array(3).fill({ variant: 'b', binary: null, execArgv: [], args: 3 }),
  );
  expect(fs.readdirSync(tmp)).toEqual([]);
});

test.each([
  [{ CK_HIT_ONLY: 'zzz,cupy' }, /CK_HIT_ONLY names zzz, which is not a variant/],
  [{ CK_HIT_ONLY: 'ours' }, /the variants must include cupy/],
  [{ CK_HIT_VARIANTS: 'cupy=CHILD', CK_HIT_ONLY: 'cupy' }, /CK_HIT_VARIANTS names cupy, which is already a variant/],
  [{ CK_HIT_VARIANTS: 'ours=CHILD,x=CHILD', CK_HIT_ONLY: 'x,cupy' }, /CK_HIT_VARIANTS names ours, which is already/],
  [{ CK_HIT_VARIANTS: 'CHILD' }, /CK_HIT_VARIANTS takes name=child\.ts\[:addon\.node\]/],
  [{ CK_HIT_CPUS: 'x' }, /CK_HIT_CPUS must be a CPU list/],
])('%j is refused, naming the setting, before any child runs or folder is made', (env, message) => {
  const e = Object.fromEntries(
    Object.entries(env).map(([k, v]) => [k, v.replaceAll('CHILD', path.join(dir, 'child.js'))]),
  );
  const r = hitPair(e);
  expect(r.status).not.toBe(0);
  expect(r.stderr).toMatch(message);
  expect(fs.existsSync(path.join(dir, 'log'))).toBe(false);
  expect(fs.readdirSync(tmp)).toEqual([]);
});
