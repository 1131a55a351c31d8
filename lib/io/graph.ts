// Graph and distance-matrix files for APSP: the report's text format, DIMACS .gr and a binary matrix.
// Readers stream the file in chunks (a line at a time for the text formats), so inputs larger than
// a JS string work, and every error names the file and line.
import { constants as bufferConstants } from 'node:buffer';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { APSP_MAX_N, INF } from '../ops/apsp-spec';
import { elements, inWords, rangeError, typeError } from '../errors';

/**
 * Formats of a graph (weight-matrix) file.
 *
 * - `text`: the report's format. First line `V E`, then E lines `src dst weight` with 0-based
 *   vertices (0 ≤ src, dst < V) and integer weights in [0, INF].
 * - `dimacs`: the DIMACS shortest-path format (`.gr`): `c` comment lines, one `p sp V E` line, then
 *   E arc lines `a u v w` with 1-based vertices.
 * - `binary`: a little-endian int32 header n, then the n² int32 entries of the matrix, row-major,
 *   `INF` for no edge.
 *
 * In the edge formats a repeated edge keeps its smallest weight and a self-loop is ignored (the
 * diagonal is 0).
 */
export type GraphFormat = 'text' | 'dimacs' | 'binary';

/**
 * Formats of a distance-matrix file: `text` (n lines of n space-separated distances, `INF` where
 * unreachable) or `binary` (as for graphs).
 */
export type MatrixFormat = 'text' | 'binary';

/** An n×n row-major int32 matrix: weights (`INF` = no edge) or distances (`INF` = unreachable). */
export interface GraphMatrix {
  n: number;
  matrix: Int32Array;
}

/** A malformed graph or matrix file; `line` is 1-based (0 when the problem is not on one line). */
export class GraphFileError extends Error {
  readonly file: string;
  readonly line: number;
  constructor(file: string, line: number, message: string, options?: { cause?: unknown }) {
    super(line > 0 ? `${file}:${line}: ${message}` : `${file}: ${message}`, options);
    this.name = 'GraphFileError';
    this.file = file;
    this.line = line;
  }
}

const CHUNK = 1 << 20;

/**
 * Largest vertex count the readers and writers take: the n×n matrix must be one Int32Array, whose
 * length this Node.js caps at `buffer.constants.MAX_LENGTH` elements (2^32 on Node 20, so n ≤ 65536;
 * higher on newer versions), and no larger than what `apsp` takes ({@link APSP_MAX_N}). Whether the
 * host has the memory (16 GiB at n = 65536) is another matter: a reader that cannot allocate the
 * matrix says so.
 */
export const GRAPH_MAX_V = Math.min(APSP_MAX_N, Math.floor(Math.sqrt(bufferConstants.MAX_LENGTH)));

/** Why an errno error happened, in a few words. */
function errnoReason(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'it is a folder';
  return e instanceof Error ? e.message : String(e);
}

/**
 * Opens a file to read and returns its descriptor and size; a folder, a missing file or a file that
 * cannot be read is a GraphFileError naming the path (not a bare EISDIR from the first read).
 */
function openToRead(file: string): { fd: number; size: number } {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (e) {
    throw new GraphFileError(file, 0, `cannot read it: ${errnoReason(e)}`, { cause: e });
  }
  try {
    const st = fs.fstatSync(fd);
    if (st.isDirectory()) throw new GraphFileError(file, 0, 'cannot read it: it is a folder, not a file');
    return { fd, size: st.size };
  } catch (e) {
    fs.closeSync(fd);
    if (e instanceof GraphFileError) throw e;
    throw new GraphFileError(file, 0, `cannot read it: ${errnoReason(e)}`, { cause: e });
  }
}
const GRAPH_FORMATS: readonly GraphFormat[] = ['text', 'dimacs', 'binary'];
const MATRIX_FORMATS: readonly MatrixFormat[] = ['text', 'binary'];

/** The format a file name suggests: `.gr` DIMACS, `.bin` binary, anything else text. */
export function graphFormatOf(file: string): GraphFormat {
  const ext = path.extname(file).toLowerCase();
  if (ext === '.gr') return 'dimacs';
  if (ext === '.bin') return 'binary';
  return 'text';
}

function checkFormat<F extends string>(name: string, value: unknown, allowed: readonly F[]): F {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw rangeError(name, `one of ${allowed.join(', ')}`, value);
  }
  return value as F;
}

// What the writers take is what the readers take back: n in [1, GRAPH_MAX_V] and every entry in
// [0, INF] (INF: no edge, or unreachable).
function checkMatrix(name: string, matrix: unknown, n: unknown): number {
  if (!(matrix instanceof Int32Array)) throw typeError(name, 'an Int32Array', matrix);
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_V)
    throw rangeError('n', `an integer in [1, ${MAX_V}] (what the readers take)`, n);
  if (matrix.length !== n * n) throw rangeError(name, `n·n = ${n * n} elements long`, elements(matrix.length));
  for (let e = 0; e < matrix.length; e++) {
    const v = matrix[e];
    if (v < 0 || v > INF) {
      const i = Math.floor(e / n);
      throw rangeError(
        name,
        `entries in [0, INF = ${INF}] (what the readers take)`,
        inWords(`${v} at [${i}][${e - i * n}]`),
      );
    }
  }
  return n;
}

/** Lines of a file with their 1-based numbers, read 1 MiB at a time (`\n` or `\r\n` endings). */
function* fileLines(file: string, fd: number): Generator<[string, number]> {
  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    let carry = '';
    let lineNo = 0;
    for (;;) {
      const got = fs.readSync(fd, buf, 0, CHUNK, null);
      if (got === 0) break;
      // latin1 maps bytes to characters one to one, so a chunk boundary never splits a character;
      // every valid file is ASCII.
      const text = carry + buf.toString('latin1', 0, got);
      let start = 0;
      for (let nl = text.indexOf('\n', start); nl >= 0; nl = text.indexOf('\n', start)) {
        yield [text.slice(start, nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl), ++lineNo];
        start = nl + 1;
      }
      carry = text.slice(start);
    }
    if (carry.length > 0) yield [carry.endsWith('\r') ? carry.slice(0, -1) : carry, ++lineNo];
  } finally {
    fs.closeSync(fd);
  }
}

const INTEGER = /^[+-]?\d+$/;

function tokens(line: string): string[] {
  const t = line.trim();
  return t === '' ? [] : t.split(/\s+/);
}

function parseInt32(file: string, lineNo: number, what: string, token: string, min: number, max: number): number {
  if (!INTEGER.test(token))
    throw new GraphFileError(file, lineNo, `${what} must be an integer, got ${JSON.stringify(token)}`);
  const v = Number(token);
  if (v < min || v > max) {
    const why = what === 'weight' && v < 0 ? 'negative weight' : `${what} out of range`;
    throw new GraphFileError(file, lineNo, `${why}: ${token} (expected ${min}…${max})`);
  }
  return v;
}

function newMatrix(file: string, lineNo: number, n: number, empty = true): Int32Array {
  let m: Int32Array;
  try {
    m = new Int32Array(n * n);
  } catch {
    throw new GraphFileError(file, lineNo, `${n} vertices need a ${n}×${n} host matrix, which does not fit in memory`);
  }
  if (empty) {
    m.fill(INF);
    for (let i = 0; i < n; i++) m[i * n + i] = 0;
  }
  return m;
}

// Shared by the two edge-list formats: header (V, E) from `header`, edges from `edge`, which returns
// [src, dst, weight] 0-based or undefined for a line to skip.
function readEdgeList(
  file: string,
  header: HeaderParser,
  edge: (t: string[], lineNo: number, n: number) => [number, number, number] | undefined,
  headerName: string,
): GraphMatrix {
  let n = 0;
  let edges = 0;
  let seen = 0;
  let matrix: Int32Array | undefined;
  let lastLine = 0;
  for (const [line, lineNo] of fileLines(file, openToRead(file).fd)) {
    lastLine = lineNo;
    const t = tokens(line);
    if (matrix === undefined) {
      const h = header(t, lineNo);
      if (h === undefined) continue;
      [n, edges] = h;
      matrix = newMatrix(file, lineNo, n);
      continue;
    }
    const e = edge(t, lineNo, n);
    if (e === undefined) continue;
    if (++seen > edges) throw new GraphFileError(file, lineNo, `more edges than the ${edges} the header announced`);
    const [src, dst, w] = e;
    if (src === dst) continue;
    const at = src * n + dst;
    if (w < matrix[at]) matrix[at] = w;
  }
  if (matrix === undefined) throw new GraphFileError(file, lastLine, `no ${headerName} line: the file is empty`);
  if (seen < edges) {
    throw new GraphFileError(
      file,
      lastLine,
      `the header announced ${edges} edges but the file ends after ${seen} (at line ${lastLine})`,
    );
  }
  return { n, matrix };
}

const MAX_V = GRAPH_MAX_V;

type HeaderParser = (t: string[], lineNo: number) => [number, number] | undefined;

// The header lines of the edge formats: [V, E], or undefined for a line before it (blank, comment).
function textHeader(file: string): HeaderParser {
  return (t, lineNo) => {
    if (t.length === 0) return undefined;
    if (t.length !== 2) throw new GraphFileError(file, lineNo, `the first line must be "V E", got ${t.length} fields`);
    return [
      parseInt32(file, lineNo, 'V (vertex count)', t[0], 1, MAX_V),
      parseInt32(file, lineNo, 'E (edge count)', t[1], 0, Number.MAX_SAFE_INTEGER),
    ];
  };
}

function dimacsHeader(file: string): HeaderParser {
  return (t, lineNo) => {
    if (t.length === 0 || t[0] === 'c') return undefined;
    if (t[0] === 'a') throw new GraphFileError(file, lineNo, 'an arc line before the "p sp V E" line');
    if (t[0] !== 'p' || t.length !== 4 || t[1] !== 'sp') {
      throw new GraphFileError(file, lineNo, `expected "p sp V E", got ${JSON.stringify(t.join(' '))}`);
    }
    return [
      parseInt32(file, lineNo, 'V (vertex count)', t[2], 1, MAX_V),
      parseInt32(file, lineNo, 'E (arc count)', t[3], 0, Number.MAX_SAFE_INTEGER),
    ];
  };
}

function readTextGraph(file: string): GraphMatrix {
  return readEdgeList(
    file,
    textHeader(file),
    (t, lineNo, n) => {
      if (t.length === 0) return undefined;
      if (t.length !== 3) {
        throw new GraphFileError(
          file,
          lineNo,
          `an edge line is "src dst weight", got ${t.length} field(s) (truncated line?)`,
        );
      }
      return [
        parseInt32(file, lineNo, 'src vertex', t[0], 0, n - 1),
        parseInt32(file, lineNo, 'dst vertex', t[1], 0, n - 1),
        parseInt32(file, lineNo, 'weight', t[2], 0, INF),
      ];
    },
    '"V E"',
  );
}

function readDimacsGraph(file: string): GraphMatrix {
  return readEdgeList(
    file,
    dimacsHeader(file),
    (t, lineNo, n) => {
      if (t.length === 0 || t[0] === 'c') return undefined;
      if (t[0] === 'p') throw new GraphFileError(file, lineNo, 'a second "p" line');
      if (t[0] !== 'a') throw new GraphFileError(file, lineNo, `unknown line type ${JSON.stringify(t[0])}`);
      if (t.length !== 4) {
        throw new GraphFileError(file, lineNo, `an arc line is "a u v w", got ${t.length} field(s) (truncated line?)`);
      }
      return [
        parseInt32(file, lineNo, 'source vertex', t[1], 1, n) - 1,
        parseInt32(file, lineNo, 'target vertex', t[2], 1, n) - 1,
        parseInt32(file, lineNo, 'weight', t[3], 0, INF),
      ];
    },
    '"p sp V E"',
  );
}

// The header n of a binary matrix file, checked.
function binaryHeader(file: string, fd: number, size: number): number {
  const head = Buffer.alloc(4);
  if (size < 4 || fs.readSync(fd, head, 0, 4, 0) !== 4) {
    throw new GraphFileError(file, 0, 'too short for the 4-byte header n');
  }
  const n = head.readInt32LE(0);
  if (n < 1 || n > MAX_V) throw new GraphFileError(file, 0, `header n = ${n} is out of range (1…${MAX_V})`);
  return n;
}

function readBinaryMatrix(file: string, what: 'weight' | 'distance'): GraphMatrix {
  const { fd, size } = openToRead(file);
  try {
    const n = binaryHeader(file, fd, size);
    const expected = 4 + 4 * n * n;
    if (size !== expected) {
      throw new GraphFileError(file, 0, `n = ${n} needs ${expected} bytes (4 + 4·n²), the file has ${size}`);
    }
    const matrix = newMatrix(file, 0, n, false);
    // A view per chunk: one Uint8Array over the whole matrix would pass the typed-array length limit
    // from n = 32769 on (4·n² bytes).
    for (let off = 0; off < matrix.byteLength;) {
      const len = Math.min(CHUNK * 16, matrix.byteLength - off);
      const got = fs.readSync(fd, new Uint8Array(matrix.buffer, off, len), 0, len, 4 + off);
      if (got === 0) throw new GraphFileError(file, 0, 'ended early');
      off += got;
    }
    for (let e = 0; e < matrix.length; e++) {
      const v = matrix[e];
      if (v < 0 || v > INF) {
        const i = Math.floor(e / n);
        const why = v < 0 ? `negative ${what}` : `${what} above INF`;
        throw new GraphFileError(file, 0, `${why} ${v} at [${i}][${e - i * n}] (byte ${4 + 4 * e})`);
      }
    }
    return { n, matrix };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Reads a graph file into an n×n weight matrix (`INF` where there is no edge, 0 on the diagonal).
 * The format defaults to the one the extension suggests ({@link graphFormatOf}). Malformed input
 * throws a {@link GraphFileError} naming the line (negative weight, vertex out of range, a truncated
 * line, fewer edge lines than the header's E, ...).
 */
export function readGraph(file: string, options: { format?: GraphFormat } = {}): GraphMatrix {
  if (typeof file !== 'string') throw typeError('file', 'a path string', file);
  const format = checkFormat('options.format', options.format ?? graphFormatOf(file), GRAPH_FORMATS);
  if (format === 'text') return readTextGraph(file);
  if (format === 'dimacs') return readDimacsGraph(file);
  return readBinaryMatrix(file, 'weight');
}

/**
 * The vertex count a graph file announces (its header), without reading the rest: for a caller that
 * must refuse a graph by its size before reading it all. The header is checked as {@link readGraph}
 * checks it; the rest of the file is not.
 * @internal
 */
export function readGraphHeader(file: string, options: { format?: GraphFormat } = {}): number {
  if (typeof file !== 'string') throw typeError('file', 'a path string', file);
  const format = checkFormat('options.format', options.format ?? graphFormatOf(file), GRAPH_FORMATS);
  const { fd, size } = openToRead(file);
  if (format === 'binary') {
    try {
      return binaryHeader(file, fd, size);
    } finally {
      fs.closeSync(fd);
    }
  }
  const header = format === 'text' ? textHeader(file) : dimacsHeader(file);
  let lastLine = 0;
  for (const [line, lineNo] of fileLines(file, fd)) {
    lastLine = lineNo;
    const h = header(tokens(line), lineNo);
    if (h !== undefined) return h[0];
  }
  throw new GraphFileError(file, lastLine, `no ${format === 'text' ? '"V E"' : '"p sp V E"'} line: the file is empty`);
}

/** Appends text to a file descriptor through a buffer of about 1 MiB. */
class TextSink {
  #parts: string[] = [];
  #size = 0;
  constructor(private readonly fd: number) {}
  write(s: string): void {
    this.#parts.push(s);
    this.#size += s.length;
    if (this.#size >= CHUNK) this.flush();
  }
  flush(): void {
    if (this.#size === 0) return;
    fs.writeSync(this.fd, this.#parts.join(''), null, 'latin1');
    this.#parts = [];
    this.#size = 0;
  }
}

function withFile(file: string, body: (fd: number) => void): void {
  const fd = fs.openSync(file, 'w');
  try {
    body(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function writeBinary(file: string, matrix: Int32Array, n: number): void {
  withFile(file, (fd) => {
    const head = Buffer.alloc(4);
    head.writeInt32LE(n, 0);
    fs.writeSync(fd, head);
    // A view per chunk, as in readBinaryMatrix.
    for (let off = 0; off < matrix.byteLength; off += CHUNK * 16) {
      const len = Math.min(CHUNK * 16, matrix.byteLength - off);
      fs.writeSync(fd, new Uint8Array(matrix.buffer, matrix.byteOffset + off, len));
    }
  });
}

/**
 * Writes an n×n weight matrix as a graph file: every off-diagonal entry below `INF` becomes an edge
 * (text, DIMACS; the diagonal is not stored and reads back as 0), or the matrix as is (binary). The
 * format defaults to the one the extension suggests. It writes exactly what {@link readGraph} reads
 * back: a RangeError refuses n above the readers' limit or an entry outside [0, INF].
 */
export function writeGraph(file: string, weights: Int32Array, n: number, options: { format?: GraphFormat } = {}): void {
  if (typeof file !== 'string') throw typeError('file', 'a path string', file);
  checkMatrix('weights', weights, n);
  const format = checkFormat('options.format', options.format ?? graphFormatOf(file), GRAPH_FORMATS);
  if (format === 'binary') return writeBinary(file, weights, n);
  let edges = 0;
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) if (i !== j && weights[i * n + j] < INF) edges++;
  const base = format === 'dimacs' ? 1 : 0;
  withFile(file, (fd) => {
    const out = new TextSink(fd);
    out.write(format === 'dimacs' ? `c written by cuda-kernels\np sp ${n} ${edges}\n` : `${n} ${edges}\n`);
    const prefix = format === 'dimacs' ? 'a ' : '';
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const w = weights[i * n + j];
        if (i !== j && w < INF) out.write(`${prefix}${i + base} ${j + base} ${w}\n`);
      }
    }
    out.flush();
  });
}

/**
 * Writes an n×n distance matrix: `text` is n lines of n space-separated values with `INF` for
 * unreachable pairs (the report's output); `binary` as for graphs. The format defaults to binary for a
 * `.bin` file and text otherwise. Like {@link writeGraph}, it refuses what {@link readDistances} would:
 * n above the readers' limit or an entry outside [0, INF].
 */
export function writeDistances(
  file: string,
  dist: Int32Array,
  n: number,
  options: { format?: MatrixFormat } = {},
): void {
  if (typeof file !== 'string') throw typeError('file', 'a path string', file);
  checkMatrix('dist', dist, n);
  const format = checkFormat('options.format', options.format ?? matrixFormatOf(file), MATRIX_FORMATS);
  if (format === 'binary') return writeBinary(file, dist, n);
  withFile(file, (fd) => {
    const out = new TextSink(fd);
    const row: string[] = new Array(n);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const v = dist[i * n + j];
        row[j] = v >= INF ? 'INF' : String(v);
      }
      out.write(row.join(' ') + '\n');
    }
    out.flush();
  });
}

/** `binary` for a `.bin` file, `text` otherwise. */
export function matrixFormatOf(file: string): MatrixFormat {
  return path.extname(file).toLowerCase() === '.bin' ? 'binary' : 'text';
}

/** Reads a distance matrix written by {@link writeDistances} (or the CLI); errors name the line. */
export function readDistances(file: string, options: { format?: MatrixFormat } = {}): GraphMatrix {
  if (typeof file !== 'string') throw typeError('file', 'a path string', file);
  const format = checkFormat('options.format', options.format ?? matrixFormatOf(file), MATRIX_FORMATS);
  if (format === 'binary') return readBinaryMatrix(file, 'distance');
  const { fd, size } = openToRead(file);
  let n = 0;
  let row = 0;
  let matrix: Int32Array | undefined;
  let lastLine = 0;
  for (const [line, lineNo] of fileLines(file, fd)) {
    lastLine = lineNo;
    const t = tokens(line);
    if (t.length === 0) continue;
    if (matrix === undefined) {
      n = t.length;
      if (n > MAX_V) throw new GraphFileError(file, lineNo, `${n} columns: more than ${MAX_V}`);
      // Each of the n rows holds n values of at least one character, separated and ended by one: a
      // shorter file is refused before its n² matrix is allocated. (Small matrices are allocated
      // anyway, so that the error names the line where the file goes wrong.)
      const least = 2 * n * n - 1;
      if (n > 1024 && size < least) {
        throw new GraphFileError(
          file,
          lineNo,
          `${n} columns imply ${n} rows, at least ${least} bytes; the file has ${size} (it ends early)`,
        );
      }
      matrix = newMatrix(file, lineNo, n, false);
    }
    if (row >= n) throw new GraphFileError(file, lineNo, `more than the ${n} rows that ${n} columns imply`);
    if (t.length !== n) throw new GraphFileError(file, lineNo, `${t.length} values, expected ${n} (truncated line?)`);
    for (let j = 0; j < n; j++) {
      matrix[row * n + j] = t[j] === 'INF' ? INF : parseInt32(file, lineNo, 'distance', t[j], 0, INF);
    }
    row++;
  }
  if (matrix === undefined) throw new GraphFileError(file, lastLine, 'no rows: the file is empty');
  if (row < n) throw new GraphFileError(file, lastLine, `${row} rows, expected ${n} (the file ends early)`);
  return { n, matrix };
}
