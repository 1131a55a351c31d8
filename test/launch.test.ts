// `npx cuda-kernels launch` end to end, with CPU-only ranks (plain Node.js scripts and shell
// commands): the ranks' environment, their output, failures, signals.
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const root = path.join(__dirname, '..');
const register = path.join(root, 'test', 'harness', 'ts-register.js');
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
