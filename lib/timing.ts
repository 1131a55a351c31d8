import type { TimerHandle } from '../binding';
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
