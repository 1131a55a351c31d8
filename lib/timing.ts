import type { TimerHandle } from '../binding';
import { abortable, type AsyncOptions, resolveAsync, throwIfAborted } from './async';
import { checkDevice } from './device';
import { typeError } from './errors';
import { native } from './native';

/**
 * A pair of CUDA events on the library's stream for one device: GPU time between `start()` and
 * `stop()`, unaffected by host-side delays.
 *
 * @example
 * ```ts
 * const t = new EventTimer();
 * t.start(); const c = atA(a, n, n); t.stop();
 * console.log(t.elapsedMs());
 * t.free(); // or `using t = new EventTimer()`
 * ```
 */
export class EventTimer {
  readonly device: number;
  #handle: TimerHandle;
  #freed = false;

  constructor(device = 0) {
    this.device = checkDevice(device);
    this.#handle = native.timerCreate(this.device);
  }

  /** True once {@link EventTimer.free} has been called. */
  get freed(): boolean {
    return this.#freed;
  }

  /**
   * Destroys the two CUDA events now (a finalizer does it for timers that are never freed, but
   * only when the garbage collector runs). Idempotent; any other use afterwards throws a TypeError.
   */
  free(): void {
    this.#freed = true;
    native.timerFree(this.#handle);
  }

  /** Frees the timer at the end of a `using` block. */
  [Symbol.dispose](): void {
    this.free();
  }

  /** Records the start event after all work queued so far. */
  start(): this {
    native.timerRecord(this.#handle, 0);
    return this;
  }

  /** Records the stop event after all work queued so far. */
  stop(): this {
    native.timerRecord(this.#handle, 1);
    return this;
  }

  /** Milliseconds of GPU time between start and stop; waits for the stop event. */
  elapsedMs(): number {
    return native.timerElapsed(this.#handle);
  }
}

/** Result of {@link timed}. */
export interface Timed<T> {
  /** GPU milliseconds between the events around `fn`. */
  ms: number;
  /** What `fn` returned. */
  result: T;
}

/**
 * Runs `fn` (which queues GPU work) between two CUDA events and returns the GPU milliseconds it
 * took with `fn`'s result. `fn` must be synchronous; its GPU work may still be running when it
 * returns: `timed` waits for it.
 */
export function timed<T>(fn: () => T, options: { device?: number } = {}): Timed<T> {
  if (typeof fn !== 'function') throw typeError('fn', 'a function', fn);
  using timer = new EventTimer(options.device ?? 0);
  timer.start();
  const result = fn();
  if (result !== null && typeof (result as { then?: unknown })?.then === 'function') {
    throw new TypeError('fn must be synchronous: timed() measures the GPU work it queues, not a Promise');
  }
  timer.stop();
  return { ms: timer.elapsedMs(), result };
}

/** Options of {@link timedAsync}. */
export interface TimedAsyncOptions extends AsyncOptions {
  /** Device whose library stream the events go on (default 0). */
  device?: number;
}

/**
 * {@link timed} for code that awaits: records a CUDA event, runs `fn` (which may return a Promise,
 * e.g. of {@link stencilAsync}), records a second event once it has settled, and resolves with the
 * GPU milliseconds between the two and `fn`'s result, waiting for the second event on a libuv pool
 * thread. The events bracket everything queued on the device's library stream meanwhile — the GPU
 * time of the work `fn` awaited, plus any idle gaps while JS ran between its steps.
 *
 * Rejects (never throws): TypeError/RangeError for bad arguments, what `fn` threw or rejected with,
 * a {@link CudaError}, or an {@link AbortError}: an already-aborted `options.signal` rejects before
 * `fn` runs; an abort while waiting for the second event rejects at once (`fn` itself is not
 * interrupted: give it the same signal for that).
 *
 * @example
 * ```ts
 * const { ms, result } = await timedAsync(() => stencilAsync(g, rows, cols, { signal }), { signal });
 * ```
 */
export async function timedAsync<T>(
  fn: () => T | PromiseLike<T>,
  options: TimedAsyncOptions = {},
): Promise<Timed<Awaited<T>>> {
  if (typeof fn !== 'function') throw typeError('fn', 'a function', fn);
  const { signal } = resolveAsync(options, false);
  const device = checkDevice(options.device ?? 0, 'options.device');
  throwIfAborted(signal, 'timedAsync');
  using timer = new EventTimer(device);
  timer.start();
  const result = await fn();
  timer.stop();
  // The stop event is then complete: elapsedMs() returns without waiting.
  await abortable(native.streamWaitAsync(device), signal, 'timedAsync');
  return { ms: timer.elapsedMs(), result };
}
