// Several processes on the GPU through NCCL: each test starts ranks of test/harness/dist-rank.ts
// (under `cuda-kernels launch`, under mpirun, or directly) and reads their `CK-RESULT` lines. With
// fewer GPUs than ranks, the ranks share GPUs (each its own NCCL_HOSTID, so NCCL joins them over its
// socket transport): every behaviour is checked, no speed is measured. Skipped without a GPU or NCCL.
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

import * as ck from '../lib';
import { hostGraph } from './harness/families';
import { report } from './harness/report';
import { gpuCount } from './helpers/gpu';
import { baseEnv, describeNccl, port, type RankResult, results } from './helpers/ranks';

const root = path.join(__dirname, '..');
const register = path.join(root, 'test', 'harness', 'ts-register.js');
const rankScript = path.join(root, 'test', 'harness', 'dist-rank.ts');
/** One process of dist-rank.ts as rank `rank` of `ranks` at 127.0.0.1:`masterPort`. */
function rankEnv(rank: number, ranks: number, masterPort: string, extra: Record<string, string>) {
  return baseEnv(ranks, {
    RANK: String(rank),
    WORLD_SIZE: String(ranks),
    LOCAL_RANK: String(rank),
    LOCAL_WORLD_SIZE: String(ranks),
    MASTER_ADDR: '127.0.0.1',
    MASTER_PORT: masterPort,
    ...extra,
  });
}

/** Processes of dist-rank.ts, each `[argv, env]`, with their output collected and their exits as
 * promises (killed after `limitMs`). */
function startProcs(specs: [string[], Record<string, string>][], limitMs = 150_000) {
  const procs = specs.map(([argv, env]) =>
    spawn(process.execPath, [rankScript, ...argv], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env }),
  );
  const out = procs.map(() => '');
  const err = procs.map(() => '');
  const ended = procs.map(
    (c, i) =>
      new Promise<{ code: number | null; signal: string | null; at: number }>((resolve) => {
        c.stdout?.on('data', (d: Buffer) => (out[i] += d.toString()));
        c.stderr?.on('data', (d: Buffer) => (err[i] += d.toString()));
        c.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() }));
      }),
  );
  const guard = setTimeout(() => procs.forEach((c) => c.kill('SIGKILL')), limitMs);
  const exits = Promise.all(ended).finally(() => clearTimeout(guard));
  const detail = () => out.map((o, i) => `process ${i} stdout:\n${o}\nstderr:\n${err[i]}`).join('\n');
  return { procs, out, err, ended, exits, detail };
}

/** Ranks of dist-rank.ts in `mode`, started directly (no launcher, which would stop the others when
 * one dies), with their output collected and their exits as promises. */
function startRanks(ranks: number, argv: string[], extra: Record<string, string>, limitMs = 150_000) {
  const p = port();
  return startProcs(
    Array.from(
      { length: ranks },
      (_, rank) => [argv, rankEnv(rank, ranks, p, extra)] as [string[], Record<string, string>],
    ),
    limitMs,
  );
}

/** Resolves once something accepts connections at 127.0.0.1:`p` (rank 0's store is up). */
async function listening(p: string, limitMs = 60_000): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(Number(p), '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() - t0 > limitMs) throw new Error(`nothing listens at 127.0.0.1:${p} after ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function expectAllPassed(
  label: string,
  r: { status: number | null; stdout: string; stderr: string },
  ranks: number,
): RankResult[] {
  const res = results(r.stdout);
  const detail = `${label}: exit ${r.status}\n--- stdout\n${r.stdout.slice(-20000)}\n--- stderr\n${r.stderr.slice(-20000)}`;
  if (res.length !== ranks || r.status !== 0 || res.some((x) => x.failures.length > 0)) throw new Error(detail);
  const checks = res.reduce((s, x) => s + x.checks, 0);
  report(`${label}: ${ranks} ranks, ${checks} checks passed in ${Math.max(...res.map((x) => x.seconds)).toFixed(1)} s`);
  return res;
}

function viaLaunch(ranks: number, args: string[], extra: Record<string, string> = {}, timeout = 280_000) {
  const r = spawnSync(
    process.execPath,
    [
      '-r',
      register,
      path.join(root, 'lib', 'cli', 'main.ts'),
      'launch',
      '--nproc-per-node',
      String(ranks),
      '--master-port',
      port(),
      rankScript,
      ...args,
    ],
    { cwd: root, encoding: 'utf8', timeout, maxBuffer: 1 << 26, env: baseEnv(ranks, extra) },
  );
  return {
    status: r.status,
    stdout: r.stdout ?? '',
    stderr: `${r.stderr ?? ''}${r.error ? `\n${r.error.message}` : ''}`,
  };
}

const mpirun = spawnSync('mpirun', ['--version'], { encoding: 'utf8' }).status === 0;

function viaMpirun(ranks: number, args: string[], extra: Record<string, string> = {}, timeout = 280_000) {
  const env = baseEnv(ranks, {
    MASTER_PORT: port(),
    OMPI_ALLOW_RUN_AS_ROOT: '1',
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1',
    ...extra,
  });
  const pass = ['NODE_OPTIONS', 'NCCL_NVLS_ENABLE', 'MASTER_PORT', 'CK_HOSTID_PER_RANK', ...Object.keys(extra)].filter(
    (k) => env[k] !== undefined,
  );
  const r = spawnSync(
    'mpirun',
    ['--oversubscribe', '-np', String(ranks), ...pass.flatMap((k) => ['-x', k]), process.execPath, rankScript, ...args],
    { cwd: root, encoding: 'utf8', timeout, maxBuffer: 1 << 26, env },
  );
  return {
    status: r.status,
    stdout: r.stdout ?? '',
    stderr: `${r.stderr ?? ''}${r.error ? `\n${r.error.message}` : ''}`,
  };
}

// APSP sizes: 1 and odd sizes up to 1300 (one tile row, partial tiles, more tile rows than ranks);
// CK_DIST_BIG_N is the size compared with single-GPU `fast` (16384 by default).
const APSP_SIZES = '1,7,17,33,127,129,257,301,513,1000,1300';
const BIG_N = process.env.CK_DIST_BIG_N ?? '16384';
const SOCKET = { NCCL_P2P_DISABLE: '1', NCCL_SHM_DISABLE: '1' };

describeNccl('NCCL communicators across processes', () => {
  test('2 ranks under the launcher: every collective × dtype × op against the CPU', () => {
    expectAllPassed('collectives, launch, 2 ranks', viaLaunch(2, ['collectives']), 2);
  }, 300_000);

  test('4 ranks under the launcher: every collective × dtype × op against the CPU', () => {
    expectAllPassed('collectives, launch, 4 ranks', viaLaunch(4, ['collectives']), 4);
  }, 300_000);

  (mpirun ? test : test.skip)(
    '2 ranks under mpirun (Open MPI variables): every collective × dtype × op',
    () => {
      const res = expectAllPassed('collectives, mpirun, 2 ranks', viaMpirun(2, ['collectives']), 2);
      expect(res.map((r) => r.rank).sort()).toEqual([0, 1]);
    },
    300_000,
  );

  test('NCCL forced onto its socket transport (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1): every collective', () => {
    expectAllPassed('collectives, launch, 2 ranks, socket transport', viaLaunch(2, ['collectives'], SOCKET), 2);
  }, 300_000);

  test('a rank whose peer never arrives fails init within timeoutMs (ncclTimeout), and exits', () => {
    const t0 = Date.now();
    const r = spawnSync(process.execPath, [rankScript, 'lonely'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
      env: baseEnv(1, {
        RANK: '0',
        WORLD_SIZE: '2',
        LOCAL_RANK: '0',
        MASTER_ADDR: '127.0.0.1',
        MASTER_PORT: port(),
        CK_TIMEOUT_MS: '3000',
      }),
    });
    const [res] = expectAllPassed('init without the peer', { status: r.status, stdout: r.stdout, stderr: r.stderr }, 1);
    expect(res.ms as number).toBeGreaterThanOrEqual(2900);
    expect(res.ms as number).toBeLessThan(3000 + 10_000);
    expect(Date.now() - t0).toBeLessThan(40_000);
  }, 60_000);

  test('a rank killed (SIGKILL) mid-collective: the other gets an NcclError within timeoutMs and exits by itself', async () => {
    const timeoutMs = 5000;
    const { out, exits, detail } = startRanks(2, ['kill'], { CK_TIMEOUT_MS: String(timeoutMs) });
    const [e0, e1] = await exits;
    if (e1.signal !== 'SIGKILL') throw new Error(`rank 1 was not killed: ${JSON.stringify(e1)}\n${detail()}`);
    const errorAt = Number(/error at (\d+)/.exec(out[0])?.[1]);
    const [res] = results(out[0]);
    if (!res || res.failures.length > 0 || e0.code !== 0) throw new Error(`rank 0: ${JSON.stringify(e0)}\n${detail()}`);
    const detect = errorAt - e1.at;
    const exitAfter = e0.at - e1.at;
    report(
      `rank killed mid-allReduce: the other rank's NcclError (${res.code}) ${detect} ms after the death (timeoutMs ${timeoutMs}); it exited by itself ${exitAfter} ms after`,
    );
    expect(detect).toBeLessThan(timeoutMs + 5000);
    expect(exitAfter).toBeLessThan(timeoutMs + 30_000);
  }, 180_000);
});

describeNccl('jobs that never merge, an event loop that never waits on a peer', () => {
  test('two 2-rank jobs on one port: the second job’s rank 0 gets "address in use" at once, its rank 1 is refused, the first sums its own ranks', async () => {
    const p = port();
    const spec = (rank: number, job: string): [string[], Record<string, string>] => [
      ['job'],
      rankEnv(rank, 2, p, { CUDA_KERNELS_JOB_ID: job, CK_TIMEOUT_MS: '60000', NCCL_HOSTID: `ck-${job}-${rank}` }),
    ];
    // Job A's rank 0 first, then all of job B, then A's rank 1: B meets A's store either way.
    const a0 = startProcs([spec(0, 'job-a')]);
    await listening(p);
    const b = startProcs([spec(0, 'job-b'), spec(1, 'job-b')]);
    await b.exits;
    const a1 = startProcs([spec(1, 'job-a')]);
    await Promise.all([a0.exits, a1.exits]);
    const detail = () => [a0, b, a1].map((x) => x.detail()).join('\n');
    const [ra0] = results(a0.out[0]);
    const [ra1] = results(a1.out[0]);
    const [rb0] = results(b.out[0]);
    const [rb1] = results(b.out[1]);
    if (!ra0 || !ra1 || !rb0 || !rb1) throw new Error(`missing results\n${detail()}`);
    // Job A: its own two ranks, 1 + 2 (merged with B it would be 1 + 2 + 1 + 2 = 6, or hang).
    expect([ra0.joined, ra0.sum, ra1.joined, ra1.sum, ra0.failures, ra1.failures]).toEqual([true, 3, true, 3, [], []]);
    // Job B: refused at once, each saying why.
    expect(rb0.joined).toBe(false);
    expect(rb0.code).toBe('EADDRINUSE');
    expect(rb0.message).toMatch(/address in use/);
    expect(rb1.joined).toBe(false);
    expect(rb1.code).toBe('ncclInvalidUsage');
    expect(rb1.message).toMatch(/refused: rank 0's store .* belongs to another job/);
    expect(rb0.ms as number).toBeLessThan(2000);
    expect(rb1.ms as number).toBeLessThan(2000);
    // Rank 0 of A was told about the refused rank of B (a warning, on its stderr).
    expect(a0.err[0]).toMatch(/refused rank 1 .*belongs to another job that uses the same address/);
    report(
      `two jobs on one port: B's rank 0 "${rb0.code}" after ${rb0.ms} ms, B's rank 1 refused after ${rb1.ms} ms; A summed 3 on both ranks`,
    );
  }, 180_000);

  /** Two ranks, the second 4 s late to `what` (dist-rank.ts's `late` mode); rank 0's result once both passed. */
  /** Both ranks' results once both passed: the last rank 4 s late to `what`, with `env` added. */
  async function lateRuns(what: string, env: Record<string, string> = {}) {
    const { out, exits, detail } = startRanks(2, ['late'], { CK_LATE: what, CK_LATE_MS: '4000', ...env });
    const ends = await exits;
    const [r0] = results(out[0]);
    const [r1] = results(out[1]);
    if (!r0 || !r1 || ends.some((e) => e.code !== 0) || r0.failures.length + r1.failures.length > 0)
      throw new Error(`${JSON.stringify(ends)}\n${detail()}`);
    return [r0, r1] as const;
  }
  const lateRun = async (what: string) => (await lateRuns(what))[0];

  test.each(['init', 'collective', 'p2p'])(
    'a peer 4 s late to %s: the other rank’s event loop keeps turning (lag ≤ 20 ms) and the call returns at once',
    async (what) => {
      const r0 = await lateRun(what);
      report(
        `peer 4 s late to ${what}: rank 0 waited ${String(r0.waitMs)} ms with at most ${(r0.lagMs as number).toFixed(1)} ms of event-loop lag` +
          `${r0.callMs !== undefined ? `; the call itself took ${(r0.callMs as number).toFixed(3)} ms` : ''}`,
      );
    },
    120_000,
  );

  // Beyond the 64 operations a communicator keeps queued, calls are deferred to its thread, which
  // queues them on the library stream in their place as slots free: the calls return at once.
  test.each(['flood', 'flood-gather'])(
    '100 un-awaited collectives at once (%s; more than the 64 kept queued) with a peer 4 s late: the calls return at once, the event loop keeps turning, the results are right',
    async (what) => {
      const r0 = await lateRun(what);
      report(
        `${what}: 100 un-awaited calls, peer 4 s late: the calls took ${(r0.callMs as number).toFixed(2)} ms, ` +
          `rank 0 waited ${String(r0.waitMs)} ms with at most ${(r0.lagMs as number).toFixed(1)} ms of event-loop lag`,
      );
    },
    120_000,
  );

  test('arrays collected by the garbage collector during a flood with a late peer: their finalizers do not wait for the deferred calls', async () => {
    const r0 = await lateRun('flood-gc');
    report(
      `flood-gc: ${String(r0.collected)} arrays collected in ${(r0.gcMs as number).toFixed(1)} ms (collection and finalizers), event-loop lag ${(r0.lagMs as number).toFixed(1)} ms`,
    );
  }, 120_000);

  // The late rank makes its last 36 calls 2 s after its first 64: only a wait that covers the calls
  // deferred on rank 0 lasts until then.
  test.each(['flood-sync', 'flood-sync-blocking'])(
    '%s after a flood with a late peer: the wait covers the deferred calls (synchronizeAsync without blocking the event loop)',
    async (what) => {
      const r0 = await lateRun(what);
      report(
        `${what}: the wait took ${(r0.syncMs as number).toFixed(0)} ms (peer 4 s late, its last 36 calls 2 s later), event-loop lag ${(r0.lagMs as number).toFixed(1)} ms`,
      );
    },
    120_000,
  );

  test('a read queued right after 100 un-awaited sums (most of them deferred) sees all of them: size^100', async () => {
    const r0 = await lateRun('flood-read');
    report(
      `flood-read: the read saw 2^${String(r0.readLog2)} after 100 sums, the calls took ${(r0.callMs as number).toFixed(2)} ms`,
    );
  }, 120_000);

  // With a barrier() first, abort() also frees barrier()'s array: after the close, or it would wait
  // for the deferred calls, i.e. for the late peer.
  test.each(['', 'a barrier, then '])(
    'abort() from a timer during %sa flood with a late peer: it returns within 100 ms, every call rejects, the process goes on',
    async (barrier) => {
      const [r0, r1] = await lateRuns('flood', {
        CK_ABORT_MS: '1000',
        CK_TIMEOUT_MS: '8000',
        ...(barrier ? { CK_FLOOD_BARRIER: '1' } : {}),
      });
      report(
        `abort() during a flood: ${(r0.abortCallMs as number).toFixed(2)} ms; the late peer got ${String(r1.lateError)}`,
      );
    },
    120_000,
  );

  // A second communicator on the device (one rank, with barrier()'s array), closed from a timer during
  // the first one's flood: its close, and freeing that array once it has finished, may not wait for
  // the first one's deferred calls, i.e. for the late peer.
  test.each(['abort', 'destroy'])(
    'a second communicator on the device, %s() from a timer during a flood of the first with a late peer: it returns within 100 ms, the event loop keeps turning, the flood completes',
    async (how) => {
      const [r0] = await lateRuns('flood', { CK_ABORT_MS: '1000', CK_SECOND_COMM: how });
      report(
        `second communicator ${how}() during a flood: ${(r0.abortCallMs as number).toFixed(2)} ms, event-loop lag ${(r0.lagMs as number).toFixed(1)} ms`,
      );
    },
    120_000,
  );

  test('abort() from a timer while waiting for a late peer returns within 100 ms, the pending operation rejects, the peer gets an error (or, with a GPU per rank, may complete from data already sent)', async () => {
    const [r0, r1] = await lateRuns('collective', { CK_ABORT_MS: '1000', CK_TIMEOUT_MS: '8000' });
    report(
      `abort() during the wait for a late peer: ${(r0.abortCallMs as number).toFixed(2)} ms, lag ${(r0.lagMs as number).toFixed(1)} ms; ` +
        `the late peer then got ${String(r1.lateError)}`,
    );
  }, 120_000);

  test('Communicator.init and collectives inside a worker_thread', async () => {
    const { out, exits, detail } = startRanks(2, ['worker'], {});
    const ends = await exits;
    const res = out.map((o) => results(o)[0]);
    if (res.some((r) => !r || r.failures.length > 0) || ends.some((e) => e.code !== 0))
      throw new Error(`${JSON.stringify(ends)}\n${detail()}`);
    report(`worker_threads: 2 ranks, ${res.reduce((t, r) => t + r.checks, 0)} checks passed`);
  }, 120_000);

  test('an un-awaited collective whose communicator later fails does not end the process: the next call, synchronize() and barrier() report it', async () => {
    const { out, exits, detail } = startRanks(2, ['unawaited'], { CK_TIMEOUT_MS: '5000' });
    const [e0, e1] = await exits;
    if (e1.signal !== 'SIGKILL') throw new Error(`rank 1 was not killed: ${JSON.stringify(e1)}\n${detail()}`);
    const [r0] = results(out[0]);
    if (!r0 || r0.failures.length > 0 || e0.code !== 0) throw new Error(`rank 0: ${JSON.stringify(e0)}\n${detail()}`);
    report(
      `un-awaited collectives, peer killed: rank 0 exited 0, the failure (${String(r0.code)}) reported by the next call, synchronize() and barrier()`,
    );
  }, 120_000);

  test.each(['clean', 'stuck'])(
    'destroy() returns at once and the process ends by itself (%s)',
    async (how) => {
      const timeoutMs = 3000;
      const run = startRanks(2, ['destroy'], { CK_DESTROY: how, CK_TIMEOUT_MS: String(timeoutMs) });
      const e0 = await run.ended[0];
      // The stopped rank never ends by itself.
      if (how === 'stuck') run.procs[1].kill('SIGKILL');
      const [, e1] = await run.exits;
      const [r0] = results(run.out[0]);
      const destroyedAt = Number(/rank 0 destroyed at (\d+)/.exec(run.out[0])?.[1]);
      if (!r0 || r0.failures.length > 0 || e0.code !== 0)
        throw new Error(`rank 0: ${JSON.stringify(e0)}\n${run.detail()}`);
      if (how === 'clean') {
        const [r1] = results(run.out[1]);
        if (!r1 || r1.failures.length > 0 || e1.code !== 0)
          throw new Error(`rank 1: ${JSON.stringify(e1)}\n${run.detail()}`);
      }
      // Printed after its own wait (200 ms clean, timeoutMs + 1 s stuck): then nothing is left but the close.
      const exitAfter = e0.at - destroyedAt;
      expect(exitAfter).toBeLessThan(how === 'clean' ? 5000 : 15_000);
      report(
        `destroy() (${how}): ${(r0.destroyMs as number).toFixed(2)} ms, event-loop lag after it ${(r0.lagMs as number).toFixed(1)} ms; ` +
          `the process ended ${exitAfter} ms after its last line`,
      );
    },
    120_000,
  );
});

// One rank in this process: a collective writes its output like any other call, so an array a
// running Promise form writes is refused as one (docs/async.md, "Arrays while a call runs").
describeNccl('collectives and the arrays of a running Promise form (one rank, in this process)', () => {
  test("an array a running stencilAsync writes is refused as a collective's output, read as its input; after the run, both", async () => {
    const comm = await ck.Communicator.init({ rank: 0, size: 1, timeoutMs: 60_000 });
    try {
      const rows = 301;
      const cols = 299;
      const n = rows * cols;
      // A checkerboard, far from converged: with a constant grid the residual is 0 after one step and
      // the run can finish before the abort below (it did with the ranks sharing one H100).
      using g = ck.upload(Float32Array.from({ length: n }, (_, i) => (i % 2) * 8 - 4));
      // Zeros, not empty(): the read below may come before the run's first step.
      using out = ck.full('float32', n, 0);
      using scratch = ck.full('float32', n, 0);
      using other = ck.full('float32', n, -3);
      const controller = new AbortController();
      const run = ck.stencilAsync(g, rows, cols, {
        tolerance: 0,
        maxIterations: 50_000_000,
        out,
        scratch,
        signal: controller.signal,
      });
      const refused = /the output array is still being written by a running stencilAsync\(\)/;
      expect(() => comm.allReduce(out)).toThrow(refused);
      expect(() => comm.allReduce(other, 'max', { out })).toThrow(refused);
      expect(() => comm.broadcast(scratch, 0)).toThrow(refused);
      expect(() => comm.allGather(other, { out })).toThrow(refused);
      expect(() => comm.reduceScatter(other, 'sum', { out })).toThrow(refused);
      // Reading it is allowed (the values of the moment, all finite for this grid).
      await comm.allReduce(out, 'sum', { out: other });
      expect((await other.toHost()).every((v) => Number.isFinite(v))).toBe(true);
      controller.abort();
      await expect(run).rejects.toMatchObject({ name: 'AbortError' });
      // Its arrays are free again: one rank's sum leaves them as they are.
      out.fill(2.5);
      await comm.allReduce(out, 'sum');
      await comm.broadcast(scratch.fill(7), 0);
      const [o, s] = [await out.toHost(), await scratch.toHost()];
      expect([o[0], o[n - 1], s[0], s[n - 1]]).toEqual([2.5, 2.5, 7, 7]);
    } finally {
      comm.destroy();
    }
  }, 60_000);
});

describeNccl('distributed APSP across processes', () => {
  test('4 ranks, one killed (SIGKILL) after its third round: the others get an NcclError within timeoutMs and exit by themselves', async () => {
    const timeoutMs = 5000;
    const ranks = 4;
    const victim = 2;
    const started = startRanks(ranks, ['kill-apsp', '4096'], {
      CK_TIMEOUT_MS: String(timeoutMs),
      CK_KILL_RANK: String(victim),
    });
    const { out } = started;
    const exits = await started.exits;
    const detail = started.detail();
    if (exits[victim].signal !== 'SIGKILL') throw new Error(`rank ${victim} was not killed\n${detail}`);
    const diedAt = exits[victim].at;
    const notes: string[] = [];
    for (let r = 0; r < ranks; r++) {
      if (r === victim) continue;
      const [res] = results(out[r]);
      if (!res || res.failures.length > 0 || exits[r].code !== 0) {
        throw new Error(`rank ${r}: ${JSON.stringify(exits[r])} ${JSON.stringify(res)}\n${detail}`);
      }
      const errorAt = Number(/error at (\d+)/.exec(out[r])?.[1]);
      expect(errorAt - diedAt).toBeLessThan(timeoutMs + 5000);
      expect(exits[r].at - diedAt).toBeLessThan(timeoutMs + 30_000);
      notes.push(`rank ${r}: ${String(res.code)} ${errorAt - diedAt} ms after, round ${String(res.rounds)}`);
    }
    report(
      `apspDistributed, 4 ranks, rank ${victim} killed after round 3: ${notes.join('; ')} (timeoutMs ${timeoutMs})`,
    );
  }, 180_000);

  test(`2 ranks: equal to cpu.apsp for n = ${APSP_SIZES} (every input and output kind), and to single-GPU fast at n = ${BIG_N}`, () => {
    const res = expectAllPassed(
      `apsp, launch, 2 ranks, n = ${APSP_SIZES} and ${BIG_N}`,
      viaLaunch(2, ['apsp', APSP_SIZES, BIG_N], {}, 590_000),
      2,
    );
    report(
      `apsp n = ${BIG_N} on 2 ranks, ${gpuCount >= 2 ? 'a GPU each' : 'sharing one GPU'}: ${Math.max(...res.map((r) => r.bigSeconds as number)).toFixed(1)} s (no speed figure)`,
    );
  }, 600_000);

  test('4 ranks: equal to cpu.apsp (more ranks than tile rows for the small sizes)', () => {
    expectAllPassed('apsp, launch, 4 ranks', viaLaunch(4, ['apsp', '1,7,129,257,513,1300', '2048']), 4);
  }, 300_000);

  (mpirun ? test : test.skip)(
    '2 ranks under mpirun',
    () => {
      expectAllPassed('apsp, mpirun, 2 ranks', viaMpirun(2, ['apsp', '17,300,1000']), 2);
    },
    300_000,
  );

  test('socket transport forced', () => {
    expectAllPassed(
      'apsp, launch, 2 ranks, socket transport',
      viaLaunch(2, ['apsp', '33,257,1000', '4096'], SOCKET),
      2,
    );
  }, 300_000);
});

describeNccl('npx cuda-kernels apsp --distributed', () => {
  test.each([
    ['text', 'txt', 300],
    ['binary', 'bin', 517],
  ] as const)(
    '%s files over 2 ranks under the launcher equal cpu.apsp',
    (format, ext, n) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-apsp-cli-'));
      try {
        const w = hostGraph(n, 0.03, 7 + n);
        const input = path.join(dir, `g.${ext}`);
        const output = path.join(dir, `d.${ext}`);
        ck.writeGraph(input, w, n, { format });
        const main = path.join(root, 'lib', 'cli', 'main.ts');
        // Ranks sharing a GPU need their own NCCL_HOSTID, which the command line cannot set: a shell
        // sets it per rank (from the launcher's RANK), then runs the very command a user would run.
        const rankCommand = 'NCCL_HOSTID=ck-cli-$RANK exec "$0" "$@"';
        const launch = ['-r', register, main, 'launch', '--nproc-per-node', '2', '--master-port', port(), '--no-node'];
        const command = [
          'sh',
          '-c',
          rankCommand,
          process.execPath,
          main,
          'apsp',
          input,
          output,
          '--distributed',
          '--no-progress',
        ];
        const r = spawnSync(process.execPath, [...launch, ...command], {
          cwd: root,
          encoding: 'utf8',
          timeout: 200_000,
          env: baseEnv(2),
        });
        if (r.status !== 0) throw new Error(`exit ${r.status}\n${r.stdout}\n${r.stderr}`);
        expect(r.stdout).toMatch(new RegExp(`\\[rank0\\]: apsp --distributed: n = ${n} over 2 ranks`));
        const back = ck.readDistances(output, { format });
        expect(back.n).toBe(n);
        expect(ck.cpu.firstMismatch(back.matrix, ck.cpu.apsp(w, n))).toBe(-1);
        report(`apsp --distributed CLI, ${format} files, n = ${n}, 2 ranks: equal to cpu.apsp`);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
    240_000,
  );
});

describeNccl('data-parallel MLP across processes', () => {
  test('two trainAsync at once on one communicator run in turn (equal to the same in sequence); a collective or train() meanwhile is refused', () => {
    const res = expectAllPassed('mlp, two trainings at once, 2 ranks', viaLaunch(2, ['trainings']), 2);
    report(
      `two trainAsync at once vs in sequence: weights differ by ${Math.max(...res.map((r) => Math.max(r.diffA as number, r.diffB as number)))}`,
    );
  }, 300_000);

  test('2 ranks on half the patterns each = 1 GPU on all of them (every activation, output, method; full and mini batches)', () => {
    const res = expectAllPassed('mlp data parallel, launch, 2 ranks', viaLaunch(2, ['mlp']), 2);
    const worst = Math.max(...res.map((r) => r.worst as number));
    const solo = Math.min(...res.map((r) => r.nearestSolo as number));
    report(
      `mlp data parallel: largest relative difference from 1-GPU training ${worst.toExponential(2)} (tolerance 1e-4); ` +
        `the same shards trained without the gradient sum are at least ${solo.toExponential(2)} off`,
    );
  }, 300_000);

  test('socket transport forced', () => {
    expectAllPassed('mlp data parallel, launch, 2 ranks, socket transport', viaLaunch(2, ['mlp'], SOCKET), 2);
  }, 300_000);
});
