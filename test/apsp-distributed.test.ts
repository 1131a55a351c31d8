// apspDistributed across processes on the GPU, the parts the ranks must agree on and the memory a
// run takes: ranks of test/harness/apsp-dist-rank.ts under `cuda-kernels launch` (sharing the GPUs
// there are, each with its own NCCL_HOSTID), or started directly. Skipped without a GPU or NCCL. The
// results against the CPU for every input and output kind are in dist-gpu.test.ts.
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { report } from './harness/report';
import { gpuCount } from './helpers/gpu';
import { baseEnv, describeNccl, port, results } from './helpers/ranks';

const root = path.join(__dirname, '..');
const register = path.join(root, 'test', 'harness', 'ts-register.js');
const rankScript = path.join(root, 'test', 'harness', 'apsp-dist-rank.ts');
function launch(ranks: number, args: string[], extra: Record<string, string> = {}, timeout = 280_000) {
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
  const stdout = r.stdout ?? '';
  const stderr = `${r.stderr ?? ''}${r.error ? `\n${r.error.message}` : ''}`;
  const res = results(stdout);
  const detail = `exit ${r.status}\n--- stdout\n${stdout.slice(-20000)}\n--- stderr\n${stderr.slice(-20000)}`;
  if (res.length !== ranks || r.status !== 0 || res.some((x) => x.failures.length > 0)) throw new Error(detail);
  return res;
}

describeNccl('apspDistributed across processes: agreement, outputs, memory', () => {
  let shared: string;
  beforeAll(() => (shared = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-apsp-dist-'))));
  afterAll(() => fs.rmSync(shared, { recursive: true, force: true }));

  test('2 ranks: { band, n } with and without inPlace; every rank throws on a mismatch of kinds, a gather rank 0 cannot allocate, a { file } output failing on one rank (the target untouched), a freed input', () => {
    const res = launch(2, ['checks'], { CK_SHARED_DIR: shared });
    const checks = res.reduce((s, r) => s + r.checks, 0);
    // Rank 0 says how much it filled for the out-of-memory gather, or why that case was skipped.
    const r0 = res.find((r) => r.rank === 0);
    const gather =
      typeof r0?.filledBytes === 'number'
        ? `rank 0 filled ${(r0.filledBytes / 2 ** 30).toFixed(1)} GiB for the gather`
        : `gather out of memory ${String(r0?.gatherOutOfMemory ?? 'not reported')}`;
    report(
      `apspDistributed agreement and outputs, 2 ranks, ${gpuCount >= 2 ? 'a GPU each' : 'sharing one GPU'}: ${checks} checks passed in ` +
        `${Math.max(...res.map((r) => r.seconds)).toFixed(1)} s (${gather})`,
    );
  }, 300_000);

  test('1 rank, n = 16384 and 16323: device memory besides the { band, n } input at the peak of the run', () => {
    const [r] = launch(1, ['memory']);
    report(`apspDistributed memory besides the band at the peak (MiB): ${JSON.stringify(r.peakMiB)}`);
  }, 300_000);

  test('apsp --distributed with a malformed text graph: every rank stops with an error at once (none waits for rank 0)', async () => {
    const bad = path.join(shared, 'bad.txt');
    fs.writeFileSync(bad, '3 2\n0 1 5\n1 x 7\n');
    const p = port();
    const jobId = `apsp-cli-${process.pid}`;
    const ranks = [0, 1].map((rank) =>
      spawn(process.execPath, [rankScript, 'cli-bad-graph', bad], {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: baseEnv(2, {
          RANK: String(rank),
          WORLD_SIZE: '2',
          LOCAL_RANK: String(rank),
          LOCAL_WORLD_SIZE: '2',
          MASTER_ADDR: '127.0.0.1',
          MASTER_PORT: p,
          CUDA_KERNELS_JOB_ID: jobId,
        }),
      }),
    );
    const outs = ranks.map(() => '');
    const ended = ranks.map(
      (c, i) =>
        new Promise<number | null>((resolve) => {
          c.stdout?.on('data', (d: Buffer) => (outs[i] += d.toString()));
          c.stderr?.on('data', (d: Buffer) => (outs[i] += d.toString()));
          c.on('exit', (code) => resolve(code));
        }),
    );
    // Well below the communicator's default timeout (5 minutes), which a waiting rank would need.
    const guard = setTimeout(() => ranks.forEach((c) => c.kill('SIGKILL')), 90_000);
    const codes = await Promise.all(ended).finally(() => clearTimeout(guard));
    const res = outs.map((o) => results(o)[0]);
    if (codes.some((c) => c !== 0) || res.some((r) => !r || r.failures.length > 0)) {
      throw new Error(outs.map((o, i) => `rank ${i} (exit ${codes[i]}):\n${o}`).join('\n'));
    }
    report(`apsp --distributed, malformed text graph: ranks stopped after ${res.map((r) => r.ms).join(' / ')} ms`);
  }, 120_000);
});
