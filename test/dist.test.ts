// Several processes without a GPU: the environment of every launcher convention and NCCL's absence
// (the launcher end to end is in launch.test.ts). With one GPU (no NCCL needed): the band steps shared
// with the distributed APSP, and the random graph made band by band. The multi-process GPU suites are
// in dist-gpu.test.ts.
import { spawnSync } from 'node:child_process';
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
// NCCL at run time.

let tmp: string;
beforeAll(() => (tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-dist-'))));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

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
