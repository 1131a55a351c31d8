// CompileError: what NVRTC said, pointed at the user's own line. NVRTC's log names a file and a line
// (`saxpy.cu(3): error: …`), then prints that line and a caret under the column; the generated kernels
// of elementwise() and reduction() mark the user's strings with #line directives, so their errors name
// the user's string (`saxpy:body(1)`), not the code around it.

/** One diagnostic of NVRTC's log. */
export interface Diagnostic {
  file: string;
  line: number;
  /** 1-based, from the caret NVRTC prints; undefined when it printed none. */
  column?: number;
  severity: 'error' | 'warning' | 'remark';
  message: string;
  /** The line as NVRTC printed it (without its indent), when it did. */
  printed?: string;
}

/**
 * A CUDA C++ source that NVRTC could not compile, or NVRTC missing. The message is the first error
 * with its file, line and column, the offending line of the user's source and a caret; `log` is
 * NVRTC's whole log.
 */
export class CompileError extends Error {
  /**
   * `nvrtcLibraryNotFound` (and other loading failures) when NVRTC could not be loaded; otherwise the
   * NVRTC result (`NVRTC_ERROR_COMPILATION`, `NVRTC_ERROR_INVALID_OPTION`, …).
   */
  readonly code: string;
  /** NVRTC's whole log (empty when NVRTC is missing). */
  readonly log: string;
  /** The file, line and column of the first error, when the log gave them. */
  readonly file?: string;
  readonly line?: number;
  readonly column?: number;
  /** Every error and warning of the log, in order. */
  readonly diagnostics: readonly Diagnostic[];

  constructor(
    message: string,
    details: { code: string; log?: string; diagnostics?: readonly Diagnostic[]; first?: Diagnostic } = {
      code: 'NVRTC_ERROR_COMPILATION',
    },
  ) {
    super(message);
    this.name = 'CompileError';
    this.code = details.code;
    this.log = details.log ?? '';
    this.diagnostics = details.diagnostics ?? [];
    if (details.first) {
      this.file = details.first.file;
      this.line = details.first.line;
      this.column = details.first.column;
    }
  }
}

const HEADLINE =
  /^(.+?)\((\d+)(?:[,:]\s*(\d+))?\): (catastrophic error|fatal error|error|warning|remark)(?: #[\w-]+)?: (.*)$/;

/**
 * The diagnostics of an NVRTC log, each with the line and caret that follow it, each once: code that
 * appears several times in a program (an element-wise body is placed in each of the generated loops)
 * draws the same diagnostic from each copy.
 */
export function parseLog(log: string): Diagnostic[] {
  const lines = log.split(/\r?\n/);
  const out: Diagnostic[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const m = HEADLINE.exec(lines[i]);
    if (!m) continue;
    const severity = m[4].endsWith('error') ? 'error' : (m[4] as 'warning' | 'remark');
    const d: Diagnostic = { file: m[1], line: Number(m[2]), severity, message: m[5] };
    if (m[3] !== undefined) d.column = Number(m[3]);
    // NVRTC prints the line indented by two spaces, then a caret line under the column.
    const printed = lines[i + 1];
    const caret = lines[i + 2];
    if (printed !== undefined && printed.startsWith('  ') && !HEADLINE.test(printed)) {
      d.printed = printed.slice(2);
      if (caret !== undefined && /^\s*\^\s*$/.test(caret) && d.column === undefined) {
        d.column = caret.indexOf('^') - 2 + 1;
      }
    }
    const key = JSON.stringify([d.file, d.line, d.column ?? null, d.severity, d.message]);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(d);
  }
  return out;
}

/**
 * The column of `d` in `actual`, the real text of its line: NVRTC's caret counts in the line as it
 * printed it, which is the real line unless it expanded tabs or trimmed it.
 */
function columnIn(d: Diagnostic, actual: string | undefined): number | undefined {
  if (d.column === undefined || d.printed === undefined || actual === undefined) return d.column;
  if (actual.trimEnd() === d.printed.trimEnd()) return d.column;
  const printedLead = d.printed.length - d.printed.trimStart().length;
  const at = actual.indexOf(d.printed.trim());
  if (at < 0) return d.column;
  return Math.max(1, at + (d.column - 1 - printedLead) + 1);
}

/**
 * The CompileError of a failed compilation: its message is the first error, `file:line:column:`, the
 * offending line (from `sources`, the texts NVRTC saw by file name, else as NVRTC printed it) and a
 * caret; then how many more errors the log holds.
 */
export function compileErrorFromLog(
  log: string,
  code: string,
  sources: ReadonlyMap<string, string>,
  fallbackMessage: string,
): CompileError {
  const diagnostics = parseLog(log);
  const errors = diagnostics.filter((d) => d.severity === 'error');
  const first = errors[0];
  if (first === undefined) {
    // No located error: an invalid option, NVRTC's builtins missing, an internal failure.
    const text = log
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l.length > 0);
    const line = text.find((l) => /error/i.test(l)) ?? text[0];
    return new CompileError(line ? `${fallbackMessage}: ${line}` : fallbackMessage, { code, log, diagnostics });
  }
  const source = sources.get(first.file);
  const actual = source?.split(/\r?\n/)[first.line - 1] ?? first.printed;
  const column = columnIn(first, actual);
  const located: Diagnostic = { ...first, column };
  let message = `${first.file}:${first.line}${column !== undefined ? `:${column}` : ''}: error: ${first.message}`;
  if (actual !== undefined) {
    const gutter = String(first.line);
    message += `\n ${gutter} | ${actual}`;
    if (column !== undefined) message += `\n ${' '.repeat(gutter.length)} | ${caretUnder(actual, column)}`;
  }
  if (errors.length > 1) message += `\n(${errors.length - 1} more error${errors.length > 2 ? 's' : ''} in .log)`;
  return new CompileError(message, { code, log, diagnostics, first: located });
}

/** Spaces (tabs kept, so the caret lines up) up to column `column`, then a caret. */
function caretUnder(line: string, column: number): string {
  let pad = '';
  for (let i = 0; i < column - 1; i++) pad += line[i] === '\t' ? '\t' : ' ';
  return pad + '^';
}
