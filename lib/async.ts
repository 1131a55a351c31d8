// What the Promise forms of the calls that wait for the GPU share (stencilAsync, apspAsync, reduceAsync,
// Mlp.trainAsync, timedAsync, …): their options, the AbortError they reject with, and the native
// pieces they are built from (native/core/async_work.h: the waiting happens on libuv pool threads).
import type { DeviceArray } from './array';
import { checkDevice } from './device';
import { typeError } from './errors';
import { native } from './native';

/** Options every Promise form takes. */
export interface AsyncOptions {
  /**
   * Aborts the call. An already-aborted signal rejects the call before it queues any GPU work; an
   * abort later takes effect at the call's next step (a chunk of sweeps, a round, an epoch) and
   * rejects with an {@link AbortError} once the work in flight has finished with the arrays, so
   * they are usable again when the promise settles. See docs/async.md.
   */
  signal?: AbortSignal;
}

/** How far a long call has come: `done` of `total` steps (sweeps, rounds or epochs). */
export interface Progress {
  /** Steps completed on the GPU so far; never decreases. */
  readonly done: number;
  /** Steps the call makes at most (a stencil that converges stops short of it). */
  readonly total: number;
}

/** Options of the Promise forms of long calls: {@link AsyncOptions} and a progress callback. */
export interface ProgressOptions extends AsyncOptions {
  /**
   * Called on the JS thread after each step with the steps done and the total, in order, all before
   * the promise settles. If it throws, the call stops at that step and rejects with what it threw.
   */
  onProgress?: (progress: Progress) => void;
}

/**
 * What an aborted Promise form rejects with: an `Error` with `name` `'AbortError'` and `code`
 * `'ABORT_ERR'`, like the AbortError of Node's own promise APIs (`fs/promises`, `timers/promises`,
 * `events.once`); `cause` is the signal's `reason`. Test for it with `err.name === 'AbortError'`,
 * which also matches the DOMException that `fetch` rejects with.
 */
export class AbortError extends Error {
  /** Always `'ABORT_ERR'`, as in Node's AbortError. */
  readonly code = 'ABORT_ERR';

  constructor(message = 'The operation was aborted', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AbortError';
  }
}

/** @internal The checked options of a Promise form. */
export interface ResolvedAsync {
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
}

/**
 * @internal Checks `options.signal` (anything shaped like an AbortSignal, as Node's own APIs accept)
 * and, when `withProgress`, `options.onProgress`.
 */
export function resolveAsync(options: unknown, withProgress: boolean): ResolvedAsync {
  if (typeof options !== 'object' || options === null) throw typeError('options', 'an object', options);
  const { signal, onProgress } = options as { signal?: unknown; onProgress?: unknown };
  if (signal !== undefined) {
    const s = signal as { aborted?: unknown; addEventListener?: unknown };
    if (
      typeof signal !== 'object' ||
      signal === null ||
      typeof s.aborted !== 'boolean' ||
      typeof s.addEventListener !== 'function'
    )
      throw typeError('options.signal', 'an AbortSignal', signal);
  }
  if (withProgress && onProgress !== undefined && typeof onProgress !== 'function')
    throw typeError('options.onProgress', 'a function', onProgress);
  return {
    signal: signal as AbortSignal | undefined,
    onProgress: withProgress ? (onProgress as ((p: Progress) => void) | undefined) : undefined,
  };
}

/** @internal The AbortError of call `what`, with the signal's reason as its cause. */
export function abortError(signal: AbortSignal | undefined, what: string): AbortError {
  return new AbortError(`${what} was aborted`, { cause: signal?.reason });
}

/** @internal Throws the AbortError of `what` if `signal` has been aborted. */
export function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw abortError(signal, what);
}

/** @internal Whether a native promise was rejected because its cancel token was set. */
export function isCancelled(e: unknown): boolean {
  // Not `instanceof Error`: the native layer's errors may come from another realm (a vm context).
  return (
    typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'ABORT_ERR' && !(e instanceof AbortError)
  );
}

/**
 * @internal Locks the arrays of a call made of several asynchronous steps (asyncHold): a `free()` of
 * any of them takes effect when the returned function is called, and the written ones (given with the
 * names errors use for them) are refused as outputs of other calls until then.
 */
export function holdArrays(owner: string, read: DeviceArray[], written: [string, DeviceArray][]): () => void {
  const hold = native.asyncHold(
    owner,
    read.map((a) => a.handle()),
    written.map(([name, a]) => a.handle(name)),
    written.map(([name]) => name),
  );
  return () => native.asyncRelease(hold);
}

/**
 * @internal `promise`, or a rejection with the AbortError of `what` as soon as `signal` aborts: for
 * the calls that only wait (their work goes on, and nothing they hold is left locked).
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined, what: string): Promise<T> {
  if (signal === undefined) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal, what));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/**
 * Resolves once all the work the library has queued on `device` before the call has finished,
 * waiting on a libuv pool thread instead of blocking the JS thread like {@link synchronize}. Every
 * call of this library queues its work on the device's library stream (multi-stream methods join
 * their streams back into it), so this covers them all; unlike {@link synchronize}, which waits for
 * the whole device, it does not wait for CUDA work other code in the process queued on its own streams.
 *
 * Rejects (never throws) with a TypeError/RangeError for a bad `device`, a {@link CudaError} from
 * CUDA, and an {@link AbortError} as soon as `options.signal` aborts (the GPU work itself goes on).
 *
 * @example
 * ```ts
 * stencilAsync(g, rows, cols).catch(() => {});
 * await synchronizeAsync(0, { signal: AbortSignal.timeout(10_000) });
 * ```
 */
export async function synchronizeAsync(device = 0, options: AsyncOptions = {}): Promise<void> {
  const d = checkDevice(device);
  const { signal } = resolveAsync(options, false);
  throwIfAborted(signal, 'synchronizeAsync');
  await abortable(native.streamWaitAsync(d), signal, 'synchronizeAsync');
}
