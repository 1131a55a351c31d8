// Several processes without a GPU: the environment of every launcher convention and NCCL's absence
// (the launcher end to end is in launch.test.ts). With one GPU (no NCCL needed): the band steps shared
// with the distributed APSP, and the random graph made band by band. The multi-process GPU suites are
// in dist-gpu.test.ts.
import { spawn, spawnSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';

import * as ck from '../lib';
import { rankPlan, report } from '../lib/bench/dist';
import type { BenchRow } from '../lib/bench/results';
import { rankEnvironment } from '../lib/cli/launch';
import * as bootstrap from '../lib/distributed/bootstrap';
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
    // NCCL_COMM_ID is no address of ours (Communicator.init refuses it: NCCL would bootstrap there itself).
    expect(ck.rankFromEnv({ ...env, NCCL_COMM_ID: '10.0.0.1:999' }).address).toBe('node0:1234');
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

describe('jobIdFromEnv: the token that keeps jobs apart', () => {
  test('CUDA_KERNELS_JOB_ID (what the launcher sets), whatever the convention', () => {
    expect(ck.jobIdFromEnv({ CUDA_KERNELS_JOB_ID: ' abc ', RANK: '0', WORLD_SIZE: '2' })).toEqual({
      jobId: 'abc',
      from: 'CUDA_KERNELS_JOB_ID',
    });
    expect(
      ck.jobIdFromEnv({ CUDA_KERNELS_JOB_ID: 'x', OMPI_COMM_WORLD_RANK: '0', OMPI_COMM_WORLD_SIZE: '2' })?.from,
    ).toBe('CUDA_KERNELS_JOB_ID');
  });

  test("mpirun's, srun's and torchrun's job ids, each only under its own convention", () => {
    const ompi = { OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '2' };
    expect(ck.jobIdFromEnv({ ...ompi, OMPI_MCA_ess_base_jobid: '3166437377' })).toEqual({
      jobId: 'openmpi:3166437377',
      from: 'OMPI_MCA_ess_base_jobid',
    });
    expect(ck.jobIdFromEnv({ ...ompi, PMIX_NAMESPACE: 'prterun-h-123@1', OMPI_MCA_ess_base_jobid: '9' })?.from).toBe(
      'PMIX_NAMESPACE',
    );
    expect(ck.jobIdFromEnv(ompi)).toBeNull();
    const slurm = { SLURM_PROCID: '0', SLURM_NTASKS: '4', SLURM_JOB_ID: '812' };
    expect(ck.jobIdFromEnv({ ...slurm, SLURM_STEP_ID: '3' })?.jobId).toBe('slurm:812.3');
    // Two sruns of one allocation are two jobs.
    expect(ck.jobIdFromEnv({ ...slurm, SLURM_STEP_ID: '4' })?.jobId).not.toBe(
      ck.jobIdFromEnv({ ...slurm, SLURM_STEP_ID: '3' })?.jobId,
    );
    const torchrun = { RANK: '0', WORLD_SIZE: '2' };
    expect(ck.jobIdFromEnv({ ...torchrun, TORCHELASTIC_RUN_ID: 'f00d' })?.jobId).toBe('torchrun:f00d');
    expect(ck.jobIdFromEnv({ ...torchrun, TORCHELASTIC_RUN_ID: 'none' })).toBeNull();
    // A Slurm job id does not count for ranks that mpirun started (inside an allocation).
    expect(ck.jobIdFromEnv({ ...ompi, SLURM_JOB_ID: '812', SLURM_PROCID: '0', SLURM_NTASKS: '1' })).toBeNull();
    expect(ck.jobIdFromEnv({})).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------------
// Rank 0's bootstrap store, without NCCL: the unique id is 128 opaque bytes here.

/** A port that was free a moment ago. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

describe('the bootstrap store at MASTER_ADDR:MASTER_PORT: two jobs never join', () => {
  const randomId = () => crypto.randomBytes(bootstrap.UNIQUE_ID_BYTES);
  async function job(size: number, extra: Partial<bootstrap.BootstrapJob> = {}): Promise<bootstrap.BootstrapJob> {
    return {
      host: '127.0.0.1',
      port: extra.port ?? (await freePort()),
      jobId: 'job-a',
      explicitJob: true,
      size,
      deadline: Date.now() + 5000,
      ...extra,
    };
  }
  const errorOf = (p: Promise<unknown>) =>
    p.then(
      () => {
        throw new Error('resolved');
      },
      (e: unknown) => e as ck.NcclError,
    );

  test('every rank of a job gets the id rank 0 made, once all of them have joined', async () => {
    const a = await job(4);
    const id = randomId();
    let made = 0;
    const served = bootstrap.serveBootstrap(a, () => {
      made++;
      return id;
    });
    // The ranks come in any order, the last one a moment later: nobody gets the id before it.
    const early = [bootstrap.joinBootstrap(a, 3), bootstrap.joinBootstrap(a, 1)];
    let early0 = false;
    void Promise.race(early).then(() => (early0 = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(early0).toBe(false);
    const got = await Promise.all([served, ...early, bootstrap.joinBootstrap(a, 2)]);
    for (const g of got) expect(g.equals(id)).toBe(true);
    expect(made).toBe(1);
    // The store is closed once the id is out: the port is free again.
    const again = await job(1, { port: a.port });
    await expect(bootstrap.serveBootstrap(again, randomId)).resolves.toHaveLength(128);
  });

  test.each([
    ['127.0.0.1', '127.0.0.1'],
    ['127.0.0.1', os.hostname()],
    [os.hostname(), '127.0.0.1'],
    [os.hostname(), os.hostname()],
  ])('a second job on the same port (rank 0 at %s, then at %s) gets "address in use" at once', async (h1, h2) => {
    const a = await job(2, { host: h1 });
    const first = bootstrap.serveBootstrap(a, randomId);
    first.catch(() => {});
    await new Promise((r) => setTimeout(r, 50));
    const t0 = Date.now();
    const e = await errorOf(bootstrap.serveBootstrap({ ...a, host: h2, jobId: 'job-b' }, randomId));
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(e).toBeInstanceOf(ck.NcclError);
    expect(e.code).toBe('EADDRINUSE');
    expect(e.message).toMatch(new RegExp(`address in use.*port ${a.port}.*MASTER_PORT`));
    // The first job is untouched: its own rank joins it.
    const [id0, id1] = await Promise.all([
      first,
      bootstrap.joinBootstrap({ ...a, host: h1 === os.hostname() ? '127.0.0.1' : h1 }, 1),
    ]);
    expect(id0.equals(id1)).toBe(true);
  });

  test("a rank of another job is refused, naming both jobs' token fingerprints; rank 0 warns and waits for its own rank", async () => {
    const warnings: string[] = [];
    const a = await job(2, { onRefused: (m) => warnings.push(m) });
    const id = randomId();
    const served = bootstrap.serveBootstrap(a, () => id);
    const e = await errorOf(bootstrap.joinBootstrap({ ...a, jobId: 'job-b', onRefused: undefined }, 1));
    expect(e.code).toBe('ncclInvalidUsage');
    const fa = bootstrap.jobFingerprint('job-a');
    const fb = bootstrap.jobFingerprint('job-b');
    expect(e.message).toContain(`rank 1 of 2: refused: rank 0's store at 127.0.0.1:${a.port} belongs to another job`);
    expect(e.message).toContain(fa);
    expect(e.message).toContain(fb);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      new RegExp(
        `refused rank 1 \\(pid ${process.pid} on .*\\): its job token \\(fingerprint ${fb}\\) is not this job's \\(${fa}\\)`,
      ),
    );
    const [mine, theirs] = await Promise.all([served, bootstrap.joinBootstrap(a, 1)]);
    expect(mine.equals(id) && theirs.equals(id)).toBe(true);
  });

  test('one job with a token: another world size, or a rank taken twice, is refused on both sides', async () => {
    // Another size: the rank is refused, and so is the whole job (rank 0 and the rank already in).
    const a = await job(3);
    const served = errorOf(bootstrap.serveBootstrap(a, randomId));
    const waiting = errorOf(bootstrap.joinBootstrap(a, 1));
    await new Promise((r) => setTimeout(r, 100));
    const wrong = await errorOf(bootstrap.joinBootstrap({ ...a, size: 4 }, 2));
    expect(wrong.message).toMatch(/rank 2 of 4: refused: rank 0 at .* says the job has 3 ranks, this rank says 4/);
    const [e0, e1] = await Promise.all([served, waiting]);
    expect(e0.code).toBe('ncclInvalidUsage');
    expect(e0.message).toMatch(
      /rank 0 of 3 .*: refused rank 2 \(pid \d+ on .*\): it says the job has 4 ranks, rank 0 says 3/,
    );
    expect(e1.message).toMatch(/rank 1 of 3: refused: rank 0 gave up: .*it says the job has 4 ranks/);

    // A rank claimed twice.
    const b = await job(3);
    const served2 = errorOf(bootstrap.serveBootstrap(b, randomId));
    const first = errorOf(bootstrap.joinBootstrap(b, 1));
    await new Promise((r) => setTimeout(r, 100));
    const twice = await errorOf(bootstrap.joinBootstrap(b, 1));
    expect(twice.message).toMatch(
      /rank 1 of 3: refused: rank 1 has already joined rank 0 at .* \(pid \d+ on .*\): two processes claim rank 1/,
    );
    expect((await served2).message).toMatch(/refused rank 1 .*: rank 1 has already joined/);
    expect((await first).message).toMatch(/rank 0 gave up/);

    // A rank outside 1 … size − 1.
    const c = await job(2);
    const served3 = errorOf(bootstrap.serveBootstrap(c, randomId));
    await new Promise((r) => setTimeout(r, 50));
    expect((await errorOf(bootstrap.joinBootstrap(c, 0))).message).toMatch(/rank 0 is not one of ranks 1 … 1/);
    expect((await served3).message).toMatch(/refused rank 0 .*is not one of ranks 1 … 1/);
  });

  test('without a token (the default), another size is refused but rank 0 only warns: it may be another job', async () => {
    const warnings: string[] = [];
    const a = await job(2, { jobId: 'default', explicitJob: false, onRefused: (m) => warnings.push(m) });
    const id = randomId();
    const served = bootstrap.serveBootstrap(a, () => id);
    const other = await errorOf(bootstrap.joinBootstrap({ ...a, size: 3, onRefused: undefined }, 2));
    expect(other.message).toMatch(/says the job has 2 ranks, this rank says 3/);
    expect(warnings.join()).toMatch(/it says the job has 3 ranks, rank 0 says 2/);
    const [x, y] = await Promise.all([served, bootstrap.joinBootstrap(a, 1)]);
    expect(x.equals(id) && y.equals(id)).toBe(true);
  });

  test('timeouts name what is missing: the ranks that never came, or the store that never answered', async () => {
    const a = await job(4, { deadline: Date.now() + 800 });
    const served = errorOf(bootstrap.serveBootstrap(a, randomId));
    // (Each rank keeps its own deadline; this one's is later, so that rank 0's answer comes first.)
    const one = errorOf(bootstrap.joinBootstrap({ ...a, deadline: a.deadline + 2000 }, 2));
    const [e0, e2] = await Promise.all([served, one]);
    expect(e0.code).toBe('ncclTimeout');
    expect(e0.message).toMatch(/rank 0 of 4 .*: ranks 1, 3 did not join within the timeout \(joined: 2\)/);
    expect(e2.message).toMatch(/rank 2 of 4: refused: rank 0 gave up: .*ranks 1, 3 did not join/);
    // No store at all: the rank retries until its deadline, then names the address.
    const b = await job(2, { deadline: Date.now() + 700 });
    const t0 = Date.now();
    const lonely = await errorOf(bootstrap.joinBootstrap(b, 1));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(600);
    expect(lonely.code).toBe('ncclTimeout');
    expect(lonely.message).toMatch(
      new RegExp(`rank 1 of 2: could not join rank 0's bootstrap store at 127.0.0.1:${b.port} .*ECONNREFUSED`),
    );
  });

  test("rank 0's timeout stays short whatever the job's size and whatever connected: the ranks that joined get it", async () => {
    // 1000 ranks, two of them in. The ranks that never came, listed one by one, made about 5 KB, more
    // than a rank reads of an answer (4096 bytes) when it comes in several pieces, as across a
    // network: the two took it for a closed store and retried until their own deadline. And every
    // refused connection was listed.
    const a = await job(1000, { deadline: Date.now() + 1500, onRefused: () => {} });
    const served = errorOf(bootstrap.serveBootstrap(a, randomId));
    // Between the two ranks and the store: a relay that passes the store's answers on in 1000-byte pieces.
    const relay = net.createServer((client) => {
      const store = net.connect(a.port, '127.0.0.1');
      for (const end of [client, store]) end.on('error', () => [client, store].forEach((x) => x.destroy()));
      client.pipe(store);
      store.on('data', (d: Buffer) => {
        store.pause();
        void (async () => {
          for (let at = 0; at < d.length; at += 1000) {
            client.write(d.subarray(at, at + 1000));
            await new Promise((r) => setTimeout(r, 5));
          }
          store.resume();
        })();
      });
      store.on('end', () => client.end());
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
    try {
      const viaRelay = { ...a, port: (relay.address() as net.AddressInfo).port, deadline: a.deadline + 3000 };
      const joined = [errorOf(bootstrap.joinBootstrap(viaRelay, 7)), errorOf(bootstrap.joinBootstrap(viaRelay, 500))];
      await new Promise((r) => setTimeout(r, 200));
      for (let i = 0; i < 40; i++) {
        await new Promise<void>((resolve) => {
          const c = net.connect(a.port, '127.0.0.1', () => c.write('garbage\n'));
          c.on('data', () => {});
          c.on('close', () => resolve());
          c.on('error', () => resolve());
        });
      }
      const e0 = await served;
      expect(e0.code).toBe('ncclTimeout');
      expect(e0.message).toMatch(/ranks 1–6, 8–499, 501–999 did not join within the timeout \(joined: 7, 500\)/);
      expect(e0.message).toMatch(/refused: .*; and 37 more connections/);
      expect(e0.message.length).toBeLessThan(1500);
      const t0 = Date.now();
      for (const e of await Promise.all(joined)) expect(e.message).toMatch(/refused: rank 0 gave up: .*did not join/);
      expect(Date.now() - t0).toBeLessThan(1000);
    } finally {
      relay.close();
    }
  });

  test("NCCL's id is made only once every rank has joined: a bootstrap that fails leaves no NCCL root behind", async () => {
    // makeId is ncclGetUniqueId, which starts NCCL's bootstrap root (a thread and a listening socket).
    let made = 0;
    const makeId = () => {
      made++;
      return randomId();
    };
    const a = await job(3, { deadline: Date.now() + 600 });
    const served = errorOf(bootstrap.serveBootstrap(a, makeId));
    const one = errorOf(bootstrap.joinBootstrap({ ...a, deadline: a.deadline + 2000 }, 1));
    await new Promise((r) => setTimeout(r, 200));
    expect(made).toBe(0); // listening, rank 1 in, rank 2 not yet
    expect((await served).code).toBe('ncclTimeout');
    expect((await one).message).toMatch(/rank 0 gave up/);
    // Refused as inconsistent: no id either.
    const b = await job(2);
    const refused = errorOf(bootstrap.serveBootstrap(b, makeId));
    await errorOf(bootstrap.joinBootstrap({ ...b, size: 3 }, 1));
    expect((await refused).code).toBe('ncclInvalidUsage');
    expect(made).toBe(0);
    // A failing makeId fails rank 0 and reaches the ranks that joined.
    const c = await job(2);
    const broken = errorOf(
      bootstrap.serveBootstrap(c, () => {
        throw new Error('no network interface');
      }),
    );
    const told = await errorOf(bootstrap.joinBootstrap(c, 1));
    expect((await broken).message).toMatch(/rank 0 of 2 .*: no network interface/);
    expect(told.message).toMatch(/rank 0 gave up: .*no network interface/);
  });

  test('a rank that starts before rank 0 waits for its store', async () => {
    const a = await job(2);
    const joining = bootstrap.joinBootstrap(a, 1);
    await new Promise((r) => setTimeout(r, 300));
    const id = randomId();
    const [x, y] = await Promise.all([bootstrap.serveBootstrap(a, () => id), joining]);
    expect(x.equals(id) && y.equals(id)).toBe(true);
  });

  test('something else listening on the port: a clear error, not a hang', async () => {
    const other = net.createServer((s) => s.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (other.address() as net.AddressInfo).port;
      const a = await job(2, { port });
      expect((await errorOf(bootstrap.serveBootstrap(a, randomId))).code).toBe('EADDRINUSE');
      const e = await errorOf(bootstrap.joinBootstrap(a, 1));
      expect(e.message).toMatch(/something other than a cuda-kernels store answers at .*HTTP/);
    } finally {
      other.close();
    }
    // And the store, spoken to by something that is not a rank: refused, the store goes on.
    const warnings: string[] = [];
    const b = await job(2, { onRefused: (m) => warnings.push(m) });
    const served = bootstrap.serveBootstrap(b, randomId);
    await new Promise<void>((resolve) => {
      const c = net.connect(b.port, '127.0.0.1', () => c.write('GET / HTTP/1.1\r\n\r\n'));
      c.on('data', () => {});
      c.on('close', () => resolve());
    });
    expect(warnings.join()).toMatch(/refused a connection from 127.0.0.1:\d+: it sent something that is not/);
    await Promise.all([served, bootstrap.joinBootstrap(b, 1)]);
  });

  test("what a peer's hello says reaches rank 0's warnings short and printable", async () => {
    const warnings: string[] = [];
    const a = await job(2, { onRefused: (m) => warnings.push(m) });
    const served = bootstrap.serveBootstrap(a, randomId);
    const evil = '\n\u001b[2J\u001b]0;owned\u0007' + 'x'.repeat(500);
    const reply = await new Promise<string>((resolve, reject) => {
      const c = net.connect(a.port, '127.0.0.1', () =>
        c.write(
          `${JSON.stringify({ v: bootstrap.BOOTSTRAP_PROTOCOL, job: evil, size: 2, rank: evil, pid: evil, host: evil })}\n`,
        ),
      );
      let got = '';
      c.on('data', (d: Buffer) => (got += d.toString()));
      c.on('close', () => resolve(got));
      c.on('error', reject);
    });
    expect(warnings).toHaveLength(1);
    // Control characters escaped, each value cut at 64 characters.
    const control = (text: string) => [...text].filter((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
    expect(control(warnings[0])).toEqual([]);
    expect(warnings[0]).toContain('\\u000a\\u001b[2J');
    expect(warnings[0].length).toBeLessThan(600);
    expect(control(JSON.parse(reply).error)).toEqual([]);
    await Promise.all([served, bootstrap.joinBootstrap(a, 1)]);
  });

  test("what a store that speaks the protocol answers reaches the rank's error short and printable", async () => {
    // Whatever listens at MASTER_ADDR:MASTER_PORT writes the refusal a rank shows, and its code.
    const evil = '\n\u001b[2J\u001b]0;owned\u0007' + 'x'.repeat(3000);
    const other = net.createServer((s) =>
      s.end(`${JSON.stringify({ v: bootstrap.BOOTSTRAP_PROTOCOL, error: evil, code: { not: 'a string' } })}\n`),
    );
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
    try {
      const a = await job(2, { port: (other.address() as net.AddressInfo).port });
      const e = await errorOf(bootstrap.joinBootstrap(a, 1));
      const control = [...e.message].filter((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
      expect(control).toEqual([]);
      expect(e.message).toContain('refused: \\u000a\\u001b[2J');
      expect(e.message.length).toBeLessThan(1100);
      expect(e.code).toBe('ncclInvalidUsage');
    } finally {
      other.close();
    }
  });

  test('peers that never close their end (half-open) do not keep rank 0 alive once it is done', async () => {
    // Rank 0 in a process of its own: it must end by itself once its store has handed out the id.
    const a = await job(3, { deadline: Date.now() + 20_000 });
    const served = spawn(
      process.execPath,
      [
        '-r',
        register,
        '-e',
        `require(${JSON.stringify(path.join(root, 'lib', 'distributed', 'bootstrap.ts'))})
          .serveBootstrap(${JSON.stringify(a)}, () => Buffer.alloc(128, 7))
          .then(() => console.log('served'), (e) => console.log('error ' + e.message));`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    let servedAt = 0;
    served.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (servedAt === 0 && out.includes('served')) servedAt = Date.now();
    });
    const exited = new Promise<number>((resolve) => served.on('exit', () => resolve(Date.now())));
    // Raw clients that read their answer and never close: garbage, another job's rank, and this
    // job's rank 2 (which gets the id).
    const hello = (job: string, rank: number) =>
      `${JSON.stringify({ v: bootstrap.BOOTSTRAP_PROTOCOL, job: crypto.createHash('sha256').update(job).digest('hex'), size: 3, rank })}\n`;
    const raw: net.Socket[] = [];
    const answered: Promise<string>[] = [];
    const connect = (text: string) =>
      new Promise<void>((resolve, reject) => {
        const s = net.connect({ host: '127.0.0.1', port: a.port, allowHalfOpen: true });
        s.on('error', reject);
        raw.push(s);
        answered.push(new Promise((r) => s.once('data', (d: Buffer) => r(d.toString()))));
        s.on('connect', () => {
          s.write(text);
          resolve();
        });
      });
    try {
      for (let tries = 0; ; tries++) {
        try {
          await connect('garbage\n');
          break;
        } catch (e) {
          raw.pop();
          answered.pop();
          if (tries > 100) throw e;
          await new Promise((r) => setTimeout(r, 100)); // rank 0 still starting
        }
      }
      await connect(hello('job-b', 1));
      await connect(hello('job-a', 2));
      const id = await bootstrap.joinBootstrap(a, 1);
      expect(id.equals(Buffer.alloc(128, 7))).toBe(true);
      const answers = await Promise.all(answered);
      expect(answers[0]).toMatch(/could not read your hello/);
      expect(answers[1]).toMatch(/belongs to another job/);
      expect(JSON.parse(answers[2]).id).toBe(Buffer.alloc(128, 7).toString('base64'));
      let limit: NodeJS.Timeout | undefined;
      const at = await Promise.race([exited, new Promise<number>((r) => (limit = setTimeout(() => r(0), 8000)))]);
      clearTimeout(limit);
      expect({
        out: out.trim(),
        endedWithin4s: at === 0 ? 'still running after 8 s' : at - servedAt < 4000,
      }).toEqual({
        out: 'served',
        endedWithin4s: true,
      });
    } finally {
      for (const s of raw) s.destroy();
      served.kill('SIGKILL');
    }
  }, 60_000);

  test('inside a worker_thread (no process.env, no main thread)', async () => {
    const a = await job(3);
    const code = `
      require(${JSON.stringify(register)});
      const { parentPort, workerData } = require('node:worker_threads');
      const b = require(${JSON.stringify(path.join(root, 'lib', 'distributed', 'bootstrap.ts'))});
      const { job, rank } = workerData;
      job.deadline = Date.now() + 30000;
      const run = rank === 0 ? b.serveBootstrap(job, () => Buffer.alloc(128, 42)) : b.joinBootstrap(job, rank);
      run.then((id) => parentPort.postMessage(id.toString('hex')), (e) => parentPort.postMessage('error ' + e.message));`;
    const ids = await Promise.all(
      [0, 1, 2].map(
        (rank) =>
          new Promise<string>((resolve, reject) => {
            const w = new Worker(code, { eval: true, workerData: { job: a, rank } });
            w.once('message', (m: string) => {
              resolve(m);
              void w.terminate();
            });
            w.once('error', reject);
          }),
      ),
    );
    expect(ids).toEqual([0, 1, 2].map(() => Buffer.alloc(128, 42).toString('hex')));
  }, 60_000);
});

/** A communicator around a stand-in handle (rank 0 of 2, device 0, timeoutMs 1000): for what never reaches NCCL. */
const standInCommunicator = () =>
  new (ck.Communicator as unknown as new (...a: unknown[]) => ck.Communicator)({}, 0, 2, 0, 1000, undefined, 'options');

describe('one sequence of operations at a time on a communicator (the reservation, without NCCL)', () => {
  // The reservation is plain TypeScript: a communicator around a stand-in handle is enough (nothing
  // here reaches the native side).
  const make = standInCommunicator;
  const busy = (f: () => unknown) => {
    try {
      f();
      return null;
    } catch (e) {
      return e as ck.NcclError;
    }
  };

  test('a sequence holds it from the call on: calls from outside throw that it is busy, its own pass', async () => {
    const comm = make();
    const release = comm.reserve('Mlp.trainAsync');
    // Taken at once, before the promise settles: a call right after the training's is refused.
    const e = busy(() => comm.handle('allReduce'));
    expect(e).toBeInstanceOf(ck.NcclError);
    expect(e?.code).toBe('ncclInvalidUsage');
    expect(e?.message).toMatch(/allReduce: the communicator is busy with Mlp.trainAsync; await it first/);
    expect(busy(() => comm.handle('Mlp.trainAsync'))).toBeNull();
    expect(busy(() => comm.as('Mlp.trainAsync', () => comm.handle('allGather')))).toBeNull();
    expect(busy(() => comm.handle('broadcast'))).not.toBeNull();
    (await release)();
    expect(busy(() => comm.handle('allReduce'))).toBeNull();
  });

  test('sequences queue in call order; the next takes over at once, with no gap for an outside call', async () => {
    const comm = make();
    const order: string[] = [];
    const run = async (name: string, ms: number) => {
      const release = await comm.reserve(name);
      order.push(`start ${name}`);
      await new Promise((r) => setTimeout(r, ms));
      order.push(`end ${name}`);
      release();
      // Released to the next one synchronously: still busy, with its name.
      return busy(() => comm.handle('outside'))?.message ?? 'free';
    };
    const after = await Promise.all([run('A', 30), run('B', 5), run('C', 1)]);
    expect(order).toEqual(['start A', 'end A', 'start B', 'end B', 'start C', 'end C']);
    expect(after[0]).toMatch(/busy with B/);
    expect(after[1]).toMatch(/busy with C/);
    expect(after[2]).toBe('free');
  });

  test('exclusive runs after the sequences before it and releases even when it throws', async () => {
    const comm = make();
    const first = await comm.reserve('first');
    const ran: string[] = [];
    const x = comm.exclusive('apspDistributed', async () => {
      ran.push('x');
      throw new Error('boom');
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(ran).toEqual([]);
    first();
    await expect(x).rejects.toThrow('boom');
    expect(ran).toEqual(['x']);
    expect(busy(() => comm.handle('allReduce'))).toBeNull();
  });
});

describe("abort() and destroy() with barrier()'s array (native calls stubbed, no NCCL)", () => {
  // While collectives are deferred (more than the 64 a communicator keeps queued), a plain free() on
  // the device waits in the calling thread until they are queued, i.e. for a late peer
  // (docs/multi-gpu.md), and those may be another communicator's on the same device. So barrier()'s
  // array goes only once this communicator's thread has finished (none of its calls is deferred any
  // more), freed without waiting for the others' (`unheld`: none of them uses it).
  const make = standInCommunicator;
  let order: string[];
  let closed: () => void;
  beforeEach(() => {
    order = [];
    jest.spyOn(native, 'alloc').mockImplementation(() => ({}) as never);
    jest.spyOn(native, 'free').mockImplementation((_h, unheld) => void order.push(unheld ? 'free unheld' : 'free'));
    // Never settles: the barrier stays pending, as it would behind a late peer.
    jest.spyOn(native, 'ncclCollective').mockImplementation(() => new Promise<void>(() => {}));
    jest.spyOn(native, 'ncclCommClose').mockImplementation((_h, graceful) => {
      order.push(graceful ? 'destroy' : 'abort');
      return new Promise<void>((r) => (closed = r));
    });
  });
  afterEach(() => jest.restoreAllMocks());
  const closes: [string, (c: ck.Communicator) => void][] = [
    ['abort', (c) => c.abort()],
    ['destroy', (c) => c.destroy()],
  ];

  test.each(closes)(
    "%s(): the close in the call, the free once the communicator's thread has finished, not waiting for other holders",
    async (what, close) => {
      const comm = make();
      void comm.barrier().catch(() => {});
      close(comm);
      expect(order).toEqual([what]);
      closed();
      await new Promise((r) => setImmediate(r));
      expect(order).toEqual([what, 'free unheld']);
      // Idempotent: nothing more to free.
      close(comm);
      await new Promise((r) => setImmediate(r));
      expect(order).toEqual([what, 'free unheld']);
    },
  );

  test.each(closes)(
    "%s() never throws, nor rejects unhandled, when freeing barrier()'s array fails",
    async (_what, close) => {
      jest.spyOn(native, 'free').mockImplementation(() => {
        throw new ck.CudaError('an illegal memory access was encountered', 'cudaErrorIllegalAddress', 'cudaFreeAsync');
      });
      const unhandled: unknown[] = [];
      const onUnhandled = (e: unknown) => unhandled.push(e);
      process.on('unhandledRejection', onUnhandled);
      try {
        const comm = make();
        void comm.barrier().catch(() => {});
        expect(() => close(comm)).not.toThrow();
        expect(comm.destroyed).toBe(true);
        closed();
        await new Promise((r) => setImmediate(r));
        await new Promise((r) => setImmediate(r));
        expect(native.free).toHaveBeenCalledTimes(1);
        expect(unhandled).toEqual([]);
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
    },
  );

  test.each(closes)(
    'barrier() after %s() rejects without making an array that only the garbage collector would free',
    async (_what, close) => {
      const comm = make();
      close(comm);
      await expect(comm.barrier()).rejects.toThrow(ck.NcclError);
      expect(native.alloc).not.toHaveBeenCalled();
      expect(native.ncclCollective).not.toHaveBeenCalled();
      // The close settles, as the communicator's thread would: its keep-alive timer goes with it.
      closed();
    },
  );
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
    // Ports are checked, not wrapped (70000 used to become 4464).
    for (const address of ['h:70000', 'h:0', '[::1]:65536', 'h:-1'])
      await expect(ck.Communicator.init({ rank: 0, size: 2, address })).rejects.toThrow(
        /options.address must be host:port \(or \[ipv6\]:port\) with a port in \[1, 65535\]/,
      );
    await expect(ck.Communicator.init({ rank: 0, size: 2, env: { MASTER_PORT: '70000' } })).rejects.toThrow(
      /MASTER_PORT must be an integer in \[1, 65535\]/,
    );
    await expect(ck.Communicator.init({ rank: 0, size: 2, jobId: '' })).rejects.toThrow(
      /options.jobId must be a non-empty string/,
    );
    await expect(ck.Communicator.init({ rank: 0, size: 2, jobId: 7 as never })).rejects.toThrow(TypeError);
    // NCCL_COMM_ID would have NCCL bootstrap on a fixed address where jobs merge: refused, saying why.
    const e = await ck.Communicator.init({ rank: 0, size: 2, env: { NCCL_COMM_ID: '127.0.0.1:1234' } }).catch(
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(ck.NcclError);
    expect((e as ck.NcclError).message).toMatch(/NCCL_COMM_ID is set .*two jobs .* join .*MASTER_ADDR and MASTER_PORT/);
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
