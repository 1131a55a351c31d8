// Child process of `bench kernels` (lib/bench/kernels.ts): kernels whose code is on the disk cache,
// called in a fresh process. The CUDA context is made first (a user's process has one by its first
// kernel); then compile() + kernel() + launch + synchronize is timed for two sources in turn: the
// process's first kernel (which also pays for the first run of this package's code in the process)
// and a second one (the hit's own cost: read, check, load, launch). Prints one JSON line.
import { empty, upload } from '../array';
import { synchronize } from '../device';
import { compile } from '../kernels/module';
import { native } from '../native';

const [deviceArg, first, second] = process.argv.slice(2);
const device = Number(deviceArg);
const n = 1024;
const x = Float32Array.from({ length: n }, (_, i) => (i % 17) - 8);
const y = Float32Array.from({ length: n }, (_, i) => (i % 5) * 0.25);
empty('float32', 1, { device }).free();
using dx = upload(x, { device });

function call(source: string) {
  using dy = upload(y, { device });
  synchronize(device);
  const t0 = process.hrtime.bigint();
  const mod = compile(source, { name: 'saxpy.cu', device });
  const t1 = process.hrtime.bigint();
  mod.kernel('saxpy').launch({ grid: Math.ceil(n / 256), block: 256 }, n, 2, dx, dy);
  synchronize(device);
  const t2 = process.hrtime.bigint();
  const got = dy.toHostSync();
  return {
    us: Number(t2 - t0) / 1e3,
    compileUs: Number(t1 - t0) / 1e3,
    from: mod.from,
    ok: got.every((v, i) => v === Math.fround(2 * x[i] + y[i])),
  };
}

const firstCall = call(first);
const secondCall = call(second);
process.stdout.write(
  JSON.stringify({ first: firstCall, second: secondCall, nvrtcLoaded: native.nvrtcLocate().loaded }) + '\n',
);
