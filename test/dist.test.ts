// Several processes without a GPU: the environment of every launcher convention, the launcher end to
// end with a CPU-only script, and NCCL's absence. With one GPU (no NCCL needed): the band steps shared
// with the distributed APSP, and the random graph made band by band. The multi-process GPU suites are
// in dist-gpu.test.ts.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import * as ck from '../lib';
import { rankPlan, report } from '../lib/bench/dist';
import type { BenchRow } from '../lib/bench/results';
import { rankEnvironment } from '../lib/cli/launch';
import { native } from '../lib/native';
import { hostGraph } from './harness/families';
import { describeGpu } from './helpers/gpu';

const root = path.join(__dirname, '..');
const register = path.join(root, 'test', 'harness', 'ts-register.js');

describe('rankFromEnv: every launcher convention', () => {
  test('nothing set: a single rank with no bootstrap address', () => {
    expect(ck.rankFromEnv({})).toEqual({
      rank: 0,
      size: 1,
      localRank: 0,
      localSize: undefined,
      address: undefined,
      source: 'single',
    });
  });

  test("torchrun's and the launcher's variables", () => {
    const env = {
      RANK: '3',
      WORLD_SIZE: '4',
      LOCAL_RANK: '1',
      LOCAL_WORLD_SIZE: '2',
      MASTER_ADDR: 'node0',
      MASTER_PORT: '1234',
    };
    expect(ck.rankFromEnv(env)).toEqual({
      rank: 3,
      size: 4,
      localRank: 1,
      localSize: 2,
      address: 'node0:1234',
      source: 'torchrun',
    });
    // One host and no MASTER_ADDR: the loopback address and the default port.
    expect(ck.rankFromEnv({ RANK: '1', WORLD_SIZE: '2', LOCAL_WORLD_SIZE: '2' }).address).toBe('127.0.0.1:29500');
    // IPv6 literals are bracketed as NCCL_COMM_ID wants them.
    expect(ck.rankFromEnv({ ...env, MASTER_ADDR: 'fe80::1' }).address).toBe('[fe80::1]:1234');
    // NCCL_COMM_ID wins over MASTER_ADDR.
    expect(ck.rankFromEnv({ ...env, NCCL_COMM_ID: '10.0.0.1:999' }).address).toBe('10.0.0.1:999');
  });

  test("Open MPI's variables (mpirun -np 2 node app.js)", () => {
    const env = {
      OMPI_COMM_WORLD_RANK: '1',
      OMPI_COMM_WORLD_SIZE: '2',
      OMPI_COMM_WORLD_LOCAL_RANK: '1',
      OMPI_COMM_WORLD_LOCAL_SIZE: '2',
    };
    expect(ck.rankFromEnv(env)).toEqual({
      rank: 1,
      size: 2,
      localRank: 1,
      localSize: 2,
      address: '127.0.0.1:29500',
      source: 'openmpi',
    });
    // Two hosts: rank 0's address must be given.
    const twoHosts = { ...env, OMPI_COMM_WORLD_SIZE: '4', OMPI_COMM_WORLD_LOCAL_SIZE: '2' };
    expect(() => ck.rankFromEnv(twoHosts)).toThrow(/MASTER_ADDR/);
    expect(ck.rankFromEnv({ ...twoHosts, MASTER_ADDR: 'h0', MASTER_PORT: '4000' }).address).toBe('h0:4000');
  });

  test("Slurm's variables (srun)", () => {
    const env = {
      SLURM_PROCID: '5',
      SLURM_NTASKS: '8',
      SLURM_LOCALID: '1',
      SLURM_NNODES: '2',
      SLURM_NTASKS_PER_NODE: '4',
      MASTER_ADDR: 'n1',
    };
    expect(ck.rankFromEnv(env)).toEqual({
      rank: 5,
      size: 8,
      localRank: 1,
      localSize: 4,
      address: 'n1:29500',
      source: 'slurm',
    });
    const one = {
      SLURM_PROCID: '0',
      SLURM_NTASKS: '2',
      SLURM_LOCALID: '0',
      SLURM_NNODES: '1',
      SLURM_NTASKS_PER_NODE: '2(x1)',
    };
    expect(ck.rankFromEnv(one)).toMatchObject({ size: 2, localSize: 2, address: '127.0.0.1:29500' });
    expect(() => ck.rankFromEnv({ ...env, MASTER_ADDR: undefined })).toThrow(/several hosts need rank 0's address/);
  });

  test("MPICH / Hydra's PMI variables", () => {
    const env = { PMI_RANK: '2', PMI_SIZE: '3', MPI_LOCALRANKID: '2', MPI_LOCALNRANKS: '3', MASTER_PORT: '7000' };
    expect(ck.rankFromEnv(env)).toEqual({
      rank: 2,
      size: 3,
      localRank: 2,
      localSize: 3,
      address: '127.0.0.1:7000',
      source: 'pmi',
    });
  });

  test('torchrun wins over the others; bad values name the variable', () => {
    expect(
      ck.rankFromEnv({ RANK: '0', WORLD_SIZE: '1', OMPI_COMM_WORLD_RANK: '3', OMPI_COMM_WORLD_SIZE: '4' }).source,
    ).toBe('torchrun');
    expect(() => ck.rankFromEnv({ RANK: 'x', WORLD_SIZE: '2' })).toThrow(/RANK must be an integer/);
    expect(() => ck.rankFromEnv({ RANK: '2', WORLD_SIZE: '2' })).toThrow(/rank \(2\) must be below the size \(2\)/);
    expect(() => ck.rankFromEnv({ RANK: '0', WORLD_SIZE: '0' })).toThrow(/WORLD_SIZE/);
    expect(() => ck.rankFromEnv({ RANK: '0', WORLD_SIZE: '2', LOCAL_RANK: '3', LOCAL_WORLD_SIZE: '2' })).toThrow(
      /local rank/,
    );
    expect(() => ck.rankFromEnv({ RANK: '0', WORLD_SIZE: '2', MASTER_ADDR: 'a', MASTER_PORT: '70000' })).toThrow(
      RangeError,
    );
    expect(() => ck.rankFromEnv({ RANK: '0', WORLD_SIZE: '2', MASTER_ADDR: 'a', MASTER_PORT: '1.5' })).toThrow(
      /MASTER_PORT/,
    );
  });

  test("the launcher's environment is what rankFromEnv reads back", () => {
    const opts = {
      nprocPerNode: 4,
      nnodes: 3,
      nodeRank: 2,
      masterAddr: 'head',
      masterPort: 555,
      node: true,
      prefix: true,
      killTimeoutMs: 1,
    };
    const env = rankEnvironment(opts, 3, { NCCL_NVLS_ENABLE: '0', OTHER: 'kept' });
    expect(env).toMatchObject({
      RANK: '11',
      WORLD_SIZE: '12',
      LOCAL_RANK: '3',
      LOCAL_WORLD_SIZE: '4',
      GROUP_RANK: '2',
      NCCL_NVLS_ENABLE: '0',
      OTHER: 'kept',
    });
    expect(ck.rankFromEnv(env)).toEqual({
      rank: 11,
      size: 12,
      localRank: 3,
      localSize: 4,
      address: 'head:555',
      source: 'torchrun',
    });
  });
});

// ---------------------------------------------------------------------------------------------
// The launcher, end to end, with a CPU-only script.

const RANK_SCRIPT = `
const r = process.env.RANK;
console.log(JSON.stringify({ rank: r, size: process.env.WORLD_SIZE, local: process.env.LOCAL_RANK,
  localSize: process.env.LOCAL_WORLD_SIZE, addr: process.env.MASTER_ADDR, port: process.env.MASTER_PORT,
  nvls: process.env.NCCL_NVLS_ENABLE, args: process.argv.slice(2) }));
console.error('to stderr from ' + r);
const mode = process.env.CK_MODE;
if (!mode) process.stdout.write('no newline at the end ' + r);
// With CK_READY_DIR, rank 1 fails only once every other rank has its handlers (each leaves a file
// there), so that many ranks starting slowly on a busy machine still see the SIGTERM.
const ready = process.env.CK_READY_DIR;
if (mode === 'fail' && r === '1') {
  const others = Number(process.env.WORLD_SIZE) - 1;
  const fail = () => process.exit(7);
  if (!ready) setTimeout(fail, 300);
  else setInterval(() => { if (require('fs').readdirSync(ready).length >= others) fail(); }, 50);
} else if (mode === 'fail' || mode === 'signal') {
  process.on('SIGTERM', () => { console.log('SIGTERM in ' + r); process.exit(143); });
  process.on('SIGINT', () => { console.log('SIGINT in ' + r); process.exit(130); });
  setInterval(() => {}, 1000);
  console.log('waiting ' + r);
  if (ready) require('fs').writeFileSync(require('path').join(ready, r), '');
} else if (mode === 'stubborn') {
  process.on('SIGTERM', () => console.log('ignoring SIGTERM in ' + r));
  if (r === '0') setTimeout(() => process.exit(3), 300);
  setInterval(() => {}, 1000);
}
`;

let tmp: string;
let script: string;
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-launch-'));
  script = path.join(tmp, 'rank.js');
  fs.writeFileSync(script, RANK_SCRIPT);
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function startLauncher(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, ['-r', register, path.join(root, 'lib', 'cli', 'main.ts'), 'launch', ...args], {
    cwd: root,
    env: { ...process.env, NCCL_NVLS_ENABLE: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function collect(child: ChildProcess): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const t0 = Date.now();
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - t0 })));
}

describe('cuda-kernels launch', () => {
  test('starts the ranks with their variables, passes the script its arguments and prefixes every line', async () => {
    const r = await collect(
      startLauncher(['--nproc-per-node', '3', '--master-port', '23456', script, '--flag', 'x y']),
    );
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    const json = lines
      .filter((l) => l.includes('{'))
      .map((l) => {
        const m = /^\[rank(\d)\]: (\{.*\})$/.exec(l);
        expect(m).not.toBeNull();
        return { prefix: Number(m![1]), ...JSON.parse(m![2]) };
      });
    expect(json.map((j) => j.rank).sort()).toEqual(['0', '1', '2']);
    for (const j of json) {
      expect(j).toMatchObject({
        rank: String(j.prefix),
        size: '3',
        local: String(j.prefix),
        localSize: '3',
        addr: '127.0.0.1',
        port: '23456',
        nvls: '0',
      });
      expect(j.args).toEqual(['--flag', 'x y']);
    }
    // A last line without a newline still comes out, prefixed; stderr goes to stderr, prefixed.
    for (const rank of [0, 1, 2]) {
      expect(lines).toContain(`[rank${rank}]: no newline at the end ${rank}`);
      expect(r.stderr).toContain(`[rank${rank}]: to stderr from ${rank}`);
    }
  });

  test('ranks of node 1 of 2 are numbered after node 0; --no-prefix leaves lines as they are', async () => {
    const r = await collect(
      startLauncher([
        '--nproc-per-node',
        '2',
        '--nnodes',
        '2',
        '--node-rank',
        '1',
        '--master-addr',
        'head',
        '--no-prefix',
        script,
      ]),
    );
    expect(r.code).toBe(0);
    const json = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    expect(json.map((j) => `${j.rank}/${j.size}/${j.local}/${j.addr}`).sort()).toEqual(['2/4/0/head', '3/4/1/head']);
  });

  test('one rank failing stops the others and the launcher exits with its code', async () => {
    const r = await collect(startLauncher(['--nproc-per-node', '3', script], { CK_MODE: 'fail' }));
    expect(r.code).toBe(7);
    expect(r.stderr).toMatch(/launch: rank 1 exited with code 7; stopping the other 2 ranks/);
    expect(r.stdout).toContain('[rank0]: SIGTERM in 0');
    expect(r.stdout).toContain('[rank2]: SIGTERM in 2');
    expect(r.ms).toBeLessThan(20_000);
  });

  // The rank counts of the 4- and 8-GPU runs (issue 17), here with CPU-only ranks.
  test.each([4, 8])('%i ranks: each once with its variables; rank 1 failing stops all the others', async (n) => {
    const ok = await collect(startLauncher(['--nproc-per-node', String(n), script]));
    expect(ok.code).toBe(0);
    const seen = ok.stdout
      .split('\n')
      .filter((l) => l.includes('{'))
      .map((l) => {
        const m = /^\[rank(\d+)\]: (\{.*\})$/.exec(l);
        expect(m).not.toBeNull();
        const j = JSON.parse(m![2]) as Record<string, string>;
        expect(j).toMatchObject({ rank: m![1], size: String(n), local: m![1], localSize: String(n), nvls: '0' });
        return Number(j.rank);
      });
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, r) => r));
    const readyDir = fs.mkdtempSync(path.join(tmp, 'ready-'));
    const bad = await collect(
      startLauncher(['--nproc-per-node', String(n), script], { CK_MODE: 'fail', CK_READY_DIR: readyDir }),
    );
    expect(bad.code).toBe(7);
    expect(bad.stderr).toMatch(new RegExp(`launch: rank 1 exited with code 7; stopping the other ${n - 1} ranks`));
    for (let r = 0; r < n; r++) if (r !== 1) expect(bad.stdout).toContain(`[rank${r}]: SIGTERM in ${r}`);
  });

  test('a rank that ignores SIGTERM is killed after --kill-timeout', async () => {
    const r = await collect(
      startLauncher(['--nproc-per-node', '2', '--kill-timeout', '500', script], { CK_MODE: 'stubborn' }),
    );
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('[rank1]: ignoring SIGTERM in 1');
    expect(r.stderr).toMatch(/rank 1 still running after 500 ms: SIGKILL/);
  });

  test.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const)('%s to the launcher is forwarded to every rank; exit code %i', async (signal, code) => {
    const child = startLauncher(['--nproc-per-node', '2', script], { CK_MODE: 'signal' });
    const done = collect(child);
    // Signal once both ranks are waiting.
    let seen = '';
    await new Promise<void>((resolve) =>
      child.stdout?.on('data', (d: Buffer) => {
        seen += d.toString();
        if (seen.includes('waiting 0') && seen.includes('waiting 1')) resolve();
      }),
    );
    child.kill(signal);
    const r = await done;
    expect(r.code).toBe(code);
    const name = signal === 'SIGTERM' ? 'SIGTERM' : 'SIGINT';
    expect(r.stdout).toContain(`[rank0]: ${name} in 0`);
    expect(r.stdout).toContain(`[rank1]: ${name} in 1`);
    expect(r.stderr).toContain(`launch: ${signal}: forwarding it to the ranks`);
  });

  test('--no-node runs a command; a command that does not exist fails with 127; bad options are refused', async () => {
    const ok = await collect(startLauncher(['--nproc-per-node', '2', '--no-node', 'sh', '-c', 'echo rank=$RANK']));
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('[rank0]: rank=0');
    expect(ok.stdout).toContain('[rank1]: rank=1');
    const missing = await collect(startLauncher(['--no-node', path.join(tmp, 'no-such-command')]));
    expect(missing.code).toBe(127);
    expect(missing.stderr).toMatch(/could not start/);
    const bad = await collect(startLauncher(['--nproc-per-node', '0', script]));
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/nproc-per-node/);
    const badRank = await collect(startLauncher(['--nnodes', '2', '--node-rank', '2', script]));
    expect(badRank.code).not.toBe(0);
    expect(badRank.stderr).toMatch(/--node-rank must be an integer in \[0, 1\]/);
  });
});

// ---------------------------------------------------------------------------------------------
// NCCL at run time.

describe('NCCL loaded at run time', () => {
  const info = ck.ncclInfo();

  test('ncclInfo() says where NCCL is, or why it is not', () => {
    if (info.available) {
      expect(info.path).toMatch(/libnccl/);
      expect(info.version).toMatch(/^2\.\d+\.\d+$/);
    } else {
      expect(info.code).toBe('ncclLibraryNotFound');
      expect(info.reason).toMatch(/Install NCCL/);
      expect(info.reason).toMatch(/libnccl\.so\.2/);
      expect(info.reason).toMatch(/CUDA_KERNELS_NCCL/);
    }
  });

  (info.available ? test.skip : test)(
    'without NCCL: Communicator.init rejects with an NcclError saying what to install',
    async () => {
      const e = await ck.Communicator.init({ rank: 0, size: 1 }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ck.NcclError);
      expect(e).toBeInstanceOf(ck.CudaError);
      expect((e as ck.NcclError).code).toBe('ncclLibraryNotFound');
      expect((e as Error).message).toMatch(/Install NCCL/);
      // Everything else keeps working.
      expect(ck.cpu.apsp(new Int32Array([0, 1, ck.INF, 0]), 2)).toEqual(new Int32Array([0, 1, ck.INF, 0]));
    },
  );

  test('CUDA_KERNELS_NCCL naming a missing file: unavailable, and the message names the file', () => {
    const missing = path.join(tmp, 'nope', 'libnccl.so.2');
    const code = `
      const ck = require('./lib');
      const i = ck.ncclInfo();
      ck.Communicator.init({ rank: 0, size: 1 }).then(() => console.log(JSON.stringify({ i, e: null })),
        (e) => console.log(JSON.stringify({ i, e: { name: e.name, code: e.code, message: e.message } })));`;
    const r = spawnSync(process.execPath, ['-r', register, '-e', code], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, CUDA_KERNELS_NCCL: missing },
    });
    expect(r.status).toBe(0);
    const { i, e } = JSON.parse(r.stdout.trim().split('\n').pop()!);
    expect(i.available).toBe(false);
    expect(i.code).toBe('ncclLibraryNotFound');
    expect(i.reason).toContain(`CUDA_KERNELS_NCCL=${missing}`);
    expect(i.reason).toContain(missing);
    expect(e).toMatchObject({ name: 'NcclError', code: 'ncclLibraryNotFound' });
  });

  test('arguments are checked before NCCL or a GPU is needed', async () => {
    await expect(ck.Communicator.init(null as never)).rejects.toThrow(TypeError);
    await expect(ck.Communicator.init({ rank: 0 })).rejects.toThrow(/rank and size together/);
    await expect(ck.Communicator.init({ rank: 2, size: 2 })).rejects.toThrow(/options.rank/);
    await expect(ck.Communicator.init({ rank: 0, size: 2, address: 'no port' })).rejects.toThrow(/options.address/);
    await expect(ck.Communicator.init({ timeoutMs: 0 })).rejects.toThrow(/options.timeoutMs/);
    await expect(ck.Communicator.init({ timeoutMs: 2 ** 31 })).rejects.toThrow(/options.timeoutMs/);
    expect(() => ck.apspBandOf(0, 2, 0)).toThrow(RangeError);
    expect(() => ck.apspBandOf(10, 2, 2)).toThrow(RangeError);
    // Graphs larger than one GPU: up to APSP_DIST_MAX_N, beyond the one-GPU limit.
    expect(ck.APSP_DIST_MAX_N).toBeGreaterThan(ck.APSP_MAX_N);
    expect(ck.apspBandOf(ck.APSP_DIST_MAX_N, 2, 1).rows).toBe(ck.APSP_DIST_MAX_N / 2);
    expect(() => ck.apspBandOf(ck.APSP_DIST_MAX_N + 1, 2, 0)).toThrow(/n must be an integer in \[1, 262144\]/);
    await expect(ck.apspDistributed({} as never, { file: 'x' })).rejects.toThrow(/comm must be a Communicator/);
    await expect(ck.apspBellmanCheck({} as never, { n: 10, band: null }, {})).rejects.toThrow(
      /comm must be a Communicator/,
    );
  });

  test('apspBandOf: whole 128-row tile rows, bands differ by at most one tile row, every row once', () => {
    for (const [n, size] of [
      [1, 2],
      [129, 2],
      [1300, 4],
      [1000, 3],
      [32768, 2],
      [300, 7],
      [200064, 2],
      [200000, 3],
    ]) {
      const bands = Array.from({ length: size }, (_, r) => ck.apspBandOf(n, size, r));
      let next = 0;
      for (const b of bands) {
        expect(b.row0).toBe(Math.min(next, n));
        if (b.rows > 0) expect(b.row0 % 128).toBe(0);
        next = b.row0 + b.rows;
      }
      expect(next).toBe(n);
      const tiles = bands.map((b) => Math.ceil(b.rows / 128)).filter((t, r) => t > 0 || bands[r].rows > 0);
      expect(Math.max(...tiles) - Math.min(...tiles)).toBeLessThanOrEqual(1);
    }
  });
});

describe('the multi-process benchmarks', () => {
  test('one rank per GPU; on fewer than 2 GPUs they skip unless CK_BENCH_RANKS asks for ranks sharing GPUs (no speed figure)', () => {
    expect(rankPlan({}, 2)).toEqual({ ranks: 2, counts: [2], shared: false, gpus: 2 });
    expect(rankPlan({}, 1)).toMatchObject({ ranks: 0, counts: [], reason: expect.stringMatching(/needs 2 GPUs/) });
    expect(rankPlan({}, 0).ranks).toBe(0);
    expect(rankPlan({ CK_BENCH_RANKS: '2' }, 1)).toEqual({ ranks: 2, counts: [2], shared: true, gpus: 1 });
    expect(rankPlan({ CK_BENCH_RANKS: '2' }, 2)).toEqual({ ranks: 2, counts: [2], shared: false, gpus: 2 });
    expect(rankPlan({ CK_BENCH_RANKS: '1' }, 2)).toMatchObject({
      ranks: 0,
      reason: expect.stringMatching(/CK_BENCH_RANKS/),
    });
    expect(rankPlan({ CK_BENCH_RANKS: '2,x' }, 2).ranks).toBe(0);
  });

  test('the scaling runs: every power of two up to the GPUs present (and their number), or the listed counts, in one run', () => {
    expect(rankPlan({}, 4)).toEqual({ ranks: 4, counts: [2, 4], shared: false, gpus: 4 });
    expect(rankPlan({}, 8)).toEqual({ ranks: 8, counts: [2, 4, 8], shared: false, gpus: 8 });
    expect(rankPlan({}, 6)).toEqual({ ranks: 6, counts: [2, 4, 6], shared: false, gpus: 6 });
    expect(rankPlan({ CK_BENCH_RANKS: '4,2,4' }, 8)).toEqual({ ranks: 4, counts: [2, 4], shared: false, gpus: 8 });
    expect(rankPlan({ CK_BENCH_RANKS: '2,4' }, 1)).toEqual({ ranks: 4, counts: [2, 4], shared: true, gpus: 1 });
    // 2 and 4 ranks on 2 GPUs: the 2-rank rows are figures, the 4-rank ones (sharing GPUs) are not.
    const rows: BenchRow[] = [1, 2, 4].map((gpus) => ({
      op: 'apsp',
      method: `m${gpus}`,
      size: '1',
      ms: 1,
      rate: 1,
      unit: 'x',
      reps: 1,
      check: 'ok',
      gpus,
    }));
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(report(2, rows, []).map((r) => r.gpus)).toEqual([1, 2]);
      expect(String(stderr.mock.calls.map((c) => c[0]).join(''))).toMatch(/1 row\(s\) measured with ranks SHARING/);
    } finally {
      stderr.mockRestore();
    }
  });
});

describeGpu('the band steps on one GPU (shared by the in-process and the distributed scheme)', () => {
  test.each([1, 7, 129, 257, 700])('the band scheme on one device equals cpu.apsp, n = %i', (n) => {
    const w = hostGraph(n, 0.05, 100 + n);
    const ref = ck.cpu.apsp(w, n);
    using g = ck.upload(w);
    using out = ck.full('int32', n * n, -7);
    native.apspRunMulti(g.handle(), out.handle(), n, [0], 0, false);
    expect(ck.cpu.firstMismatch(out.toHostSync(), ref)).toBe(-1);
  });

  test('a random graph made band by band equals the rows of the whole one', () => {
    const n = 1000;
    const opts = { density: 0.07, minWeight: 2, maxWeight: 90, seed: 31 };
    using whole = ck.randomGraph(n, opts);
    const host = whole.toHostSync();
    for (const [row0, rows] of [
      [0, 1],
      [128, 256],
      [999, 1],
      [500, 0],
    ]) {
      using band = ck.full('int32', rows * n, -1);
      native.apspRandomGraphRows(band.handle(), n, row0, rows, opts.density, opts.minWeight, opts.maxWeight, opts.seed);
      expect(ck.cpu.firstMismatch(band.toHostSync(), host.subarray(row0 * n, (row0 + rows) * n))).toBe(-1);
    }
    using band = ck.empty('int32', 10 * n);
    expect(() => native.apspRandomGraphRows(band.handle(), n, 995, 10, 0.1, 1, 2, 1)).toThrow(/rows must lie inside/);
  });
});
