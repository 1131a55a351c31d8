// One rank of the multi-process GPU tests (test/dist-gpu.test.ts), started by `cuda-kernels launch`,
// by mpirun, or directly with RANK/WORLD_SIZE set:
//
//   node -r ./test/harness/ts-register.js test/harness/dist-rank.ts <mode> [args]
//
// Modes: collectives, apsp <sizes> [bigN], mlp, trainings, kill, unawaited, lonely, late, worker, job,
// destroy (each described where it is written). Every check is against a CPU reference
// (or the single-GPU result) on data each rank can rebuild from a seed. The last line of stdout is
// `CK-RESULT <json>`; the exit code is 0 only when every check passed.
//
// CK_HOSTID_PER_RANK=1 gives each rank its own NCCL_HOSTID, so that several ranks can share one GPU
// (NCCL then joins them over its socket transport; see GPU-FACTS.md).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { Worker } from 'node:worker_threads';

import * as ck from '../../lib';
import { setFilePiece } from '../../lib/distributed/apsp';
import type { DeviceArray, Dtype, HostArray } from '../../lib';
import { hostGraph } from './families';

const mode = process.argv[2];
const failures: string[] = [];
let checks = 0;
const t0 = Date.now();

function check(ok: boolean, what: string): void {
  checks++;
  if (!ok) failures.push(what);
}

function finish(extra: Record<string, unknown> = {}): void {
  console.log(`CK-RESULT ${JSON.stringify({ mode, checks, failures, seconds: (Date.now() - t0) / 1000, ...extra })}`);
  process.exitCode = failures.length === 0 ? 0 : 1;
}

async function init(timeoutMs = Number(process.env.CK_TIMEOUT_MS ?? 120_000)): Promise<ck.Communicator> {
  const env = ck.rankFromEnv();
  if (process.env.CK_HOSTID_PER_RANK) process.env.NCCL_HOSTID = `ck-rank-${env.rank}`;
  return ck.Communicator.init({ timeoutMs });
}

// ---------------------------------------------------------------------------------------------
// collectives: every collective × dtype × op against a CPU reference.

const HOST: Record<Dtype, { new (n: number): HostArray }> = {
  float32: Float32Array,
  float64: Float64Array,
  int32: Int32Array,
  uint32: Uint32Array,
};

/** Rank r's data: floats in [-1, 1) (for prod [0.5, 1.5)), int32 in [-40, 40], uint32 in [0, 80]. */
function dataOf(dtype: Dtype, length: number, r: number, seed: number, forProd = false): HostArray {
  const u = ck.cpu.randomArray(Float64Array, length, seed * 131 + r * 7919 + 1);
  const out = new HOST[dtype](length);
  for (let i = 0; i < length; i++) {
    if (dtype === 'float32' || dtype === 'float64') out[i] = forProd ? 1 + u[i] / 2 : u[i];
    else if (dtype === 'int32') out[i] = Math.round(u[i] * 40);
    else out[i] = Math.round((u[i] + 1) * 40);
  }
  return out;
}

function reduceRef(dtype: Dtype, op: ck.CollectiveOp, parts: HostArray[]): Float64Array {
  const n = parts[0].length;
  const out = new Float64Array(n);
  const int = dtype === 'int32' || dtype === 'uint32';
  const wrap = (v: number) => (dtype === 'int32' ? v | 0 : dtype === 'uint32' ? v >>> 0 : v);
  for (let i = 0; i < n; i++) {
    let acc = parts[0][i];
    for (let r = 1; r < parts.length; r++) {
      const v = parts[r][i];
      if (op === 'sum' || op === 'avg') acc = wrap(acc + v);
      else if (op === 'prod')
        acc = int ? wrap(dtype === 'int32' ? Math.imul(acc, v) : Math.imul(acc, v) >>> 0) : acc * v;
      else if (op === 'min') acc = Math.min(acc, v);
      else acc = Math.max(acc, v);
    }
    if (op === 'avg') acc = int ? Math.trunc(acc / parts.length) : acc / parts.length;
    out[i] = acc;
  }
  return out;
}

function poisoned<D extends Dtype>(dtype: D, length: number, device: number): DeviceArray<D> {
  const v = dtype === 'float32' || dtype === 'float64' ? NaN : dtype === 'int32' ? -123456789 : 0xdeadbeef;
  return ck.full(dtype, length, v, { device });
}

function closeEnough(dtype: Dtype, got: ArrayLike<number>, ref: ArrayLike<number>): string | null {
  if (got.length !== ref.length) return `length ${got.length} ≠ ${ref.length}`;
  if (dtype === 'int32' || dtype === 'uint32') {
    const i = ck.cpu.firstMismatch(got, ref);
    return i < 0 ? null : `[${i}] = ${got[i]}, expected ${ref[i]}`;
  }
  for (let i = 0; i < got.length; i++) if (Number.isNaN(got[i])) return `[${i}] is NaN (not written)`;
  const e = ck.cpu.relativeError(got, ref);
  const tol = dtype === 'float32' ? 2e-6 : 1e-14;
  return e <= tol ? null : `relative error ${e} > ${tol}`;
}

async function collectives(): Promise<void> {
  const comm = await init();
  const { rank, size, device } = comm;
  const lengths = [1, 7, 33, 1000, 65537];
  let seed = 1;
  const expectThrow = (fn: () => unknown, cls: new (...a: never[]) => Error, what: string) => {
    try {
      fn();
      check(false, `${what}: did not throw`);
    } catch (e) {
      check(e instanceof cls, `${what}: threw ${String(e)}`);
    }
  };
  for (const dtype of ck.dtypes) {
    for (const length of lengths) {
      seed++;
      // allReduce, every op, into a poisoned output; and once in place.
      for (const op of ck.collectiveOps) {
        const parts = Array.from({ length: size }, (_, r) => dataOf(dtype, length, r, seed, op === 'prod'));
        using a = ck.upload(parts[rank], { device });
        using out = poisoned(dtype, length, device);
        const got = await comm.allReduce(a, op, { out });
        check(got === out, 'allReduce resolves to out');
        const e = closeEnough(dtype, await out.toHost(), reduceRef(dtype, op, parts));
        check(e === null, `allReduce ${dtype} ${op} length ${length}: ${e}`);
        check(ck.cpu.firstMismatch(await a.toHost(), parts[rank]) < 0, `allReduce ${dtype} ${op}: input changed`);
      }
      {
        const parts = Array.from({ length: size }, (_, r) => dataOf(dtype, length, r, seed));
        using a = ck.upload(parts[rank], { device });
        await comm.allReduce(a);
        const e = closeEnough(dtype, await a.toHost(), reduceRef(dtype, 'sum', parts));
        check(e === null, `allReduce in place ${dtype} length ${length}: ${e}`);
      }
      // broadcast from every root; a range of it once.
      for (let root = 0; root < size; root++) {
        const parts = Array.from({ length: size }, (_, r) => dataOf(dtype, length, r, seed + root));
        using a = ck.upload(parts[rank], { device });
        await comm.broadcast(a, root);
        check(
          ck.cpu.firstMismatch(await a.toHost(), parts[root]) < 0,
          `broadcast ${dtype} root ${root} length ${length}`,
        );
      }
      if (length > 2) {
        const parts = Array.from({ length: size }, (_, r) => dataOf(dtype, length, r, seed + 99));
        using a = ck.upload(parts[rank], { device });
        const offset = 1;
        const count = length - 2;
        await comm.broadcast(a, size - 1, { offset, count });
        const want = HOST[dtype] === Float64Array ? Float64Array.from(parts[rank]) : parts[rank].slice();
        want.set(parts[size - 1].subarray(offset, offset + count), offset);
        check(ck.cpu.firstMismatch(await a.toHost(), want) < 0, `broadcast range ${dtype} length ${length}`);
      }
      // allGather into a poisoned output.
      {
        const parts = Array.from({ length: size }, (_, r) => dataOf(dtype, length, r, seed + 7));
        using a = ck.upload(parts[rank], { device });
        using out = poisoned(dtype, size * length, device);
        await comm.allGather(a, { out });
        const want = new HOST[dtype](size * length);
        parts.forEach((p, r) => want.set(p as never, r * length));
        check(ck.cpu.firstMismatch(await out.toHost(), want) < 0, `allGather ${dtype} length ${length}`);
        using owned = await comm.allGather(a);
        check(ck.cpu.firstMismatch(await owned.toHost(), want) < 0, `allGather (new array) ${dtype} length ${length}`);
      }
      // reduceScatter, every op.
      for (const op of ck.collectiveOps) {
        const parts = Array.from({ length: size }, (_, r) => dataOf(dtype, size * length, r, seed + 13, op === 'prod'));
        using a = ck.upload(parts[rank], { device });
        using out = poisoned(dtype, length, device);
        await comm.reduceScatter(a, op, { out });
        const whole = reduceRef(dtype, op, parts);
        const e = closeEnough(dtype, await out.toHost(), whole.subarray(rank * length, (rank + 1) * length));
        check(e === null, `reduceScatter ${dtype} ${op} length ${length}: ${e}`);
      }
      // send/recv from rank 0 to each other rank; a ring with sendRecv.
      {
        const parts = Array.from({ length: size }, (_, r) => dataOf(dtype, length, r, seed + 21));
        if (rank === 0) {
          using a = ck.upload(parts[0], { device });
          for (let r = 1; r < size; r++) await comm.send(a, r);
        } else {
          using got = poisoned(dtype, length, device);
          await comm.recv(got, 0);
          check(ck.cpu.firstMismatch(await got.toHost(), parts[0]) < 0, `send/recv ${dtype} length ${length}`);
        }
        using mine = ck.upload(parts[rank], { device });
        using got = poisoned(dtype, length, device);
        await comm.sendRecv(mine, (rank + 1) % size, got, (rank + size - 1) % size);
        check(
          ck.cpu.firstMismatch(await got.toHost(), parts[(rank + size - 1) % size]) < 0,
          `sendRecv ring ${dtype} length ${length}`,
        );
      }
    }
  }
  // Many operations queued before awaiting any: results in order, the in-flight bound holds.
  {
    using a = ck.full('float64', 4096, 1, { device });
    const all: Promise<unknown>[] = [];
    for (let i = 0; i < 200; i++) all.push(comm.allReduce(a, 'sum'));
    await Promise.all(all);
    const v = (await a.toHost())[0];
    check(v === size ** 200, `200 queued allReduces: ${v}, expected ${size}^200`);
  }
  await comm.barrier();
  // Zero-length operations resolve without moving anything.
  {
    using z = ck.empty('float32', 0, { device });
    await comm.allReduce(z);
    await comm.broadcast(z, 0);
    check(true, 'zero length');
  }
  // Bad arguments throw at once (nothing queued, so the ranks stay in step).
  {
    using f = ck.zeros('float32', 10, { device });
    using g = ck.zeros('float64', 10, { device });
    using short = ck.zeros('float32', 9, { device });
    expectThrow(() => comm.allReduce(f, 'mean' as never), RangeError, 'bad op');
    expectThrow(() => comm.allReduce(f, 'sum', { out: g as never }), TypeError, 'out of another dtype');
    expectThrow(() => comm.allReduce(f, 'sum', { out: short }), RangeError, 'out of another length');
    expectThrow(() => comm.broadcast(f, size), RangeError, 'root out of range');
    expectThrow(() => comm.send(f, rank), RangeError, 'send to self');
    using odd = ck.zeros('float32', 2 * size + 1, { device });
    expectThrow(() => comm.reduceScatter(odd, 'sum'), RangeError, 'reduceScatter length not a multiple of the size');
    expectThrow(() => comm.broadcast(f, 0, { offset: 5, count: 6 }), RangeError, 'range past the end');
    const freed = ck.zeros('float32', 4, { device });
    freed.free();
    expectThrow(() => comm.allReduce(freed), TypeError, 'freed array');
    expectThrow(() => comm.allReduce(new Float32Array(4) as never), TypeError, 'host array');
  }
  await comm.synchronize();
  check(comm.failure === null, 'healthy after everything');
  comm.destroy();
  check(comm.destroyed, 'destroyed');
  try {
    using a = ck.zeros('float32', 4, { device });
    await comm.allReduce(a);
    check(false, 'allReduce after destroy did not throw');
  } catch (e) {
    check(e instanceof ck.NcclError && e.code === 'ncclCommDestroyed', `allReduce after destroy: ${String(e)}`);
  }
  finish({ rank, size, device });
}

// ---------------------------------------------------------------------------------------------
// apsp: the distributed APSP against cpu.apsp, every input and output kind; and against the
// single-GPU `fast` at a larger n.

// The Bellman spot check (the check of graphs larger than one GPU) on an exact result: it passes, and
// it fails for a distance one off on a sampled pair (on whichever rank holds it) and for the wrong graph.
async function bellmanChecks(comm: ck.Communicator, res: ck.ApspDistResult, opts: ck.ApspRandomInput): Promise<void> {
  const { n, row0, rows } = res;
  const label = `Bellman check, n=${n}`;
  const good = await ck.apspBellmanCheck(comm, res, opts, { samples: 200, seed: 9 });
  check(
    good.failed === 0 && good.pairs.length === 400,
    `${label}: ${good.failed} failures ${JSON.stringify(good.mismatches)}`,
  );
  const i = good.pairs[2];
  const j = good.pairs[3];
  check(i !== j, `${label}: sampled pair 1 is off the diagonal`);
  const mine = rows > 0 && i >= row0 && i < row0 + rows && res.band !== null;
  const at = (i - row0) * n + j;
  using one = ck.empty('int32', 1, { device: comm.device });
  if (mine) ck.copyDevice(one, res.band as DeviceArray<'int32'>, { srcOffset: at, count: 1 });
  const d = mine ? (await one.toHost())[0] : 0;
  for (const delta of [1, -1]) {
    if (mine) {
      one.copyFrom(Int32Array.of(d + delta));
      ck.copyDevice(res.band as DeviceArray<'int32'>, one, { dstOffset: at, count: 1 });
    }
    const bad = await ck.apspBellmanCheck(comm, res, opts, { samples: 200, seed: 9 });
    const hit = bad.mismatches.find((m) => m.i === i && m.j === j);
    check(
      bad.failed >= 1 && hit !== undefined,
      `${label}: d[${i}][${j}] ${delta > 0 ? '+' : ''}${delta} caught: ${JSON.stringify(bad.mismatches)}`,
    );
  }
  if (mine) {
    one.copyFrom(Int32Array.of(d));
    ck.copyDevice(res.band as DeviceArray<'int32'>, one, { dstOffset: at, count: 1 });
  }
  const wrong = await ck.apspBellmanCheck(
    comm,
    res,
    { ...opts, seed: (opts.seed ?? 1) + 1 },
    { samples: 200, seed: 9 },
  );
  check(wrong.failed > 100, `${label}: against another graph, ${wrong.failed} of 200 pairs fail`);
  const again = await ck.apspBellmanCheck(comm, res, opts, { samples: 200, seed: 9 });
  check(again.failed === 0, `${label}: restored, ${again.failed} failures`);
  // A band of the wrong length on the last rank: every rank throws (none is left in the all-reduce)
  // and the communicator stays usable.
  {
    const last = comm.size - 1;
    using wrong = ck.empty('int32', 5, { device: comm.device });
    try {
      await ck.apspBellmanCheck(comm, comm.rank === last ? { n, band: wrong } : res, opts, { samples: 20 });
      check(false, `${label}: a bad band on rank ${last} gave no error`);
    } catch (e) {
      const ok = comm.rank === last ? e instanceof RangeError : /failed on rank/.test(String(e));
      check(ok, `${label}: a bad band on rank ${last}: ${String(e)}`);
    }
    await comm.barrier();
    check(comm.failure === null, `${label}: usable after a rejected argument`);
  }
  // The whole band shifted by one satisfies the equation off the diagonal: the diagonal pairs catch it,
  // also when fewer than 16 pairs are drawn (the last one is then diagonal).
  if (n <= 4096) {
    const host = res.band ? await res.band.toHost() : null;
    using shifted = host
      ? ck.upload(
          host.map((v) => v + 1),
          { device: comm.device },
        )
      : null;
    const moved = { n, band: shifted };
    for (const samples of [200, 3]) {
      const r = await ck.apspBellmanCheck(comm, moved, opts, { samples, seed: 9 });
      check(
        r.failed > 0 && r.mismatches.some((m) => m.i === m.j),
        `${label}: band + 1 caught with ${samples} pairs: ${r.failed} failures`,
      );
    }
  }
}

async function apspMode(): Promise<void> {
  // Files move in pieces of 3 rows and a bit (the last piece shorter), not in one.
  setFilePiece(3 * 1300 + 7);
  const sizes = (process.argv[3] ?? '1,7,17,33,129,257,1000,1300').split(',').map(Number);
  const bigN = Number(process.argv[4] ?? 0);
  const comm = await init();
  const { rank, size, device } = comm;
  const dir = process.env.CK_DIST_TMP ?? os.tmpdir();
  const tag = `${process.env.MASTER_PORT ?? process.env.OMPI_COMM_WORLD_SIZE ?? 'x'}`;
  const inputs = ['matrix', 'band', 'file', 'device-matrix'] as const;
  const outputs = ['band', 'gather', 'file'] as const;
  for (const [i, n] of sizes.entries()) {
    const w = hostGraph(n, n > 500 ? 0.01 : 0.05, 1000 + n);
    const ref = ck.cpu.apsp(w, n);
    const inputKind = inputs[i % inputs.length];
    const outputKind = outputs[i % outputs.length];
    const { row0, rows } = ck.apspBandOf(n, size, rank);
    const graphFile = path.join(dir, `ck-dist-graph-${tag}-${n}.bin`);
    const distFile = path.join(dir, `ck-dist-out-${tag}-${n}.bin`);
    if (inputKind === 'file') {
      if (rank === 0) ck.writeGraph(graphFile, w, n, { format: 'binary' });
      await comm.barrier();
    }
    let input: ck.ApspDistInput;
    let owned: DeviceArray<'int32'> | null = null;
    if (inputKind === 'matrix') input = rank === 0 ? { matrix: w, n } : { matrix: null };
    else if (inputKind === 'device-matrix') {
      owned = rank === 0 ? ck.upload(w, { device }) : null;
      input = { matrix: owned, n: rank === 0 ? n : undefined };
    } else if (inputKind === 'band') {
      owned = ck.upload(w.subarray(row0 * n, (row0 + rows) * n), { device });
      input = { band: owned, n };
    } else input = { file: graphFile };
    const output: ck.ApspDistOutput = outputKind === 'file' ? { file: distFile } : outputKind;
    const rounds: number[] = [];
    const res = await ck.apspDistributed(comm, input, { output, onRound: (d) => rounds.push(d) });
    owned?.free();
    const label = `apsp n=${n} ${inputKind} → ${outputKind} (rows ${row0}+${rows})`;
    check(res.n === n && res.row0 === row0 && res.rows === rows, `${label}: result rows`);
    check(
      rounds.length > 0 && rounds[rounds.length - 1] === Math.ceil(n / 128),
      `${label}: onRound ${rounds.join(',')}`,
    );
    if (outputKind === 'band') {
      const got = res.band ? await res.band.toHost() : new Int32Array(0);
      check(ck.cpu.firstMismatch(got, ref.subarray(row0 * n, (row0 + rows) * n)) < 0 && got.length === rows * n, label);
      res.band?.free();
    } else if (outputKind === 'gather') {
      if (rank === 0) {
        check(res.matrix !== null && ck.cpu.firstMismatch(await res.matrix.toHost(), ref) < 0, label);
        res.matrix?.free();
      } else check(res.matrix === null && res.band === null, `${label}: nothing on rank ${rank}`);
    } else {
      if (rank === 0) {
        const back = ck.readDistances(distFile, { format: 'binary' });
        check(back.n === n && ck.cpu.firstMismatch(back.matrix, ref) < 0, label);
      }
      await comm.barrier();
      if (rank === 0) fs.rmSync(distFile, { force: true });
    }
    if (inputKind === 'file') {
      await comm.barrier();
      if (rank === 0) fs.rmSync(graphFile, { force: true });
    }
  }
  // A bad weight on one rank's rows: every rank throws, and the communicator stays usable.
  {
    const n = 300;
    const w = hostGraph(n, 0.05, 77);
    const last = ck.apspBandOf(n, size, size - 1);
    w[(last.rows > 0 ? last.row0 : 0) * n + 1] = -5;
    try {
      await ck.apspDistributed(comm, rank === 0 ? { matrix: w, n } : { matrix: null });
      check(false, 'negative weight: no error');
    } catch (e) {
      check(e instanceof RangeError || /failed on rank/.test(String(e)), `negative weight: ${String(e)}`);
    }
    await comm.barrier();
    check(comm.failure === null, 'usable after a rejected input');
  }
  // Larger: random bands made on each rank, against the single-GPU `fast` on the whole graph.
  let bigSeconds = 0;
  if (bigN > 0) {
    const opts = { density: 0.05, minWeight: 1, maxWeight: 1000, seed: 4242 };
    const { row0, rows } = ck.apspBandOf(bigN, size, rank);
    const t = Date.now();
    const res = await ck.apspDistributed(comm, { random: opts, n: bigN });
    bigSeconds = (Date.now() - t) / 1000;
    {
      using g = ck.randomGraph(bigN, { ...opts, device });
      using ref = ck.apsp(g, bigN, { method: 'fast', validate: false });
      using mine = ck.empty('int32', rows * bigN, { device });
      if (rows > 0) ck.copyDevice(mine, ref, { srcOffset: row0 * bigN, count: rows * bigN });
      const err = res.band ? ck.deviceRelativeError(res.band, mine) : rows === 0 ? 0 : NaN;
      check(err === 0, `apsp n=${bigN} random bands vs single-GPU fast: relative error ${err}`);
    }
    await bellmanChecks(comm, res, opts);
    res.band?.free();
  }
  comm.destroy();
  finish({ rank, size, bigN, bigSeconds });
}

// ---------------------------------------------------------------------------------------------
// mlp: data-parallel training on each rank's shard against one network trained on all patterns.

const MLP_TOLERANCE = 1e-4;

async function mlpMode(): Promise<void> {
  const comm = await init();
  const { rank, size, device } = comm;
  const perRank = 37;
  const P = perRank * size;
  const layers = [13, 17, 5];
  const X = ck.cpu.randomArray(Float32Array, P * layers[0], 5);
  const T = ck.cpu.randomArray(Float32Array, P * layers[2], 6).map((v) => (v + 1) / 2);
  const methods = ck.cublasInfo().available ? ck.mlpMethods : (['custom'] as const);
  const worst: Record<string, number> = {};
  let nearestSolo = Infinity;
  for (const method of methods) {
    for (const activation of ck.mlpActivations) {
      for (const output of ck.mlpOutputs) {
        for (const b of [perRank, 5]) {
          // Global batch i is the union of every rank's batch i: rank r takes rows r·b … of it.
          const B = b * size;
          const shard = { X: new Float32Array(perRank * layers[0]), T: new Float32Array(perRank * layers[2]) };
          let k = 0;
          for (let g0 = 0; g0 < P; g0 += B) {
            const inBatch = Math.min(B, P - g0) / size;
            for (let q = 0; q < inBatch; q++, k++) {
              const src = g0 + rank * inBatch + q;
              shard.X.set(X.subarray(src * layers[0], (src + 1) * layers[0]), k * layers[0]);
              shard.T.set(T.subarray(src * layers[2], (src + 1) * layers[2]), k * layers[2]);
            }
          }
          const spec = { layers, activation, output, eta: 0.05, alpha: 0.5, seed: 9, method, device };
          using one = new ck.Mlp(spec);
          const ref = one.train(X, T, { epochs: 4, batchSize: B });
          using dp = new ck.Mlp(spec);
          const got = dp.train(shard.X, shard.T, { epochs: 4, batchSize: b, comm });
          const label = `mlp ${method} ${activation}/${output} batch ${b}×${size}`;
          const we = ck.cpu.relativeError(flat(dp.getWeights()), flat(one.getWeights()));
          const ee = Math.max(...got.map((r, i) => Math.abs(r.error - ref[i].error) / ref[i].error));
          worst[label] = Math.max(we, ee);
          // Float32 rounding: the ranks' partial gradient sums (K = b rows each) are added in another
          // order than one GPU's sum over the whole batch, and 4 epochs with momentum carry it on.
          check(we < MLP_TOLERANCE, `${label}: weights differ by ${we}`);
          check(ee < MLP_TOLERANCE, `${label}: epoch errors differ by ${ee}`);
          // The check is not vacuous: the same shard trained without the gradient sum is far off.
          using solo = new ck.Mlp(spec);
          solo.train(shard.X, shard.T, { epochs: 4, batchSize: b });
          const se = ck.cpu.relativeError(flat(solo.getWeights()), flat(one.getWeights()));
          check(se > 100 * MLP_TOLERANCE, `${label}: training without the sum is only ${se} off`);
          nearestSolo = Math.min(nearestSolo, se);
          if (activation === ck.mlpActivations[0] && output === ck.mlpOutputs[0]) {
            // trainAsync with the communicator: the same updates, awaited instead of blocking.
            using dpa = new ck.Mlp(spec);
            const seen: number[] = [];
            const gotAsync = await dpa.trainAsync(shard.X, shard.T, {
              epochs: 4,
              batchSize: b,
              comm,
              onProgress: (p) => seen.push(p.done),
            });
            const ae = ck.cpu.relativeError(flat(dpa.getWeights()), flat(dp.getWeights()));
            check(ae < 1e-6, `${label}, trainAsync: weights differ from train's by ${ae}`);
            check(
              gotAsync.every((r, i) => Math.abs(r.error - got[i].error) <= 1e-6 * got[i].error),
              `${label}, trainAsync: epoch errors differ from train's`,
            );
            check(seen.join() === '1,2,3,4', `${label}, trainAsync: progress ${seen.join()}`);
          }
        }
      }
    }
  }
  // The ranks must agree on the batches per epoch: every rank throws.
  try {
    using net = new ck.Mlp({ layers, eta: 0.1, seed: 1, device });
    const rowsHere = rank === 0 ? 10 : 12;
    net.train(X.subarray(0, rowsHere * layers[0]), T.subarray(0, rowsHere * layers[2]), {
      epochs: 1,
      batchSize: rank === 0 ? 5 : 3,
      comm,
    });
    check(false, 'mismatched batches: no error');
  } catch (e) {
    check(e instanceof RangeError && /agree/.test(String(e)), `mismatched batches: ${String(e)}`);
  }
  check(comm.failure === null, 'usable after the mismatch');
  // A rank that cannot train (a NaN in its shard, a batch larger than its shard, T shorter than X,
  // a signal already aborted) or other epochs: every rank throws at once, in train and trainAsync,
  // instead of the others waiting in the start-up agreement or their first gradient sum until the
  // timeout (init's CK_TIMEOUT_MS, 120 s by default); the communicator stays usable.
  const last = rank === size - 1;
  const shardX = X.slice(0, 10 * layers[0]);
  const shardT = T.slice(0, 10 * layers[2]);
  const withNaN = shardX.slice();
  if (last) withNaN[3] = NaN;
  const named = /rank \d+ failed before training/;
  const cases: [string, Float32Array, Float32Array, object, RegExp, boolean][] = [
    ['a NaN in the last rank’s shard', withNaN, shardT, { epochs: 2 }, last ? /finite/ : named, true],
    ['other epochs on rank 0', shardX, shardT, { epochs: rank === 0 ? 3 : 2 }, /agree on .* the epochs/, true],
    [
      'a batch larger than the last rank’s shard',
      last ? shardX.slice(0, 4 * layers[0]) : shardX,
      last ? shardT.slice(0, 4 * layers[2]) : shardT,
      { epochs: 2 },
      last ? /options\.batchSize/ : named,
      true,
    ],
    [
      'T shorter than X on the last rank',
      shardX,
      last ? shardT.slice(layers[2]) : shardT,
      { epochs: 2 },
      last ? /^T / : named,
      true,
    ],
    [
      'a signal already aborted on the last rank',
      shardX,
      shardT,
      last ? { epochs: 2, signal: AbortSignal.abort() } : { epochs: 2 },
      last ? /abort/i : named,
      false,
    ],
  ];
  for (const [what, x, tt, extra, expected, both] of cases) {
    for (const form of both ? (['train', 'trainAsync'] as const) : (['trainAsync'] as const)) {
      const t = performance.now();
      using net = new ck.Mlp({ layers, eta: 0.1, seed: 1, device });
      const opts = { batchSize: 5, comm, ...extra } as ck.MlpTrainAsyncOptions;
      const e = await (
        form === 'train' ? Promise.resolve().then(() => net.train(x, tt, opts)) : net.trainAsync(x, tt, opts)
      ).then(
        () => null,
        (err: unknown) => err,
      );
      const ms = performance.now() - t;
      check(e instanceof Error && expected.test(e.message), `${form}, ${what}: ${String(e)}`);
      check(ms < 10_000, `${form}, ${what}: threw after ${ms.toFixed(0)} ms`);
      check(comm.failure === null, `${form}, ${what}: the communicator failed: ${String(comm.failure)}`);
    }
  }
  comm.destroy();
  finish({ rank, size, worst: Math.max(...Object.values(worst)), nearestSolo });
}

function flat(w: ck.MlpWeights): Float64Array {
  return Float64Array.from([...w.weights.flat(), ...w.biases.flat()]);
}

// ---------------------------------------------------------------------------------------------
// kill: rank 1 dies (SIGKILL) while a large allReduce is in flight; rank 0 must get an NcclError.

async function killMode(): Promise<void> {
  const timeoutMs = Number(process.env.CK_TIMEOUT_MS ?? 5000);
  const comm = await init(timeoutMs);
  const { rank, device } = comm;
  using a = ck.full('float32', 1 << 24, 1, { device }); // 64 MiB: a transfer that takes a while
  for (let i = 0; i < 3; i++) await comm.allReduce(a, 'max');
  console.log(`rank ${rank} warm at ${Date.now()}`);
  if (rank === 1) {
    void comm.allReduce(a, 'max').catch(() => {});
    setTimeout(() => process.kill(process.pid, 'SIGKILL'), 20);
    await new Promise(() => {}); // never: killed
  }
  const start = Date.now();
  let error: unknown = null;
  try {
    for (let i = 0; i < 1000; i++) await comm.allReduce(a, 'max');
  } catch (e) {
    error = e;
  }
  const ms = Date.now() - start;
  console.log(`rank ${rank} error at ${Date.now()}: ${String(error)}`);
  check(error instanceof ck.NcclError, `rank 0 got ${String(error)}`);
  check(comm.failure !== null, 'the communicator reports the failure');
  // The arrays stay usable: a local kernel and a read-back still work.
  a.fill(2);
  check((await a.toHost())[5] === 2, 'arrays usable after the abort');
  finish({ rank, ms, code: error instanceof ck.NcclError ? error.code : null, timeoutMs });
  // No destroy and no exit call: the process must end by itself.
}

// kill-apsp: every rank runs apspDistributed; rank CK_KILL_RANK kills itself (SIGKILL) once its
// third round is done. Every other rank must get an NcclError within the timeout (from the broadcast
// that never completes or NCCL's own error), keep its arrays usable, and end by itself.
async function killApspMode(): Promise<void> {
  const timeoutMs = Number(process.env.CK_TIMEOUT_MS ?? 5000);
  const n = Number(process.argv[3] ?? 4096);
  const comm = await init(timeoutMs);
  const { rank, size, device } = comm;
  const victim = Number(process.env.CK_KILL_RANK ?? size - 1);
  let error: unknown = null;
  let rounds = 0;
  try {
    const res = await ck.apspDistributed(
      comm,
      { random: { density: 0.05, seed: 5 }, n },
      {
        onRound: (done) => {
          rounds = done;
          if (rank === victim && done === 3) {
            console.log(`rank ${rank} killed at ${Date.now()}`);
            process.kill(process.pid, 'SIGKILL');
          }
        },
      },
    );
    res.band?.free();
  } catch (e) {
    error = e;
  }
  console.log(`rank ${rank} error at ${Date.now()} after round ${rounds}: ${String(error)}`);
  check(error instanceof ck.NcclError, `rank ${rank} got ${String(error)}`);
  check(rounds < Math.ceil(n / 128), `rank ${rank} stopped before the last round (${rounds})`);
  check(comm.failure !== null, 'the communicator reports the failure');
  using a = ck.full('int32', 1000, 3, { device });
  check((await a.toHost())[999] === 3, 'the device usable after the abort');
  finish({ rank, rounds, code: error instanceof ck.NcclError ? error.code : null, timeoutMs });
}

// lonely: rank 0 of 2 whose peer never comes; init must fail within the timeout.
async function lonelyMode(): Promise<void> {
  const timeoutMs = Number(process.env.CK_TIMEOUT_MS ?? 3000);
  const start = Date.now();
  try {
    await init(timeoutMs);
    check(false, 'init without the peer succeeded');
  } catch (e) {
    check(e instanceof ck.NcclError && e.code === 'ncclTimeout', `init: ${String(e)}`);
  }
  finish({ ms: Date.now() - start, timeoutMs });
}

// ---------------------------------------------------------------------------------------------
// trainings: two data-parallel trainAsync at once on one communicator run one after the other (in
// call order, the same on every rank), equal to the same two run in sequence; a collective or a
// blocking train issued during one throws that the communicator is busy.

async function trainingsMode(): Promise<void> {
  const comm = await init();
  const { rank, size, device } = comm;
  const layers = [11, 9, 4];
  const per = 23;
  const data = (seed: number) => ({
    X: ck.cpu.randomArray(Float32Array, per * layers[0], seed * 10 + rank),
    T: ck.cpu.randomArray(Float32Array, per * layers[2], seed * 10 + 5 + rank).map((v) => (v + 1) / 2),
  });
  const A = data(1);
  const B = data(2);
  const spec = (seed: number) => ({ layers, eta: 0.05, alpha: 0.5, seed, device });
  const opts = { epochs: 3, batchSize: 7, comm };
  // The reference: one after the other.
  using refA = new ck.Mlp(spec(3));
  using refB = new ck.Mlp(spec(4));
  const ra = await refA.trainAsync(A.X, A.T, opts);
  const rb = await refB.trainAsync(B.X, B.T, opts);
  // Both at once.
  using netA = new ck.Mlp(spec(3));
  using netB = new ck.Mlp(spec(4));
  const both = Promise.all([netA.trainAsync(A.X, A.T, opts), netB.trainAsync(B.X, B.T, opts)]);
  // Issued while the first holds the communicator: refused at once, saying why.
  using x = ck.full('float32', 8, 1, { device });
  try {
    void comm.allReduce(x);
    check(false, 'allReduce during a training was not refused');
  } catch (e) {
    check(
      e instanceof ck.NcclError &&
        e.code === 'ncclInvalidUsage' &&
        /busy with Mlp.trainAsync; await it first/.test(e.message),
      `allReduce during a training: ${String(e)}`,
    );
  }
  try {
    using netC = new ck.Mlp(spec(5));
    netC.train(A.X, A.T, opts);
    check(false, 'train (blocking) during a training was not refused');
  } catch (e) {
    check(
      e instanceof ck.NcclError && /busy with Mlp.trainAsync/.test(e.message),
      `train during a training: ${String(e)}`,
    );
  }
  const [ga, gb] = await both;
  const diffA = ck.cpu.relativeError(flat(netA.getWeights()), flat(refA.getWeights()));
  const diffB = ck.cpu.relativeError(flat(netB.getWeights()), flat(refB.getWeights()));
  check(diffA < 1e-6 && diffB < 1e-6, `two trainings at once vs in sequence: weights differ by ${diffA}, ${diffB}`);
  check(
    ga.every((r, i) => Math.abs(r.error - ra[i].error) <= 1e-6 * ra[i].error) &&
      gb.every((r, i) => Math.abs(r.error - rb[i].error) <= 1e-6 * rb[i].error),
    'two trainings at once: epoch errors differ from the sequence',
  );
  // The check is not vacuous: the two networks' weights are not the same, and training moved them.
  using fresh = new ck.Mlp(spec(3));
  check(
    ck.cpu.relativeError(flat(netA.getWeights()), flat(fresh.getWeights())) > 1e-4,
    'training did not move the weights',
  );
  // Free again afterwards.
  await comm.allReduce(x);
  check((await x.toHost())[0] === size, 'allReduce after the trainings');
  comm.destroy();
  finish({ rank, size, diffA, diffB });
}

// ---------------------------------------------------------------------------------------------
// unawaited: rank 0 queues collectives it never awaits (nor catches); rank 1 dies (SIGKILL). The
// failure must not end rank 0 as an unhandled rejection: it surfaces on the next call, in
// synchronize() and in barrier().

async function unawaitedMode(): Promise<void> {
  const comm = await init(Number(process.env.CK_TIMEOUT_MS ?? 5000));
  const { rank, device } = comm;
  const unhandled: unknown[] = [];
  process.on('unhandledRejection', (e) => unhandled.push(e));
  using a = ck.full('float32', 1 << 22, 1, { device });
  await comm.allReduce(a);
  if (rank === 1) {
    process.kill(process.pid, 'SIGKILL');
    await new Promise(() => {});
  }
  for (let i = 0; i < 3; i++) void comm.allReduce(a);
  const t0 = Date.now();
  while (comm.failure === null && Date.now() - t0 < comm.timeoutMs + 10_000)
    await new Promise((r) => setTimeout(r, 50));
  // A few turns of the loop for any rejection to surface.
  await new Promise((r) => setTimeout(r, 200));
  console.log(`rank ${rank} error at ${Date.now()}`);
  check(comm.failure instanceof ck.NcclError, `the failure is known: ${String(comm.failure)}`);
  check(unhandled.length === 0, `unhandled rejections: ${unhandled.map(String).join('; ')}`);
  try {
    void comm.allReduce(a);
    check(false, 'the next call did not throw');
  } catch (e) {
    check(e instanceof ck.NcclError, `the next call: ${String(e)}`);
  }
  const sync = await comm.synchronize().then(
    () => null,
    (e: unknown) => e,
  );
  check(sync instanceof ck.NcclError, `synchronize(): ${String(sync)}`);
  const barrier = await comm.barrier().then(
    () => null,
    (e: unknown) => e,
  );
  check(barrier instanceof ck.NcclError, `barrier(): ${String(barrier)}`);
  finish({ rank, code: comm.failure?.code });
}

// ---------------------------------------------------------------------------------------------
// late: one rank (CK_LATE_RANK, default the last) comes CK_LATE_MS (4000) late to CK_LATE (init,
// collective, p2p; flood: FLOOD un-awaited allReduces at once, more than the operations a
// communicator keeps queued, the rest deferred; flood-gather: FLOOD un-awaited allGathers, each
// allocating its output; flood-read: FLOOD un-awaited float64 sums of one array, then at once a
// read of it, which must come after all of them: size^FLOOD; flood-gc: a flood while the garbage
// collector finalizes unreferenced arrays, whose memory goes back without waiting for the deferred
// calls; flood-sync / flood-sync-blocking: a flood, then synchronizeAsync() / synchronize(), while the
// late rank makes its last FLOOD - 64 calls SPLIT_MS after its first 64, so that only a wait that
// covers the deferred calls lasts that long); the others' event loops must keep turning meanwhile.
// With CK_ABORT_MS, rank 0 aborts from a timer during the wait: abort() returns at once and the
// pending operation rejects (CK_FLOOD_BARRIER=1: a barrier() comes first, so that abort() has
// barrier()'s array to free). With CK_SECOND_COMM=abort|destroy as well, rank 0 also has a one-rank
// communicator on the same device, with barrier()'s array, and the timer closes that one instead:
// neither the close nor the free of that array after it may wait for the first communicator's
// deferred calls (the late peer), and the flood completes as without it.

/** The event loop's largest delay while `run` runs, in ms. */
async function lagDuring<T>(
  run: () => Promise<T>,
): Promise<{ value: T | null; error: unknown; lagMs: number; ms: number }> {
  const h = monitorEventLoopDelay({ resolution: 2 });
  h.enable();
  const t0 = performance.now();
  let value: T | null = null;
  let error: unknown = null;
  try {
    value = await run();
  } catch (e) {
    error = e;
  }
  const ms = performance.now() - t0;
  h.disable();
  // The histogram's max includes the timer's own period.
  return { value, error, lagMs: Math.max(0, h.max / 1e6 - 2), ms };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Beyond the 64 operations a communicator keeps in flight (kMaxInFlight in native/distributed/binding.cc).
const FLOOD = 100;
const IN_FLIGHT = 64;
const SPLIT_MS = 2000;

/** The garbage collector, without --expose-gc. */
function garbageCollector(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

async function lateMode(): Promise<void> {
  const env = ck.rankFromEnv();
  const lateRank = Number(process.env.CK_LATE_RANK ?? env.size - 1);
  const lateMs = Number(process.env.CK_LATE_MS ?? 4000);
  const what = process.env.CK_LATE ?? 'collective';
  const abortMs = process.env.CK_ABORT_MS ? Number(process.env.CK_ABORT_MS) : null;
  const late = env.rank === lateRank;
  const timeoutMs = Number(process.env.CK_TIMEOUT_MS ?? 60_000);
  // What every process pays once, whatever its peers do (CUDA's context, loading NCCL), is paid
  // before anything is measured: the lag measured is the wait for the late peer.
  ck.deviceCount();
  ck.ncclInfo();
  ck.empty('float32', 1, { device: env.localRank % Math.max(1, ck.deviceCount()) }).free();
  if (late && what === 'init') await sleep(lateMs);
  const joined = await lagDuring(() => init(timeoutMs));
  if (!joined.value) throw joined.error;
  const comm = joined.value;
  const { rank, size, device } = comm;
  const extra: Record<string, unknown> = { rank, what, lateMs };
  if (what === 'init' && !late) {
    extra.waitMs = joined.ms;
    extra.lagMs = joined.lagMs;
    check(joined.ms >= lateMs - 500, `init waited ${joined.ms} ms for a peer ${lateMs} ms late`);
    check(joined.lagMs <= 20, `event loop lag during init: ${joined.lagMs.toFixed(1)} ms`);
  }
  using a = ck.full('float32', 1 << 20, rank + 1, { device });
  if (late && what !== 'init') await sleep(lateMs);
  const secondClose = process.env.CK_SECOND_COMM ?? null;
  let second: ck.Communicator | null = null;
  if (secondClose !== null && rank === 0) {
    second = await ck.Communicator.init({ rank: 0, size: 1, device, timeoutMs });
    await second.barrier();
  }
  let abortCallMs: number | null = null;
  if (abortMs !== null && rank === 0) {
    setTimeout(() => {
      const t = performance.now();
      if (second === null) comm.abort();
      else if (secondClose === 'destroy') second.destroy();
      else second.abort();
      abortCallMs = performance.now() - t;
    }, abortMs);
  }
  using small = ck.full('float32', 256, rank + 1, { device });
  using acc = ck.full('float64', 256, 1, { device });
  const gathered: ck.DeviceArray[] = [];
  let floodSettled: Promise<PromiseSettledResult<unknown>[]> | null = null;
  const op =
    what === 'p2p'
      ? () => (rank === 0 ? comm.send(a, lateRank) : rank === lateRank ? comm.recv(a, 0) : Promise.resolve(a))
      : what === 'flood'
        ? () => {
            // Issued in one go, none awaited (awaiting is optional): each call may only queue.
            const all: Promise<unknown>[] = [];
            if (process.env.CK_FLOOD_BARRIER) comm.barrier().catch(() => {});
            for (let i = 0; i < FLOOD; i++) all.push(comm.allReduce(small, 'max'));
            floodSettled = Promise.allSettled(all);
            return Promise.all(all).then(() => a);
          }
        : what === 'flood-gc'
          ? () => {
              // Arrays nobody references any more, collected while the deferred calls hold the
              // stream: their finalizers must not wait for the late peer.
              let collected = 0;
              const registry = new FinalizationRegistry(() => collected++);
              for (let i = 0; i < 32; i++) registry.register(ck.empty('float32', 256, { device }), 0);
              const all: Promise<unknown>[] = [];
              for (let i = 0; i < FLOOD; i++) all.push(comm.allReduce(small, 'max'));
              const collect = sleep(100).then(async () => {
                const gc = garbageCollector();
                const t = performance.now();
                gc();
                await new Promise((r) => setImmediate(r));
                await sleep(10);
                extra.gcMs = performance.now() - t;
                await sleep(50); // FinalizationRegistry's callbacks (the registry kept alive until then)
                extra.collected = registry ? collected : 0;
              });
              return Promise.all([...all, collect]).then(() => a);
            }
          : what === 'flood-sync' || what === 'flood-sync-blocking'
            ? () => {
                const all: Promise<unknown>[] = [];
                for (let i = 0; i < (late ? IN_FLIGHT : FLOOD); i++) all.push(comm.allReduce(small, 'max'));
                if (late) {
                  return sleep(SPLIT_MS).then(() => {
                    for (let i = IN_FLIGHT; i < FLOOD; i++) all.push(comm.allReduce(small, 'max'));
                    return Promise.all(all).then(() => a);
                  });
                }
                const t = performance.now();
                if (what === 'flood-sync-blocking') {
                  ck.synchronize(device);
                  extra.syncMs = performance.now() - t;
                  return Promise.all(all).then(() => a);
                }
                return ck.synchronizeAsync(device).then(() => {
                  extra.syncMs = performance.now() - t;
                  return Promise.all(all).then(() => a);
                });
              }
            : what === 'flood-gather'
              ? () => {
                  const all: Promise<unknown>[] = [];
                  for (let i = 0; i < FLOOD; i++) all.push(comm.allGather(small).then((g) => gathered.push(g)));
                  return Promise.all(all).then(() => a);
                }
              : what === 'flood-read'
                ? () => {
                    // Each sum doubles (2 ranks) the values; the read is queued after the last one.
                    const all: Promise<unknown>[] = [];
                    for (let i = 0; i < FLOOD; i++) all.push(comm.allReduce(acc, 'sum'));
                    const read = acc.toHost();
                    return Promise.all([...all, read]).then(() => read);
                  }
                : () => comm.allReduce(a);
  const waited = await lagDuring(async () => {
    const t = performance.now();
    const p = op();
    extra.callMs = performance.now() - t; // the call itself: it only queues
    return p;
  });
  if (!late) {
    extra.waitMs = Math.round(waited.ms);
    extra.lagMs = waited.lagMs;
    // The first call of a kind may also load its kernel (CUDA loads modules lazily): a one-off cost
    // of the process, not a wait for the peer, which would take the 4 s. flood-read's read waits in
    // the calling thread for the deferred sums to be queued (docs/multi-gpu.md): no bound on it, nor
    // on synchronize(), which blocks by design. flood-gc's lag includes the collection itself.
    if (what !== 'flood-read' && what !== 'flood-sync-blocking') {
      check((extra.callMs as number) < 20, `the call took ${String(extra.callMs)} ms`);
      if (what !== 'flood-gc')
        check(waited.lagMs <= 20, `event loop lag while waiting for the late peer: ${waited.lagMs.toFixed(1)} ms`);
    }
    if (what === 'flood-gc') {
      check((extra.collected as number) > 0, `the garbage collector collected none of the 32 arrays`);
      check((extra.gcMs as number) < 1000, `the collection and its finalizers took ${String(extra.gcMs)} ms`);
    }
    if (what === 'flood-sync' || what === 'flood-sync-blocking') {
      // The deferred calls' partners come SPLIT_MS after the peer's first 64: a wait that ends sooner
      // missed them.
      check(
        (extra.syncMs as number) >= lateMs + SPLIT_MS - 500,
        `${what}: the wait ended after ${String(extra.syncMs)} ms, before the deferred calls could complete`,
      );
    }
  }
  if (abortMs !== null && secondClose !== null) {
    // The first communicator went on: the checks of a plain flood below.
    if (rank === 0) {
      extra.abortCallMs = abortCallMs;
      check(
        abortCallMs !== null && abortCallMs < 100,
        `the second communicator's ${secondClose}() took ${String(abortCallMs)} ms`,
      );
      check(second?.destroyed === true, `the second communicator after ${secondClose}(): not closed`);
    }
  } else if (abortMs !== null) {
    if (rank === 0) {
      extra.abortCallMs = abortCallMs;
      check(abortCallMs !== null && abortCallMs < 100, `abort() took ${String(abortCallMs)} ms`);
      check(
        waited.error instanceof ck.NcclError && waited.error.code === 'ncclAborted',
        `the pending operation after abort(): ${String(waited.error)}`,
      );
      check(waited.ms < abortMs + 1000, `it rejected ${waited.ms.toFixed(0)} ms after the call`);
      if (floodSettled) {
        // Every call of the flood, queued or deferred, rejects; nothing stays held on the stream.
        const settled = await (floodSettled as Promise<PromiseSettledResult<unknown>[]>);
        const aborted = settled.filter(
          (r) => r.status === 'rejected' && r.reason instanceof ck.NcclError && r.reason.code === 'ncclAborted',
        ).length;
        extra.abortedCalls = aborted;
        check(aborted === FLOOD, `after abort(): ${aborted} of ${FLOOD} flood calls rejected with ncclAborted`);
        const after = await ck.full('float32', 8, 3, { device }).toHost();
        check(after[7] === 3, `the library stream after abort(): ${after[7]}`);
      }
    } else if (late) {
      // Its peer gave up: an NcclError within its timeout, never a hang. Or, for a single collective
      // with a GPU per rank, completion: over NVLink rank 0's kernel had already written its whole
      // share into this rank's buffers before the abort (seen on 4 × H200), and NCCL asks no more.
      const completed = waited.error === null && what === 'collective';
      check(
        waited.error instanceof ck.NcclError || completed,
        `the late rank after rank 0's abort: ${String(waited.error)}`,
      );
      extra.lateError =
        waited.error instanceof ck.NcclError ? waited.error.code : completed ? 'completed' : String(waited.error);
    }
    finish(extra);
    return;
  }
  if (waited.error) throw waited.error;
  if (what === 'p2p') {
    if (rank === lateRank) check((await a.toHost())[7] === 1, 'p2p: received rank 0’s data');
  } else if (what === 'flood-gather') {
    check(gathered.length === FLOOD, `flood-gather: ${gathered.length} results of ${FLOOD}`);
    for (const g of gathered.slice(-3)) {
      const h = await g.toHost();
      check(h[0] === 1 && h[256 * size - 1] === size, `flood-gather: ${h[0]} … ${h[256 * size - 1]}`);
    }
    for (const g of gathered) g.free();
    if (!late) check(waited.ms >= lateMs - 500, `waited ${waited.ms.toFixed(0)} ms for a peer ${lateMs} ms late`);
  } else if (what === 'flood-read') {
    const h = (waited.value as unknown as Float64Array) ?? new Float64Array(1);
    const want = size ** FLOOD;
    check(h[7] === want && h[255] === want, `flood-read: the read saw ${h[7]}, expected ${want} (size^${FLOOD})`);
    extra.readLog2 = Math.log2(h[7]);
  } else if (what === 'flood' || what === 'flood-gc' || what === 'flood-sync' || what === 'flood-sync-blocking') {
    check(
      (await small.toHost())[17] === size,
      `${FLOOD} allReduce max: ${(await small.toHost())[17]}, expected ${size}`,
    );
    if (!late) check(waited.ms >= lateMs - 500, `waited ${waited.ms.toFixed(0)} ms for a peer ${lateMs} ms late`);
  } else {
    const want = (size * (size + 1)) / 2;
    check(
      (await a.toHost())[12345] === want,
      `allReduce with a late peer: ${(await a.toHost())[12345]}, expected ${want}`,
    );
    // Late to the collective itself: the other ranks wait for it (late to init, they waited there).
    if (!late && what !== 'init')
      check(waited.ms >= lateMs - 500, `waited ${waited.ms.toFixed(0)} ms for a peer ${lateMs} ms late`);
  }
  comm.destroy();
  finish(extra);
}

// ---------------------------------------------------------------------------------------------
// worker: Communicator.init, collectives and destroy inside a worker_thread (whose process.env is a
// copy: nothing may depend on it reaching NCCL).

async function workerMode(): Promise<void> {
  const env = ck.rankFromEnv();
  // NCCL reads the process's real environment: set by this (main) thread, as a user would.
  if (process.env.CK_HOSTID_PER_RANK) process.env.NCCL_HOSTID = `ck-rank-${env.rank}`;
  const code = `
    require(${JSON.stringify(path.join(__dirname, 'ts-register.js'))});
    const { parentPort } = require('node:worker_threads');
    const ck = require(${JSON.stringify(path.join(__dirname, '..', '..', 'lib', 'index.ts'))});
    (async () => {
      const failures = [];
      let checks = 0;
      const check = (ok, what) => { checks++; if (!ok) failures.push(what); };
      const comm = await ck.Communicator.init({ timeoutMs: 120000 });
      const { rank, size, device } = comm;
      const a = ck.full('float64', 1001, rank + 1, { device });
      await comm.allReduce(a);
      check((await a.toHost())[1000] === (size * (size + 1)) / 2, 'allReduce in a worker');
      const g = await comm.allGather(ck.full('int32', 3, rank, { device }));
      check(Array.from(await g.toHost()).join() === Array.from({ length: 3 * size }, (_, i) => Math.floor(i / 3)).join(), 'allGather in a worker');
      const got = ck.full('int32', 5, -1, { device });
      await comm.sendRecv(ck.full('int32', 5, rank, { device }), (rank + 1) % size, got, (rank + size - 1) % size);
      check((await got.toHost())[4] === (rank + size - 1) % size, 'sendRecv ring in a worker');
      await comm.barrier();
      comm.destroy();
      parentPort.postMessage({ checks, failures, rank, size });
    })().catch((e) => parentPort.postMessage({ checks: 1, failures: ['threw: ' + (e && e.stack || e)] }));`;
  const result = await new Promise<{ checks: number; failures: string[]; rank?: number; size?: number }>(
    (resolve, reject) => {
      const w = new Worker(code, { eval: true });
      w.once('message', resolve);
      w.once('error', reject);
    },
  );
  checks += result.checks;
  failures.push(...result.failures);
  finish({ rank: result.rank, size: result.size });
}

// ---------------------------------------------------------------------------------------------
// job: one rank of a job that may share its address with another (test/dist-gpu.test.ts starts two).
// A rank that joins sums rank + 1 over its job; one refused reports the error and how soon it came.

async function jobMode(): Promise<void> {
  // CUDA and NCCL loaded first: the time measured is the handshake's.
  ck.deviceCount();
  ck.ncclInfo();
  const t0 = Date.now();
  try {
    const comm = await init(Number(process.env.CK_TIMEOUT_MS ?? 30_000));
    const { rank, size, device } = comm;
    using a = ck.full('float32', 1000, rank + 1, { device });
    await comm.allReduce(a);
    const sum = (await a.toHost())[999];
    check(sum === (size * (size + 1)) / 2, `rank ${rank}: sum ${sum}, expected ${(size * (size + 1)) / 2}`);
    comm.destroy();
    finish({ joined: true, sum });
  } catch (e) {
    finish({
      joined: false,
      ms: Date.now() - t0,
      code: e instanceof ck.NcclError ? e.code : null,
      message: e instanceof Error ? e.message : String(e),
    });
  }
}

// ---------------------------------------------------------------------------------------------
// destroy: destroy() never blocks the JavaScript thread. Rank 1 stops itself (SIGSTOP) with rank 0's
// allReduce pending: rank 0's destroy() returns at once, its event loop keeps turning, and the
// process ends by itself once the communicator's thread has aborted it (timeoutMs). With
// CK_DESTROY=clean both ranks destroy after a completed allReduce and end promptly.

async function destroyMode(): Promise<void> {
  const timeoutMs = Number(process.env.CK_TIMEOUT_MS ?? 3000);
  const comm = await init(timeoutMs);
  const { rank, size, device } = comm;
  using a = ck.full('float32', 1 << 22, 1, { device });
  await comm.allReduce(a);
  check((await a.toHost())[0] === size, 'warm-up allReduce');
  const clean = process.env.CK_DESTROY === 'clean';
  if (!clean && rank === 1) {
    console.log(`rank 1 stopping at ${Date.now()}`);
    process.kill(process.pid, 'SIGSTOP');
  }
  if (!clean) {
    await sleep(300);
    comm.allReduce(a).catch(() => {}); // never completes: rank 1 is stopped
  }
  const t = performance.now();
  comm.destroy();
  const destroyMs = performance.now() - t;
  check(destroyMs < 50, `destroy() took ${destroyMs.toFixed(1)} ms`);
  check(comm.destroyed, 'destroyed');
  const after = await lagDuring(() => sleep(clean ? 200 : timeoutMs + 1000));
  check(after.lagMs <= 20, `event loop lag after destroy(): ${after.lagMs.toFixed(1)} ms`);
  console.log(`rank ${rank} destroyed at ${Date.now()}`);
  finish({ rank, destroyMs, lagMs: after.lagMs });
  // No exit call: the process ends once the communicator's thread is done.
}

const modes: Record<string, () => Promise<void>> = {
  collectives,
  apsp: apspMode,
  mlp: mlpMode,
  trainings: trainingsMode,
  kill: killMode,
  'kill-apsp': killApspMode,
  unawaited: unawaitedMode,
  lonely: lonelyMode,
  late: lateMode,
  worker: workerMode,
  job: jobMode,
  destroy: destroyMode,
};

const run = modes[mode];
if (!run) {
  console.error(`unknown mode ${mode}; one of ${Object.keys(modes).join(', ')}`);
  process.exit(2);
}
run().catch((e: unknown) => {
  failures.push(`threw: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  finish();
});
