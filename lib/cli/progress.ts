// The bench command's progress over its planned steps: a bar with the current item and an ETA,
// redrawn in place on a terminal, one plain line per step elsewhere (logs, CI, a GPU host's
// bench.log). A few lines of ours rather than a progress package, which would put the install
// over its budget of 10 packages (scripts/check-package.sh).
import stringWidth from 'string-width';

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
    const BAR = 24;
    const draw = (item: string) => {
      const elapsed = (now() - started) / 1e3;
      const shown = Math.max(done, 0);
      const filled = total > 0 ? Math.min(BAR, Math.round((BAR * shown) / total)) : 0;
      const left = done > 0 ? seconds(eta(done, total, elapsed)) : '?';
      let line = `${'\u2588'.repeat(filled)}${'\u2591'.repeat(BAR - filled)} ${shown}/${total} steps | ${seconds(elapsed)} elapsed, ETA ${left} | ${item}`;
      // One terminal row: a longer line would wrap, and \r would then redraw only its last row.
      const columns = stream.columns || 80;
      while (line.length > 0 && stringWidth(line) > columns - 1) line = line.slice(0, -1);
      stream.write(`\r\u001b[2K${line}`);
    };
    draw('starting');
    return {
      step(item) {
        done++;
        draw(item);
      },
      grow(steps) {
        total += steps;
      },
      stop() {
        done = total;
        draw('done');
        stream.write('\n');
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
