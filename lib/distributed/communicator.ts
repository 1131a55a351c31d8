import type { CommHandle } from '../../binding';
import { checkArray, type DeviceArray, type Dtype, empty } from '../array';
import { deviceCount } from '../device';
import { checkInteger, rangeError, typeError, inWords, elements } from '../errors';
import { native } from '../native';
import { joinBootstrap, serveBootstrap } from './bootstrap';
import { bootstrapAddress, DEFAULT_MASTER_PORT, jobIdFromEnv, type RankSource, rankFromEnv } from './env';
import { asNcclError, NcclError, requireNccl } from './nccl';

/** Reductions of {@link Communicator.allReduce} and {@link Communicator.reduceScatter}. */
export type CollectiveOp = 'sum' | 'prod' | 'min' | 'max' | 'avg';

/** The reductions, in NCCL's order of codes. */
export const collectiveOps: readonly CollectiveOp[] = Object.freeze(['sum', 'prod', 'max', 'min', 'avg']);

/** Default of {@link CommunicatorOptions.timeoutMs}: 5 minutes. */
export const DEFAULT_TIMEOUT_MS = 300_000;

/** Options of {@link Communicator.init}; anything left out comes from the environment ({@link rankFromEnv}). */
export interface CommunicatorOptions {
  /** This process's rank (give `size` too). */
  rank?: number;
  /** Number of ranks (give `rank` too). */
  size?: number;
  /** The CUDA device of this rank (default: the local rank modulo the devices present). */
  device?: number;
  /**
   * `host:port` (or `[ipv6]:port`, port 1 … 65535) where rank 0 serves the job's bootstrap store
   * (default MASTER_ADDR:MASTER_PORT).
   */
  address?: string;
  /**
   * The job's token: every rank of a job must present the same one to rank 0's store, and a rank with
   * another is refused, so that two jobs on one address never join. Default: `CUDA_KERNELS_JOB_ID`,
   * else derived from the launcher's job ids ({@link jobIdFromEnv}), else a fixed default (with a
   * warning). An accident guard, not a secret: see docs/multi-gpu.md.
   */
  jobId?: string;
  /**
   * How long the initialisation may wait for every rank to join, and how long any one operation may
   * run on the GPU before the peers are declared dead or hung (default 5 minutes, at most 2^31 − 1). Then the
   * communicator is aborted and every pending operation rejects with an {@link NcclError}.
   */
  timeoutMs?: number;
  /** The environment to read instead of `process.env` (for tests and embedding). */
  env?: Record<string, string | undefined>;
}

/** A part of an array: `count` elements from `offset` (defaults: 0 and the rest of the array). */
export interface ArrayRange {
  offset?: number;
  count?: number;
}

const KIND = { allReduce: 0, broadcast: 1, allGather: 2, reduceScatter: 3, send: 4, recv: 5, sendRecv: 6 } as const;

const ignore = (): void => {};

/** The token of a job that gave none: it still tells jobs of different sizes apart. */
export const DEFAULT_JOB_ID = 'cuda-kernels-default-job';

const NO_JOB_ID_WARNING =
  'Communicator.init: this job has no token (no options.jobId, CUDA_KERNELS_JOB_ID, or job id from the ' +
  'launcher), so another job of the same size on the same MASTER_ADDR:MASTER_PORT could join it. Set ' +
  'CUDA_KERNELS_JOB_ID to the same random value on every rank (cuda-kernels launch does), or start the ' +
  'ranks with mpirun or srun.';

const RUNTIME_CONNECT_WARNING =
  'Communicator.init: NCCL_RUNTIME_CONNECT is set, so NCCL connects the collectives on their first use, in ' +
  'the calling thread: the first collective of each kind may block the JavaScript thread until every peer ' +
  'makes it. Unset it to have them connected during Communicator.init.';

// Beyond a close's own timeout: how long the process is kept alive for the thread's NCCL teardown.
const CLOSE_GRACE_MS = 10_000;

const warned = new Set<string>();
function warnOnce(code: string, message: string): void {
  if (warned.has(code)) return;
  warned.add(code);
  process.emitWarning(message, { code });
}

/** Keeps the process alive until `closed` settles, for at most `ms`. */
function keepAliveUntil(closed: Promise<void>, ms: number): void {
  const timer = setTimeout(ignore, Math.min(ms, 2 ** 31 - 1));
  closed.then(
    () => clearTimeout(timer),
    () => clearTimeout(timer),
  );
}

/** `host:port` or `[ipv6]:port` with a port in [1, 65535], checked. */
function parseAddress(address: unknown): { host: string; port: number } {
  const m = typeof address === 'string' ? /^(?:\[([^\]]+)\]|([^:\s[\]]+)):(\d{1,5})$/.exec(address) : null;
  const port = m ? Number(m[3]) : 0;
  if (!m || port < 1 || port > 65535) {
    throw rangeError('options.address', 'host:port (or [ipv6]:port) with a port in [1, 65535]', address);
  }
  return { host: m[1] ?? m[2], port };
}

/**
 * One rank's NCCL communicator: collectives and point-to-point transfers on {@link DeviceArray}s,
 * between processes on one host or many.
 *
 * Each operation is queued at once on the library stream of the communicator's device, so it is
 * ordered with every other operation of this package on that device, and returns a promise that
 * settles when the GPU has done it. Awaiting is only needed to know that it finished (or failed):
 * later kernels on the same device see its result either way. Bad arguments throw at once, before
 * anything is queued.
 *
 * Every rank must make the same collective calls in the same order, with the same lengths, dtypes,
 * ops and roots: NCCL cannot detect a mismatch, which hangs the ranks (or corrupts data). A hang, a
 * peer that died, or a peer that never makes the matching call surfaces as an {@link NcclError} on
 * every pending operation within `timeoutMs` of the operation starting on the GPU; the communicator is
 * then aborted (its results undefined, the arrays still freeable) and a new one is needed.
 *
 * @example
 * ```ts
 * // node app.js under `npx cuda-kernels launch --nproc-per-node 2 app.js` or `mpirun -np 2 node app.js`
 * using comm = await Communicator.init();
 * using x = upload(new Float32Array(1024).fill(comm.rank + 1), { device: comm.device });
 * await comm.allReduce(x, 'sum'); // every rank now holds 1 + 2 + … + size
 * ```
 */
export class Communicator {
  /** This process's rank. */
  readonly rank: number;
  /** Number of ranks. */
  readonly size: number;
  /** The CUDA device this rank's arrays must live on. */
  readonly device: number;
  /** Milliseconds an operation may run before the peers are declared dead or hung. */
  readonly timeoutMs: number;
  /** Rank 0's bootstrap address (`host:port`), or undefined for a single rank. */
  readonly address: string | undefined;
  /** Where rank and size came from. */
  readonly source: RankSource;
  #handle: CommHandle | null;
  #pending = new Set<Promise<unknown>>();
  // The sequence holding the communicator, those waiting for it, and the one whose call runs now.
  #busy: string | null = null;
  #waiting: (() => void)[] = [];
  #acting: string | null = null;
  #scratch: DeviceArray<'int32'> | null = null;

  private constructor(
    handle: CommHandle,
    rank: number,
    size: number,
    device: number,
    timeoutMs: number,
    address: string | undefined,
    source: RankSource,
  ) {
    this.#handle = handle;
    this.rank = rank;
    this.size = size;
    this.device = device;
    this.timeoutMs = timeoutMs;
    this.address = address;
    this.source = source;
  }

  /**
   * Joins this process to the job and resolves once every rank has joined and the communicator is
   * connected. Rank 0 binds the job's bootstrap store at `address` (another process listening there:
   * an {@link NcclError} `EADDRINUSE` at once) and hands NCCL's unique id to the other ranks once each
   * has presented the job's token, the size and its rank (a rank of another job, with another size, or
   * claiming a taken rank is refused with an error naming it). Then every rank initialises NCCL and
   * connects to its peers on the communicator's own thread. Nothing blocks the JavaScript thread, and
   * it works inside a worker_thread. Rejects with `ncclTimeout` when not done within `timeoutMs`, and
   * with `ncclLibraryNotFound` (saying what to install) when NCCL cannot be loaded.
   */
  static async init(options: CommunicatorOptions = {}): Promise<Communicator> {
    if (typeof options !== 'object' || options === null) throw typeError('options', 'an object', options);
    // At most 2^31 − 1 ms (24.8 days): the native clock adds it to a nanosecond time point.
    const timeoutMs = checkInteger('options.timeoutMs', options.timeoutMs ?? DEFAULT_TIMEOUT_MS, 1, 2 ** 31 - 1);
    if ((options.rank === undefined) !== (options.size === undefined)) {
      throw rangeError('options', 'rank and size together, or neither', options);
    }
    const env = options.env ?? process.env;
    let rank: number, size: number, localRank: number, address: string | undefined, source: RankSource;
    if (options.size !== undefined) {
      size = checkInteger('options.size', options.size, 1, 1 << 20);
      rank = checkInteger('options.rank', options.rank, 0, size - 1);
      localRank = rank;
      source = 'options';
      if (options.address === undefined && size > 1) {
        const raw = env.MASTER_PORT?.trim();
        const port = raw ? Number(raw) : DEFAULT_MASTER_PORT;
        if (!/^\d+$/.test(raw ?? '0') || port < 1 || port > 65535) {
          throw new RangeError(
            `environment variable MASTER_PORT must be an integer in [1, 65535], got ${JSON.stringify(raw)}`,
          );
        }
        address = bootstrapAddress(env.MASTER_ADDR?.trim() || '127.0.0.1', port);
      }
    } else {
      const fromEnv = rankFromEnv(env);
      ({ rank, size, localRank, source } = fromEnv);
      address = fromEnv.address;
    }
    if (options.address !== undefined) address = options.address;
    const where = address === undefined ? undefined : parseAddress(address);
    if (options.jobId !== undefined && (typeof options.jobId !== 'string' || options.jobId.trim() === '')) {
      throw typeError('options.jobId', 'a non-empty string', options.jobId);
    }
    if (env.NCCL_COMM_ID?.trim()) {
      throw new NcclError(
        `NCCL_COMM_ID is set (${env.NCCL_COMM_ID}): NCCL would then bootstrap on that fixed address itself, ` +
          'where two jobs started with the same one join into one communicator. Unset it: rank 0’s address ' +
          'comes from MASTER_ADDR and MASTER_PORT (or options.address), where rank 0’s store checks the job',
        'ncclInvalidUsage',
        'Communicator.init',
      );
    }
    const job =
      options.jobId !== undefined ? { jobId: options.jobId.trim(), from: 'options.jobId' } : jobIdFromEnv(env);
    const count = deviceCount();
    const device =
      options.device !== undefined
        ? checkInteger('options.device', options.device, 0, Math.max(0, count - 1))
        : count > 0
          ? localRank % count
          : 0;
    requireNccl();
    if (job === null && size > 1) warnOnce('CK_NCCL_NO_JOB_ID', NO_JOB_ID_WARNING);
    const label = `rank ${rank} of ${size}${address ? ` (bootstrap at ${address})` : ''}`;
    const deadline = Date.now() + timeoutMs;
    let id: Buffer;
    try {
      if (where === undefined || size === 1) {
        id = native.ncclUniqueId();
      } else {
        const bootstrap = {
          ...where,
          jobId: job?.jobId ?? DEFAULT_JOB_ID,
          explicitJob: job !== null,
          size,
          deadline,
          onRefused: (message: string) => process.emitWarning(message, { code: 'CK_NCCL_BOOTSTRAP_REFUSED' }),
        };
        id =
          rank === 0
            ? await serveBootstrap(bootstrap, () => native.ncclUniqueId())
            : await joinBootstrap(bootstrap, rank);
      }
    } catch (e) {
      throw asNcclError(e);
    }
    let created: { comm: CommHandle; ready: Promise<void>; runtimeConnect: boolean };
    try {
      created = native.ncclCommInit(id, size, rank, device, timeoutMs);
    } catch (e) {
      throw asNcclError(e);
    }
    if (created.runtimeConnect) warnOnce('CK_NCCL_RUNTIME_CONNECT', RUNTIME_CONNECT_WARNING);
    // The native side cannot time out an NCCL initialisation that waits on a peer (it runs inside
    // NCCL on the communicator's thread): the deadline is kept here, and abort() marks it failed.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new NcclError(
              `the initialisation did not complete within ${timeoutMs} ms: not every rank joined NCCL (a rank ` +
                'that failed or hangs, or a firewall between the hosts)',
              'ncclTimeout',
              'Communicator.init',
            ),
          ),
        Math.max(1, deadline - Date.now()),
      );
    });
    created.ready.catch(ignore);
    try {
      await Promise.race([created.ready, late]);
    } catch (e) {
      native.ncclCommClose(created.comm, false).catch(ignore);
      const err = asNcclError(e);
      if (err instanceof NcclError) err.message = `${label}: ${err.message}`;
      throw err;
    } finally {
      clearTimeout(timer);
    }
    return new Communicator(created.comm, rank, size, device, timeoutMs, address, source);
  }

  /**
   * @internal The native handle; throws if the communicator was destroyed, or is reserved by a
   * sequence (see {@link Communicator.reserve}) other than `what`.
   */
  handle(what = 'the communicator'): CommHandle {
    const h = this.live(what);
    if (this.#busy !== null && this.#busy !== (this.#acting ?? what)) {
      throw new NcclError(
        `${what}: the communicator is busy with ${this.#busy}; await it first (a communicator runs one ` +
          'sequence of operations at a time, so that every rank makes its calls in the same order)',
        'ncclInvalidUsage',
        what,
      );
    }
    return h;
  }

  /** @internal The native handle, busy or not; throws if the communicator was destroyed. */
  live(what = 'the communicator'): CommHandle {
    if (this.#handle === null)
      throw new NcclError(`${what}: the communicator has been destroyed`, 'ncclCommDestroyed', what);
    return this.#handle;
  }

  /**
   * @internal Reserves the communicator for the sequence `what` (a training, a distributed run):
   * while it holds it, calls from outside the sequence throw, so that no rank interleaves them with
   * the sequence's own collectives in another order than the others. Sequences queue in call order:
   * the reservation is taken now when the communicator is free (so a call right after this one
   * already sees it), else when the sequences before it release theirs. Resolves to the release.
   * Calls of the sequence pass `what` to {@link Communicator.handle}, or run inside
   * {@link Communicator.as}.
   */
  reserve(what: string): Promise<() => void> {
    this.live(what);
    const take = (): (() => void) => {
      this.#busy = what;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        this.#busy = null;
        // The next sequence takes it at once: no call from outside slips in between.
        this.#waiting.shift()?.();
      };
    };
    if (this.#busy === null && this.#waiting.length === 0) return Promise.resolve(take());
    return new Promise((resolve) => this.#waiting.push(() => resolve(take())));
  }

  /** @internal Runs `call` (synchronously) as a call of the sequence `what`, which holds the reservation. */
  as<T>(what: string, call: () => T): T {
    const before = this.#acting;
    this.#acting = what;
    try {
      return call();
    } finally {
      this.#acting = before;
    }
  }

  /** @internal Runs `run` as the sequence `what` (queued as {@link Communicator.reserve} says). */
  async exclusive<T>(what: string, run: (handle: CommHandle) => Promise<T>): Promise<T> {
    const release = await this.reserve(what);
    try {
      return await run(this.handle(what));
    } finally {
      release();
    }
  }

  /** True once {@link Communicator.destroy} or {@link Communicator.abort} has been called. */
  get destroyed(): boolean {
    return this.#handle === null;
  }

  /**
   * Why the communicator can no longer be used (a dead peer, a timeout, an abort), or null while it
   * is healthy.
   */
  get failure(): NcclError | null {
    if (this.#handle === null)
      return new NcclError('the communicator has been destroyed', 'ncclCommDestroyed', 'communicator');
    const s = native.ncclCommState(this.#handle);
    return s.code ? new NcclError(s.reason ?? s.code, s.code, 'communicator') : null;
  }

  /** @internal Throws the communicator's failure, if any. */
  check(): void {
    const f = this.failure;
    if (f) throw f;
  }

  /** @internal Blocks until every queued operation is done (for synchronous callers); throws on failure. */
  waitSync(): void {
    try {
      native.ncclCommWait(this.handle());
    } catch (e) {
      throw asNcclError(e);
    }
  }

  #checkArray<D extends Dtype>(name: string, arr: DeviceArray<D>, dtype?: D): DeviceArray<D> {
    checkArray(name, arr, dtype);
    if (arr.device !== this.device) {
      throw rangeError(name, `on the communicator's device ${this.device}`, inWords(`device ${arr.device}`));
    }
    return arr;
  }

  #range(name: string, arr: DeviceArray, range: ArrayRange | undefined): [number, number] {
    if (range !== undefined && (typeof range !== 'object' || range === null)) {
      throw typeError(`${name} options`, 'an object', range);
    }
    const offset = checkInteger(`${name}.offset`, range?.offset ?? 0, 0, arr.length);
    const count = checkInteger(`${name}.count`, range?.count ?? arr.length - offset, 0, arr.length - offset);
    return [offset, count];
  }

  #op(op: unknown): number {
    const i = collectiveOps.indexOf(op as CollectiveOp);
    if (i < 0) throw rangeError('op', `one of ${collectiveOps.join(', ')}`, op);
    return i;
  }

  #rank(name: string, value: unknown): number {
    return checkInteger(name, value, 0, this.size - 1);
  }

  // Queues one operation; the promise resolves to `result` once the GPU has done it.
  #queue<T>(
    what: string,
    kind: (typeof KIND)[keyof typeof KIND],
    send: DeviceArray | null,
    sendOffset: number,
    recv: DeviceArray | null,
    recvOffset: number,
    count: number,
    op: number,
    peer: number,
    result: T,
    peer2 = peer,
  ): Promise<T> {
    const h = this.handle(what);
    // Nothing to move: every rank with the same (zero) length skips it alike.
    if (count === 0) return Promise.resolve(result);
    let p: Promise<void>;
    try {
      p = native.ncclCollective(
        h,
        kind,
        send ? send.handle('send') : null,
        sendOffset,
        recv ? recv.handle('recv') : null,
        recvOffset,
        count,
        op,
        peer,
        peer2,
      );
    } catch (e) {
      throw asNcclError(e);
    }
    // The arrays stay referenced until the operation is done (the closure holds them), and so does
    // this communicator.
    const keep: (DeviceArray | null)[] = [send, recv];
    const done = p.then(
      () => {
        this.#pending.delete(done);
        keep.length = 0;
        return result;
      },
      (e: unknown) => {
        this.#pending.delete(done);
        throw asNcclError(e);
      },
    );
    this.#pending.add(done);
    // Awaiting is optional: a failure nobody awaited must not end the process as an unhandled
    // rejection. It is not lost: the communicator has failed, so the next call throws it, and
    // synchronize() and barrier() reject with it.
    done.catch(ignore);
    return done;
  }

  /**
   * Reduces `arr` element-wise over the ranks with `op` into `options.out` (same dtype and length,
   * this device; default `arr` itself, in place). `avg` is the sum divided by the size (integer
   * division, truncating, for int32 and uint32); integer sums and products wrap around. Resolves to
   * the output array.
   */
  allReduce<D extends Dtype>(
    arr: DeviceArray<D>,
    op: CollectiveOp = 'sum',
    options: { out?: DeviceArray<D> } = {},
  ): Promise<DeviceArray<D>> {
    this.#checkArray('arr', arr);
    const code = this.#op(op);
    const out = options.out === undefined ? arr : this.#checkArray('options.out', options.out, arr.dtype);
    if (out.length !== arr.length) throw rangeError('options.out', `${arr.length} elements long`, elements(out.length));
    return this.#queue('allReduce', KIND.allReduce, arr, 0, out, 0, arr.length, code, 0, out);
  }

  /**
   * Copies `arr` (or `count` elements from `offset`) from rank `root` to every other rank, in place.
   * Resolves to `arr`.
   */
  broadcast<D extends Dtype>(arr: DeviceArray<D>, root = 0, range?: ArrayRange): Promise<DeviceArray<D>> {
    this.#checkArray('arr', arr);
    const r = this.#rank('root', root);
    const [offset, count] = this.#range('range', arr, range);
    return this.#queue('broadcast', KIND.broadcast, arr, offset, arr, offset, count, 0, r, arr);
  }

  /**
   * Concatenates every rank's `arr` in rank order into a new array of size × length elements (or
   * `options.out`, which must be that long). Resolves to the output array.
   */
  allGather<D extends Dtype>(arr: DeviceArray<D>, options: { out?: DeviceArray<D> } = {}): Promise<DeviceArray<D>> {
    this.#checkArray('arr', arr);
    const total = arr.length * this.size;
    return this.#intoSeparateOutput(arr, options.out, total, `size × ${arr.length} = ${total}`, (out) =>
      this.#queue('allGather', KIND.allGather, arr, 0, out, 0, arr.length, 0, 0, out),
    );
  }

  /**
   * Reduces `arr` (size × m elements) over the ranks with `op` and leaves block `rank` of the result
   * (m elements) on each rank, in a new array (or `options.out`). Resolves to the output array.
   */
  reduceScatter<D extends Dtype>(
    arr: DeviceArray<D>,
    op: CollectiveOp = 'sum',
    options: { out?: DeviceArray<D> } = {},
  ): Promise<DeviceArray<D>> {
    this.#checkArray('arr', arr);
    const code = this.#op(op);
    if (arr.length % this.size !== 0) {
      throw rangeError('arr', `a multiple of the size (${this.size}) long`, elements(arr.length));
    }
    const m = arr.length / this.size;
    return this.#intoSeparateOutput(arr, options.out, m, `length / size = ${m}`, (out) =>
      this.#queue('reduceScatter', KIND.reduceScatter, arr, 0, out, 0, m, code, 0, out),
    );
  }

  /**
   * Runs `queue` into `out` (checked: `arr`'s dtype, this device, `length` elements, not `arr`
   * itself), or into a new array of `length` elements that is freed again if queueing throws.
   */
  #intoSeparateOutput<D extends Dtype, R>(
    arr: DeviceArray<D>,
    out: DeviceArray<D> | undefined,
    length: number,
    lengthSaid: string,
    queue: (out: DeviceArray<D>) => R,
  ): R {
    if (out !== undefined) {
      this.#checkArray('options.out', out, arr.dtype);
      if (out.length !== length) throw rangeError('options.out', `${lengthSaid} elements long`, elements(out.length));
      if (out === arr) throw new RangeError('options.out must not be arr');
      return queue(out);
    }
    const owned = empty(arr.dtype, length, { device: this.device });
    try {
      return queue(owned);
    } catch (e) {
      owned.free();
      throw e;
    }
  }

  /** Sends `arr` (or a range of it) to rank `peer`, which must `recv` as many elements of the same dtype. */
  send<D extends Dtype>(arr: DeviceArray<D>, peer: number, range?: ArrayRange): Promise<void> {
    this.#checkArray('arr', arr);
    const p = this.#rank('peer', peer);
    if (p === this.rank) throw rangeError('peer', 'another rank', peer);
    const [offset, count] = this.#range('range', arr, range);
    return this.#queue('send', KIND.send, arr, offset, null, 0, count, 0, p, undefined);
  }

  /** Receives into `arr` (or a range of it) what rank `peer` sends. Resolves to `arr`. */
  recv<D extends Dtype>(arr: DeviceArray<D>, peer: number, range?: ArrayRange): Promise<DeviceArray<D>> {
    this.#checkArray('arr', arr);
    const p = this.#rank('peer', peer);
    if (p === this.rank) throw rangeError('peer', 'another rank', peer);
    const [offset, count] = this.#range('range', arr, range);
    return this.#queue('recv', KIND.recv, null, 0, arr, offset, count, 0, p, arr);
  }

  /**
   * Sends `sendArr` to rank `dest` and receives into `recvArr` from rank `source` at once (one NCCL
   * group, so a ring where every rank sends to the next and receives from the previous cannot
   * deadlock, as separate `send` and `recv` calls would). Both arrays have the same dtype and the
   * ranges the same count. Resolves to `recvArr`.
   */
  sendRecv<D extends Dtype>(
    sendArr: DeviceArray<D>,
    dest: number,
    recvArr: DeviceArray<D>,
    source: number,
    ranges: { send?: ArrayRange; recv?: ArrayRange } = {},
  ): Promise<DeviceArray<D>> {
    this.#checkArray('sendArr', sendArr);
    this.#checkArray('recvArr', recvArr, sendArr.dtype);
    const d = this.#rank('dest', dest);
    const s = this.#rank('source', source);
    if (d === this.rank) throw rangeError('dest', 'another rank', dest);
    if (s === this.rank) throw rangeError('source', 'another rank', source);
    const [sendOffset, count] = this.#range('ranges.send', sendArr, ranges.send);
    const [recvOffset, recvCount] = this.#range('ranges.recv', recvArr, ranges.recv ?? { count });
    if (recvCount !== count) throw rangeError('ranges.recv.count', `the send count ${count}`, recvCount);
    return this.#queue('sendRecv', KIND.sendRecv, sendArr, sendOffset, recvArr, recvOffset, count, 0, d, recvArr, s);
  }

  /** Resolves when every rank has reached its barrier (an all-reduce of one element). */
  async barrier(): Promise<void> {
    // A closed communicator refuses before the array is made: nothing would ever free it but the GC.
    this.handle('barrier');
    this.#scratch ??= empty('int32', 1, { device: this.device });
    await this.allReduce(this.#scratch, 'max');
  }

  /**
   * Resolves when every operation queued so far is done; rejects with the communicator's failure if
   * it failed.
   */
  async synchronize(): Promise<void> {
    await Promise.allSettled([...this.#pending]);
    this.check();
  }

  /**
   * Releases the communicator in step with the other ranks, without blocking: its thread waits for
   * the queued operations, then finalizes and destroys it (ncclCommFinalize, ncclCommDestroy), all
   * within `timeoutMs`, and aborts it instead when that fails or the time is up. Returns at once;
   * the process stays alive until that is done (at most `timeoutMs` and a few seconds). Idempotent;
   * every later call throws.
   */
  destroy(): void {
    if (this.#handle === null) return;
    const h = this.#handle;
    this.#handle = null;
    const closed = native.ncclCommClose(h, true);
    keepAliveUntil(closed, this.timeoutMs + CLOSE_GRACE_MS);
    this.#freeScratchOnceClosed(closed);
  }

  /**
   * Aborts the communicator now: pending operations reject with `ncclAborted`, and its thread calls
   * ncclCommAbort, which makes NCCL's kernels return. For giving up on a job whose peers are gone.
   * Returns at once (it never waits behind an operation in progress). Idempotent.
   */
  abort(): void {
    if (this.#handle === null) return;
    const h = this.#handle;
    this.#handle = null;
    const closed = native.ncclCommClose(h, false);
    keepAliveUntil(closed, CLOSE_GRACE_MS);
    this.#freeScratchOnceClosed(closed);
  }

  // barrier()'s array goes once the communicator's thread has finished (`closed`): then none of this
  // communicator's collectives can still be deferred, and no other communicator ever uses the array,
  // so it is freed without waiting for collectives deferred on the device (another communicator's,
  // behind a late peer). A free() now, or a plain free() then, would wait for them in this thread.
  // Never throws (a CUDA error there has nobody to tell).
  #freeScratchOnceClosed(closed: Promise<void>): void {
    const scratch = this.#scratch;
    this.#scratch = null;
    if (scratch) closed.then(() => native.free(scratch.handle('barrier array'), true)).catch(ignore);
  }

  /** Destroys the communicator at the end of a `using` block. */
  [Symbol.dispose](): void {
    this.destroy();
  }

  toString(): string {
    return `Communicator rank ${this.rank} of ${this.size} on device ${this.device}${this.destroyed ? ' (destroyed)' : ''}`;
  }
}
