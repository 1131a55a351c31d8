// Where the launch+sync row's time goes above C++'s (bench/dev/kernels/launch_sync.cu), in one Node
// process, on one saxpy (n = 1024), in rounds with the modes rotated:
//   js       kernel.launch(...) + synchronize(), timed from JavaScript (the bench row)
//   native   the same launch and cudaDeviceSynchronize looped in C++ inside this process
//            (the addon's test hook debugKernelLaunchLoop): the process's floor
//   launch   kernel.launch(...) alone, timed from JavaScript (what queuing costs)
// js − native is the JavaScript and N-API share; native against launch_sync.cu's figure is the process's.
//
//   node -r ./test/harness/ts-register.js bench/dev/kernels/launch_overhead.ts [reps=2000] [rounds=6]
import { upload } from '../../../lib/array';
import { saxpySource } from '../../../lib/bench/kernels';
import { synchronize } from '../../../lib/device';
import { compile } from '../../../lib/kernels/module';
import { native } from '../../../lib/native';

const reps = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 6);
const loop = native.debugKernelLaunchLoop;
if (!loop) throw new Error('this build has no test hooks (a release build): build with `npm run build`');

const n = 1024;
using x = upload(new Float32Array(n).fill(1));
using y = upload(new Float32Array(n).fill(2));
const k = compile(saxpySource(`launch overhead ${process.pid}`), { name: 'saxpy.cu' }).kernel('saxpy');
const cfg = { grid: Math.ceil(n / 256), block: 256 };

const modes: Record<string, () => number[]> = {
  js: () => {
    const out: number[] = [];
    for (let i = 0; i < reps; i++) {
      const t0 = process.hrtime.bigint();
      k.launch(cfg, n, 2, x, y);
      synchronize();
      out.push(Number(process.hrtime.bigint() - t0) / 1e3);
    }
    return out;
  },
  native: () => Array.from(loop(reps, ...k.launchArguments(cfg, n, 2, x, y))),
  launch: () => {
    const out: number[] = [];
    for (let i = 0; i < reps; i++) {
      const t0 = process.hrtime.bigint();
      k.launch(cfg, n, 2, x, y);
      out.push(Number(process.hrtime.bigint() - t0) / 1e3);
      // Every 64 launches a wait, untimed, so the queue never fills.
      if (i % 64 === 63) synchronize();
    }
    synchronize();
    return out;
  },
};

const names = Object.keys(modes);
const all: Record<string, number[]> = Object.fromEntries(names.map((m) => [m, []]));
for (const m of names) modes[m](); // warm-up
for (let r = 0; r < rounds; r++)
  for (let i = 0; i < names.length; i++) {
    const m = names[(r + i) % names.length];
    all[m].push(...modes[m]());
  }
const q = (v: number[], f: number) => [...v].sort((a, b) => a - b)[Math.floor(f * (v.length - 1))];
for (const m of names)
  console.log(
    `${m.padEnd(7)} median ${q(all[m], 0.5).toFixed(2)} µs, p10 ${q(all[m], 0.1).toFixed(2)}, p90 ${q(all[m], 0.9).toFixed(2)} (${all[m].length} calls)`,
  );
