// The bench command's own defects (issue 34), each reproduced with the device calls stubbed: a
// fake GPU and fake families stand in for the real ones, so no GPU is needed.
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

jest.mock('../lib/device', () => ({
  ...jest.requireActual('../lib/device'),
  deviceCount: jest.fn(() => 1),
  deviceProperties: () => ({ name: 'Fake GPU 9', computeCapability: '9.0', smCount: 2, pciBusId: 0x3e }),
  runtimeInfo: () => ({ driverVersion: '13.0' }),
}));

import { families, mergeRows, writeResults, type BenchFamily, type BenchRow } from '../lib/bench';
import { parseSizeList, planJobs } from '../lib/bench/options';
import { readResults } from '../lib/bench/report';
import { newRunStamp, parseResultsFile, rowFamily, rowKey, withFileLock } from '../lib/bench/results';
import { rowSink } from '../lib/bench/run';
import { bench, type BenchOptions } from '../lib/cli/bench';
import { report } from '../lib/cli/report';
import { deviceCount } from '../lib/device';
import { tempDirs } from './helpers/temp-dirs';

const root = path.join(__dirname, '..');
const tmp = tempDirs('ck-defect-');
const row = (op: string, method: string, size: string, ms = 1, extra: Partial<BenchRow> = {}): BenchRow => ({
  op,
  method,
  size,
  ms,
  rate: 1 / ms,
  unit: 'x/s',
  reps: 3,
  check: 'ok',
  ...extra,
});
const readRows = (file: string): BenchRow[] => JSON.parse(fs.readFileSync(file, 'utf8')).rows;

/** Fake families in the registry for one test: `run` returns rows or throws; `calls` counts runs. */
function withFamilies(defs: Record<string, Partial<BenchFamily>>): { calls: Record<string, number>; restore(): void } {
  const calls: Record<string, number> = {};
  const saved = { ...families };
  for (const [name, def] of Object.entries<Partial<BenchFamily>>({ copy: {}, ...defs })) {
    calls[name] = 0;
    families[name] = {
      op: name,
      description: `fake ${name}`,
      ...def,
      run(ctx) {
        calls[name]++;
        ctx.progress(name);
        return def.run ? def.run(ctx) : [row(name, 'm', '8')];
      },
    };
  }
  return {
    calls,
    restore() {
      for (const k of Object.keys(families)) delete families[k];
      Object.assign(families, saved);
    },
  };
}

const opts = (out: string, extra: Partial<BenchOptions> = {}): BenchOptions => ({
  reps: 2,
  warmup: 1,
  quick: true,
  out,
  device: 0,
  charts: false,
  ...extra,
});
const quiet: (line: string) => void = () => {};

let stderr: jest.SpyInstance;
beforeEach(() => {
  // The progress lines go to stderr.
  stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
});
afterEach(() => {
  stderr.mockRestore();
  process.exitCode = undefined;
});

describe('1. rows are kept when a run fails late', () => {
  test("each family's rows are written as it finishes, so a family failing later keeps them", async () => {
    const out = tmp();
    const fake = withFamilies({
      early: {},
      late: {
        run: () => {
          throw new Error('out of memory (a large --sizes)');
        },
      },
    });
    const lines: string[] = [];
    try {
      await expect(bench(['early', 'late'], opts(out), (l) => lines.push(l))).rejects.toThrow(/out of memory/);
    } finally {
      fake.restore();
    }
    const file = path.join(out, 'fake-gpu-9.json');
    expect(readRows(file).map((r) => `${r.family}:${r.op}`)).toEqual(['copy:copy', 'early:early']);
    expect(lines.join('\n')).toMatch(/late failed; the 2 row\(s\) measured before it are in .*fake-gpu-9\.json/);
  });

  // The results file is replaced by another shape while the second of three families runs; with
  // `commit`, CK_COMMIT is that label for the run. Returns the run's output, the results file and the
  // fallback file the output names (its line ends with the path, which may hold spaces).
  async function fallbackRun(commit?: string): Promise<{ text: string; file: string; fallback: string }> {
    const out = tmp();
    const file = path.join(out, 'fake-gpu-9.json');
    const fake = withFamilies({
      first: {},
      second: {
        run: () => {
          fs.writeFileSync(file, '[]');
          return [row('second', 'm', '8')];
        },
      },
      third: {},
    });
    const before = process.env.CK_COMMIT;
    if (commit !== undefined) process.env.CK_COMMIT = commit;
    const lines: string[] = [];
    try {
      await bench(['first', 'second', 'third'], opts(out), (l) => lines.push(l));
    } finally {
      fake.restore();
      if (before === undefined) delete process.env.CK_COMMIT;
      else process.env.CK_COMMIT = before;
    }
    const text = lines.join('\n');
    const fallback = /^its rows are in (.+)$/m.exec(text)?.[1] as string;
    if (fallback) fallbackDirs.push(path.dirname(fallback));
    return { text, file, fallback };
  }
  const fallbackDirs: string[] = [];
  afterAll(() => {
    for (const d of fallbackDirs) fs.rmSync(d, { recursive: true, force: true });
  });

  test('where the results file cannot be written mid-run, every row goes to a fallback file that the run names', async () => {
    const { text, file, fallback } = await fallbackRun();
    expect(process.exitCode).toBe(1);
    expect(text).toMatch(/could not write the results \(.*fake-gpu-9\.json: not a result file: the JSON is a list/);
    expect(text).toContain(`this run's rows go to ${path.dirname(fallback)}`);
    expect(fallback).toMatch(/cuda-kernels-bench-.*fake-gpu-9\.json$/);
    expect(readRows(fallback).map((r) => r.op)).toEqual(['copy', 'first', 'second', 'third']);
    // The file the other process wrote is left as it is.
    expect(fs.readFileSync(file, 'utf8')).toBe('[]');
  });

  test('the fallback is a new folder in the temporary directory whatever the commit label (CK_COMMIT) holds', async () => {
    const label = 'aee41e8-dirty (test/x.test.ts, a note)';
    const runs = [await fallbackRun(label), await fallbackRun(label), await fallbackRun('x'.repeat(300))];
    const dirs = runs.map((r) => path.dirname(r.fallback));
    for (const [k, r] of runs.entries()) {
      expect(path.dirname(dirs[k])).toBe(os.tmpdir());
      expect(readRows(r.fallback).map((x) => x.op)).toEqual(['copy', 'first', 'second', 'third']);
    }
    // Only file-name characters of the run id, and a name of its own for each run, even in one second.
    expect(path.basename(dirs[0])).toMatch(
      /^cuda-kernels-bench-\d{8}T\d{6}Z-aee41e8-dirty_test_x\.test\.ts_a_note_-\w{6}$/,
    );
    expect(dirs[1]).not.toBe(dirs[0]); // (the same second or not: the sinks below share one stamp)
    // A label too long for a file name is cut (the run id's first 80 characters).
    expect(path.basename(dirs[2])).toMatch(/^cuda-kernels-bench-\d{8}T\d{6}Z-x{63}-\w{6}$/);
    // The rows keep the label as it was given.
    expect(readRows(runs[0].fallback)[0].commit).toBe(label);
  });

  test('two sinks of one run stamp (two devices of one model, started in the same second) fall back to folders of their own', () => {
    const stamp = newRunStamp('abc');
    const device = { name: 'Fake GPU 9' };
    const files = [0, 1].map(() => {
      const out = tmp();
      fs.writeFileSync(path.join(out, 'fake-gpu-9.json'), '[]'); // not a results file: refused
      const sink = rowSink(out, device, stamp, quiet);
      sink.write([row('copy', 'm', '1')]);
      fallbackDirs.push(path.dirname(sink.file));
      return sink.file;
    });
    expect(path.dirname(files[1])).not.toBe(path.dirname(files[0]));
    for (const f of files) expect(readRows(f).map((r) => r.op)).toEqual(['copy']);
  });

  test('a missing temporary directory is made for the fallback, and the reason is shown before it', () => {
    const missing = path.join(tmp(), 'not', 'there');
    const out = tmp();
    fs.writeFileSync(path.join(out, 'fake-gpu-9.json'), '[]');
    const lines: string[] = [];
    // os.tmpdir() reads the process's own TMPDIR, which a test file's process.env does not reach: the
    // core module's function is replaced (this file's `os` is a wrapper of getters).
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const tmpdir = jest.spyOn(require('node:os') as typeof os, 'tmpdir').mockReturnValue(missing);
    try {
      const sink = rowSink(out, { name: 'Fake GPU 9' }, newRunStamp('abc'), (l) => lines.push(l));
      sink.write([row('copy', 'm', '1')]);
      expect(path.dirname(path.dirname(sink.file))).toBe(missing);
      expect(readRows(sink.file).map((r) => r.op)).toEqual(['copy']);
    } finally {
      tmpdir.mockRestore();
    }
    expect(lines[0]).toMatch(/^\ncould not write the results \(.*not a result file/);
    expect(lines[1]).toMatch(/^this run's rows go to /);
  });

  test('a malformed results file or an --out that cannot be written stops the run before any family', async () => {
    const out = tmp();
    fs.writeFileSync(path.join(out, 'fake-gpu-9.json'), '{"device": {"name": "Fake GPU 9"}, "rows": [');
    const blocker = path.join(tmp(), 'a-file');
    fs.writeFileSync(blocker, '');
    const fake = withFamilies({ one: {} });
    try {
      await expect(bench(['one'], opts(out), quiet)).rejects.toThrow(/fake-gpu-9\.json: not valid JSON/);
      await expect(bench(['one'], opts(path.join(blocker, 'results')), quiet)).rejects.toThrow(/ENOTDIR|EEXIST/);
      expect(fake.calls).toEqual({ copy: 0, one: 0 });
    } finally {
      fake.restore();
    }
  });
});

describe('a --pair run through the command', () => {
  test('runs each claim as its own job, prints the pair table and merges the pair rows', async () => {
    const out = tmp();
    const seen: unknown[] = [];
    const fake = withFamilies({
      duo: {
        methodNames: () => ['fast', 'ref'],
        pairs: [{ a: 'fast', b: 'ref', sizes: [8, 16] }],
        run: (ctx) => {
          seen.push([ctx.pair, ctx.methods, ctx.sizes]);
          return (ctx.sizes ?? []).map((n) =>
            row('duo', 'fast', String(n), 9, {
              protocol: 'pair',
              versus: { method: 'ref', ms: 10, rate: 0.1, unit: 'x/s', reps: 6, check: 'ref' },
              ratio: { median: 10 / 9, min: 1.05, max: 1.15, rounds: 3 },
            }),
          );
        },
      },
    });
    const lines: string[] = [];
    try {
      await bench(['duo'], opts(out, { pair: true, rounds: 3 }), (l) => lines.push(l));
    } finally {
      fake.restore();
    }
    // No copy reference in a pair run; the claim's sizes; the rounds from the command line.
    expect(fake.calls).toEqual({ copy: 0, duo: 1 });
    expect(seen).toEqual([[{ a: 'fast', b: 'ref', rounds: 3 }, ['fast', 'ref'], [8, 16]]]);
    const text = lines.join('\n');
    expect(text).toMatch(/│ fast\s+│ ref\s+│ 8\s+│ 9\.00\s+│ 10\.00\s+│ 1\.11× \(1\.05–1\.15\)\s+│ 3\s+│/);
    expect(text).toMatch(/clocks and power: not sampled/);
    const rows = readRows(path.join(out, 'fake-gpu-9.json'));
    expect(rows.map((r) => [r.family, r.protocol, r.versus?.method, r.size])).toEqual([
      ['duo', 'pair', 'ref', '8'],
      ['duo', 'pair', 'ref', '16'],
    ]);
  });
});

describe('2. writing a results file', () => {
  const device = { name: 'Test GPU 2' };

  test.each([
    ['a bare list of rows', '[{"op":"x","method":"m","size":"1","ms":1}]', /the JSON is a list/],
    ['rows as an object', '{"device":{"name":"Test GPU 2"},"rows":{"0":{}}}', /"rows" is object, not a list/],
    ['a truncated file', '{"device":{"name":"Test GPU 2"},"rows":[{"op"', /not valid JSON/],
    ['a row without its fields', '{"device":{"name":"Test GPU 2"},"rows":[{"op":"x"}]}', /row 0 is not a result row/],
  ])('refuses to replace %s, naming the file, and leaves it as it was', (_, text, why) => {
    const dir = tmp();
    const file = path.join(dir, 'test-gpu-2.json');
    fs.writeFileSync(file, text);
    expect(() => writeResults(dir, device, 'abc', [row('copy', 'device', '1MiB')])).toThrow(why);
    expect(() => writeResults(dir, device, 'abc', [row('copy', 'device', '1MiB')])).toThrow(file);
    expect(fs.readFileSync(file, 'utf8')).toBe(text);
    expect(fs.readdirSync(dir)).toEqual(['test-gpu-2.json']);
  });

  test('two processes writing one file keep every row (under the lock, re-read, temp file and rename)', async () => {
    const dir = tmp();
    const script = path.join(dir, 'writer.ts');
    fs.writeFileSync(
      script,
      `const { writeResults } = require(${JSON.stringify(path.join(root, 'lib/bench/results.ts'))});
       const [dir, who] = process.argv.slice(2);
       for (let i = 0; i < 60; i++)
         writeResults(dir, { name: 'Test GPU 2' }, who, [{ op: 'x', method: who, size: String(i), ms: 1, rate: 1, unit: 'u', reps: 1, check: 'ok' }]);`,
    );
    const run = (who: string) =>
      new Promise<number>((resolve) => {
        const p = spawn(process.execPath, ['-r', path.join(root, 'test/harness/ts-register.js'), script, dir, who], {
          stdio: 'inherit',
        });
        p.on('exit', (code) => resolve(code ?? -1));
      });
    expect(await Promise.all([run('a'), run('b')])).toEqual([0, 0]);
    const rows = readRows(path.join(dir, 'test-gpu-2.json'));
    expect(rows).toHaveLength(120);
    expect(fs.readdirSync(dir).sort()).toEqual(['test-gpu-2.json', 'writer.ts']);
  }, 60_000);

  test('a lock left by a process that is gone is taken over; a live one is waited for, then an error', () => {
    const dir = tmp();
    const file = path.join(dir, 'test-gpu-2.json');
    const dead = spawnSync(process.execPath, ['-e', 'process.exit(0)']).pid as number;
    fs.writeFileSync(`${file}.lock`, String(dead));
    writeResults(dir, device, 'abc', [row('copy', 'device', '1MiB')]);
    expect(fs.existsSync(`${file}.lock`)).toBe(false);
    fs.writeFileSync(`${file}.lock`, String(process.ppid));
    expect(() => withFileLock(file, () => 1, 100)).toThrow(/locked by process \d+ for over 0\.1 s/);
    fs.rmSync(`${file}.lock`);
  });
});

describe('3. every option is checked before the first GPU call', () => {
  const all = (extra: Record<string, unknown>) =>
    planJobs(families, ['copy', 'ata', 'gemm'], ['ata', 'gemm'], {
      reps: 10,
      warmup: 2,
      device: 0,
      quick: false,
      ...extra,
    });

  test.each([
    [{ reps: 0 }, /--reps must be an integer from 1 to 10000, got 0/],
    [{ reps: 2.5 }, /--reps must be an integer/],
    [{ warmup: -1 }, /--warmup must be an integer from 0/],
    [{ sizes: [1e300] }, /--sizes must be an integer from 1 to 2147483647, got 1e\+300/],
    [{ sizes: [0] }, /--sizes must be an integer from 1/],
    [{ sizes: [512, 512] }, /--sizes: 512 is given twice/],
    [{ sizes: [40000] }, /--sizes: 40000 is more than ata takes \(at most 32768 per side\)/],
    [
      { methods: ['fast', 'nosuch'] },
      /--methods: ata has no method nosuch \(its methods: cublas, cublas-syrk, basic, tiled, fast\)/,
    ],
    [{ pair: 'fast' }, /--pair takes two method names, A,B/],
    [{ pair: 'fast,fast' }, /--pair: fast against itself/],
    [{ pair: 'fast,nosuch' }, /--pair: ata has no method nosuch/],
    [{ pair: 'fast,cublas', methods: ['fast'] }, /--pair and --methods/],
    [{ pair: true, rounds: 0 }, /--rounds must be an integer from 1/],
  ])('%j is refused: %p', (extra, why) => {
    expect(() => all(extra)).toThrow(why);
  });

  test('copy --sizes 65536 (64 GiB) is refused, naming the bound, instead of filling a host array', () => {
    expect(() =>
      planJobs(families, ['copy'], ['copy'], { reps: 10, warmup: 2, device: 0, quick: false, sizes: [65536] }),
    ).toThrow(/--sizes: 65536 is more than copy takes \(at most 4096 MiB\)/);
  });

  test('a pair on a family without one, and copy as a pair partner outside the bandwidth families, are refused', () => {
    const base = { reps: 10, warmup: 2, device: 0, quick: false };
    expect(() => planJobs(families, ['mlp'], ['mlp'], { ...base, pair: true })).toThrow(/mlp has no pair protocol/);
    expect(() => planJobs(families, ['gemm'], ['gemm'], { ...base, pair: 'fast,copy' })).toThrow(
      /gemm has no method copy/,
    );
  });

  test('sizes on the command line are decimal digits only', () => {
    expect(parseSizeList('16,256')).toEqual([16, 256]);
    for (const bad of ['0x10', '1e3', ' 5', '-1', '', '9007199254740993'])
      expect(() => parseSizeList(bad)).toThrow(RangeError);
  });

  test('the pair claims become one job per claim, at the claimed sizes unless --sizes says otherwise', () => {
    const base = { reps: 10, warmup: 2, device: 0, quick: false };
    const jobs = planJobs(families, ['ata', 'stencil'], ['ata', 'stencil'], { ...base, pair: true, rounds: 30 });
    expect(jobs.map((j) => [j.name, j.ctx.pair, j.ctx.methods, j.ctx.sizes, j.ctx.shapes])).toEqual([
      [
        'ata',
        { a: 'fast', b: 'cublas-syrk', rounds: 30 },
        ['fast', 'cublas-syrk'],
        [4000, 8000, 10000, 16000],
        [[20000, 8000]],
      ],
      ['stencil', { a: 'fast', b: 'copy', rounds: 30 }, ['fast'], [8192], undefined],
    ]);
    const mine = planJobs(families, ['gemm'], ['gemm'], { ...base, pair: 'shared32,fast', sizes: [1024] });
    expect(mine.map((j) => [j.ctx.pair?.a, j.ctx.sizes])).toEqual([['shared32', [1024]]]);
  });

  test('bench --reps 0 fails before any device call or family run', async () => {
    const fake = withFamilies({ copy: { maxSize: families.copy.maxSize }, one: {} });
    (deviceCount as jest.Mock).mockClear();
    try {
      await expect(bench(['one'], opts(tmp(), { reps: 0 }), quiet)).rejects.toThrow(/--reps/);
      await expect(bench(['copy'], opts(tmp(), { sizes: [65536] }), quiet)).rejects.toThrow(/at most 4096/);
      expect(deviceCount).not.toHaveBeenCalled();
      expect(fake.calls).toEqual({ copy: 0, one: 0 });
    } finally {
      fake.restore();
    }
  });

  test('the command line refuses 0x10 in --sizes on one line', () => {
    const main = path.join(root, 'dist', 'cli', 'main.js');
    if (!fs.existsSync(main)) spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: root });
    const r = spawnSync(process.execPath, [main, 'bench', 'copy', '--sizes', '0x10'], { cwd: root, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toMatch(
      /^error: option '--sizes <list>' argument '0x10' is invalid\. not a positive decimal integer: 0x10$/,
    );
  });
});

test('integer options: decimal digits in their range, one line before any GPU check', () => {
  const main = path.join(root, 'dist', 'cli', 'main.js');
  if (!fs.existsSync(main)) spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: root });
  const cases: [string[], RegExp][] = [
    [['bench', 'copy', '--reps', '0'], /'--reps <n>' argument '0' is invalid\. not an integer of at least 1: 0$/],
    [['bench', 'copy', '--reps', '-3'], /not an integer of at least 1: -3$/],
    [['bench', 'copy', '--reps', '0x10'], /not an integer of at least 1: 0x10$/],
    [['bench', 'copy', '--rounds', '0'], /not an integer of at least 1: 0$/],
    [['bench', 'copy', '--device', ''], /not an integer of at least 0:$/],
    [['apsp', 'g.txt', 'o.txt', '--block-factor', '0'], /not an integer from 1 to 256: 0$/],
    [['apsp', 'g.txt', 'o.txt', '--block-factor', '999'], /not an integer from 1 to 256: 999$/],
  ];
  for (const [args, want] of cases) {
    const r = spawnSync(process.execPath, [main, ...args], { cwd: root, encoding: 'utf8' });
    expect([args.join(' '), r.status, r.stderr.trim()]).toEqual([args.join(' '), 1, expect.stringMatching(want)]);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  }
});

describe('4. the merge key', () => {
  test("apsp-multi's one-GPU baseline and apsp's fast row are both kept (the family is part of the key)", () => {
    const merged = mergeRows(
      [row('apsp', 'fast', '16384', 300, { family: 'apsp', gpus: 1 })],
      [row('apsp', 'fast', '16384', 310, { family: 'apsp-multi', gpus: 1 })],
    );
    expect(merged.map((r) => `${r.family}:${r.ms}`)).toEqual(['apsp:300', 'apsp-multi:310']);
  });

  test('rows of old files, without a family, get the one their notes name, and the same again replaces them', () => {
    const old = [
      row('apsp', 'fast', '16384', 313, { gpus: 1, note: '…; 1 GPU (device 0), the multi-GPU baseline of this run' }),
      row('apsp', 'band-2gpu', '32768', 1224, { gpus: 2, note: 'in-process band scheme on devices 0, 1' }),
      row('apsp', 'fast', '16384', 309, { gpus: 1, note: "…; block factor 128; report's GFLOPS" }),
      row('mlp', 'cublas-dp2', '[4096]x16', 44, { gpus: 2 }),
    ];
    expect(old.map(rowFamily)).toEqual(['apsp-multi', 'apsp-dist', 'apsp', 'mlp-dist']);
    const merged = mergeRows(old, [row('apsp', 'fast', '16384', 300, { family: 'apsp-multi', gpus: 1 })]);
    expect(merged.map((r) => `${r.family}:${r.ms}`)).toEqual([
      'apsp-dist:1224',
      'apsp:309',
      'mlp-dist:44',
      'apsp-multi:300',
    ]);
  });

  test('--sizes 512,512 writes one row, the GPU count and the protocol are part of the key', () => {
    expect(
      mergeRows([], [row('gemm', 'fast', '512x512x512', 1), row('gemm', 'fast', '512x512x512', 2)]).map((r) => r.ms),
    ).toEqual([2]);
    const pair = row('gemm', 'fast', '512x512x512', 3, {
      protocol: 'pair',
      versus: { method: 'cublas', ms: 3, rate: 1, unit: 'x/s', reps: 3, check: 'ref' },
    });
    const keys = [row('gemm', 'fast', '512x512x512'), pair, row('gemm', 'fast', '512x512x512', 1, { gpus: 2 })].map(
      rowKey,
    );
    expect(new Set(keys).size).toBe(3);
  });
});

describe('5. report and a broken results file', () => {
  test('readResults names the truncated file instead of a bare SyntaxError', () => {
    const dir = tmp();
    fs.writeFileSync(
      path.join(dir, 'a-gpu.json'),
      JSON.stringify({ device: { name: 'A GPU' }, createdAt: '', commit: '', rows: [] }),
    );
    fs.writeFileSync(path.join(dir, 'b-gpu.json'), '{"device": {"name": "B GPU"}, "rows": [{"op": "x"');
    expect(() => readResults(dir)).toThrow(`${path.join(dir, 'b-gpu.json')}: not valid JSON`);
  });

  test('`report` fails naming it, and writes nothing', async () => {
    const dir = tmp();
    fs.writeFileSync(path.join(dir, 'b-gpu.json'), '{"rows": ');
    await expect(report({ results: dir, reports: path.join(dir, 'none.json'), charts: false }, quiet)).rejects.toThrow(
      /b-gpu\.json: not valid JSON/,
    );
    expect(fs.readdirSync(dir)).toEqual(['b-gpu.json']);
  });

  test('parseResultsFile accepts the committed files', () => {
    for (const f of ['nvidia-h100-80gb-hbm3.json', 'nvidia-h200.json']) {
      const file = path.join(root, 'bench', 'results', f);
      expect(parseResultsFile(fs.readFileSync(file, 'utf8'), file).rows.length).toBeGreaterThan(100);
    }
  });
});
