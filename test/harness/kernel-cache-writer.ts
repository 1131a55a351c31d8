// Child process of test/kernels-cache.test.ts: one process of several compiling the same source into the
// same disk cache at once, with the fake compiler (slow, so that the processes overlap). Prints what it
// got as one JSON line.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { KernelCache } from '../../lib/kernels/cache';
import { fakeCompiler } from '../helpers/fake-compiler';

const [dir, source, delay] = process.argv.slice(2);
// Start together: say so, then wait for the parent's go (a file it writes once every child is ready).
process.stdout.write('ready\n');
const go = path.join(dir, 'go');
const nap = new Int32Array(new SharedArrayBuffer(4));
for (let waited = 0; !fs.existsSync(go) && waited < 60_000; waited += 5) Atomics.wait(nap, 0, 0, 5);
const compiler = fakeCompiler({ delayMs: Number(delay) });
const cache = new KernelCache({ compiler, dir, maxBytes: 1 << 30, packageVersion: 'test' });
const r = cache.get({
  source,
  name: 'race.cu',
  options: ['--std=c++17'],
  includePaths: [],
  headers: [],
  nameExpressions: [],
  deviceArch: 90,
});
process.stdout.write(
  JSON.stringify({
    from: r.from,
    key: r.key,
    code: createHash('sha256').update(r.code.code).digest('hex'),
    compiles: compiler.compiles,
    writeFailures: cache.stats.writeFailures,
  }) + '\n',
);
