// `npx cuda-kernels launch`: starts the ranks of a job on this host with torchrun's variables, so a
// script written for Communicator.init() runs unchanged here, under mpirun or under srun.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as os from 'node:os';
import * as path from 'node:path';

/** Options of {@link launch}, as the `launch` command parses them. */
export interface LaunchOptions {
  /** Ranks on this host (default 1). */
  nprocPerNode: number;
  /** Hosts in the job (default 1). */
  nnodes: number;
  /** This host's index, 0 … nnodes − 1 (default 0). */
  nodeRank: number;
  /** Rank 0's host, where it serves the job's bootstrap (127.0.0.1 with one node; required with several). */
  masterAddr: string;
  /** Rank 0's bootstrap port (default 29500). */
  masterPort: number;
  /**
   * The job's token, `CUDA_KERNELS_JOB_ID` in every rank's environment: the communicator refuses a
   * rank that presents another. Default: `CUDA_KERNELS_JOB_ID` of the launcher's environment, else a
   * random one with one node; several nodes must be given the same one.
   */
  jobId?: string;
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

/** The variable that carries the job's token to every rank. */
export const JOB_ID_VARIABLE = 'CUDA_KERNELS_JOB_ID';

// What a job token may be: it travels in an environment variable and in the bootstrap's messages.
const JOB_ID_PATTERN = /^[\x21-\x7e]{1,256}$/;

// The exit code of a process killed by `signal`, as a shell reports it.
function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (os.constants.signals[signal] ?? 0);
}

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return signal ? signalExitCode(signal) : 1;
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
    ...(opts.jobId !== undefined ? { [JOB_ID_VARIABLE]: opts.jobId } : {}),
  };
}

/**
 * The job token the ranks get: `--job-id`, else the launcher's own `CUDA_KERNELS_JOB_ID`, else (one
 * node only) 16 random bytes in hex. The nodes of a job cannot agree on a random token by
 * themselves, so with several nodes the user gives one, the same on every node.
 */
export function resolveJobId(
  opts: Pick<LaunchOptions, 'jobId' | 'nnodes'>,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const checked = (from: string, id: string) => {
    if (!JOB_ID_PATTERN.test(id)) {
      throw new RangeError(
        `${from} must be 1 to 256 printable ASCII characters without spaces, got ${JSON.stringify(id)}`,
      );
    }
    return id;
  };
  if (opts.jobId !== undefined) return checked('--job-id', opts.jobId);
  // An empty variable counts as unset, as shells make it easily.
  const fromEnv = env[JOB_ID_VARIABLE];
  if (fromEnv) return checked(JOB_ID_VARIABLE, fromEnv);
  if (opts.nnodes > 1) {
    throw new RangeError(
      `--nnodes ${opts.nnodes}: the ranks of every node must present the same job token; ` +
        `give each node's launcher the same --job-id <id> (or ${JOB_ID_VARIABLE})`,
    );
  }
  return randomBytes(16).toString('hex');
}

function checkOptions(o: LaunchOptions, masterAddrGiven: boolean): void {
  const int = (name: string, v: number, min: number, max = 1 << 20) => {
    if (!Number.isInteger(v) || v < min || v > max)
      throw new RangeError(`--${name} must be an integer in [${min}, ${max}], got ${v}`);
  };
  int('nproc-per-node', o.nprocPerNode, 1, 4096);
  int('nnodes', o.nnodes, 1);
  int('node-rank', o.nodeRank, 0, o.nnodes - 1);
  int('master-port', o.masterPort, 1, 65535);
  int('kill-timeout', o.killTimeoutMs, 0, 3_600_000);
  // Without it every node would serve its own bootstrap on 127.0.0.1 and wait out the timeout there.
  if (o.nnodes > 1 && !masterAddrGiven) {
    throw new RangeError(`--nnodes ${o.nnodes} needs --master-addr: the host of node 0, the same on every node`);
  }
  if (typeof o.masterAddr !== 'string' || o.masterAddr.trim() === '')
    throw new RangeError('--master-addr must be a host name or address');
}

// A rank's stdout or stderr on its way to ours: bytes pass through unchanged (a `\r`, invalid UTF-8),
// with the tag written before every line. A line goes out whole, in one write, when its newline
// comes (or the stream ends), so that lines of different ranks never interleave; only a line longer
// than HOLD_BYTES goes out in pieces.
const HOLD_BYTES = 1 << 16;

class RankOutput {
  #atLineStart = true;
  #held: Buffer = Buffer.alloc(0);

  constructor(
    private readonly tag: Buffer | null,
    private readonly write: (bytes: Buffer) => void,
  ) {}

  push(chunk: Buffer): void {
    const bytes = this.#held.length > 0 ? Buffer.concat([this.#held, chunk]) : chunk;
    const last = bytes.lastIndexOf(0x0a);
    if (last >= 0) this.#emit(bytes.subarray(0, last + 1));
    this.#held = bytes.subarray(last + 1);
    if (this.#held.length >= HOLD_BYTES) this.#flushHeld();
  }

  /** At the end of the stream: what is held goes out; with a tag, an unfinished last line is ended. */
  end(): void {
    // One write, so that no other rank's line lands between the last bytes and their newline.
    if (this.tag !== null && (this.#held.length > 0 || !this.#atLineStart)) {
      this.#held = Buffer.concat([this.#held, Buffer.from('\n')]);
    }
    this.#flushHeld();
  }

  #flushHeld(): void {
    if (this.#held.length > 0) this.#emit(this.#held);
    this.#held = Buffer.alloc(0);
  }

  #emit(bytes: Buffer): void {
    if (this.tag === null) {
      this.write(bytes);
      this.#atLineStart = bytes[bytes.length - 1] === 0x0a;
      return;
    }
    const parts: Buffer[] = [];
    for (let from = 0; from < bytes.length;) {
      if (this.#atLineStart) parts.push(this.tag);
      const nl = bytes.indexOf(0x0a, from);
      const to = nl < 0 ? bytes.length : nl + 1;
      parts.push(bytes.subarray(from, to));
      this.#atLineStart = nl >= 0;
      from = to;
    }
    this.write(Buffer.concat(parts));
  }
}

/**
 * Starts `nprocPerNode` ranks of `script` on this host (ranks nodeRank·nprocPerNode … of
 * nnodes·nprocPerNode) with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
 * MASTER_PORT and the job's token CUDA_KERNELS_JOB_ID set; every other variable passes through. The
 * ranks' stdout and stderr go to ours byte for byte, with the rank in front of every line, at the
 * pace of our reader (a rank's pipe is paused while our stream is full). SIGINT,
 * SIGTERM and SIGHUP are forwarded to the ranks (a second one kills them). When a rank fails (a
 * non-zero exit or a signal), or our stdout or stderr is closed (EPIPE), the others get SIGTERM, then
 * SIGKILL after `killTimeoutMs`. Resolves to the exit code of the first of these: 0 when every rank
 * exited 0, else the failing rank's code (128 + the signal's number for a signal), 128 + the signal
 * for one forwarded, 141 (as for SIGPIPE) for a closed output.
 */
export function launch(
  script: string,
  args: readonly string[],
  options: Partial<LaunchOptions> = {},
  io: LaunchIo = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const opts: LaunchOptions = { ...launchDefaults, ...options };
  if (options.masterAddr === undefined) opts.masterAddr = launchDefaults.masterAddr;
  checkOptions(opts, options.masterAddr !== undefined);
  if (typeof script !== 'string' || script === '')
    throw new TypeError('launch needs a script (or, with --no-node, a command)');
  // A script Node cannot find is one line here, not every rank's stack trace (Node's own flags, such
  // as `-r x`, pass as they are).
  if (opts.node && !script.startsWith('-')) {
    try {
      require.resolve(path.resolve(script));
    } catch {
      throw new RangeError(`launch: no script ${script} (from ${process.cwd()}); with --no-node it is a command`);
    }
  }
  opts.jobId = resolveJobId(opts);

  // A stream that failed (EPIPE: the reader went away) gets nothing more.
  const broken = new Set<NodeJS.WritableStream>();
  // The ranks' pipes paused while a target is full (a slow reader: a pager, a terminal over ssh), so
  // that their output waits in the ranks rather than piling up in the launcher's memory.
  const heldBack = new Map<NodeJS.WritableStream, Set<NodeJS.ReadableStream>>();
  const resumeAll = (target: NodeJS.WritableStream) => {
    const sources = heldBack.get(target);
    heldBack.delete(target);
    for (const s of sources ?? []) s.resume();
  };
  const writeTo = (target: NodeJS.WritableStream, bytes: Buffer | string, source?: NodeJS.ReadableStream) => {
    if (broken.has(target)) return;
    let full: boolean;
    try {
      full = !target.write(bytes);
    } catch {
      broken.add(target);
      return;
    }
    if (full && source) {
      let sources = heldBack.get(target);
      if (!sources) {
        heldBack.set(target, (sources = new Set()));
        target.once('drain', () => resumeAll(target));
      }
      sources.add(source);
      source.pause();
    }
  };
  const say = (line: string) => writeTo(io.stderr, `launch: ${line}\n`);

  return new Promise<number>((resolve) => {
    const children: { rank: number; child: ChildProcess; exited: boolean; closed: boolean }[] = [];
    // The exit code of the first thing that stopped the job (a failing rank, a signal, a closed output).
    let stopCode: number | null = null;
    let signalled = false;
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
      if (signalled) {
        say(`${signal} again: killing the ranks`);
        stopOthers('SIGKILL');
        return;
      }
      signalled = true;
      stopCode ??= signalExitCode(signal);
      say(`${signal}: forwarding it to the ranks`);
      stopOthers(signal);
    };
    // SIGHUP too: the terminal went away, and the ranks must not outlive the launcher.
    const handlers: [NodeJS.Signals, () => void][] = (['SIGINT', 'SIGTERM', 'SIGHUP'] as const).map((s) => [
      s,
      () => onSignal(s),
    ]);
    for (const [s, h] of handlers) process.on(s, h);

    // `launch … | head -1`: the reader is gone; nobody will see the ranks' output, so stop them.
    const onOutputError = (target: NodeJS.WritableStream) => (e: NodeJS.ErrnoException) => {
      const first = broken.size === 0;
      broken.add(target);
      // No drain will come: the ranks' pipes must flow (into nothing) for them to end.
      resumeAll(target);
      if (!first) return;
      const left = children.filter((c) => !c.exited).length;
      say(
        `${target === io.stdout ? 'stdout' : 'stderr'} closed (${e.code ?? e.message})` +
          (left > 0 ? `: stopping the ${left} rank${left > 1 ? 's' : ''}` : ''),
      );
      if (stopCode === null) {
        stopCode = signalExitCode('SIGPIPE');
        stopOthers('SIGTERM');
      }
    };
    const outputHandlers: [NodeJS.WritableStream, (e: NodeJS.ErrnoException) => void][] = [io.stdout, io.stderr].map(
      (s) => [s, onOutputError(s)],
    );
    for (const [s, h] of outputHandlers) s.on('error', h);

    const finish = () => {
      for (const [s, h] of handlers) process.off(s, h);
      // A write just before the end can still fail on a later tick: that error must not crash us.
      for (const [s, h] of outputHandlers) s.off('error', h).on('error', () => {});
      if (killTimer) clearTimeout(killTimer);
      resolve(stopCode ?? 0);
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
      const tag = opts.prefix ? Buffer.from(`[rank${rank}]: `) : null;
      for (const [stream, target] of [
        [child.stdout, io.stdout],
        [child.stderr, io.stderr],
      ] as const) {
        if (!stream) continue;
        const out = new RankOutput(tag, (bytes) => writeTo(target, bytes, stream));
        stream.on('data', (chunk: Buffer) => out.push(chunk));
        stream.on('end', () => out.end());
      }
      child.on('error', (e) => {
        // Not started at all (no such command): a failure like any other.
        say(`rank ${rank} could not start: ${e.message}`);
        entry.exited = true;
        if (stopCode === null) {
          stopCode = 127;
          stopOthers('SIGTERM');
        }
        closed();
      });
      child.on('exit', (code, signal) => {
        entry.exited = true;
        if (code !== 0 && stopCode === null) {
          stopCode = exitCodeOf(code, signal);
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
