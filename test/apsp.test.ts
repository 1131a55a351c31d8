import { constants as bufferConstants } from 'node:buffer';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import * as ck from '../lib';
import { apspCommand, CPU_MAX_N, progressReporter } from '../lib/cli/apsp';
import { GRAPH_MAX_V, readGraphHeader } from '../lib/io/graph';
import { native } from '../lib/native';
import { expectThrows } from './helpers/errors';
import { freshSeed, hostGraph, rng } from './harness/families';
import { describeGpu, describeNoGpu } from './helpers/gpu';

const { INF } = ck;
// CK_APSP_QUICK=1 (the compute-sanitizer runs) keeps the GPU cases small.
const QUICK = process.env.CK_APSP_QUICK === '1';

/** Dijkstra from every source (O(n³) with an array scan): an independent check of cpu.apsp. */
function dijkstraAll(w: Int32Array, n: number): Int32Array {
  const out = new Int32Array(n * n).fill(INF);
  for (let s = 0; s < n; s++) {
    const d = new Float64Array(n).fill(Infinity);
    const done = new Uint8Array(n);
    d[s] = 0;
    for (;;) {
      let u = -1;
      for (let v = 0; v < n; v++) if (!done[v] && d[v] < Infinity && (u < 0 || d[v] < d[u])) u = v;
      if (u < 0) break;
      done[u] = 1;
      for (let v = 0; v < n; v++) {
        const e = w[u * n + v];
        if (v !== u && e < INF && d[u] + e < d[v]) d[v] = d[u] + e;
      }
    }
    for (let v = 0; v < n; v++) out[s * n + v] = d[v] < INF ? d[v] : INF;
  }
  return out;
}

/** Checks that every sampled path follows edges of `w` and weighs exactly the distance. */
function checkPaths(w: Int32Array, dist: Int32Array, next: Int32Array, n: number, samples: number, seed: number): void {
  const r = rng(seed);
  const pairs: [number, number][] = [];
  for (let s = 0; s < samples; s++) pairs.push([Math.floor(r() * n), Math.floor(r() * n)]);
  pairs.push([0, n - 1], [n - 1, 0], [0, 0]);
  for (const [i, j] of pairs) {
    const p = ck.reconstructPath(next, i, j);
    if (dist[i * n + j] >= INF) {
      expect(p).toEqual([]);
      continue;
    }
    expect(p[0]).toBe(i);
    expect(p[p.length - 1]).toBe(j);
    let total = 0;
    for (let h = 0; h + 1 < p.length; h++) {
      const e = w[p[h] * n + p[h + 1]];
      expect(e).toBeLessThan(INF);
      total += e;
    }
    expect(total).toBe(dist[i * n + j]);
  }
}

function tmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'ck-apsp-'));
}

describe('cpu.apsp', () => {
  test('a small graph by hand, with an unreachable vertex and INF saturation', () => {
    // 0 → 1 (4), 0 → 2 (1), 2 → 1 (2), 1 → 3 (INF - 2): the path to 3 reaches INF and reads as INF.
    const n = 5;
    const w = new Int32Array(n * n).fill(INF);
    for (let i = 0; i < n; i++) w[i * n + i] = 7; // a non-zero diagonal is taken as 0
    w[0 * n + 1] = 4;
    w[0 * n + 2] = 1;
    w[2 * n + 1] = 2;
    w[1 * n + 3] = INF - 2;
    const d = ck.cpu.apsp(w, n);
    expect(Array.from(d.subarray(0, n))).toEqual([0, 3, 1, INF, INF]);
    expect(d[1 * n + 3]).toBe(INF - 2);
    expect(d[2 * n + 3]).toBe(INF); // 2 + INF − 2 = INF
    expect(d[4 * n + 4]).toBe(0);
    const { dist, next } = ck.cpu.apsp(w, n, { paths: true });
    expect(dist).toEqual(d);
    expect(ck.reconstructPath(next, 0, 1)).toEqual([0, 2, 1]);
    expect(ck.reconstructPath(next, 0, 4)).toEqual([]);
    expect(ck.reconstructPath(next, 3, 3)).toEqual([3]);
  });

  test.each([
    [40, 0.1],
    [60, 0.5],
    [25, 1],
  ])('n = %i, density %f: equals Dijkstra from every vertex, paths weigh the distance', (n, density) => {
    const seed = freshSeed();
    const w = hostGraph(n, density, seed, 20);
    const { dist, next } = ck.cpu.apsp(w, n, { paths: true });
    expect(ck.cpu.firstMismatch(dist, dijkstraAll(w, n))).toBe(-1);
    checkPaths(w, dist, next, n, 200, seed);
    expect(w[0]).toBe(0); // the input is not modified
  });

  test('zero-weight cycles: next hops never point at each other', () => {
    // 0 ⇄ 1 ⇄ 2 at weight 0, all three 5 from 3; 3 → 0 at 0. Ties between equally short paths go to the
    // one with fewer edges.
    const n = 4;
    const w = new Int32Array(n * n).fill(INF);
    for (let i = 0; i < n; i++) w[i * n + i] = 0;
    for (const [a, b] of [
      [0, 1],
      [1, 0],
      [1, 2],
      [2, 1],
      [2, 0],
      [0, 2],
    ])
      w[a * n + b] = 0;
    for (const a of [0, 1, 2]) w[a * n + 3] = 5;
    w[3 * n + 0] = 0;
    const { dist, next } = ck.cpu.apsp(w, n, { paths: true });
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) expect(ck.reconstructPath(next, i, j).length).toBeLessThanOrEqual(3);
    expect(ck.reconstructPath(next, 3, 2)).toEqual([3, 0, 2]);
    checkPaths(w, dist, next, n, 0, 1);
    const big = hostGraph(80, 0.3, freshSeed(), 1); // about half the edges weigh 0
    const r = ck.cpu.apsp(big, 80, { paths: true });
    checkPaths(big, r.dist, r.next, 80, 2000, 7);
  });

  test('rejects negative weights, weights above INF and bad shapes', () => {
    expect(() => ck.cpu.apsp(new Int32Array([0, -1, 2, 0]), 2)).toThrow(
      /weights must be weights in \[0, INF\], got.*-1 at \[0\]\[1\]/,
    );
    expect(() => ck.cpu.apsp(new Int32Array([0, INF + 1, 2, 0]), 2)).toThrow(RangeError);
    expect(() => ck.cpu.apsp(new Int32Array(5), 2)).toThrow(/weights must be n·n = 4 elements long/);
    expect(() => ck.cpu.apsp(new Float32Array(4) as never, 2)).toThrow(/weights must be an Int32Array/);
    expect(() => ck.cpu.apsp(new Int32Array(0), 0)).toThrow(/n must be an integer ≥ 1/);
  });
});

describe('reconstructPath', () => {
  test('rejects matrices that are not next-hop matrices', () => {
    expect(() => ck.reconstructPath(new Int32Array([0, 1, 0, 1]) as never, 0, 5)).toThrow(
      /j must be an integer in \[0, 1\]/,
    );
    expect(() => ck.reconstructPath(new Int32Array(3), 0, 0)).toThrow(/next must be an n×n matrix/);
    expect(() => ck.reconstructPath([0] as never, 0, 0)).toThrow(/next must be an Int32Array/);
    // 0 → 1 → 0 → …: a loop.
    expect(() => ck.reconstructPath(new Int32Array([0, 1, 1, 0, 1, 0, 0, 1, 2]), 0, 2)).toThrow(/loop/);
    expect(() => ck.reconstructPath(new Int32Array([0, 7, 0, 1]), 0, 1)).toThrow(/not a vertex/);
  });
});

describe('graph files', () => {
  const dir = tmpDir();
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text?: string) => {
    const p = path.join(dir, name);
    if (text !== undefined) fs.writeFileSync(p, text);
    return p;
  };

  test('graphFormatOf and matrixFormatOf go by the extension', () => {
    expect(ck.graphFormatOf('a/b.gr')).toBe('dimacs');
    expect(ck.graphFormatOf('x.BIN')).toBe('binary');
    expect(ck.graphFormatOf('in.txt')).toBe('text');
    expect(ck.matrixFormatOf('out.bin')).toBe('binary');
    expect(ck.matrixFormatOf('out')).toBe('text');
  });

  test.each(['text', 'dimacs', 'binary'] as const)('%s graphs round-trip', (format) => {
    const n = 37;
    const w = hostGraph(n, 0.2, freshSeed());
    const p = file(`g-${format}`);
    ck.writeGraph(p, w, n, { format });
    const back = ck.readGraph(p, { format });
    expect(back.n).toBe(n);
    expect(ck.cpu.firstMismatch(back.matrix, w)).toBe(-1);
  });

  test.each(['text', 'binary'] as const)('%s distance matrices round-trip, INF included', (format) => {
    const n = 29;
    const d = ck.cpu.apsp(hostGraph(n, 0.1, freshSeed()), n);
    expect(d.includes(INF)).toBe(true);
    const p = file(`d-${format}`);
    ck.writeDistances(p, d, n, { format });
    if (format === 'text') expect(fs.readFileSync(p, 'utf8').split('\n')[0]).toMatch(/^0( (\d+|INF)){28}$/);
    const back = ck.readDistances(p, { format });
    expect(back.n).toBe(n);
    expect(ck.cpu.firstMismatch(back.matrix, d)).toBe(-1);
  });

  test('the text format: duplicate edges keep the smaller weight, self-loops and blank lines are ignored', () => {
    const p = file('dup.txt', '3 5\n0 1 9\n0 1 4\r\n\n1 2 0\n2 2 5\n0 1 6\n');
    const { n, matrix } = ck.readGraph(p);
    expect(n).toBe(3);
    expect(Array.from(matrix)).toEqual([0, 4, INF, INF, 0, 0, INF, INF, 0]);
  });

  test('DIMACS: comments, 1-based arcs, duplicates', () => {
    const p = file('g.gr', 'c a comment\np sp 3 3\nc another\na 1 2 7\na 1 2 3\na 3 1 1\n');
    expect(Array.from(ck.readGraph(p).matrix)).toEqual([0, 3, INF, INF, 0, INF, 1, INF, 0]);
  });

  test('a file with no trailing newline and a large V reads as streaming chunks', () => {
    const n = 300;
    const lines = [`${n} ${n - 1}`];
    for (let i = 0; i + 1 < n; i++) lines.push(`${i} ${i + 1} ${i % 7}`);
    const p = file('chain.txt', lines.join('\n'));
    const { matrix } = ck.readGraph(p);
    expect(matrix[298 * n + 299]).toBe(298 % 7);
    expect(matrix[299 * n + 298]).toBe(INF);
  });

  test.each([
    ['negative weight', '3 2\n0 1 5\n1 2 -4\n', /:3: negative weight: -4/],
    ['vertex out of range', '3 2\n0 1 5\n1 3 4\n', /:3: dst vertex out of range: 3 \(expected 0…2\)/],
    [
      'truncated line',
      '3 2\n0 1 5\n1 2\n',
      /:3: an edge line is "src dst weight", got 2 field\(s\) \(truncated line\?\)/,
    ],
    [
      'E larger than the lines present',
      '3 4\n0 1 5\n1 2 4\n',
      /:3: the header announced 4 edges but the file ends after 2/,
    ],
    ['more lines than E', '3 1\n0 1 5\n1 2 4\n', /:3: more edges than the 1 the header announced/],
    ['not an integer', '3 1\n0 1 2.5\n', /:2: weight must be an integer, got "2.5"/],
    ['bad header', '3\n', /:1: the first line must be "V E"/],
    ['weight above INF', `2 1\n0 1 ${INF + 1}\n`, /:2: weight out of range/],
    ['empty file', '', /no "V E" line: the file is empty/],
  ])('text format, %s: a GraphFileError naming the line', (_what, text, message) => {
    const p = file('bad.txt', text);
    let caught: unknown;
    try {
      ck.readGraph(p);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ck.GraphFileError);
    expect((caught as Error).message).toMatch(message);
    expect((caught as Error).message.startsWith(p)).toBe(true);
  });

  test.each([
    ['negative weight', 'p sp 2 1\na 1 2 -1\n', /:2: negative weight/],
    ['vertex out of range', 'p sp 2 1\na 1 3 1\n', /:2: target vertex out of range: 3 \(expected 1…2\)/],
    ['vertex 0', 'p sp 2 1\na 0 1 1\n', /:2: source vertex out of range: 0/],
    ['truncated line', 'c x\np sp 2 1\na 1 2\n', /:3: an arc line is "a u v w", got 3/],
    [
      'E larger than the lines present',
      'p sp 2 3\na 1 2 1\n',
      /:2: the header announced 3 edges but the file ends after 1/,
    ],
    ['arc before p', 'a 1 2 1\n', /:1: an arc line before the "p sp V E" line/],
  ])('DIMACS, %s: a GraphFileError naming the line', (_what, text, message) => {
    expect(() => ck.readGraph(file('bad.gr', text))).toThrow(message);
  });

  test('binary files: size and value checks', () => {
    const p = file('bad.bin');
    const buf = Buffer.alloc(4 + 16);
    buf.writeInt32LE(2, 0);
    buf.writeInt32LE(-3, 8);
    fs.writeFileSync(p, buf);
    expect(() => ck.readGraph(p)).toThrow(/negative weight -3 at \[0\]\[1\]/);
    fs.writeFileSync(p, buf.subarray(0, 18));
    expect(() => ck.readGraph(p)).toThrow(/n = 2 needs 20 bytes \(4 \+ 4·n²\), the file has 18/);
  });

  test('text distance matrices: ragged rows name the line', () => {
    expect(() => ck.readDistances(file('d.txt', '0 1\n2\n'))).toThrow(/:2: 1 values, expected 2/);
    expect(() => ck.readDistances(file('d.txt', '0 INF\n2 0\n5 5\n'))).toThrow(/:3: more than the 2 rows/);
    expect(() => ck.readDistances(file('d.txt', '0 1 2\n2 0 1\n'))).toThrow(/2 rows, expected 3/);
  });

  test('a folder or a missing file is a GraphFileError naming the path, in every format', () => {
    const missing = path.join(dir, 'nothing-here.bin');
    for (const format of ['text', 'dimacs', 'binary'] as const) {
      expect(() => ck.readGraph(dir, { format })).toThrow(ck.GraphFileError);
      expect(() => ck.readGraph(dir, { format })).toThrow(`${dir}: cannot read it: it is a folder, not a file`);
      expect(() => ck.readGraph(missing, { format })).toThrow(`${missing}: cannot read it: no such file`);
      expect(() => readGraphHeader(dir, { format })).toThrow(/it is a folder/);
    }
    for (const format of ['text', 'binary'] as const) {
      expect(() => ck.readDistances(dir, { format })).toThrow(`${dir}: cannot read it: it is a folder, not a file`);
    }
  });

  test('the vertex limit is what an Int32Array of n² can hold here, not 46340', () => {
    expect(GRAPH_MAX_V).toBe(Math.min(ck.APSP_MAX_N, Math.floor(Math.sqrt(bufferConstants.MAX_LENGTH))));
    expect(GRAPH_MAX_V).toBeGreaterThanOrEqual(65536); // Node 20: 2^32 elements
    // n = 50000 passes the header check (the size check is what stops this file), in binary…
    const p = file('big.bin');
    const head = Buffer.alloc(4);
    head.writeInt32LE(50000, 0);
    fs.writeFileSync(p, head);
    expect(() => ck.readGraph(p)).toThrow(/n = 50000 needs 10000000004 bytes \(4 \+ 4·n²\), the file has 4/);
    expect(readGraphHeader(p)).toBe(50000);
    head.writeInt32LE(GRAPH_MAX_V + 1, 0);
    fs.writeFileSync(p, head);
    expect(() => ck.readGraph(p)).toThrow(`header n = ${GRAPH_MAX_V + 1} is out of range (1…${GRAPH_MAX_V})`);
    // … and in the text formats (only the header is read here: 50000² would be 10 GB).
    expect(readGraphHeader(file('big.txt', '50000 0\n'))).toBe(50000);
    expect(readGraphHeader(file('big.gr', 'c x\np sp 50000 3\na 1 2 x\n'))).toBe(50000);
    expect(() => ck.readGraph(file('big.txt', `${GRAPH_MAX_V + 1} 0\n`))).toThrow(/V \(vertex count\) out of range/);
  });

  test('readDistances checks the file size before allocating n² (a text first row of 50000 values)', () => {
    const p = file('wide.txt', Array(50000).fill('0').join(' ') + '\n');
    expect(() => ck.readDistances(p)).toThrow(
      /:1: 50000 columns imply 50000 rows, at least 4999999999 bytes; the file has 100000 \(it ends early\)/,
    );
    // The smallest file of n rows passes the check (one-digit values, no final newline).
    const n = 1025;
    const rows = Array.from({ length: n }, () => Array(n).fill('0').join(' '));
    const p2 = file('min.txt', rows.join('\n'));
    expect(fs.statSync(p2).size).toBe(2 * n * n - 1);
    expect(ck.readDistances(p2).n).toBe(n);
    fs.writeFileSync(p2, rows.join('\n').slice(0, -2));
    expect(() => ck.readDistances(p2)).toThrow(/at least 2101249 bytes; the file has 2101247/);
  });

  test('binary matrices over 16 MiB go in several chunks both ways', () => {
    const n = 2100; // 17.6 MB of int32
    const w = hostGraph(n, 0.01, freshSeed());
    const p = file('chunks.bin');
    ck.writeGraph(p, w, n);
    expect(fs.statSync(p).size).toBe(4 + 4 * n * n);
    const back = ck.readGraph(p);
    expect(ck.cpu.firstMismatch(back.matrix, w)).toBe(-1);
    ck.writeDistances(p, w, n);
    expect(ck.cpu.firstMismatch(ck.readDistances(p).matrix, w)).toBe(-1);
  });

  test.each(['text', 'dimacs', 'binary'] as const)(
    'writeGraph (%s) refuses what readGraph refuses: negative weights, weights above INF',
    (format) => {
      const p = file(`refused-${format}`);
      expect(() => ck.writeGraph(p, Int32Array.of(0, -1, 2, 0), 2, { format })).toThrow(
        /weights must be entries in \[0, INF = 1073741823\] \(what the readers take\), got -1 at \[0\]\[1\]/,
      );
      expect(() => ck.writeGraph(p, Int32Array.of(0, 1, INF + 1, 0), 2, { format })).toThrow(
        /got 1073741824 at \[1\]\[0\]/,
      );
      expect(() => ck.writeGraph(p, Int32Array.of(0, 1, 2, -3), 2, { format })).toThrow(/-3 at \[1\]\[1\]/);
      // What it accepts reads back (INF is no edge; text formats do not store the diagonal).
      const w = Int32Array.of(7, INF, 0, 0, 2, INF, 5, 1, 0);
      ck.writeGraph(p, w, 3, { format });
      const expected = format === 'binary' ? w : Int32Array.of(0, INF, 0, 0, 0, INF, 5, 1, 0);
      expect(Array.from(ck.readGraph(p, { format }).matrix)).toEqual(Array.from(expected));
    },
  );

  test('writeDistances refuses what readDistances refuses', () => {
    for (const format of ['text', 'binary'] as const) {
      const p = file(`refused-d-${format}`);
      expect(() => ck.writeDistances(p, Int32Array.of(0, -2, 1, 0), 2, { format })).toThrow(/dist must be entries in/);
      expect(() => ck.writeDistances(p, Int32Array.of(0, INF + 5, 1, 0), 2, { format })).toThrow(/1073741828 at/);
      expect(fs.existsSync(p)).toBe(false); // refused before the file is created
    }
  });

  test('writers check their arguments', () => {
    expect(() => ck.writeGraph(file('w.txt'), new Int32Array(3), 2)).toThrow(/weights must be n·n = 4 elements long/);
    expect(() => ck.writeGraph(file('w.txt'), new Int32Array(4), 2, { format: 'csv' as never })).toThrow(
      /options.format must be one of text, dimacs, binary/,
    );
    expect(() => ck.writeDistances(file('w.txt'), new Int32Array(4), 2, { format: 'dimacs' as never })).toThrow(
      /options.format must be one of text, binary/,
    );
  });
});

describe('apsp arguments (no GPU needed)', () => {
  test('the TS registry lists the native methods in the same order', () => {
    expect(native.apspMethods()).toEqual([...ck.apspMethods]);
  });

  test('dist must be a DeviceArray, n a positive integer', () => {
    expect(() => ck.apsp(new Int32Array(4) as never, 2)).toThrow(/dist must be a DeviceArray/);
    expect(() => ck.randomGraph(0)).toThrow(/n must be an integer in \[1, 131072\]/);
  });

  test('block factors: basic takes 1–256, shared and fast their own', () => {
    expect(ck.apspBlockFactor('basic', 1000)).toBe(256);
    expect(ck.apspBlockFactor('basic', 10)).toBe(10);
    expect(ck.apspBlockFactor('basic', 10, 3)).toBe(3);
    expect(ck.apspBlockFactor('shared', 10)).toBe(32);
    expect(ck.apspBlockFactor('fast', 10, 128)).toBe(128);
    expect(() => ck.apspBlockFactor('basic', 10, 257)).toThrow(/options.blockFactor must be an integer in \[1, 256\]/);
    expect(() => ck.apspBlockFactor('fast', 10, 64)).toThrow(/options.blockFactor must be 128 for method fast/);
    expect(ck.apspRounds('shared', 33)).toBe(2);
  });

  test('the progress line: in place on a terminal, a line per tenth otherwise', () => {
    const chunks: string[] = [];
    const sink = (isTTY: boolean) => ({ isTTY, write: (s: string) => chunks.push(s) > 0 }) as never;
    const plain = progressReporter('apsp', sink(false));
    for (let r = 1; r <= 40; r++) plain.update(r, 40);
    plain.finish();
    expect(chunks.length).toBe(11); // 0 %, 10 %, …, 100 %
    expect(chunks.every((c) => c.endsWith('\n') && !c.includes('\r'))).toBe(true);
    expect(chunks[10]).toMatch(/^apsp: 40\/40 rounds \(100%/);
    chunks.length = 0;
    const tty = progressReporter('apsp', sink(true));
    tty.update(1, 4);
    tty.update(4, 4);
    tty.finish();
    expect(chunks[0]).toMatch(/^\rapsp \[#{8}\.{22}\] 1\/4 rounds 25%/);
    expect(chunks[2]).toBe('\n');
  });
});

describe('cpu.apsp progress', () => {
  test('onRound reports every pivot once, in order, with and without paths', () => {
    const n = 23;
    const w = hostGraph(n, 0.2, freshSeed());
    for (const paths of [false, true]) {
      const seen: number[] = [];
      const r = ck.cpu.apsp(w, n, {
        paths: paths as never,
        onRound: (done: number, total: number) => {
          expect(total).toBe(n);
          seen.push(done);
        },
      } as never);
      expect(seen).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      const dist = paths ? (r as unknown as ck.cpu.CpuApspResult).dist : (r as Int32Array);
      expect(ck.cpu.firstMismatch(dist, dijkstraAll(w, n))).toBe(-1);
    }
    expect(() => ck.cpu.apsp(w, n, { onRound: 1 } as never)).toThrow(/options.onRound must be a function/);
  });
});

describe('the apsp CLI on the CPU (--cpu), and the checks before any GPU work', () => {
  const dir = tmpDir();
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const quiet = { method: 'auto', device: 0, progress: false };

  test.each([
    ['g.txt', 'd.txt'],
    ['g.gr', 'd.bin'],
    ['g.bin', 'd2.txt'],
  ])('--cpu: %s in, %s out, equal to Dijkstra from every vertex; progress and summary', async (inName, outName) => {
    const n = 61;
    const w = hostGraph(n, 0.08, freshSeed());
    const input = path.join(dir, inName);
    ck.writeGraph(input, w, n);
    const lines: string[] = [];
    const chunks: string[] = [];
    const stream = { isTTY: false, write: (s: string) => chunks.push(s) > 0 } as never;
    const output = path.join(dir, outName);
    const r = await apspCommand(input, output, { ...quiet, progress: true, cpu: true }, (l) => lines.push(l), stream);
    expect(r).toMatchObject({ n, method: 'cpu' });
    expect(lines[0]).toMatch(
      /^apsp: n = 61, the CPU reference \(cpu.apsp, Floyd–Warshall, 61 rounds\): [\d.]+ ms CPU, [\d.e+]+ relaxations\/s/,
    );
    expect(chunks.at(-1)).toMatch(/^apsp cpu n=61: 61\/61 rounds \(100%/);
    expect(ck.cpu.firstMismatch(ck.readDistances(output).matrix, dijkstraAll(w, n))).toBe(-1);
  });

  test('--cpu refuses a graph above its limit by the header, before reading the rest', async () => {
    const input = path.join(dir, 'big.txt');
    fs.writeFileSync(input, `${CPU_MAX_N + 1} 1\n0 1 not-even-a-number\n`);
    await expect(apspCommand(input, path.join(dir, 'o.txt'), { ...quiet, cpu: true }, () => {})).rejects.toThrow(
      `--cpu runs the CPU reference (Floyd–Warshall on one core, n³ steps) on graphs of up to ${CPU_MAX_N} vertices; ` +
        `${input} has ${CPU_MAX_N + 1}: run it on a GPU (without --cpu)`,
    );
    fs.writeFileSync(input, '2 1\n0 1 3\n');
    for (const bad of [{ method: 'shared' }, { blockFactor: 16 }]) {
      await expect(
        apspCommand(input, path.join(dir, 'o.txt'), { ...quiet, ...bad, cpu: true }, () => {}),
      ).rejects.toThrow(
        /--cpu runs the CPU reference \(plain Floyd–Warshall\): --method and --block-factor are for the GPU/,
      );
    }
  });

  test('a malformed graph is a GraphFileError before anything is said about the GPU', async () => {
    const input = path.join(dir, 'bad.txt');
    fs.writeFileSync(input, '3 2\n0 1 5\n1 2 -4\n');
    for (const cpu of [false, true]) {
      await expect(apspCommand(input, path.join(dir, 'o.txt'), { ...quiet, cpu }, () => {})).rejects.toThrow(
        /bad.txt:3: negative weight: -4/,
      );
    }
  });
});

describeNoGpu('apsp without a GPU', () => {
  test('the CLI reads the graph, then says it needs a GPU and offers --cpu', async () => {
    const dir = tmpDir();
    const input = path.join(dir, 'g.txt');
    fs.writeFileSync(input, '2 1\n0 1 3\n');
    await expect(
      apspCommand(input, path.join(dir, 'o.txt'), { method: 'auto', device: 0, progress: false }, () => {}),
    ).rejects.toThrow(/^apsp needs a GPU: .*; --cpu runs the CPU reference instead \(graphs of up to 4096 vertices\)$/);
    expect(fs.existsSync(path.join(dir, 'o.txt'))).toBe(false);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describeGpu('apsp', () => {
  const SIZES = QUICK ? [1, 2, 31, 33, 100, 257] : [1, 2, 31, 32, 33, 100, 257, 1000];
  const DENSITIES = [0.01, 0.3, 1];
  // One graph and one CPU reference per (n, density), shared by the methods.
  const cases = SIZES.flatMap((n) => DENSITIES.map((density) => ({ n, density })));
  const refs = new Map<string, { w: Int32Array; ref: Int32Array }>();
  const graph = (n: number, density: number) => {
    const key = `${n}/${density}`;
    if (!refs.has(key)) {
      const w = hostGraph(n, density, freshSeed());
      refs.set(key, { w, ref: ck.cpu.apsp(w, n) });
    }
    return refs.get(key)!;
  };

  describe.each(ck.apspMethods)('%s', (method) => {
    test.each(cases)('n = $n, density $density: equals cpu.apsp exactly', ({ n, density }) => {
      const { w, ref } = graph(n, density);
      using g = ck.upload(w);
      using out = ck.full('int32', n * n, 0x5eed);
      expect(ck.apsp(g, n, { method, out })).toBe(out);
      expect(ck.cpu.firstMismatch(out.toHostSync(), ref)).toBe(-1);
      expect(ck.cpu.firstMismatch(g.toHostSync(), w)).toBe(-1); // input untouched
    });

    test.each(QUICK ? [33, 130] : [33, 130, 257, 600])(
      'n = %i with paths: same distances, next −1 exactly where unreachable, paths weigh the distance',
      (n) => {
        for (const density of [0.02, 0.3]) {
          const seed = freshSeed();
          const w = hostGraph(n, density, seed, 3); // many zero weights and ties
          const ref = ck.cpu.apsp(w, n);
          using g = ck.upload(w);
          const r = ck.apsp(g, n, { method, paths: true });
          using dist = r.dist;
          using nextArr = r.next;
          const d = dist.toHostSync();
          const next = nextArr.toHostSync();
          expect(ck.cpu.firstMismatch(d, ref)).toBe(-1);
          for (let e = 0; e < n * n; e++)
            if (next[e] < 0 !== d[e] >= INF) throw new Error(`next/dist disagree at ${e}`);
          checkPaths(w, d, next, n, 300, seed);
        }
      },
    );
  });

  test.each(QUICK ? [1, 7, 64] : [1, 7, 64, 200, 256])('basic with block factor %i', (bf) => {
    const n = QUICK ? 70 : 300;
    const w = hostGraph(n, 0.1, freshSeed());
    using g = ck.upload(w);
    using d = ck.apsp(g, n, { method: 'basic', blockFactor: bf });
    expect(ck.cpu.firstMismatch(d.toHostSync(), ck.cpu.apsp(w, n))).toBe(-1);
  });

  test('auto is fast; onRound reports every round once, in order', () => {
    const n = 300;
    using g = ck.randomGraph(n, { density: 0.05, seed: freshSeed() });
    const seen: [number, number][] = [];
    using a = ck.apsp(g, n, { onRound: (done, total) => seen.push([done, total]) });
    expect(seen).toEqual([1, 2, 3].map((r) => [r, 3]));
    using s = ck.apsp(g, n, { method: 'shared', onRound: (done, total) => seen.push([done, total]) });
    expect(seen.length).toBe(3 + 10);
    expect(ck.deviceRelativeError(a, s)).toBe(0);
  });

  // Before the arrays were held for the whole call, out.free() in the callback released the memory
  // the remaining rounds still wrote: an array allocated right after it (which gets the same memory
  // back) was overwritten by those rounds.
  test('onRound may free the arrays: their memory stays with the run until it returns', () => {
    const n = 512; // a multiple of 128: fast writes `out` in place, no workspace
    const w = hostGraph(n, 0.02, freshSeed());
    const g = ck.upload(w);
    const out = ck.empty('int32', n * n);
    const victims: ck.DeviceArray<'int32'>[] = [];
    const result = ck.apsp(g, n, {
      out,
      onRound: (done) => {
        if (done !== 1) return;
        out.free();
        g.free();
        victims.push(ck.full('int32', n * n, 7), ck.full('int32', n * n, 7));
      },
    });
    expect(result).toBe(out);
    expect(out.freed).toBe(true);
    for (const v of victims) {
      expect(v.toHostSync().every((x) => x === 7)).toBe(true);
      v.free();
    }
  });

  test('onRound may read the arrays; writing out or next from it is refused', () => {
    const n = 300;
    const w = hostGraph(n, 0.05, freshSeed());
    using g = ck.upload(w);
    using out = ck.empty('int32', n * n);
    using other = ck.zeros('int32', n * n);
    const refused: string[] = [];
    const snapshots: number[] = [];
    const attempts: [string, () => unknown][] = [
      ['fill', () => out.fill(0)],
      ['fillRandom', () => out.fillRandom(1)],
      ['copyFrom', () => out.copyFrom(new Int32Array(n * n))],
      ['copyDevice', () => ck.copyDevice(out, other)],
      ['scan out', () => ck.scan(other, { out })],
      ['apsp out', () => ck.apsp(other, n, { out, validate: false })],
    ];
    const result = ck.apsp(g, n, {
      out,
      method: 'shared',
      onRound: (done) => {
        snapshots.push(out.toHostSync()[0]); // reading is fine
        if (done !== 2) return;
        for (const [name, write] of attempts) {
          try {
            write();
          } catch (e) {
            if (/still being written by a running apsp/.test((e as Error).message)) refused.push(name);
          }
        }
      },
    });
    expect(result).toBe(out);
    expect(refused).toEqual(attempts.map(([name]) => name));
    expect(snapshots.length).toBe(Math.ceil(n / 32));
    expect(ck.cpu.firstMismatch(out.toHostSync(), ck.cpu.apsp(w, n))).toBe(-1);
    // The lock ends with the call.
    out.fill(1);
    expect(out.toHostSync()[5]).toBe(1);
  });

  test('an exception from onRound stops the run and frees what it allocated', () => {
    using g = ck.randomGraph(300, { seed: 3 });
    const before = ck.memoryInfo(0).free;
    expect(() =>
      ck.apsp(g, 300, {
        onRound: () => {
          throw new Error('stop here');
        },
      }),
    ).toThrow('stop here');
    ck.synchronize(0);
    // Nothing of the 300² output (or the 384² workspace) may stay allocated.
    expect(ck.memoryInfo(0).free).toBeGreaterThanOrEqual(before - (1 << 20));
  });

  test.each(QUICK ? [[300]] : [[4099], [6000]])('n = %i: every method agrees with fast on the GPU', (n) => {
    using g = ck.randomGraph(n, { density: 0.01, minWeight: 0, maxWeight: 50, seed: freshSeed() });
    using fast = ck.apsp(g, n, { method: 'fast' });
    using shared = ck.apsp(g, n, { method: 'shared' });
    expect(ck.deviceRelativeError(shared, fast)).toBe(0);
    if (n <= 4099) {
      using basic = ck.apsp(g, n, { method: 'basic', blockFactor: 128 });
      expect(ck.deviceRelativeError(basic, fast)).toBe(0);
    }
    const d = fast.toHostSync();
    expect(d[0]).toBe(0);
    expect(d.some((v) => v > 0 && v < INF)).toBe(true);
  });

  test('randomGraph: diagonal 0, weights in range, density about right', () => {
    const n = 500;
    using g = ck.randomGraph(n, { density: 0.25, minWeight: 5, maxWeight: 9, seed: 42 });
    const w = g.toHostSync();
    let edges = 0;
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) {
        const v = w[i * n + j];
        if (i === j) expect(v).toBe(0);
        else if (v !== INF) {
          edges++;
          if (v < 5 || v > 9) throw new Error(`weight ${v}`);
        }
      }
    expect(edges / (n * (n - 1))).toBeCloseTo(0.25, 2);
    using again = ck.randomGraph(n, { density: 0.25, minWeight: 5, maxWeight: 9, seed: 42 });
    expect(ck.deviceRelativeError(again, g)).toBe(0);
  });

  test('bad input gives clear errors', () => {
    using g = ck.upload(new Int32Array([0, 1, 2, 0]));
    using f = ck.zeros('float32', 4);
    using short = ck.zeros('int32', 3);
    expectThrows(() => ck.apsp(f as never, 2), 'TypeError', /dist must be a DeviceArray of int32, got float32/);
    expectThrows(() => ck.apsp(short, 2), 'RangeError', /dist must be n·n = 4 elements long, got 3 elements$/);
    expectThrows(() => ck.apsp(g, 0), 'RangeError', /n must be an integer in \[1, 131072\], got number 0/);
    expectThrows(() => ck.apsp(g, 1.5), 'RangeError', /n must be an integer/);
    using neg = ck.upload(new Int32Array([0, -5, 2, 0]));
    expectThrows(
      () => ck.apsp(neg, 2),
      'RangeError',
      /dist must be a weight matrix with weights in \[0, INF\] \(no negative weights\), got number -5/,
    );
    using big = ck.upload(new Int32Array([0, INF + 1, 2, 0]));
    expectThrows(() => ck.apsp(big, 2), 'RangeError', /weights in \[0, INF = 1073741823\]/);
    expectThrows(
      () => ck.apsp(g, 2, { method: 'dijkstra' as never }),
      'RangeError',
      /options.method must be one of auto, basic, shared, fast/,
    );
    expectThrows(() => ck.apsp(g, 2, { method: 'shared', blockFactor: 16 }), 'RangeError', /blockFactor must be 32/);
    expectThrows(() => ck.apsp(g, 2, { out: g }), 'RangeError', /options.out must not be dist/);
    expectThrows(() => ck.apsp(g, 2, { out: short }), 'RangeError', /options.out must be n·n = 4 elements long/);
    expectThrows(() => ck.apsp(g, 2, { paths: 'yes' as never }), 'TypeError', /options.paths must be a boolean/);
    expectThrows(() => ck.apsp(g, 2, { onRound: 5 as never }), 'TypeError', /options.onRound must be a function/);
    const freed = ck.zeros('int32', 4);
    freed.free();
    expectThrows(() => ck.apsp(freed, 2), 'TypeError', /dist has been freed/);
    // The native re-checks catch what the TS layer would have.
    expectThrows(() => native.apspRun(g.handle(), g.handle(), null, 2, 2, 128), 'RangeError', /out must not be dist/);
    expectThrows(() => native.apspRun(g.handle(), short.handle(), null, 2, 2, 128), 'RangeError', /out must hold n·n/);
    expectThrows(() => native.apspRun(g.handle(), f.handle(), null, 2, 2, 128), 'TypeError', /out must be int32/);
    expectThrows(() => native.apspRun(g.handle(), short.handle(), null, 2, 1, 64), 'RangeError', /blockFactor/);
    expectThrows(() => native.apspRun(g.handle(), short.handle(), null, 2, 7, 64), 'RangeError', /method index/);
  });

  test('the CLI: text graph in, distances out, summary printed', async () => {
    const dir = tmpDir();
    const n = 150;
    const w = hostGraph(n, 0.05, freshSeed());
    for (const [inName, outName, method] of [
      ['g.txt', 'd.txt', 'auto'],
      ['g.gr', 'd.bin', 'shared'],
      ['g.bin', 'd2.txt', 'basic'],
    ]) {
      const input = path.join(dir, inName);
      ck.writeGraph(input, w, n);
      const lines: string[] = [];
      const chunks: string[] = [];
      const stream = { isTTY: false, write: (s: string) => chunks.push(s) > 0 } as never;
      const r = await apspCommand(
        input,
        path.join(dir, outName),
        { method, device: 0, progress: true },
        (l) => lines.push(l),
        stream,
      );
      expect(r.n).toBe(n);
      expect(lines[0]).toMatch(
        /^apsp: n = 150, method (fast|shared|basic) \(block factor \d+, \d+ rounds\) on .*: [\d.]+ ms GPU, [\d.e+]+ relaxations\/s/,
      );
      expect(chunks.length).toBeGreaterThan(0);
      expect(chunks[chunks.length - 1]).toMatch(/rounds \(100%/);
      const back = ck.readDistances(path.join(dir, outName));
      expect(ck.cpu.firstMismatch(back.matrix, ck.cpu.apsp(w, n))).toBe(-1);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
