// The bench progress bar on a terminal: one row redrawn in place, never wider than the terminal
// (a wrapped row could not be redrawn with \r). The plain-line form is in bench-report.test.ts.
import { createProgress } from '../lib/cli/progress';

function terminal(columns: number) {
  const writes: string[] = [];
  const stream = { isTTY: true, columns, write: (s: string) => writes.push(s) } as unknown as NodeJS.WriteStream;
  return { stream, writes };
}

/** The rows as a terminal shows them: each write starts with \r and an erase of the row. */
const ERASE = '\r\u001b[2K';
const rows = (writes: string[]) => writes.filter((w) => w.startsWith(ERASE)).map((w) => w.slice(ERASE.length));

describe('progress bar on a terminal', () => {
  test('counts the steps, with elapsed time and ETA, and ends on its own line', () => {
    const { stream, writes } = terminal(200);
    let t = 0;
    const p = createProgress(4, stream, () => t);
    p.step('copy 64MiB');
    t = 10_000;
    p.step('ata 2000x2000');
    p.grow(1);
    t = 20_000;
    p.step('gemm 512');
    p.stop();
    const shown = rows(writes);
    expect(shown[0]).toBe(`${'░'.repeat(24)} 0/4 steps | 0 s elapsed, ETA ? | starting`);
    expect(shown[2]).toBe(`${'█'.repeat(6)}${'░'.repeat(18)} 1/4 steps | 10 s elapsed, ETA 30 s | ata 2000x2000`);
    expect(shown[3]).toMatch(/ 2\/5 steps \| 20 s elapsed, ETA 30 s \| gemm 512$/);
    expect(shown[4]).toBe(`${'█'.repeat(24)} 5/5 steps | 20 s elapsed, ETA 0 s | done`);
    expect(writes[writes.length - 1]).toBe('\n');
  });

  test('a row never wraps: cut to the terminal width', () => {
    const { stream, writes } = terminal(40);
    const p = createProgress(2, stream, () => 0);
    p.step('a very long item name '.repeat(10));
    for (const row of rows(writes)) expect(row.length).toBeLessThanOrEqual(39);
  });
});
