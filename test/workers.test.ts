// The addon in worker_threads: several at once, each with its own arrays, results checked; a
// worker terminated with live arrays; the process exiting with live arrays (exit code 0). Runs in a
// child process so that a crash at exit is seen here.
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';

import { report } from './harness/report';
import { describeGpu } from './helpers/gpu';

const root = path.join(__dirname, '..');

describeGpu('worker_threads', () => {
  test('4 workers and the main thread run every family at once; clean exit with live arrays', () => {
    const child = spawnSync(process.execPath, ['-r', './test/harness/ts-register.js', 'test/harness/workers.ts'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 300_000,
      maxBuffer: 1 << 26,
    });
    if (child.error) throw child.error;
    const detail = `stdout:\n${child.stdout}\nstderr:\n${child.stderr}`;
    if (child.signal || child.status !== 0)
      throw new Error(`workers child ended by ${child.signal ?? child.status}\n${detail}`);
    const out = JSON.parse(child.stdout.trim().split('\n').pop()!);
    if (out.fatal) throw new Error(out.fatal);
    const results = out.results as { id: number; cases: number; failures: string[] }[];
    const failures = results.flatMap((r) => r.failures);
    const cases = results.reduce((s, r) => s + r.cases, 0);
    report(
      `workers: ${results.length - 1} workers + main thread ran ${cases} checked cases (${results.map((r) => r.cases).join(', ')}), ` +
        `${failures.length} failures; terminated worker exit ${out.terminatedExit}; process exit 0 with ${out.liveArrays} live arrays`,
    );
    expect(failures).toEqual([]);
    expect(out.liveOk).toBe(true);
  }, 320_000);
});
