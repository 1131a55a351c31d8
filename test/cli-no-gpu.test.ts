// The command line where there is no GPU, as a newcomer meets it: one exit-status rule for every
// command (1 = it failed; no GPU fails only the commands that need one), the demo's CPU run with
// readable rates, and bench saying "no GPU" before asking for chart packages. The cases without a
// binary run everywhere (CUDA_KERNELS_BINARY names a file that does not exist); those with one run
// where a binary loads, and on a GPU host check the GPU side of the same rule.
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';

import { formatRate } from '../lib/cli/demo';

const root = path.join(__dirname, '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { binaryStatus } = require('./helpers/native-suites.js');
const hasBinary: boolean = binaryStatus().ok;

function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, ['-r', './test/harness/ts-register.js', 'lib/cli/main.ts', ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
const noBinary = { CUDA_KERNELS_BINARY: '/nonexistent/cuda_kernels.node' };

describe('without a binary', () => {
  test('demo runs the CPU reference, says why there is no GPU, and exits 0', () => {
    const r = cli(['demo'], noBinary);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(
      /^No GPU: no native binary could be loaded on .*npx cuda-kernels info lists what was tried/,
    );
    expect(lines[1]).toBe('Ran the CPU reference only.');
    // The CPU row: a rate with decimals where it is small, not a rounded 0 or 1.
    const row = lines.find((l) => l.includes('cpu.atA'))!;
    const rate = row.split('│').map((c) => c.trim())[5];
    expect(rate).toMatch(/^\d+(\.\d+)?$/);
    expect(Number(rate)).toBeGreaterThan(0);
    if (Number(rate) < 10) expect(rate).toMatch(/^\d\.\d\d$/);
  });

  test('info says what was tried and exits 0; --require-gpu makes no GPU an exit 1', () => {
    const r = cli(['info'], noBinary);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Possible solutions:');
    expect(cli(['info', '--require-gpu'], noBinary).status).toBe(1);
    // The old switch still parses (scripts that passed it keep working).
    expect(cli(['info', '--allow-no-gpu'], noBinary).status).toBe(0);
  });

  test('bench, which needs a GPU, exits 1 saying what was tried', () => {
    const r = cli(['bench', '--quick'], noBinary);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/no native binary could be loaded/);
  });
});

(hasBinary ? describe : describe.skip)(`with a binary${hasBinary ? '' : ' [skipped: no native binary]'}`, () => {
  test('info and demo: exit 0 with or without a GPU; --require-gpu fails only without one', () => {
    const info = cli(['info']);
    expect(info.status).toBe(0);
    const noGpu = /^No GPU: /m.test(info.stdout);
    expect(cli(['info', '--require-gpu']).status).toBe(noGpu ? 1 : 0);
    if (noGpu) {
      const demo = cli(['demo']);
      expect(demo.status).toBe(0);
      expect(demo.stdout).toMatch(/^No GPU: .*\nRan the CPU reference only\.\n/);
    }
  });

  test('bench finds there is no GPU before it asks for the chart packages', async () => {
    jest.resetModules();
    jest.doMock('../lib/cli/optional', () => ({
      CHART_PACKAGES: ['vega'],
      requirePackages: () => {
        throw new Error('drawing the charts needs the optional package vega');
      },
    }));
    const { bench } = await import('../lib/cli/bench');
    const { deviceCount } = await import('../lib/device');
    const run = bench([], { reps: 1, warmup: 0, quick: true, out: root, device: 0, charts: true }, () => {});
    // With a GPU the chart check still comes before any GPU work.
    await expect(run).rejects.toThrow(deviceCount() === 0 ? /cannot benchmark without a GPU/ : /optional package vega/);
    jest.dontMock('../lib/cli/optional');
  });
});

test('rates keep three significant digits where they are small', () => {
  expect([0.8512, 1.234, 12.34, 123.4, 98765.4].map(formatRate)).toEqual(['0.85', '1.23', '12.3', '123', '98765']);
});
