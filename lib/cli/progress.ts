// The bench command's progress over its planned steps: a cli-progress bar with the current item
// and an ETA on a terminal, one plain line per step elsewhere (logs, CI, a GPU host's bench.log).
import { SingleBar } from 'cli-progress';

/** Progress over a known number of steps; `total` may grow where a family has no plan. */
export interface Progress {
  /** A step starts (the previous one is done). */
  step(item: string): void;
  /** Adds steps discovered while running. */
  grow(steps: number): void;
  stop(): void;
}

function seconds(s: number): string {
  if (!Number.isFinite(s)) return '?';
  if (s < 60) return `${Math.round(s)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${Math.round(s % 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** Steps done so far, the total and the elapsed seconds -> seconds left, assuming steps alike. */
export function eta(done: number, total: number, elapsedS: number): number {
  return done > 0 ? (elapsedS / done) * Math.max(0, total - done) : NaN;
}

/**
 * A progress display on `stream`: a bar where it is a terminal, plain lines
 * (`[3/25 12%] ata … 4000x4000 — 14 s elapsed, ETA 1 min 40 s`) where it is not.
 */
export function createProgress(
  total: number,
  stream: NodeJS.WriteStream = process.stderr,
  now: () => number = Date.now,
): Progress {
  const started = now();
  let done = -1;
  if (stream.isTTY) {
    const bar = new SingleBar({
      stream,
      format: '{bar} {value}/{total} steps | {elapsed} elapsed, ETA {left} | {item}',
      barCompleteChar: '\u2588',
      barIncompleteChar: '\u2591',
      barsize: 24,
      hideCursor: true,
      // The work is synchronous and blocks the event loop: redraw on every update, not on a timer.
      synchronousUpdate: true,
      clearOnComplete: false,
      stopOnComplete: false,
    });
    const times = () => {
      const elapsed = (now() - started) / 1e3;
      return { elapsed: seconds(elapsed), left: done > 0 ? seconds(eta(done, total, elapsed)) : '?' };
    };
    bar.start(total, 0, { item: 'starting', ...times() });
    return {
      step(item) {
        done++;
        bar.update(Math.max(done, 0), { item, ...times() });
        bar.render();
      },
      grow(steps) {
        total += steps;
        bar.setTotal(total);
      },
      stop() {
        done = total;
        bar.update(total, { item: 'done', ...times() });
        bar.stop();
      },
    };
  }
  return {
    step(item) {
      done++;
      const elapsed = (now() - started) / 1e3;
      const pct = total > 0 ? Math.floor((100 * Math.max(done, 0)) / total) : 0;
      const left = done > 0 ? `, ETA ${seconds(eta(done, total, elapsed))}` : '';
      stream.write(`[${done + 1}/${total} ${pct}%] ${item} (${seconds(elapsed)} elapsed${left})\n`);
    },
    grow(steps) {
      total += steps;
    },
    stop() {
      stream.write(`${total} steps in ${seconds((now() - started) / 1e3)}\n`);
    },
  };
}
