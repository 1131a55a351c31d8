// Where a disk-cache hit's time goes (bench kernels' "after its first kernel" row): in a fresh process
// whose first kernel came from the disk cache, a second cached source is compiled, its kernel taken,
// launched and synchronized, each step timed, and every native call made meanwhile timed by name
// (the rest of a step is JavaScript). Prints one JSON line.
//
//   node -r ./test/harness/ts-register.js bench/dev/kernels/hit_profile.ts populate SALT   # compiles both sources
//   node -r ./test/harness/ts-register.js bench/dev/kernels/hit_profile.ts hit SALT        # a fresh process: the hits
import { empty, upload } from '../../../lib/array';
import { saxpySource } from '../../../lib/bench/kernels';
import { synchronize } from '../../../lib/device';
import { compile } from '../../../lib/kernels/module';
import { native } from '../../../lib/native';

const [mode, salt] = process.argv.slice(2);
const source = (which: string) => saxpySource(`${salt} ${which}`);

const nativeUs = new Map<string, number>();
let counting = false;
const table = native as unknown as Record<string, unknown>;
for (const name of Object.keys(table)) {
  const fn = table[name];
  if (typeof fn !== 'function') continue;
  table[name] = function (this: unknown, ...args: unknown[]) {
    if (!counting) return (fn as (...a: unknown[]) => unknown).apply(this, args);
    const t = process.hrtime.bigint();
    try {
      return (fn as (...a: unknown[]) => unknown).apply(this, args);
    } finally {
      nativeUs.set(name, (nativeUs.get(name) ?? 0) + Number(process.hrtime.bigint() - t) / 1e3);
    }
  };
}

const n = 1024;
empty('float32', 1).free();
using x = upload(new Float32Array(n).fill(1));
using y = upload(new Float32Array(n).fill(2));

function run(which: string, measure: boolean) {
  synchronize();
  counting = measure;
  const t0 = process.hrtime.bigint();
  const mod = compile(source(which), { name: 'saxpy.cu' });
  const t1 = process.hrtime.bigint();
  const k = mod.kernel('saxpy');
  const t2 = process.hrtime.bigint();
  k.launch({ grid: Math.ceil(n / 256), block: 256 }, n, 2, x, y);
  const t3 = process.hrtime.bigint();
  synchronize();
  const t4 = process.hrtime.bigint();
  counting = false;
  const us = (a: bigint, b: bigint) => Number(b - a) / 1e3;
  return { from: mod.from, compile: us(t0, t1), kernel: us(t1, t2), launch: us(t2, t3), sync: us(t3, t4), total: us(t0, t4) };
}

if (mode === 'populate') {
  run('first', false);
  run('second', false);
  console.log(JSON.stringify({ populated: salt }));
} else {
  const first = run('first', false);
  const second = run('second', true);
  console.log(JSON.stringify({ first, second, nativeUs: Object.fromEntries(nativeUs) }));
}
