// How the ranks of one job find each other, as torch.distributed does it: rank 0 binds a small TCP
// store at MASTER_ADDR:MASTER_PORT (exclusively: a second job on that port gets "address in use" at
// once, where NCCL's own NCCL_COMM_ID root listens with SO_REUSEPORT and silently merges the two),
// every other rank connects and presents the job's token, the world size and its rank, and once all
// of them have, rank 0 hands each the NCCL unique id (ncclGetUniqueId's 128 bytes, opaque here).
// A rank of another job, with another world size, or claiming a rank already taken is refused with
// an error naming it, on both sides. Plain node:net on the event loop: nothing here blocks, it works
// inside a worker_thread, and it needs no NCCL (the tests drive it with made-up ids).
//
// The token separates jobs that share an address by accident; it is no secret and no defence
// against a hostile process on the network (docs/multi-gpu.md).
import { createHash } from 'node:crypto';
import * as net from 'node:net';
import * as os from 'node:os';

import { NcclError } from './nccl';

/** The protocol's name and version, sent with every message, so that something else listening on
 * the port (or an incompatible version of this package) is told apart from rank 0's store. */
export const BOOTSTRAP_PROTOCOL = 'cuda-kernels-bootstrap/1';

/** Bytes of the id the store hands out (sizeof(ncclUniqueId)). */
export const UNIQUE_ID_BYTES = 128;

// No hello or answer is anywhere near this long: anything longer is not one of ours.
const MAX_LINE = 4096;

// How long a peer that has its answer gets to close its end of the connection before rank 0 cuts
// it: one that never does (half-open) would otherwise keep rank 0's process alive for ever.
const LINGER_MS = 1000;

/** Ends `socket` with `text`, and destroys it LINGER_MS later unless the peer closed it by then. */
function answer(socket: net.Socket, text: string): void {
  socket.end(text);
  const cut = setTimeout(() => socket.destroy(), LINGER_MS);
  cut.unref();
  socket.once('close', () => clearTimeout(cut));
}

/** One rank's view of the job it joins. */
export interface BootstrapJob {
  /** Rank 0's host (MASTER_ADDR) and port (MASTER_PORT). */
  host: string;
  port: number;
  /** The job's token (see jobIdFromEnv); only its fingerprint travels. */
  jobId: string;
  /**
   * Whether the token was given (options, CUDA_KERNELS_JOB_ID, the launcher's job ids) rather than
   * the fixed default: with a real token, a rank of this job with another size or a taken rank means
   * the job itself is inconsistent and every rank fails; with the default it may be another job.
   */
  explicitJob: boolean;
  size: number;
  /** Date.now() after which the handshake gives up. */
  deadline: number;
  /** Called on rank 0 for each refused connection (a warning: the store keeps waiting). */
  onRefused?: (message: string) => void;
}

/** The first 12 hex digits of the token's SHA-256: what messages show of a token, and all that travels. */
export function jobFingerprint(jobId: string): string {
  return createHash('sha256').update(jobId).digest('hex').slice(0, 12);
}

function jobHash(jobId: string): string {
  return createHash('sha256').update(jobId).digest('hex');
}

/** `host:port`, with IPv6 literals bracketed. */
function addressOf(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

interface Hello {
  v: string;
  job: string;
  size: number;
  rank: number;
  pid?: number;
  host?: string;
}

function line(o: object): string {
  return `${JSON.stringify({ v: BOOTSTRAP_PROTOCOL, ...o })}\n`;
}

/** Reads one newline-terminated line from `socket` (at most MAX_LINE characters). */
function onLine(socket: net.Socket, handle: (text: string | null, why?: string) => void): void {
  let buf = '';
  let done = false;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    if (done) return;
    buf += chunk;
    const nl = buf.indexOf('\n');
    if (nl >= 0) {
      done = true;
      handle(buf.slice(0, nl));
    } else if (buf.length > MAX_LINE) {
      done = true;
      handle(null, `more than ${MAX_LINE} bytes without a newline`);
    }
  });
  socket.on('end', () => {
    if (done) return;
    done = true;
    handle(null, buf.length > 0 ? 'an unterminated message' : 'nothing');
  });
}

/**
 * A value of a peer's hello as messages show it: at most 64 characters, anything but printable ASCII
 * escaped. Whatever connects writes these, and rank 0's warnings go to a terminal.
 */
function shown(v: unknown): string {
  const text = typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v));
  const short = text.length > 64 ? `${text.slice(0, 64)}…` : text;
  return short.replace(/[^\x20-\x7e…]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

// What a timeout lists at most: ranges of ranks, and refused connections (the rest are counted). A
// job of thousands of ranks, or a peer that connects again and again, must not make the error (and
// the answer a joined rank reads, at most MAX_LINE) grow without bound.
const MAX_RANGES = 16;
const MAX_REFUSALS = 3;

/** Ranks, ascending, as ranges ("1–6, 8, 10–999"), at most MAX_RANGES of them, then how many more. */
function rankRanges(ranks: number[]): string {
  const ranges: string[] = [];
  let more = 0;
  for (let i = 0; i < ranks.length;) {
    let j = i;
    while (j + 1 < ranks.length && ranks[j + 1] === ranks[j] + 1) j++;
    if (ranges.length < MAX_RANGES) ranges.push(i === j ? `${ranks[i]}` : `${ranks[i]}–${ranks[j]}`);
    else more += j - i + 1;
    i = j + 1;
  }
  return more > 0 ? `${ranges.join(', ')} and ${more} more` : ranges.join(', ');
}

// eslint-disable-next-line no-control-regex -- control characters are what it escapes
const CONTROL = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * What rank 0's store answered, as a rank's error shows it: at most 1000 characters, control
 * characters (C0, DEL, C1, line separators, bidirectional overrides) escaped. Whatever listens at
 * MASTER_ADDR:MASTER_PORT writes it; rank 0's own messages pass unchanged (their dashes and quotes too).
 */
function printable(text: string): string {
  const escaped = text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return escaped.length > 1000 ? `${escaped.slice(0, 1000)}…` : escaped;
}

// An error code rank 0 sent: one of ours (ncclInvalidUsage, ncclTimeout, EADDRINUSE, …), else ncclInvalidUsage.
const CODE = /^[A-Za-z0-9_]{1,64}$/;

function who(h: Partial<Hello>, remote: string): string {
  const where = [h.pid !== undefined ? `pid ${shown(h.pid)}` : '', h.host ? `on ${shown(h.host)}` : '']
    .filter(Boolean)
    .join(' ');
  return `${where ? `${where}, ` : ''}from ${remote}`;
}

/**
 * Rank 0's side: binds the store at `job.host:job.port` (only that loopback address when the host
 * is a loopback one, every interface otherwise, as torch.distributed's store does), calls `makeId`
 * once every other rank has presented itself (never when the bootstrap fails), and resolves to the
 * id once each has been sent it. Rejects with an {@link NcclError}: `EADDRINUSE` at once when the port is taken,
 * `ncclInvalidUsage` when a rank of this job (same explicit token) has another size or a taken rank,
 * `ncclTimeout` at the deadline (naming the ranks that never came and the connections refused).
 */
export function serveBootstrap(job: BootstrapJob, makeId: () => Uint8Array): Promise<Buffer> {
  const { host, port, size } = job;
  const address = addressOf(host, port);
  const mine = jobHash(job.jobId);
  const prefix = `rank 0 of ${size} (bootstrap store at ${address})`;
  return new Promise<Buffer>((resolve, reject) => {
    const server = net.createServer();
    const joined = new Map<number, { socket: net.Socket; hello: Hello; remote: string }>();
    const open = new Set<net.Socket>();
    const replied = new WeakSet<net.Socket>(); // refused ones, whose answer is on its way
    const refusals: string[] = []; // the first MAX_REFUSALS
    let refusedMore = 0;
    let id: Buffer | null = null;
    let listening = false;
    let settled = false;

    const finish = (err: NcclError | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      server.close();
      for (const s of open) {
        const entry = [...joined.values()].find((j) => j.socket === s);
        if (entry && err === null && id !== null) answer(s, line({ id: id.toString('base64') }));
        else if (entry && err !== null) answer(s, line({ error: `rank 0 gave up: ${err.message}`, code: err.code }));
        else if (!replied.has(s)) s.destroy();
      }
      if (err) reject(err);
      else resolve(id as Buffer);
    };

    const timer = setTimeout(
      () => {
        const missing = Array.from({ length: size - 1 }, (_, i) => i + 1).filter((r) => !joined.has(r));
        const more = refusedMore > 0 ? `; and ${refusedMore} more connection${refusedMore > 1 ? 's' : ''}` : '';
        const refused = refusals.length > 0 ? `; refused: ${refusals.join('; ')}${more}` : '';
        const present = [...joined.keys()].sort((a, b) => a - b);
        finish(
          new NcclError(
            `${prefix}: rank${missing.length > 1 ? 's' : ''} ${rankRanges(missing)} did not join within the timeout` +
              ` (joined: ${present.length > 0 ? rankRanges(present) : 'none'})${refused}` +
              ' — a rank that never started or failed early, another MASTER_ADDR/MASTER_PORT, or a firewall',
            'ncclTimeout',
            'bootstrap',
          ),
        );
      },
      Math.max(0, job.deadline - Date.now()),
    );

    // A refused connection: the peer gets the reason, rank 0 a warning (or, for an inconsistent job, the same error).
    const refuse = (socket: net.Socket, toPeer: string, here: string, fatal: boolean): void => {
      replied.add(socket);
      answer(socket, line({ error: toPeer, code: 'ncclInvalidUsage' }));
      if (refusals.length < MAX_REFUSALS) refusals.push(here);
      else refusedMore++;
      if (fatal) finish(new NcclError(`${prefix}: ${here}`, 'ncclInvalidUsage', 'bootstrap'));
      else job.onRefused?.(`${prefix}: ${here}`);
    };

    // The id is made once every rank is here: ncclGetUniqueId starts NCCL's bootstrap root (a thread
    // and a listening socket that wait for the ranks), which a bootstrap that fails would leave behind.
    const handOut = (): void => {
      try {
        const raw = makeId();
        if (raw.length !== UNIQUE_ID_BYTES) {
          throw new Error(`the unique id has ${raw.length} bytes, not ${UNIQUE_ID_BYTES}`);
        }
        id = Buffer.from(raw);
      } catch (e) {
        finish(
          e instanceof NcclError
            ? e
            : new NcclError(
                `${prefix}: ${e instanceof Error ? e.message : String(e)}`,
                'ncclInternalError',
                'bootstrap',
              ),
        );
        return;
      }
      finish(null);
    };

    server.on('connection', (socket) => {
      if (settled) {
        socket.destroy();
        return;
      }
      open.add(socket);
      socket.setNoDelay(true);
      socket.on('error', () => {});
      const remote = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
      socket.on('close', () => {
        open.delete(socket);
        // A rank that went away before the id was out may come again (a restart).
        for (const [r, j] of joined) if (j.socket === socket && !settled) joined.delete(r);
      });
      onLine(socket, (text, why) => {
        if (settled) return;
        let h: Partial<Hello> = {};
        try {
          if (text !== null) h = JSON.parse(text) as Partial<Hello>;
        } catch {
          h = {};
        }
        if (text === null && why === 'nothing') {
          // A probe (a port check, a health check): nothing to refuse.
          socket.destroy();
          return;
        }
        if (text === null || h.v !== BOOTSTRAP_PROTOCOL || typeof h.job !== 'string') {
          const sent = text === null ? why : 'something that is not a cuda-kernels rank’s hello';
          refuse(
            socket,
            `this is rank 0 of a cuda-kernels job (${BOOTSTRAP_PROTOCOL}); it could not read your hello`,
            `refused a connection ${who(h, remote)}: it sent ${sent}`,
            false,
          );
          return;
        }
        const sameJob = h.job === mine;
        const fatal = sameJob && job.explicitJob;
        const theirs = `rank ${shown(h.rank)} (${who(h, remote)})`;
        if (!sameJob) {
          refuse(
            socket,
            `rank 0's store at ${address} belongs to another job (its job token's fingerprint is ` +
              `${mine.slice(0, 12)}, this rank's ${shown(h.job.slice(0, 12))}): two jobs share ` +
              `MASTER_ADDR:MASTER_PORT, give each its own MASTER_PORT`,
            `refused ${theirs}: its job token (fingerprint ${shown(h.job.slice(0, 12))}) is not this job's ` +
              `(${mine.slice(0, 12)}), so it belongs to another job that uses the same address`,
            false,
          );
        } else if (h.size !== size) {
          refuse(
            socket,
            `rank 0 at ${address} says the job has ${size} ranks, this rank says ${shown(h.size)}`,
            `refused ${theirs}: it says the job has ${shown(h.size)} ranks, rank 0 says ${size}`,
            fatal,
          );
        } else if (!Number.isInteger(h.rank) || (h.rank as number) < 1 || (h.rank as number) >= size) {
          refuse(
            socket,
            `rank ${shown(h.rank)} is not one of ranks 1 … ${size - 1} (rank 0 is ${address} itself)`,
            `refused ${theirs}: rank ${shown(h.rank)} is not one of ranks 1 … ${size - 1}`,
            fatal,
          );
        } else if (joined.has(h.rank as number)) {
          const first = joined.get(h.rank as number) as { hello: Hello; remote: string };
          refuse(
            socket,
            `rank ${h.rank} has already joined rank 0 at ${address} (${who(first.hello, first.remote)}): two processes claim rank ${h.rank}`,
            `refused ${theirs}: rank ${h.rank} has already joined (${who(first.hello, first.remote)})`,
            fatal,
          );
        } else {
          joined.set(h.rank as number, { socket, hello: h as Hello, remote });
          if (joined.size === size - 1) handOut();
        }
      });
    });

    // Loopback hosts: that address only. Otherwise every interface, IPv6 and IPv4 (IPv4 alone
    // where the host has no IPv6).
    let bindHost = isLoopback(host) ? (host === 'localhost' ? '127.0.0.1' : host) : '::';
    server.on('error', (e: NodeJS.ErrnoException) => {
      if (listening) {
        finish(new NcclError(`${prefix}: the store failed: ${e.message}`, e.code ?? 'ncclSystemError', 'bootstrap'));
        return;
      }
      if (bindHost === '::' && (e.code === 'EAFNOSUPPORT' || e.code === 'EADDRNOTAVAIL')) {
        bindHost = '0.0.0.0';
        listen();
        return;
      }
      settled = true;
      clearTimeout(timer);
      if (e.code === 'EADDRINUSE') {
        reject(
          new NcclError(
            `${prefix}: address in use: another process (another job, or one still running) already ` +
              `listens on port ${port}; give each job its own MASTER_PORT (or options.address)`,
            'EADDRINUSE',
            'bootstrap',
          ),
        );
      } else {
        reject(
          new NcclError(
            `${prefix}: cannot listen on ${address}: ${e.message}`,
            e.code ?? 'ncclSystemError',
            'bootstrap',
          ),
        );
      }
    });
    server.on('listening', () => {
      listening = true;
      if (size === 1) handOut();
    });
    // Node sets SO_REUSEADDR (a port in TIME_WAIT can be bound again) but never SO_REUSEPORT: a port
    // another socket listens on is refused with EADDRINUSE.
    const listen = (): void => {
      server.listen({ host: bindHost, port, exclusive: true, ipv6Only: false });
    };
    listen();
  });
}

/**
 * Every other rank's side: connects to rank 0's store (retrying until it is up), presents the job's
 * token fingerprint, the size and `rank`, and resolves to the id rank 0 hands out once every rank
 * has joined. Rejects with an {@link NcclError}: `ncclInvalidUsage` when refused (saying why), or
 * `ncclTimeout` at the deadline (with the last thing that went wrong).
 */
export function joinBootstrap(job: BootstrapJob, rank: number): Promise<Buffer> {
  const { host, port, size } = job;
  const address = addressOf(host, port);
  const prefix = `rank ${rank} of ${size}`;
  const hello = line({ job: jobHash(job.jobId), size, rank, pid: process.pid, host: os.hostname() });
  return new Promise<Buffer>((resolve, reject) => {
    let lastProblem = 'no attempt finished';
    let pause = 50;
    let socket: net.Socket | null = null;
    let retry: NodeJS.Timeout | null = null;
    let settled = false;
    const finish = (err: Error | null, id?: Buffer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (retry) clearTimeout(retry);
      socket?.destroy();
      if (err) reject(err);
      else resolve(id as Buffer);
    };
    const timer = setTimeout(
      () =>
        finish(
          new NcclError(
            `${prefix}: could not join rank 0's bootstrap store at ${address} within the timeout ` +
              `(last: ${lastProblem}); is rank 0 running, with the same MASTER_ADDR and MASTER_PORT?`,
            'ncclTimeout',
            'bootstrap',
          ),
        ),
      Math.max(0, job.deadline - Date.now()),
    );
    const again = (problem: string): void => {
      lastProblem = problem;
      socket?.destroy();
      socket = null;
      if (settled) return;
      retry = setTimeout(attempt, pause);
      pause = Math.min(pause * 2, 500);
    };
    const attempt = (): void => {
      retry = null;
      if (settled) return;
      const s = net.connect({ host, port });
      socket = s;
      let answered = false;
      s.setNoDelay(true);
      s.setKeepAlive(true);
      s.on('error', (e: NodeJS.ErrnoException) => {
        if (!answered && socket === s) again(`${e.code ?? 'error'}: ${e.message}`);
      });
      s.on('connect', () => {
        lastProblem = `connected to ${address}, no answer yet (rank 0 answers once every rank has joined)`;
        s.write(hello);
      });
      onLine(s, (text, why) => {
        if (answered || socket !== s) return;
        answered = true;
        if (text === null) {
          // Rank 0 restarting, or its store just closed: try again until the deadline.
          again(`the store at ${address} closed the connection after ${why}`);
          return;
        }
        let reply: { v?: string; id?: string; error?: string; code?: string };
        try {
          reply = JSON.parse(text) as typeof reply;
        } catch {
          reply = {};
        }
        if (reply.v !== BOOTSTRAP_PROTOCOL) {
          finish(
            new NcclError(
              `${prefix}: something other than a cuda-kernels store answers at ${address} ` +
                `(${JSON.stringify(text.slice(0, 60))}); give the job another MASTER_PORT`,
              'ncclInvalidUsage',
              'bootstrap',
            ),
          );
        } else if (typeof reply.error === 'string') {
          const code = typeof reply.code === 'string' && CODE.test(reply.code) ? reply.code : 'ncclInvalidUsage';
          finish(new NcclError(`${prefix}: refused: ${printable(reply.error)}`, code, 'bootstrap'));
        } else {
          const id = Buffer.from(reply.id ?? '', 'base64');
          if (id.length !== UNIQUE_ID_BYTES) {
            finish(
              new NcclError(`${prefix}: rank 0 sent an id of ${id.length} bytes`, 'ncclInternalError', 'bootstrap'),
            );
          } else finish(null, id);
        }
      });
    };
    attempt();
  });
}
