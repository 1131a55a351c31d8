// Child process of test/kernels-gpu.test.ts: compiles a kernel in a fresh process (the disk cache in
// CUDA_KERNELS_CACHE_DIR), runs it, and prints where the code came from and what the kernel wrote.
// argv: the source file, then the include folder (or '-').
import * as fs from 'node:fs';

import * as ck from '../../lib';

const [file, include] = process.argv.slice(2);
const source = fs.readFileSync(file, 'utf8');
ck.empty('float32', 1).free(); // the CUDA context, outside the timed part
const t0 = process.hrtime.bigint();
const mod = ck.compile(source, { name: 'child.cu', includePaths: include === '-' ? [] : [include] });
const k = mod.kernel('value');
using out = ck.zeros('float64', 1);
k.launch({ grid: 1, block: 1 }, out);
ck.synchronize();
const us = Number(process.hrtime.bigint() - t0) / 1e3;
process.stdout.write(JSON.stringify({ from: mod.from, value: out.toHostSync()[0], us }) + '\n');
