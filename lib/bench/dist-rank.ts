// The rank side of the multi-process benchmarks (lib/bench/dist.ts starts it under `cuda-kernels
// launch`). Rank 0 prints one `CK-BENCH <json>` line per measurement; every figure is the maximum over
// the ranks of each rank's median.
import { performance } from 'node:perf_hooks';

import { copyDevice, deviceRelativeError, empty, full, upload } from '../array';
import { relativeError } from '../cpu';
import { apspBandOf, type ApspBellmanReport, apspBellmanCheck, apspDistributed } from '../distributed/apsp';
import { Communicator } from '../distributed/communicator';
import { rankFromEnv } from '../distributed/env';
import { apsp, APSP_MAX_N, randomGraph } from '../ops/apsp';
import { Mlp } from '../ops/mlp';
import { EventTimer } from '../timing';
import { median } from './harness';

const ignore = () => {};

async function init(): Promise<Communicator> {
  if (process.env.CK_HOSTID_PER_RANK) process.env.NCCL_HOSTID = `ck-rank-${rankFromEnv().rank}`;
  return Communicator.init({ timeoutMs: 600_000 });
}

async function maxOver(comm: Communicator, v: number): Promise<number> {
  using a = upload(Float64Array.of(v), { device: comm.device });
  await comm.allReduce(a, 'max');
  return (await a.toHost())[0];
}

async function minOver(comm: Communicator, v: number): Promise<number> {
  using a = upload(Float64Array.of(v), { device: comm.device });
  await comm.allReduce(a, 'min');
  return (await a.toHost())[0];
}

function emit(comm: Communicator, row: Record<string, unknown>): void {
  if (comm.rank === 0) console.log(`CK-BENCH ${JSON.stringify(row)}`);
}

// allReduce (sum) and broadcast (from rank 0), both in place on float32 buffers, as
// bench/dev/collectives/torch_collectives.py does with torch.distributed; bus bandwidth as nccl-tests
// defines it: allReduce bytes/t · 2(k − 1)/k, broadcast bytes/t. Timed on zeros (sums of zeros stay
// zeros however often they run), checked once on rank + 1.
async function collectives(sizes: number[], reps: number): Promise<void> {
  const comm = await init();
  const { size, device } = comm;
  using timer = new EventTimer(device);
  for (const op of ['allreduce', 'broadcast'] as const) {
    for (const bytes of sizes) {
      const n = bytes / 4;
      using a = full('float32', n, 0, { device });
      const once = () => (op === 'allreduce' ? comm.allReduce(a, 'sum') : comm.broadcast(a, 0));
      // As torch_collectives.py: enough calls per sample that the small ones are timed well.
      const iters = bytes <= 1 << 20 ? 50 : bytes <= 4 << 20 ? 20 : bytes <= 64 << 20 ? 5 : 2;
      for (let i = 0; i < 2 * iters; i++) once().catch(ignore);
      await comm.synchronize();
      const samples: number[] = [];
      const host: number[] = []; // ms of the calling thread per call: what queuing one costs the host
      for (let r = 0; r < reps; r++) {
        timer.start();
        const t = performance.now();
        for (let i = 0; i < iters; i++) once().catch(ignore);
        host.push((performance.now() - t) / iters);
        timer.stop();
        samples.push(timer.elapsedMs() / iters);
      }
      await comm.synchronize();
      a.fill(comm.rank + 1);
      await once();
      const want = op === 'allreduce' ? (size * (size + 1)) / 2 : 1;
      const got = await a.toHost();
      const ok = got[0] === want && got[n - 1] === want && got[n >> 1] === want;
      const ms = await maxOver(comm, median(samples));
      const okAll = (await minOver(comm, ok ? 1 : 0)) === 1;
      const algBw = bytes / (ms * 1e-3) / 1e9;
      const busBw = op === 'allreduce' ? (algBw * 2 * (size - 1)) / size : algBw;
      emit(comm, {
        op,
        bytes,
        ms,
        busBw,
        check: okAll ? 'ok' : 'fail',
        spread: [Math.min(...samples), Math.max(...samples)],
        hostMs: await maxOver(comm, median(host)),
        reps,
        iters,
      });
    }
  }
  comm.destroy();
}

function bellmanNote(r: ApspBellmanReport): string {
  const pairs = r.pairs.length / 2;
  return r.failed === 0
    ? `the Bellman equation holds on ${pairs} sampled pairs`
    : `the Bellman equation fails on ${r.failed} of ${pairs} sampled pairs: ${JSON.stringify(r.mismatches)}`;
}

// The distributed APSP on random bands made on each rank; checked against each rank's own
// single-GPU `fast` run on the whole graph when `check` is set. A graph larger than one GPU
// (n > APSP_MAX_N) runs once, with no warm-up (a run takes minutes), and is checked by the Bellman
// equation on 300 sampled pairs instead.
async function apspDist(n: number, reps: number, check: boolean): Promise<void> {
  const comm = await init();
  const { rank, size, device } = comm;
  const random = { density: 0.05, minWeight: 1, maxWeight: 1000, seed: n + 17 };
  let checkResult = 'skipped';
  let how = 'not checked';
  if (n > APSP_MAX_N) {
    await comm.barrier();
    const t = performance.now();
    const res = await apspDistributed(comm, { random, n }, { validate: false });
    const ms = await maxOver(comm, performance.now() - t);
    if (check) {
      const report = await apspBellmanCheck(comm, res, random, { samples: 300, seed: n });
      checkResult = report.failed === 0 ? 'ok' : 'fail';
      how = bellmanNote(report);
    }
    res.band?.free();
    emit(comm, { op: 'apsp', n, ms, check: checkResult, how, spread: [ms, ms], reps: 1 });
    comm.destroy();
    return;
  }
  {
    const res = await apspDistributed(comm, { random, n }, { validate: false }); // warm-up, and the check
    if (check) {
      const { row0, rows } = apspBandOf(n, size, rank);
      using g = randomGraph(n, { ...random, device });
      using ref = apsp(g, n, { method: 'fast', validate: false });
      using mine = empty('int32', rows * n, { device });
      if (rows > 0) copyDevice(mine, ref, { srcOffset: row0 * n, count: rows * n });
      const ok = rows === 0 || (res.band !== null && deviceRelativeError(res.band, mine) === 0);
      // The Bellman check too, where the exact comparison can vouch for it.
      const report = await apspBellmanCheck(comm, res, random, { samples: 300, seed: n });
      checkResult = (await minOver(comm, ok ? 1 : 0)) === 1 && report.failed === 0 ? 'ok' : 'fail';
      how = `equal to each rank's single-GPU fast run: ${ok ? 'yes' : 'no'}; ${bellmanNote(report)}`;
    }
    res.band?.free();
  }
  const samples: number[] = [];
  for (let r = 0; r < reps; r++) {
    await comm.barrier();
    const t = performance.now();
    const res = await apspDistributed(comm, { random, n }, { validate: false });
    samples.push(performance.now() - t);
    res.band?.free();
  }
  const ms = await maxOver(comm, median(samples));
  emit(comm, {
    op: 'apsp',
    n,
    ms,
    check: checkResult,
    how,
    spread: [Math.min(...samples), Math.max(...samples)],
    reps,
  });
  comm.destroy();
}

// One full-batch epoch of the net on P / size patterns per rank, gradients summed every batch; rank 0
// checks one epoch's weights against a single-GPU epoch on all P patterns.
async function mlpDist(layers: number[], P: number, reps: number): Promise<void> {
  const comm = await init();
  const { rank, size, device } = comm;
  const nIn = layers[0];
  const nOut = layers[layers.length - 1];
  const per = Math.floor(P / size);
  using X = empty('float32', P * nIn, { device }).fillRandom(11);
  using T = empty('float32', P * nOut, { device }).fillRandom(12);
  using Xs = empty('float32', per * nIn, { device });
  using Ts = empty('float32', per * nOut, { device });
  copyDevice(Xs, X, { srcOffset: rank * per * nIn, count: per * nIn });
  copyDevice(Ts, T, { srcOffset: rank * per * nOut, count: per * nOut });
  const spec = { layers, eta: 1e-3, alpha: 0.9, seed: 5, device, method: 'auto' as const };
  let check: string;
  {
    using dp = new Mlp(spec);
    dp.train(Xs, Ts, { epochs: 1, comm });
    let ok = 1;
    if (rank === 0) {
      using one = new Mlp(spec);
      using X0 = empty('float32', per * size * nIn, { device });
      using T0 = empty('float32', per * size * nOut, { device });
      copyDevice(X0, X, { count: per * size * nIn });
      copyDevice(T0, T, { count: per * size * nOut });
      one.train(X0, T0, { epochs: 1 });
      using a = dp.copyParameters();
      using b = one.copyParameters();
      ok = relativeError(a.toHostSync(), b.toHostSync()) < 1e-4 ? 1 : 0;
    }
    check = (await minOver(comm, ok)) === 1 ? 'ok' : 'fail';
  }
  using net = new Mlp({ ...spec, eta: 1e-6 });
  net.train(Xs, Ts, { epochs: 1, comm });
  const samples: number[] = [];
  for (let r = 0; r < reps; r++) samples.push(net.train(Xs, Ts, { epochs: 1, comm })[0].ms);
  const ms = await maxOver(comm, median(samples));
  emit(comm, {
    op: 'mlp',
    layers,
    P: per * size,
    ms,
    check,
    method: net.method,
    spread: [Math.min(...samples), Math.max(...samples)],
    reps,
  });
  comm.destroy();
}

async function main(): Promise<void> {
  const [mode, ...args] = process.argv.slice(2);
  const nums = (s: string | undefined) => (s ?? '').split(',').filter(Boolean).map(Number);
  if (mode === 'collectives') await collectives(nums(args[0]), Number(args[1] ?? 10));
  else if (mode === 'apsp') await apspDist(Number(args[0]), Number(args[1] ?? 2), args[2] !== 'nocheck');
  else if (mode === 'mlp') await mlpDist(nums(args[0]), Number(args[1]), Number(args[2] ?? 5));
  else throw new Error(`unknown mode ${mode}`);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exitCode = 1;
});
