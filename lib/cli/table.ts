// Boxed text tables for the CLI. A few lines instead of cli-table3: that package and its colour
// dependency would put the install over its budget of 10 packages (check-package.sh).
// string-width gives cells their display width (wide characters, emoji); the progress bar uses it too.
import stringWidth from 'string-width';

/** A table with a header row; `push` rows of cells, then `toString()`. */
export interface TextTable {
  push(...rows: string[][]): number;
  toString(): string;
}

/**
 * A table drawn with box characters. The header is bold where stdout is a terminal, plain in logs
 * and CI.
 */
export function makeTable(head: string[]): TextTable {
  const rows: string[][] = [];
  const bold = process.stdout.isTTY ? (s: string) => `\u001b[1m${s}\u001b[22m` : (s: string) => s;
  return {
    push: (...more: string[][]) => rows.push(...more.map((r) => r.map(String))),
    toString() {
      const all = [head, ...rows];
      const columns = Math.max(...all.map((r) => r.length));
      const widths = Array.from({ length: columns }, (_, c) => Math.max(0, ...all.map((r) => stringWidth(r[c] ?? ''))));
      const line = (l: string, m: string, r: string) => l + widths.map((w) => '─'.repeat(w + 2)).join(m) + r;
      const row = (cells: string[], style = (s: string) => s) =>
        '│' +
        widths.map((w, c) => ` ${style(cells[c] ?? '')}${' '.repeat(w - stringWidth(cells[c] ?? ''))} `).join('│') +
        '│';
      const body = rows.map((r) => row(r));
      return [line('┌', '┬', '┐'), row(head, bold), line('├', '┼', '┤'), ...body, line('└', '┴', '┘')].join('\n');
    },
  };
}
