// Benchmarks over several processes: NCCL collectives beside torch.distributed, the distributed APSP
// beside one GPU and the in-process band scheme, and data-parallel MLP epochs beside one GPU. Each
// starts its ranks with `cuda-kernels launch` (lib/bench/dist-rank.ts) and reads rank 0's
// `CK-BENCH` lines.
//
// Ranks: CK_BENCH_RANKS, else one per GPU (at least 2 GPUs needed). With more ranks than GPUs (for
// trying the benchmarks on one GPU) the ranks share GPUs over NCCL's socket transport: the rows are
// printed, labelled as no speed figure, and not returned, so nothing of the kind reaches a results file.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { deviceCount } from '../device';
import { apsp, APSP_MAX_N, randomGraph } from '../ops/apsp';
import { Mlp } from '../ops/mlp';
import { deviceRelativeError, empty } from '../array';
import { type BenchFamily, median, timeGpu } from './harness';
import type { BenchRow } from './results';

const here = __dirname;
const ext = path.extname(__filename);

interface RankRun {
  rows: Record<string, unknown>[];
  ok: boolean;
  log: string;
}

/** The GPUs' SM clock, power and temperature now (nvidia-smi), for the notes. */
function clocks(): string {
  const r = spawnSync(
    'nvidia-smi',
    ['--query-gpu=index,clocks.sm,power.draw,temperature.gpu', '--format=csv,noheader'],
    {
      encoding: 'utf8',
    },
  );
  return r.status === 0 ? r.stdout.trim().split('\n').join('; ') : 'nvidia-smi unavailable';
}

/**
 * How many ranks, and whether they share GPUs (not a speed figure then). `counts` are the rank counts
 * each family runs, in one run: 2, 4, 8, … up to the GPUs present (and their number), or the list in
 * CK_BENCH_RANKS (e.g. `2,4`); `ranks` is the largest.
 */
export function rankPlan(
  env: Record<string, string | undefined> = process.env,
  gpus = deviceCount(),
): {
  ranks: number;
  counts: number[];
  /** Whether the largest count shares GPUs; a count k shares them when k > gpus. */
  shared: boolean;
  gpus: number;
  reason?: string;
} {
  let counts: number[];
  if (env.CK_BENCH_RANKS) {
    counts = env.CK_BENCH_RANKS.split(',').map(Number);
    if (!counts.every((k) => Number.isInteger(k) && k >= 2)) {
      return {
        ranks: 0,
        counts: [],
        shared: false,
        gpus,
        reason: `CK_BENCH_RANKS must be integers ≥ 2 separated by commas, got ${env.CK_BENCH_RANKS}`,
      };
    }
    counts = [...new Set(counts)].sort((a, b) => a - b);
  } else {
    counts = [];
    for (let k = 2; k <= gpus; k *= 2) counts.push(k);
    if (gpus >= 2 && !counts.includes(gpus)) counts.push(gpus);
  }
  if (counts.length === 0) {
    return {
      ranks: 0,
      counts: [],
      shared: false,
      gpus,
      reason: `needs 2 GPUs (found ${gpus}); CK_BENCH_RANKS=2 tries it on one`,
    };
  }
  const ranks = counts[counts.length - 1];
  return { ranks, counts, shared: ranks > gpus, gpus };
}

function runRanks(ranks: number, shared: boolean, args: string[], env: Record<string, string> = {}): RankRun {
  const main = path.join(here, '..', 'cli', `main${ext}`);
  const worker = path.join(here, `dist-rank${ext}`);
  const port = String(20000 + Math.floor(Math.random() * 20000));
  const nodeOptions =
    ext === '.ts'
      ? `${process.env.NODE_OPTIONS ?? ''} -r ${path.join(here, '..', '..', 'test', 'harness', 'ts-register.js')}`
      : process.env.NODE_OPTIONS;
  const r = spawnSync(
    process.execPath,
    [...process.execArgv, main, 'launch', '--nproc-per-node', String(ranks), '--master-port', port, worker, ...args],
    {
      encoding: 'utf8',
      maxBuffer: 1 << 26,
      timeout: 1_800_000,
      env: {
        ...process.env,
        ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
        ...(shared ? { CK_HOSTID_PER_RANK: '1' } : {}),
        ...env,
      },
    },
  );
  const log = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  const rows = (r.stdout ?? '')
    .split('\n')
    .map((l) => /CK-BENCH (\{.*\})\s*$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => JSON.parse(m[1]) as Record<string, unknown>);
  return { rows, ok: r.status === 0, log };
}

/** The rows of rank counts that shared GPUs are printed, not returned: they are no speed figures. */
export function report(gpus: number, rows: BenchRow[], failed: string[]): BenchRow[] {
  for (const f of failed) process.stderr.write(`${f}\n`);
  const shared = rows.filter((r) => (r.gpus ?? 1) > gpus);
  if (shared.length === 0) return rows;
  process.stderr.write(
    `\n${shared.length} row(s) measured with ranks SHARING a GPU (NCCL socket transport, time-sliced kernels): ` +
      'they show that the benchmark runs, they are NOT speed figures, and they are not written to the results file:\n',
  );
  for (const r of shared) process.stderr.write(`  ${JSON.stringify(r)}\n`);
  return rows.filter((r) => (r.gpus ?? 1) <= gpus);
}

const MiB = 1 << 20;
const KiB = 1 << 10;
const label = (bytes: number) =>
  bytes >= 1 << 30 ? `${bytes / (1 << 30)}GiB` : bytes >= MiB ? `${bytes / MiB}MiB` : `${bytes / KiB}KiB`;

/** `bench collectives`: allReduce and broadcast bus bandwidth, ours and torch.distributed's. */
export const collectivesFamily: BenchFamily = {
  op: 'collectives',
  description:
    'NCCL allReduce (sum) and broadcast of float32, in place, bus bandwidth over processes, beside torch.distributed in the same run (GB/s, nccl-tests definition)',
  bandwidth: false,
  // No steps where rankPlan() skips the family (fewer than 2 GPUs and no CK_BENCH_RANKS).
  plan: () => rankPlan().counts.length * 4,
  run(ctx) {
    const plan = rankPlan();
    if (plan.ranks === 0) {
      process.stderr.write(`collectives: skipped, ${plan.reason}\n`);
      return [];
    }
    // From 64 KiB, where the cost of each call is everything, to 1 GiB, where the links are.
    const sizes =
      ctx.sizes ??
      (ctx.quick
        ? [64 * KiB, MiB, 16 * MiB]
        : [64 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB]);
    const reps = Math.max(3, Math.min(ctx.reps, 20));
    const start = clocks();
    const rows: BenchRow[] = [];
    const failed: string[] = [];
    const torchScript = path.join(here, '..', '..', 'bench', 'dev', 'collectives', 'torch_collectives.py');
    // The reference's script lives in the repository, not in the package: an installed package times ours alone.
    const haveTorch = fs.existsSync(torchScript);
    if (!haveTorch)
      process.stderr.write(
        `collectives: torch.distributed is not timed beside ours: ${path.relative(process.cwd(), torchScript)} ` +
          'is in the repository, not in the package (run bench collectives from a clone for the comparison)\n',
      );
    for (const k of plan.counts) {
      // Two rounds, ours and torch's interleaved, so a ratio is claimed only if it holds in both.
      const rounds: { ours: Record<string, unknown>[]; torch: Record<string, unknown>[] }[] = [];
      for (let round = 0; round < 2; round++) {
        ctx.progress(`collectives (ours) ${k} ranks, round ${round + 1}`);
        const ours = runRanks(k, k > plan.gpus, ['collectives', sizes.join(','), String(reps)]);
        if (!ours.ok) failed.push(`collectives: our ${k} ranks failed:\n${ours.log}`);
        if (!haveTorch) {
          rounds.push({ ours: ours.rows, torch: [] });
          continue;
        }
        ctx.progress(`collectives (torch.distributed) ${k} ranks, round ${round + 1}`);
        const port = String(20000 + Math.floor(Math.random() * 20000));
        const t = spawnSync(
          'python3',
          [
            '-m',
            'torch.distributed.run',
            '--nproc-per-node',
            String(k),
            '--master-port',
            port,
            torchScript,
            '--sizes',
            sizes.join(','),
            '--reps',
            String(reps),
          ],
          {
            encoding: 'utf8',
            maxBuffer: 1 << 26,
            timeout: 1_800_000,
            env: { ...process.env, ...(k > plan.gpus ? { CK_HOSTID_PER_RANK: '1' } : {}) },
          },
        );
        const torch = (t.stdout ?? '')
          .split('\n')
          .map((l) => /CK-BENCH (\{.*\})\s*$/.exec(l))
          .filter((m): m is RegExpExecArray => m !== null)
          .map((m) => JSON.parse(m[1]) as Record<string, unknown>);
        if (t.status !== 0)
          failed.push(
            `collectives: torch.distributed on ${k} ranks failed (${t.error?.message ?? `exit ${t.status}`}):\n${t.stdout}${t.stderr}`,
          );
        rounds.push({ ours: ours.rows, torch });
      }
      const end = clocks();
      const find = (list: Record<string, unknown>[], op: string, bytes: number) =>
        list.find((r) => r.op === op && r.bytes === bytes);
      for (const op of ['allreduce', 'broadcast']) {
        for (const bytes of sizes) {
          for (const who of ['ours', 'torch'] as const) {
            const r0 = find(rounds[0][who], op, bytes);
            if (!r0) continue;
            const other = find(rounds[0][who === 'ours' ? 'torch' : 'ours'], op, bytes);
            const r1 = find(rounds[1][who], op, bytes);
            const o1 = find(rounds[1][who === 'ours' ? 'torch' : 'ours'], op, bytes);
            const ratio = (a?: Record<string, unknown>, b?: Record<string, unknown>) =>
              a && b ? (a.busBw as number) / (b.busBw as number) : NaN;
            const spread = r0.spread as number[];
            rows.push({
              op: 'collectives',
              method: `${op}-${who === 'ours' ? 'nccl' : 'torch'}-${k}rank`,
              size: label(bytes),
              ms: r0.ms as number,
              rate: r0.busBw as number,
              unit: 'GB/s',
              reps: r0.reps as number,
              check: r0.check === 'ok' ? 'ok' : 'fail',
              gpus: k,
              note:
                `${k} ranks; bus bandwidth, max over ranks of each rank's median of ${r0.reps} samples ` +
                `(${spread[0].toFixed(3)}–${spread[1].toFixed(3)} ms per op); ` +
                (haveTorch
                  ? `vs ${who === 'ours' ? 'torch' : 'ours'} ${ratio(r0, other).toFixed(3)}× (second run ${ratio(r1, o1).toFixed(3)}×); `
                  : 'torch.distributed not timed (not in the package); ') +
                `${typeof r0.hostMs === 'number' ? `${(r0.hostMs * 1e3).toFixed(1)} µs of host time per call; ` : ''}` +
                `clocks at start [${start}], end [${end}]`,
            });
          }
        }
      }
    }
    return report(plan.gpus, rows, failed);
  },
};

/** `bench apsp-dist`: the distributed APSP beside one GPU's `fast` and the in-process band scheme. */
export const apspDistFamily: BenchFamily = {
  op: 'apsp',
  description:
    'all-pairs shortest paths over processes through NCCL, beside 1 GPU and the in-process band scheme (Grelax/s = n³/time/1e9)',
  plan: (ctx) => {
    const counts = rankPlan().counts.length;
    if (counts === 0) return 0;
    // Per size that one GPU holds: 1 GPU, then per count the band scheme and two transports; beyond: one run per count.
    return (ctx.sizes ?? [ctx.quick ? 4096 : 32768]).reduce(
      (t, n) => t + (n <= APSP_MAX_N ? 1 + 3 * counts : counts),
      0,
    );
  },
  run(ctx) {
    const plan = rankPlan();
    if (plan.ranks === 0) {
      process.stderr.write(`apsp-dist: skipped, ${plan.reason}\n`);
      return [];
    }
    const rows: BenchRow[] = [];
    const failed: string[] = [];
    const start = clocks();
    for (const n of ctx.sizes ?? [ctx.quick ? 4096 : 32768]) {
      const reps = n >= 32768 ? Math.min(ctx.reps, 3) : Math.min(ctx.reps, 5);
      const rate = (ms: number) => n ** 3 / (ms * 1e-3) / 1e9;
      const random = { density: 0.05, minWeight: 1, maxWeight: 1000, seed: n + 17 };
      // One GPU and, for each rank count k with k GPUs present, the in-process band scheme, in this
      // process (freed before the ranks start); neither holds a graph larger than one GPU
      // (n > APSP_MAX_N), which runs over NCCL only.
      const fitsOne = n <= APSP_MAX_N;
      if (fitsOne) {
        ctx.progress(`apsp n=${n}: fast on 1 GPU`);
        using g = randomGraph(n, { ...random, device: ctx.device });
        using out = empty('int32', n * n, { device: ctx.device });
        const one = timeGpu(() => apsp(g, n, { method: 'fast', validate: false, out }), {
          device: ctx.device,
          reps,
          warmup: 1,
        });
        rows.push({
          op: 'apsp',
          method: 'fast',
          size: `${n}`,
          ms: median(one),
          rate: rate(median(one)),
          unit: 'Grelax/s',
          reps,
          check: 'ok',
          gpus: 1,
          note: `1 GPU, the baseline of this run; ${Math.min(...one).toFixed(1)}–${Math.max(...one).toFixed(1)} ms`,
        });
        const inProcess = plan.counts.filter((k) => deviceCount() >= k);
        if (inProcess.length > 0) {
          using ref = apsp(g, n, { method: 'fast', validate: false });
          for (const k of inProcess) {
            ctx.progress(`apsp n=${n}: band on ${k} GPUs`);
            const devices = Array.from({ length: k }, (_, i) => i);
            const band = timeGpu(() => apsp(g, n, { devices, out, validate: false }), {
              device: ctx.device,
              reps,
              warmup: 1,
            });
            const ok = deviceRelativeError(out, ref) === 0;
            rows.push({
              op: 'apsp',
              method: `band-${k}gpu`,
              size: `${n}`,
              ms: median(band),
              rate: rate(median(band)),
              unit: 'Grelax/s',
              reps,
              check: ok ? 'ok' : 'fail',
              gpus: k,
              note: `in-process band scheme on devices ${devices.join(', ')}; ${(median(one) / median(band)).toFixed(2)}× one GPU`,
            });
          }
        }
      }
      for (const k of plan.counts) {
        const transports = [
          [`nccl-${k}rank`, {}],
          [`nccl-socket-${k}rank`, { NCCL_P2P_DISABLE: '1', NCCL_SHM_DISABLE: '1' }],
        ] as const;
        for (const [method, env] of fitsOne ? transports : transports.slice(0, 1)) {
          ctx.progress(`apsp n=${n}: ${method}`);
          const r = runRanks(k, k > plan.gpus, ['apsp', String(n), String(reps), 'check'], env);
          if (!r.ok) failed.push(`apsp-dist ${method}: ranks failed:\n${r.log}`);
          const row = r.rows.find((x) => x.op === 'apsp');
          if (!row) continue;
          const ms = row.ms as number;
          const base = rows.find((x) => x.method === 'fast' && x.size === `${n}`);
          const bandRow = rows.find((x) => x.method === `band-${k}gpu` && x.size === `${n}`);
          // A graph larger than one GPU against the largest one-GPU size of this run, by rate.
          const fitting = rows.filter((x) => x.method === method && Number(x.size) <= APSP_MAX_N);
          const rateRef = fitsOne ? undefined : fitting.sort((a, b) => Number(b.size) - Number(a.size))[0];
          const spread = row.spread as number[];
          rows.push({
            op: 'apsp',
            method,
            size: `${n}`,
            ms,
            rate: rate(ms),
            unit: 'Grelax/s',
            reps: row.reps as number,
            check: row.check === 'ok' ? 'ok' : 'fail',
            gpus: k,
            note:
              `${k} processes, one band each, panels broadcast through NCCL${method.includes('socket') ? ' over its socket transport (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)' : ''}; ` +
              `wall ms per call, max over ranks of the median (${spread[0].toFixed(0)}–${spread[1].toFixed(0)}); ` +
              `${base ? `${(base.ms / ms).toFixed(2)}× one GPU` : ''}${bandRow ? `, ${(bandRow.ms / ms).toFixed(2)}× the in-process band scheme` : ''}` +
              `${fitsOne ? '' : `a graph larger than one GPU (about ${((n * n * 4) / k / 1e9).toFixed(0)} GB of distances per rank), made on the devices band by band, one run`}` +
              `${rateRef?.rate ? `, ${(rate(ms) / rateRef.rate).toFixed(2)}× the rate at n = ${rateRef.size}` : ''}; ` +
              `check: ${String(row.how ?? row.check)}; clocks at start [${start}], end [${clocks()}]`,
          });
        }
      }
    }
    return report(plan.gpus, rows, failed);
  },
};

/** `bench mlp-dist`: a data-parallel epoch on k ranks beside one GPU's epoch. */
export const mlpDistFamily: BenchFamily = {
  op: 'mlp',
  description:
    'data-parallel MLP epoch over processes (gradients all-reduced each batch) beside one GPU (TFLOP/s = 6·P·Σ n_l·n_{l+1}/time)',
  plan: () => (rankPlan().ranks === 0 ? 0 : 1 + rankPlan().counts.length),
  run(ctx) {
    const plan = rankPlan();
    if (plan.ranks === 0) {
      process.stderr.write(`mlp-dist: skipped, ${plan.reason}\n`);
      return [];
    }
    const layers = ctx.quick ? [512, 512, 512] : [4096, 4096, 4096, 4096];
    const P = ctx.quick ? 2048 : 16384;
    const size = `[${layers.join(',')}]x${P}`;
    const flops = 6 * P * layers.slice(1).reduce((s, n, l) => s + layers[l] * n, 0);
    const tf = (ms: number) => flops / (ms * 1e-3) / 1e12;
    const reps = Math.min(ctx.reps, 5);
    const rows: BenchRow[] = [];
    const failed: string[] = [];
    ctx.progress(`mlp ${size} on 1 GPU`);
    {
      using X = empty('float32', P * layers[0], { device: ctx.device }).fillRandom(11);
      using T = empty('float32', P * (layers.at(-1) as number), { device: ctx.device }).fillRandom(12);
      using net = new Mlp({ layers, eta: 1e-6, alpha: 0.9, seed: 5, device: ctx.device });
      net.train(X, T, { epochs: 1 });
      const s = Array.from({ length: reps }, () => net.train(X, T, { epochs: 1 })[0].ms);
      rows.push({
        op: 'mlp',
        method: `${net.method}-1gpu`,
        size,
        ms: median(s),
        rate: tf(median(s)),
        unit: 'TFLOP/s',
        reps,
        check: 'ok',
        gpus: 1,
        note: `full-batch epoch on one GPU, the baseline of this run`,
      });
    }
    for (const k of plan.counts) {
      ctx.progress(`mlp ${size} data parallel on ${k} ranks`);
      const r = runRanks(k, k > plan.gpus, ['mlp', layers.join(','), String(P), String(reps)]);
      if (!r.ok) failed.push(`mlp-dist: ${k} ranks failed:\n${r.log}`);
      const row = r.rows.find((x) => x.op === 'mlp');
      if (!row) continue;
      const ms = row.ms as number;
      const base = rows[0];
      rows.push({
        op: 'mlp',
        method: `${row.method as string}-dp${k}`,
        size,
        ms,
        rate: tf(ms),
        unit: 'TFLOP/s',
        reps: row.reps as number,
        check: row.check === 'ok' ? 'ok' : 'fail',
        gpus: k,
        note: `${k} ranks, ${P / k} patterns each, one batch per epoch, gradients all-reduced; ${(ms / base.ms).toFixed(3)}× the 1-GPU epoch time; one epoch's weights vs 1 GPU: ${row.check}`,
      });
    }
    return report(plan.gpus, rows, failed);
  },
};
