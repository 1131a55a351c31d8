// `npx cuda-kernels launch` end to end, with CPU-only ranks (plain Node.js scripts and shell
// commands): the ranks' environment, their output, failures, signals.
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Writable } from 'node:stream';

import { launch, resolveJobId } from '../lib/cli/launch';

const root = path.join(__dirname, '..');
const register = path.join(root, 'test', 'harness', 'ts-register.js');
const RANK_SCRIPT = `
const r = process.env.RANK;
console.log(JSON.stringify({ rank: r, size: process.env.WORLD_SIZE, local: process.env.LOCAL_RANK,
  localSize: process.env.LOCAL_WORLD_SIZE, addr: process.env.MASTER_ADDR, port: process.env.MASTER_PORT,
  nvls: process.env.NCCL_NVLS_ENABLE, job: process.env.CUDA_KERNELS_JOB_ID, args: process.argv.slice(2) }));
console.error('to stderr from ' + r);
const mode = process.env.CK_MODE;
if (!mode) process.stdout.write('no newline at the end ' + r);
// A rank a broken test leaves behind ends by itself.
setTimeout(() => process.exit(99), 60000).unref();
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
  process.on('SIGHUP', () => { console.log('SIGHUP in ' + r); process.exit(129); });
  setInterval(() => {}, 1000);
  console.log('waiting ' + r);
  if (ready) require('fs').writeFileSync(require('path').join(ready, r), '');
} else if (mode === 'chatty') {
  // Rank 0 writes a line every 20 ms, the others one line and then nothing; every rank leaves its
  // pid in CK_READY_DIR.
  require('fs').writeFileSync(require('path').join(ready, r), String(process.pid));
  process.on('SIGTERM', () => process.exit(143));
  if (r === '0') setInterval(() => console.log('chatter from 0'), 20);
  else setInterval(() => {}, 1000);
} else if (mode === 'bytes') {
  // A carriage return, bytes that are not UTF-8, CRLF, and a last line without a newline.
  process.stdout.write(Buffer.from([0x61, 0x0d, 0x62, 0xff, 0xfe, 0x0a, 0x63, 0x0d, 0x0a, 0x64]));
} else if (mode === 'partial') {
  // One long line in two writes far apart: the second part continues it, without a second tag.
  process.stdout.write('p'.repeat(70000));
  setTimeout(() => { process.stdout.write('tial\\nnext\\n'); process.exit(0); }, 300);
} else if (mode === 'flood') {
  const pad = 'x'.repeat(100 + 37 * Number(r));
  for (let i = 0; i < 3000; i++) process.stdout.write(pad + ' ' + r + ' ' + i + '\\n');
} else if (mode === 'torrent') {
  // 32 MiB as fast as the pipe to the launcher takes it.
  const line = 'y'.repeat(1023) + '\\n';
  let n = 0;
  const go = () => { while (n < 32768) { n++; if (!process.stdout.write(line)) return process.stdout.once('drain', go); } };
  go();
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
    env: { ...process.env, NCCL_NVLS_ENABLE: '0', CUDA_KERNELS_JOB_ID: undefined, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function collectBytes(child: ChildProcess): Promise<{ code: number | null; stdout: Buffer; stderr: Buffer }> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout?.on('data', (d: Buffer) => out.push(d));
  child.stderr?.on('data', (d: Buffer) => err.push(d));
  return new Promise((resolve) =>
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err) })),
  );
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function collect(child: ChildProcess): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const t0 = Date.now();
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - t0 })));
}

test('the job token: --job-id, else CUDA_KERNELS_JOB_ID (empty counts as unset), else random with one node', () => {
  expect(resolveJobId({ jobId: 'a', nnodes: 2 }, { CUDA_KERNELS_JOB_ID: 'b' })).toBe('a');
  expect(resolveJobId({ nnodes: 2 }, { CUDA_KERNELS_JOB_ID: 'b' })).toBe('b');
  expect(resolveJobId({ nnodes: 1 }, { CUDA_KERNELS_JOB_ID: '' })).toMatch(/^[0-9a-f]{32}$/);
  expect(() => resolveJobId({ nnodes: 2 }, { CUDA_KERNELS_JOB_ID: '' })).toThrow(/same --job-id/);
  expect(() => resolveJobId({ jobId: '', nnodes: 1 }, {})).toThrow(/--job-id must be 1 to 256/);
  expect(() => resolveJobId({ nnodes: 1 }, { CUDA_KERNELS_JOB_ID: 'x'.repeat(257) })).toThrow(
    /CUDA_KERNELS_JOB_ID must be 1 to 256/,
  );
  expect(resolveJobId({ jobId: 'x'.repeat(256), nnodes: 1 }, {})).toHaveLength(256);
});

test('a slow reader: the ranks wait for it, their output does not pile up in the launcher', async () => {
  // The launcher's stdout takes 64 KiB every 5 ms (about 13 MB/s); the rank writes 32 MiB at once.
  let buffered = 0;
  let bytes = 0;
  const stdout = new Writable({
    highWaterMark: 1 << 16,
    write(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      setTimeout(done, 5);
    },
  });
  let errors = '';
  const stderr = new Writable({
    write: (c: Buffer, _e, done) => {
      errors += c.toString();
      done();
    },
  });
  const sample = setInterval(() => (buffered = Math.max(buffered, stdout.writableLength)), 2);
  const prev = process.env.CK_MODE;
  process.env.CK_MODE = 'torrent';
  try {
    const code = await launch(script, [], { prefix: false }, { stdout, stderr });
    expect({ code, errors }).toEqual({ code: 0, errors: 'to stderr from 0\n' });
  } finally {
    clearInterval(sample);
    if (prev === undefined) delete process.env.CK_MODE;
    else process.env.CK_MODE = prev;
  }
  await new Promise<void>((r) => stdout.end(r));
  // All of it arrived (and the rank's first line, its variables); at most a few pipe reads were ever
  // waiting in the launcher (it used to hold 30 MiB and more).
  expect(bytes - 32 * 1024 * 1024).toBeGreaterThan(0);
  expect(bytes - 32 * 1024 * 1024).toBeLessThan(1024);
  expect(buffered).toBeLessThan(4 * 1024 * 1024);
}, 60_000);

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
      // One random job token, the same on every rank.
      expect(j.job).toMatch(/^[0-9a-f]{32}$/);
      expect(j.job).toBe(json[0].job);
    }
    // A last line without a newline still comes out, prefixed; stderr goes to stderr, prefixed.
    for (const rank of [0, 1, 2]) {
      expect(lines).toContain(`[rank${rank}]: no newline at the end ${rank}`);
      expect(r.stderr).toContain(`[rank${rank}]: to stderr from ${rank}`);
    }
  });

  test('ranks of node 1 of 2 are numbered after node 0; --no-prefix leaves lines as they are', async () => {
    const r = await collect(
      startLauncher(
        [
          '--nproc-per-node',
          '2',
          '--nnodes',
          '2',
          '--node-rank',
          '1',
          '--master-addr',
          'head',
          '--job-id',
          'job-7',
          '--no-prefix',
          script,
          // Every line ended: without the prefix the ranks' bytes are not separated, and the default
          // mode's unfinished line would run into the other rank's JSON.
        ],
        { CK_MODE: 'lines' },
      ),
    );
    expect(r.code).toBe(0);
    const json = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    expect(json.map((j) => `${j.rank}/${j.size}/${j.local}/${j.addr}/${j.job}`).sort()).toEqual([
      '2/4/0/head/job-7',
      '3/4/1/head/job-7',
    ]);
  });

  test('several nodes need --master-addr and a job id given to every node; one node gets a fresh random one', async () => {
    // Without --master-addr every node would serve the bootstrap on its own loopback address.
    const noAddr = await collect(startLauncher(['--nnodes', '2', '--node-rank', '1', '--job-id', 'j', script]));
    expect(noAddr.code).not.toBe(0);
    expect(noAddr.stderr).toMatch(/--nnodes 2 needs --master-addr: the host of node 0/);
    expect(noAddr.stdout).toBe('');
    const noJob = await collect(startLauncher(['--nnodes', '2', '--node-rank', '1', '--master-addr', 'head', script]));
    expect(noJob.code).not.toBe(0);
    expect(noJob.stderr).toMatch(/same --job-id <id> \(or CUDA_KERNELS_JOB_ID\)/);
    expect(noJob.stdout).toBe('');
    // CUDA_KERNELS_JOB_ID of the launcher's environment is the job id, with several nodes as with one.
    const jobs = async (args: string[], env: Record<string, string> = {}) => {
      // (a mode that ends every line: without the prefix, the ranks' bytes are not separated)
      const r = await collect(
        startLauncher(['--nproc-per-node', '2', '--no-prefix', ...args, script], { CK_MODE: 'lines', ...env }),
      );
      expect(r.code).toBe(0);
      return r.stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l).job as string);
    };
    expect(await jobs(['--nnodes', '2', '--master-addr', 'head'], { CUDA_KERNELS_JOB_ID: 'from-env' })).toEqual([
      'from-env',
      'from-env',
    ]);
    // --job-id wins over the variable.
    expect(await jobs(['--job-id', 'given'], { CUDA_KERNELS_JOB_ID: 'from-env' })).toEqual(['given', 'given']);
    // Two launches of one node: two different random tokens.
    const [a, b] = [await jobs([]), await jobs([])];
    expect(a[0]).toBe(a[1]);
    expect(b[0]).toBe(b[1]);
    expect(a[0]).not.toBe(b[0]);
    const bad = await collect(startLauncher(['--job-id', 'has space', script]));
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--job-id must be 1 to 256 printable ASCII characters/);
  });

  test('output passes through byte for byte: a carriage return and bytes that are not UTF-8 stay as they are', async () => {
    const raw = Buffer.from([0x61, 0x0d, 0x62, 0xff, 0xfe, 0x0a, 0x63, 0x0d, 0x0a, 0x64]);
    const plain = await collectBytes(startLauncher(['--no-prefix', script], { CK_MODE: 'bytes' }));
    expect(plain.code).toBe(0);
    expect(plain.stdout.subarray(plain.stdout.indexOf(0x0a) + 1)).toEqual(raw); // after the JSON line
    // With the prefix: a tag after every newline only; an unfinished last line is ended.
    const tagged = await collectBytes(startLauncher([script], { CK_MODE: 'bytes' }));
    expect(tagged.code).toBe(0);
    const body = tagged.stdout.subarray(tagged.stdout.indexOf(0x0a) + 1);
    const tag = Buffer.from('[rank0]: ');
    expect(body).toEqual(
      Buffer.concat([tag, raw.subarray(0, 6), tag, raw.subarray(6, 9), tag, raw.subarray(9), Buffer.from('\n')]),
    );
  });

  test('a long line written in two parts far apart gets one tag; lines of different ranks never mix', async () => {
    const partial = await collect(startLauncher([script], { CK_MODE: 'partial' }));
    expect(partial.code).toBe(0);
    expect(partial.stdout.split('\n').slice(1)).toEqual([`[rank0]: ${'p'.repeat(70000)}tial`, '[rank0]: next', '']);
    const flood = await collect(startLauncher(['--nproc-per-node', '3', script], { CK_MODE: 'flood' }));
    expect(flood.code).toBe(0);
    const counts = [0, 0, 0];
    for (const line of flood.stdout.split('\n')) {
      if (line === '' || line.includes('{')) continue;
      const m = /^\[rank(\d)\]: (x+) (\d) (\d+)$/.exec(line);
      expect(m).not.toBeNull();
      const rank = Number(m![1]);
      expect(Number(m![3])).toBe(rank);
      expect(m![2].length).toBe(100 + 37 * rank);
      expect(Number(m![4])).toBe(counts[rank]++);
    }
    expect(counts).toEqual([3000, 3000, 3000]);
  });

  test('a closed stdout (launch … | head -1): the ranks are stopped, and the launcher exits with 141, no crash', async () => {
    const pids = fs.mkdtempSync(path.join(tmp, 'pids-'));
    const child = startLauncher(['--nproc-per-node', '2', '--kill-timeout', '3000', script], {
      CK_MODE: 'chatty',
      CK_READY_DIR: pids,
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    // Read until both ranks are up and rank 0 chatters, then close our end, as head does.
    let seen = '';
    await new Promise<void>((resolve) =>
      child.stdout?.on('data', (d: Buffer) => {
        seen += d.toString();
        if (seen.includes('chatter from 0') && fs.readdirSync(pids).length === 2) resolve();
      }),
    );
    child.stdout?.destroy();
    const code = await exited;
    const ranks = fs.readdirSync(pids).map((f) => Number(fs.readFileSync(path.join(pids, f), 'utf8')));
    const left = ranks.filter(alive);
    for (const pid of left) process.kill(pid, 'SIGKILL');
    expect({ code, left, stderr }).toEqual({ code: 141, left: [], stderr: expect.any(String) });
    expect(stderr).toMatch(/launch: stdout closed \(EPIPE\): stopping the 2 ranks/);
    expect(stderr).not.toMatch(/Error|at .*\.ts/);
  });

  test.each([
    ['SEGV', 139],
    ['ABRT', 134],
    ['KILL', 137],
    ['USR1', 138],
  ] as const)('a rank killed by SIG%s: the launcher exits with %i (128 + the signal)', async (signal, code) => {
    const r = await collect(startLauncher(['--no-node', 'sh', '-c', `kill -${signal} $$`]));
    expect(r.code).toBe(code);
    expect(r.stderr).toContain(`launch: rank 0 was killed by SIG${signal}`);
  });

  test('one rank failing stops the others and the launcher exits with its code', async () => {
    // Rank 1 fails once the others have their handlers: a fixed 300 ms was not always enough for a
    // rank to start on a loaded machine, and one killed before its handler prints nothing.
    const readyDir = fs.mkdtempSync(path.join(tmp, 'ready-'));
    const r = await collect(
      startLauncher(['--nproc-per-node', '3', script], { CK_MODE: 'fail', CK_READY_DIR: readyDir }),
    );
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
    ['SIGHUP', 129],
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
    expect(r.stdout).toContain(`[rank0]: ${signal} in 0`);
    expect(r.stdout).toContain(`[rank1]: ${signal} in 1`);
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
    // A Node script that does not exist: one line, no rank started.
    const noScript = await collect(startLauncher(['--nproc-per-node', '2', path.join(tmp, 'no-such-script.js')]));
    expect(noScript.code).toBe(1);
    expect(noScript.stderr.trim()).toMatch(/^cuda-kernels: RangeError: launch: no script .*no-such-script\.js/);
    expect(noScript.stderr.trim().split('\n')).toHaveLength(1);
    expect(noScript.stdout).toBe('');
    const bad = await collect(startLauncher(['--nproc-per-node', '0', script]));
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/nproc-per-node/);
    const badRank = await collect(startLauncher(['--nnodes', '2', '--node-rank', '2', script]));
    expect(badRank.code).not.toBe(0);
    expect(badRank.stderr).toMatch(/--node-rank must be an integer in \[0, 1\]/);
  });
});
