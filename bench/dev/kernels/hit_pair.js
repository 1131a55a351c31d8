// The disk-cache hit after a process's first kernel (bench kernels' "after its first kernel" row), ours
// and CuPy's, in alternating new processes: the pair protocol for that row, whose per-process times
// spread over 2x, so seven processes of one and then seven of the other (bench kernels, then
// cupy_kernels.py) can disagree by 0.2 ms between runs. Each round runs every variant once, the rounds
// taking every order of the variants in turn, so that none is always timed after the same one.
//
//   node bench/dev/kernels/hit_pair.js [ROUNDS=30] [OUTFILE]
//
// Variants: ours (lib/bench/kernels-child.ts, this tree, transpiled on load by test/harness/ts-register.js),
// ours-js (dist/bench/kernels-child.js, the compiled JavaScript a user runs and `bench kernels` times;
// only when dist/ is built) and cupy (the CHILD of cupy_kernels.py, run with python3), each with a cache
// folder of its own, filled by a first process whose times are dropped. CK_HIT_VARIANTS adds others,
// `name=child.ts[:addon.node]` or `name=child.js[:addon.node]` separated by commas (an older tree's
// copy, for an A/B); CK_HIT_ONLY keeps only the variants it names (commas). CK_HIT_CPUS (a taskset list such as `3` or `2,3`) pins every child to those
// CPUs: on the GPU hosts a process ran either fast or slow as a whole, its native calls included, and
// the split may be where it was placed. Prints the medians; OUTFILE gets every process's times too
// (JSON lines).
'use strict';
const { spawnSync, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..', '..', '..');
const rounds = Number(process.argv[2] ?? 30);
const outFile = process.argv[3];
if (!Number.isInteger(rounds) || rounds < 1) throw new RangeError(`ROUNDS must be a whole number ≥ 1, got ${process.argv[2]}`);

const salt = `hit pair ${process.pid} ${Date.now()}`;
// The source of lib/bench/kernels.ts's saxpySource and cupy_kernels.py's saxpy_source.
const source = (which) => `// ${salt} ${which}
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
`;
const sources = [source('first'), source('second')];

const py = fs.readFileSync(path.join(__dirname, 'cupy_kernels.py'), 'utf8');
const child = /CHILD = r"""([\s\S]*?)"""/.exec(py);
if (!child) throw new Error('cupy_kernels.py has no CHILD script');

const cpus = process.env.CK_HIT_CPUS;
if (cpus !== undefined && !/^\d+([-,]\d+)*$/.test(cpus)) throw new RangeError(`CK_HIT_CPUS must be a CPU list such as 3 or 2-3, got ${cpus}`);
/** spawnSync of `command args`, under taskset when CK_HIT_CPUS is set. */
const spawnChild = (command, args, options) =>
  cpus === undefined ? spawnSync(command, args, options) : spawnSync('taskset', ['-c', cpus, command, ...args], options);

/** A Node.js child: a .ts file through ts-register, a .js file as it is. */
function nodeChild(file, binary) {
  const register = file.endsWith('.ts') ? ['-r', path.join(root, 'test/harness/ts-register.js')] : [];
  return (cache) =>
    spawnChild(
      process.execPath,
      [...register, file, '0', ...sources],
      {
        encoding: 'utf8',
        timeout: 120_000,
        env: {
          ...process.env,
          CUDA_KERNELS_CACHE_DIR: cache,
          ...(binary ? { CUDA_KERNELS_BINARY: path.resolve(root, binary) } : {}),
        },
      },
    );
}

const compiledChild = path.join(root, 'dist/bench/kernels-child.js');
const variants = {
  ours: nodeChild(path.join(root, 'lib/bench/kernels-child.ts')),
  ...(fs.existsSync(compiledChild) ? { 'ours-js': nodeChild(compiledChild) } : {}),
  cupy: (cache) =>
    spawnChild('python3', ['-c', child[1]], {
      input: JSON.stringify(sources),
      encoding: 'utf8',
      timeout: 300_000,
      env: { ...process.env, CUPY_CACHE_DIR: cache },
    }),
};
for (const spec of (process.env.CK_HIT_VARIANTS ?? '').split(',').filter(Boolean)) {
  const m = /^([^=:]+)=([^:]+)(?::(.+))?$/.exec(spec);
  if (!m) throw new RangeError(`CK_HIT_VARIANTS takes name=child.ts[:addon.node] or name=child.js[:addon.node], got ${spec}`);
  // A variant named like one already there would replace it: cupy, the baseline of every ratio, included.
  if (m[1] in variants) throw new RangeError(`CK_HIT_VARIANTS names ${m[1]}, which is already a variant (${Object.keys(variants).join(', ')})`);
  variants[m[1]] = nodeChild(path.resolve(root, m[2]), m[3]);
}
// Empty, as unset (CK_HIT_ONLY= on a command line).
const only = process.env.CK_HIT_ONLY ? process.env.CK_HIT_ONLY.split(',').filter(Boolean) : undefined;
for (const name of only ?? []) if (!(name in variants)) throw new RangeError(`CK_HIT_ONLY names ${name}, which is not a variant (${Object.keys(variants).join(', ')})`);
const names = Object.keys(variants).filter((n) => only === undefined || only.includes(n));
if (!names.includes('cupy')) throw new RangeError('the variants must include cupy: every ratio is to it');

/** Every order of `list`, each once. */
function permutations(list) {
  if (list.length <= 1) return [list];
  return list.flatMap((x, i) => permutations([...list.slice(0, i), ...list.slice(i + 1)]).map((p) => [x, ...p]));
}
const orders = permutations(names);
// Made once every setting has passed: a refused one leaves no folder behind.
const cacheRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-hit-pair-'));

function run(name, filling = false) {
  const cache = path.join(cacheRoot, name);
  const r = variants[name](cache);
  if (r.status !== 0) throw new Error(`${name} failed (${r.status}): ${r.stderr || r.stdout}`);
  const got = JSON.parse(r.stdout.trim().split('\n').pop());
  if (!got.first.ok || !got.second.ok) throw new Error(`${name}: wrong result ${JSON.stringify(got)}`);
  if (!filling && got.second.from !== undefined && got.second.from !== 'disk')
    throw new Error(`${name}: the second kernel came from ${got.second.from}, not the disk`);
  return got;
}

const gpu = () => {
  try {
    return execFileSync(
      'nvidia-smi',
      ['--query-gpu=name,clocks.sm,power.draw,temperature.gpu', '--format=csv,noheader'],
      { encoding: 'utf8' },
    ).trim();
  } catch {
    return 'nvidia-smi unavailable';
  }
};

const lines = [`# GPU at start: ${gpu()}`, `# children pinned to CPUs: ${cpus ?? 'no'}`];
for (const name of names) run(name, true); // fills each cache folder
const rows = [];
for (let r = 0; r < rounds; r++) {
  for (const name of orders[r % orders.length]) {
    const got = run(name);
    rows.push({ round: r, variant: name, first: got.first.us, second: got.second.us });
  }
}
lines.push(`# GPU at end: ${gpu()}`);

const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const quantile = (a, q) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(q * a.length))];
const summary = [];
for (const name of names) {
  const t = rows.filter((x) => x.variant === name).map((x) => x.second);
  summary.push(
    `# ${name}: second kernel from the disk, median ${median(t).toFixed(1)} µs ` +
      `(quartiles ${quantile(t, 0.25).toFixed(0)}–${quantile(t, 0.75).toFixed(0)}, ` +
      `min–max ${Math.min(...t).toFixed(0)}–${Math.max(...t).toFixed(0)}, ${t.length} processes)`,
  );
}
for (const name of names.filter((n) => n !== 'cupy')) {
  const ratios = [];
  for (let r = 0; r < rounds; r++) {
    const a = rows.find((x) => x.round === r && x.variant === name).second;
    const b = rows.find((x) => x.round === r && x.variant === 'cupy').second;
    ratios.push(a / b);
  }
  summary.push(
    `# ${name} / cupy per round: median ${median(ratios).toFixed(2)}× ` +
      `(min–max ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
  );
}
if (outFile) fs.writeFileSync(outFile, [...lines, ...rows.map((x) => JSON.stringify(x)), ...summary].join('\n') + '\n');
console.log([...lines, ...summary].join('\n'));
fs.rmSync(cacheRoot, { recursive: true, force: true });
