// `npx cuda-kernels launch`: starts the ranks of a job on this host with torchrun's variables, so a
// script written for Communicator.init() runs unchanged here, under mpirun or under srun.
import { type ChildProcess, spawn } from 'node:child_process';
import * as readline from 'node:readline';

/** Options of {@link launch}, as the `launch` command parses them. */
export interface LaunchOptions {
  /** Ranks on this host (default 1). */
  nprocPerNode: number;
  /** Hosts in the job (default 1). */
  nnodes: number;
  /** This host's index, 0 … nnodes − 1 (default 0). */
  nodeRank: number;
  /** Rank 0's host, where it serves NCCL's bootstrap (default 127.0.0.1). */
  masterAddr: string;
  /** Rank 0's bootstrap port (default 29500). */
  masterPort: number;
  /** Run the script with this Node.js (default); false runs it as a command of its own. */
  node: boolean;
  /** Prefix each line of a rank's output with `[rank<r>]: ` (default true). */
  prefix: boolean;
  /** Milliseconds the ranks get to exit after SIGTERM before SIGKILL (default 10000). */
  killTimeoutMs: number;
}

/** The defaults of {@link LaunchOptions}. */
export const launchDefaults: LaunchOptions = {
  nprocPerNode: 1,
  nnodes: 1,
  nodeRank: 0,
  masterAddr: '127.0.0.1',
  masterPort: 29500,
  node: true,
  prefix: true,
  killTimeoutMs: 10_000,
};

/** Where the launcher writes its ranks' output and its own messages. */
export interface LaunchIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

const SIGNALS = { SIGINT: 2, SIGTERM: 15, SIGKILL: 9, SIGHUP: 1 } as const;

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return 128 + (signal && signal in SIGNALS ? SIGNALS[signal as keyof typeof SIGNALS] : 1);
}

/** The environment of local rank `localRank` (exported for tests). */
export function rankEnvironment(
  opts: LaunchOptions,
  localRank: number,
  base: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const size = opts.nnodes * opts.nprocPerNode;
  const rank = opts.nodeRank * opts.nprocPerNode + localRank;
  // Everything else passes through unchanged, NCCL_* included (NCCL_NVLS_ENABLE, NCCL_SOCKET_IFNAME, …).
  return {
    ...base,
    RANK: String(rank),
    WORLD_SIZE: String(size),
    LOCAL_RANK: String(localRank),
    LOCAL_WORLD_SIZE: String(opts.nprocPerNode),
    GROUP_RANK: String(opts.nodeRank),
    NODE_RANK: String(opts.nodeRank),
    MASTER_ADDR: opts.masterAddr,
    MASTER_PORT: String(opts.masterPort),
  };
}

function checkOptions(o: LaunchOptions): void {
  const int = (name: string, v: number, min: number, max = 1 << 20) => {
    if (!Number.isInteger(v) || v < min || v > max)
      throw new RangeError(`--${name} must be an integer in [${min}, ${max}], got ${v}`);
  };
  int('nproc-per-node', o.nprocPerNode, 1, 4096);
  int('nnodes', o.nnodes, 1);
  int('node-rank', o.nodeRank, 0, o.nnodes - 1);
  int('master-port', o.masterPort, 1, 65535);
  int('kill-timeout', o.killTimeoutMs, 0, 3_600_000);
  if (typeof o.masterAddr !== 'string' || o.masterAddr.trim() === '')
    throw new RangeError('--master-addr must be a host name or address');
}

/**
 * Starts `nprocPerNode` ranks of `script` on this host (ranks nodeRank·nprocPerNode … of
 * nnodes·nprocPerNode) with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR
 * and MASTER_PORT set, as torchrun does; every other variable passes through. Each line of a rank's
 * stdout and stderr goes to ours with the rank in front. SIGINT and SIGTERM are forwarded to the
 * ranks (a second one kills them). When a rank fails (a non-zero exit or a signal) the others get
 * SIGTERM, then SIGKILL after `killTimeoutMs`. Resolves to the exit code: 0 when every rank exited 0,
 * else the first failing rank's code (128 + signal number for a signal).
 */
export function launch(
  script: string,
  args: readonly string[],
  options: Partial<LaunchOptions> = {},
  io: LaunchIo = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const opts: LaunchOptions = { ...launchDefaults, ...options };
  checkOptions(opts);
  if (typeof script !== 'string' || script === '')
    throw new TypeError('launch needs a script (or, with --no-node, a command)');
  const say = (line: string) => io.stderr.write(`launch: ${line}\n`);
  return new Promise<number>((resolve) => {
    const children: { rank: number; child: ChildProcess; exited: boolean; closed: boolean }[] = [];
    let firstFailure: number | null = null;
    let signalled: NodeJS.Signals | null = null;
    let killTimer: NodeJS.Timeout | null = null;
    let open = opts.nprocPerNode;

    const stopOthers = (signal: NodeJS.Signals) => {
      for (const c of children) if (!c.exited) c.child.kill(signal);
      if (signal !== 'SIGKILL' && killTimer === null && opts.killTimeoutMs > 0) {
        killTimer = setTimeout(() => {
          const left = children.filter((c) => !c.exited);
          if (left.length > 0) {
            say(
              `rank${left.length > 1 ? 's' : ''} ${left.map((c) => c.rank).join(', ')} still running after ${opts.killTimeoutMs} ms: SIGKILL`,
            );
            for (const c of left) c.child.kill('SIGKILL');
          }
        }, opts.killTimeoutMs);
        killTimer.unref();
      }
    };

    const onSignal = (signal: NodeJS.Signals) => {
      if (signalled !== null) {
        say(`${signal} again: killing the ranks`);
        stopOthers('SIGKILL');
        return;
      }
      signalled = signal;
      say(`${signal}: forwarding it to the ranks`);
      stopOthers(signal);
    };
    const handlers: [NodeJS.Signals, () => void][] = (['SIGINT', 'SIGTERM'] as const).map((s) => [
      s,
      () => onSignal(s),
    ]);
    for (const [s, h] of handlers) process.on(s, h);

    const finish = () => {
      for (const [s, h] of handlers) process.off(s, h);
      if (killTimer) clearTimeout(killTimer);
      const code = firstFailure ?? (signalled ? exitCodeOf(null, signalled) : 0);
      resolve(code);
    };

    for (let local = 0; local < opts.nprocPerNode; local++) {
      const env = rankEnvironment(opts, local);
      const rank = Number(env.RANK);
      const command = opts.node ? process.execPath : script;
      const argv = opts.node ? [script, ...args] : [...args];
      const child = spawn(command, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      const entry = { rank, child, exited: false, closed: false };
      const closed = () => {
        if (entry.closed) return;
        entry.closed = true;
        if (--open === 0) finish();
      };
      children.push(entry);
      const tag = opts.prefix ? `[rank${rank}]: ` : '';
      for (const [stream, target] of [
        [child.stdout, io.stdout],
        [child.stderr, io.stderr],
      ] as const) {
        if (!stream) continue;
        readline
          .createInterface({ input: stream, crlfDelay: Infinity })
          .on('line', (line) => target.write(`${tag}${line}\n`));
      }
      child.on('error', (e) => {
        // Not started at all (no such command): a failure like any other.
        say(`rank ${rank} could not start: ${e.message}`);
        entry.exited = true;
        if (firstFailure === null && signalled === null) {
          firstFailure = 127;
          stopOthers('SIGTERM');
        }
        closed();
      });
      child.on('exit', (code, signal) => {
        entry.exited = true;
        const failed = code !== 0;
        if (failed && firstFailure === null && signalled === null) {
          firstFailure = exitCodeOf(code, signal);
          const how = code !== null ? `exited with code ${code}` : `was killed by ${signal}`;
          const left = children.filter((c) => !c.exited).length;
          say(`rank ${rank} ${how}${left > 0 ? `; stopping the other ${left} rank${left > 1 ? 's' : ''}` : ''}`);
          stopOthers('SIGTERM');
        }
      });
      child.on('close', closed);
    }
  });
}
