import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

import { makeTable } from './table';

import { deviceCount, deviceProperties, runtimeInfo } from '../device';
import { type BenchContext, type BenchRow, deviceSummary, families, writeResults } from '../bench/index';

export interface BenchOptions {
  sizes?: number[];
  methods?: string[];
  reps: number;
  warmup: number;
  quick: boolean;
  out: string;
  device: number;
}

function currentCommit(): string {
  if (process.env.CK_COMMIT) return process.env.CK_COMMIT;
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return 'unknown';
  }
}

/** `cuda-kernels bench [family...]`: runs the families, prints a table, merges the result file. */
export function bench(names: string[], opts: BenchOptions, out: (line: string) => void = console.log): BenchRow[] {
  // A copy: `copy` is prepended below, and `names` must keep saying what the caller asked for.
  const wanted = names.length === 0 || names.includes('all') ? Object.keys(families) : [...names];
  for (const n of wanted) {
    if (!families[n])
      throw new RangeError(`unknown benchmark family ${JSON.stringify(n)}; known: ${Object.keys(families).join(', ')}`);
  }
  if (deviceCount() === 0) throw new Error(`cannot benchmark without a GPU: ${runtimeInfo().noDeviceReason}`);
  // The copy row is every figure's memory-bandwidth reference, so each run measures it.
  if (!wanted.includes('copy')) wanted.unshift('copy');
  const ctx: BenchContext = {
    device: opts.device,
    reps: opts.reps,
    warmup: opts.warmup,
    quick: opts.quick,
    sizes: opts.sizes,
    methods: opts.methods,
    progress: (item) => process.stderr.write(`  ${item}\n`),
  };
  const rows: BenchRow[] = [];
  for (const n of wanted) {
    const family = families[n];
    // Sizes and methods on the command line belong to the named families, not to the copy reference.
    const familyCtx = n === 'copy' && !names.includes('copy') ? { ...ctx, sizes: undefined, methods: undefined } : ctx;
    rows.push(...family.run(familyCtx));
  }
  const props = deviceProperties(opts.device);
  const file = writeResults(
    path.resolve(opts.out),
    deviceSummary(props, { driver: runtimeInfo().driverVersion }) as never,
    currentCommit(),
    rows,
  );
  const t = makeTable(['op', 'method', 'size', 'ms', 'rate', 'unit', 'check']);
  for (const r of rows) t.push([r.op, r.method, r.size, r.ms.toFixed(4), r.rate.toFixed(1), r.unit, r.check]);
  out(t.toString());
  out(`results merged into ${file}`);
  if (rows.some((r) => r.check === 'fail')) process.exitCode = 1;
  return rows;
}
