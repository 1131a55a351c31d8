// What the multi-process GPU suites (dist-gpu.test.ts, apsp-distributed.test.ts) share: the suite
// that also needs NCCL, a free port for rank 0's store, the environment a rank process starts with,
// and the `CK-RESULT` lines the rank harnesses print.
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

import * as ck from '../../lib';
import { describeGpu, gpuCount } from './gpu';

const register = path.join(__dirname, '..', 'harness', 'ts-register.js');
const nccl = ck.ncclInfo();

/** A GPU suite that also needs NCCL: skipped, saying why, without it. */
export function describeNccl(name: string, fn: () => void): void {
  if (gpuCount > 0 && !nccl.available) {
    const skipped = describe.skip;
    skipped(`${name} [skipped: no NCCL — ${nccl.reason?.split('. ')[0]}]`, fn);
  } else {
    describeGpu(name, fn);
  }
}

// A port the OS says is free right now (a random one collided once on the H100: "bind failed:
// Address already in use"), for rank 0's bootstrap.
export const port = (): string =>
  execFileSync(
    process.execPath,
    [
      '-e',
      "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })",
    ],
    { encoding: 'utf8' },
  ).trim();

/**
 * The environment of a rank process among `ranks`: TypeScript loaded, NVLink multicast off, ranks
 * sharing GPUs when there are fewer GPUs than ranks, `extra` on top.
 */
export function baseEnv(ranks: number, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} -r ${register}`.trim(),
    NCCL_NVLS_ENABLE: process.env.NCCL_NVLS_ENABLE ?? '0',
    ...extra,
  };
  if (ranks > gpuCount) env.CK_HOSTID_PER_RANK = '1';
  // The parent's own variables must not leak into the ranks' conventions.
  for (const k of ['RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'MASTER_ADDR', 'NCCL_COMM_ID', 'CUDA_KERNELS_JOB_ID'])
    if (!(k in extra)) delete env[k];
  return env;
}

/** What a rank harness prints on its `CK-RESULT` line. */
export interface RankResult {
  mode?: string;
  checks: number;
  failures: string[];
  seconds: number;
  [k: string]: unknown;
}

/** The `CK-RESULT` lines of a rank's output, parsed. */
export function results(stdout: string): RankResult[] {
  return stdout
    .split('\n')
    .map((l) => /CK-RESULT (\{.*\})\s*$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => JSON.parse(m[1]) as RankResult);
}
