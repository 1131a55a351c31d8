// All-pairs shortest paths over the ranks of a communicator, each rank holding only its band of rows.
import * as fs from 'node:fs';

import { checkArray, copyDevice, type DeviceArray, empty, upload } from '../array';
import { randomArray } from '../cpu/index';
import { INF } from '../ops/apsp-spec';
import { checkInteger, rangeError, typeError, inWords, elements } from '../errors';
import { native } from '../native';
import { APSP_DIST_MAX_N, type RandomGraphOptions, randomGraphParams } from '../ops/apsp';
import { reduce } from '../ops/scan';
import { Communicator } from './communicator';
import { asNcclError } from './nccl';

/** Rows [row0, row0 + rows) of the n×n matrix. */
export interface ApspRows {
  row0: number;
  rows: number;
}

/**
 * The rows rank `rank` of `size` holds in {@link apspDistributed} for n vertices: whole 128-row tile
 * rows, split as the in-process band scheme splits them over GPUs (bands differ by at most one tile
 * row; ranks beyond the number of tile rows hold none).
 */
export function apspBandOf(n: number, size: number, rank: number): ApspRows {
  checkInteger('n', n, 1, APSP_DIST_MAX_N);
  checkInteger('size', size, 1, 1 << 20);
  checkInteger('rank', rank, 0, size - 1);
  const [row0, rows] = native.apspDistBand(n, size, rank);
  return { row0, rows };
}

/** The random graph of {@link randomGraph} (same options but the device), made band by band. */
export type ApspRandomInput = Omit<RandomGraphOptions, 'device'>;

/**
 * Where the weights come from; every rank passes the same kind:
 *
 * - `{ band, n }`: this rank's rows ({@link apspBandOf}) × n, int32, on the communicator's device;
 * - `{ matrix, n }` on rank 0 (the whole n×n matrix, host or device), `{ matrix: null }` on the others:
 *   rank 0 scatters the bands, one at a time;
 * - `{ file }`: a binary graph file (int32 n, then the n² weights, as `writeGraph` writes it) that
 *   every rank can read; each reads only its rows, at their offset;
 * - `{ random, n }`: the graph `randomGraph(n, random)` makes, each rank making only its rows on its
 *   device (for graphs no host or disk holds).
 */
export type ApspDistInput =
  | { band: DeviceArray<'int32'> | null; n: number }
  | { matrix: Int32Array | DeviceArray<'int32'> | null; n?: number }
  | { file: string }
  | { random: ApspRandomInput; n: number };

/**
 * What {@link apspDistributed} leaves: `band` (each rank keeps its rows of the distances on its
 * device, the default), `gather` (rank 0 receives the whole n×n matrix; it must fit one GPU), or
 * `{ file }` (a binary distance file, int32 n then the n² distances, written by every rank at its
 * rows' offset; on several hosts it must be on a file system they share).
 */
export type ApspDistOutput = 'band' | 'gather' | { file: string };

/** Options of {@link apspDistributed}. */
export interface ApspDistOptions {
  /** Default `band`. */
  output?: ApspDistOutput;
  /** Called on every rank as rounds complete there, with the rounds done and the total. */
  onRound?: (done: number, rounds: number) => void;
  /** Check on every rank's GPU that its weights are in [0, INF] first (default true). */
  validate?: boolean;
}

/** This rank's share of an {@link apspDistributed} result. */
export interface ApspDistResult {
  n: number;
  /** This rank's rows, [row0, row0 + rows). */
  row0: number;
  rows: number;
  /** With output `band`: this rank's distances (rows × n, on its device), null when it has no rows. */
  band: DeviceArray<'int32'> | null;
  /** With output `gather`, on rank 0: the whole n×n distance matrix; null elsewhere. */
  matrix: DeviceArray<'int32'> | null;
}

// Rows move between a file and the device in pieces of at most 2^28 elements (1 GiB): a band can be
// larger than one typed array may be (2^32 elements on Node 20), or than the host wants to hold.
let PIECE = 1 << 28;

/**
 * Sets the piece size of the file reads and writes (elements), so that tests can make small bands
 * move in several pieces; returns the previous size.
 * @internal
 */
export function setFilePiece(elements: number): number {
  const previous = PIECE;
  PIECE = checkInteger('elements', elements, 1);
  return previous;
}

function readRows(file: string, n: number, row0: number, rows: number, device: number): DeviceArray<'int32'> {
  const band = empty('int32', rows * n, { device, shape: [rows, n] });
  const per = Math.max(1, Math.floor(PIECE / n));
  const fd = fs.openSync(file, 'r');
  try {
    for (let r = 0; r < rows; r += per) {
      const host = new Int32Array(Math.min(per, rows - r) * n);
      const bytes = new Uint8Array(host.buffer);
      const at = 4 + (row0 + r) * n * 4;
      for (let done = 0; done < bytes.length;) {
        const got = fs.readSync(fd, bytes, done, bytes.length - done, at + done);
        if (got === 0) throw new RangeError(`${file}: ends before row ${row0 + rows} of ${n} (truncated?)`);
        done += got;
      }
      band.copyFrom(host, { offset: r * n });
    }
  } catch (e) {
    band.free();
    throw e;
  } finally {
    fs.closeSync(fd);
  }
  return band;
}

function readHeader(file: string): number {
  if (typeof file !== 'string') throw typeError('input.file', 'a path', file);
  const fd = fs.openSync(file, 'r');
  try {
    const head = Buffer.alloc(4);
    if (fs.readSync(fd, head, 0, 4, 0) !== 4) throw new RangeError(`${file}: too short for a binary graph header`);
    const n = head.readInt32LE(0);
    const size = fs.fstatSync(fd).size;
    if (n < 1 || n > APSP_DIST_MAX_N || size !== 4 + n * n * 4) {
      throw new RangeError(`${file}: not a binary graph file (header n = ${n}, ${size} bytes)`);
    }
    return n;
  } finally {
    fs.closeSync(fd);
  }
}

async function writeRows(file: string, band: DeviceArray<'int32'>, n: number, row0: number): Promise<void> {
  const rows = band.length / n;
  const per = Math.max(1, Math.floor(PIECE / n));
  using stage = empty('int32', Math.min(per, rows) * n, { device: band.device });
  const host = new Int32Array(stage.length);
  const fd = fs.openSync(file, 'r+');
  try {
    for (let r = 0; r < rows; r += per) {
      const count = Math.min(per, rows - r) * n;
      copyDevice(stage, band, { srcOffset: r * n, count });
      await stage.toHost(host);
      const bytes = new Uint8Array(host.buffer, 0, count * 4);
      const at = 4 + (row0 + r) * n * 4;
      for (let done = 0; done < bytes.length;) done += fs.writeSync(fd, bytes, done, bytes.length - done, at + done);
    }
  } finally {
    fs.closeSync(fd);
  }
}

// Every rank learns every rank's n and whether its step went well, so that all of them go on or all
// of them throw (a rank that threw alone would leave the others waiting in the next collective).
// Every rank learns whether each rank's `step` failed and what value (n) it has: the ranks that failed
// rethrow their own error, the others throw naming them, so that no rank goes on to a collective the
// others never make; and the values must agree.
async function agree(
  comm: Communicator,
  n: number,
  failure: unknown,
  step: string,
  who = 'apspDistributed',
  what = 'n',
): Promise<number> {
  using mine = upload(Int32Array.of(n, failure === null ? 1 : 0), { device: comm.device });
  using all = await comm.allGather(mine);
  const got = await all.toHost();
  const failed: number[] = [];
  const ns = new Set<number>();
  for (let r = 0; r < comm.size; r++) {
    if (got[2 * r + 1] !== 1) failed.push(r);
    else if (got[2 * r] > 0) ns.add(got[2 * r]);
  }
  if (failure !== null) throw failure;
  if (failed.length > 0) {
    throw new Error(
      `${who}: ${step} failed on rank${failed.length > 1 ? 's' : ''} ${failed.join(', ')} (see its error)`,
    );
  }
  if (ns.size > 1) {
    throw new RangeError(
      `${who}: the ranks disagree on ${what} (${[...ns].join(', ')}); every rank must pass the same`,
    );
  }
  if (ns.size === 0) throw new RangeError(`${who}: no rank knows n (rank 0 must pass input.n with input.matrix)`);
  return [...ns][0];
}

function checkN(name: string, n: unknown): number {
  return checkInteger(name, n, 1, APSP_DIST_MAX_N);
}

/**
 * All-pairs shortest paths of a dense directed graph over the ranks of `comm`: blocked Floyd–Warshall
 * with the `fast` kernels, each rank holding only its band of 128-row tile rows ({@link apspBandOf}),
 * so a GPU needs about n²·4/size bytes (plus two 128×n panels; the band is updated in place when
 * n is a multiple of 128 and the input is ours to overwrite) — graphs larger than one GPU fit.
 *
 * Each round the rank owning the pivot tile row closes the pivot block, computes the pivot row panel
 * and broadcasts the 128×n panel to every rank through NCCL; every rank then updates its part of the
 * pivot column and the rest of its band. The next round's owner updates its next pivot row first and
 * computes and broadcasts the next panel on a high-priority stream while the rest of its band is
 * updated (look-ahead), as the in-process band scheme of {@link apsp} with `devices` does over peer
 * copies. The distances equal the single-GPU ones exactly.
 *
 * Every rank calls it with the same kind of input ({@link ApspDistInput}) and output. A failure on any
 * rank (bad input, a missing file) makes every rank throw; a rank that dies makes the others throw
 * an {@link NcclError} within the communicator's timeout. The run itself is on a worker thread; the
 * communicator takes no other calls until it is done.
 *
 * @example
 * ```ts
 * using comm = await Communicator.init();
 * const res = await apspDistributed(comm, { file: 'graph.bin' }, { output: { file: 'dist.bin' } });
 * ```
 */
export async function apspDistributed(
  comm: Communicator,
  input: ApspDistInput,
  options: ApspDistOptions = {},
): Promise<ApspDistResult> {
  if (!(comm instanceof Communicator)) throw typeError('comm', 'a Communicator', comm);
  comm.handle('apspDistributed');
  if (typeof input !== 'object' || input === null)
    throw typeError('input', 'an object ({ band | matrix | file | random })', input);
  if (typeof options !== 'object' || options === null) throw typeError('options', 'an object', options);
  const output = options.output ?? 'band';
  if (
    output !== 'band' &&
    output !== 'gather' &&
    (typeof output !== 'object' || output === null || typeof output.file !== 'string')
  ) {
    throw rangeError('options.output', "'band', 'gather' or { file }", output);
  }
  if (options.onRound !== undefined && typeof options.onRound !== 'function') {
    throw typeError('options.onRound', 'a function', options.onRound);
  }
  const validate = options.validate ?? true;
  if (typeof validate !== 'boolean') throw typeError('options.validate', 'a boolean', validate);
  const { rank, size, device } = comm;

  // 1. Each rank's input, checked locally; then every rank agrees (or every rank throws).
  let nLocal = 0;
  let band: DeviceArray<'int32'> | null = null;
  let owned = false;
  let matrix: Int32Array | DeviceArray<'int32'> | null = null;
  let failure: unknown = null;
  try {
    if ('band' in input) {
      nLocal = checkN('input.n', input.n);
      const { rows } = apspBandOf(nLocal, size, rank);
      if (rows > 0 || input.band !== null) {
        band = checkArray('input.band', input.band, 'int32');
        if (band.device !== device)
          throw rangeError('input.band', `on the communicator's device ${device}`, inWords(`device ${band.device}`));
        if (band.length !== rows * nLocal) {
          throw rangeError(
            'input.band',
            `this rank's ${rows} rows × n = ${rows * nLocal} elements`,
            elements(band.length),
          );
        }
      }
    } else if ('matrix' in input) {
      if (rank === 0) {
        nLocal = checkN('input.n', input.n);
        const m = input.matrix;
        if (m instanceof Int32Array) {
          if (m.length !== nLocal * nLocal)
            throw rangeError('input.matrix', `n·n = ${nLocal * nLocal} elements`, elements(m.length));
        } else {
          checkArray('input.matrix', m, 'int32');
          const d = m as DeviceArray<'int32'>;
          if (d.length !== nLocal * nLocal)
            throw rangeError('input.matrix', `n·n = ${nLocal * nLocal} elements`, elements(d.length));
          if (d.device !== device)
            throw rangeError('input.matrix', `on the communicator's device ${device}`, inWords(`device ${d.device}`));
        }
        matrix = m;
      } else if (input.matrix !== null && input.matrix !== undefined) {
        throw rangeError('input.matrix', 'null on every rank but 0 (rank 0 scatters it)', input.matrix);
      } else if (input.n !== undefined) {
        nLocal = checkN('input.n', input.n);
      }
    } else if ('file' in input) {
      nLocal = readHeader(input.file);
      const { row0, rows } = apspBandOf(nLocal, size, rank);
      if (rows > 0) {
        band = readRows(input.file, nLocal, row0, rows, device);
        owned = true;
      }
    } else if ('random' in input) {
      nLocal = checkN('input.n', input.n);
      const { density, minWeight, maxWeight, seed } = randomGraphParams('input.random', input.random ?? {});
      const { row0, rows } = apspBandOf(nLocal, size, rank);
      if (rows > 0) {
        band = empty('int32', rows * nLocal, { device });
        owned = true;
        native.apspRandomGraphRows(band.handle(), nLocal, row0, rows, density, minWeight, maxWeight, seed);
      }
    } else {
      throw typeError('input', 'one of { band, n }, { matrix, n }, { file }, { random, n }', input);
    }
  } catch (e) {
    failure = e;
  }
  let out: DeviceArray<'int32'> | null = null;
  try {
    const n = await agree(comm, nLocal, failure, 'reading the input');
    const { row0, rows } = apspBandOf(n, size, rank);

    // 2. Scatter from rank 0, one band at a time (rank 0's device holds one staged band at most).
    if ('matrix' in input) {
      if (rows > 0) {
        band = empty('int32', rows * n, { device, shape: [rows, n] });
        owned = true;
      }
      if (rank === 0) {
        for (let r = 1; r < size; r++) {
          const b = apspBandOf(n, size, r);
          if (b.rows === 0) continue;
          if (matrix instanceof Int32Array) {
            using staged = upload(matrix.subarray(b.row0 * n, (b.row0 + b.rows) * n), { device });
            await comm.send(staged, r);
          } else {
            await comm.send(matrix as DeviceArray<'int32'>, r, { offset: b.row0 * n, count: b.rows * n });
          }
        }
        if (band) {
          if (matrix instanceof Int32Array) band.copyFrom(matrix.subarray(row0 * n, (row0 + rows) * n));
          else copyDevice(band, matrix as DeviceArray<'int32'>, { srcOffset: row0 * n, count: rows * n });
        }
      } else if (band) {
        await comm.recv(band, 0);
      }
    }

    // 3. Weights in [0, INF] everywhere, or every rank throws.
    if (validate) {
      let bad: unknown = null;
      if (band && band.length > 0) {
        const lo = reduce(band, 'min');
        const hi = reduce(band, 'max');
        if (lo < 0 || hi > INF) bad = rangeError('input', `weights in [0, INF = ${INF}]`, lo < 0 ? lo : hi);
      }
      await agree(comm, n, bad, 'validating the weights');
    }

    // 4. The rounds.
    out = owned ? band : rows > 0 ? empty('int32', rows * n, { device, shape: [rows, n] }) : null;
    const inHandle = band && rows > 0 ? band.handle('input.band') : null;
    const outHandle = out ? out.handle('out') : null;
    await comm.exclusive('apspDistributed', async (h) => {
      try {
        await native.apspDistRun(h, inHandle, outHandle, n, options.onRound);
      } catch (e) {
        throw asNcclError(e);
      }
    });
    if (owned) band = null; // now the output

    // 5. The output.
    const result: ApspDistResult = { n, row0, rows, band: null, matrix: null };
    if (output === 'band') {
      result.band = out;
      out = null;
    } else if (output === 'gather') {
      if (rank === 0) {
        const whole = empty('int32', n * n, { device, shape: [n, n] });
        try {
          if (out) copyDevice(whole, out, { dstOffset: row0 * n });
          for (let r = 1; r < size; r++) {
            const b = apspBandOf(n, size, r);
            if (b.rows > 0) await comm.recv(whole, r, { offset: b.row0 * n, count: b.rows * n });
          }
        } catch (e) {
          whole.free();
          throw e;
        }
        result.matrix = whole;
      } else if (out) {
        await comm.send(out, 0);
      }
    } else {
      const file = output.file;
      let bad: unknown = null;
      try {
        if (rank === 0) {
          const fd = fs.openSync(file, 'w');
          try {
            const head = Buffer.alloc(4);
            head.writeInt32LE(n, 0);
            fs.writeSync(fd, head, 0, 4, 0);
            fs.ftruncateSync(fd, 4 + n * n * 4);
          } finally {
            fs.closeSync(fd);
          }
        }
      } catch (e) {
        bad = e;
      }
      await agree(comm, n, bad, `creating ${file}`);
      try {
        if (out) await writeRows(file, out, n, row0);
      } catch (e) {
        bad = e;
      }
      await agree(comm, n, bad, `writing ${file}`);
    }
    return result;
  } finally {
    if (owned) band?.free();
    out?.free();
  }
}

/** Options of {@link apspBellmanCheck}. */
export interface ApspBellmanOptions {
  /**
   * Pairs (i, j) to check, drawn at random; every 16th (and the last, with fewer than 16) is a diagonal
   * pair (default 256). Every rank must pass the same.
   */
  samples?: number;
  /** Seed of the draw (default 1); every rank must pass the same. */
  seed?: number;
}

/** What {@link apspBellmanCheck} found; every rank gets the same report. */
export interface ApspBellmanReport {
  /** The pairs checked, i then j (2 × `samples` entries). */
  pairs: Int32Array;
  /** How many of them fail the equation. */
  failed: number;
  /** The first few failures: the distance found and what the equation gives. */
  mismatches: { i: number; j: number; got: number; want: number }[];
}

/**
 * Spot-checks a distributed result on the random graph it was computed from, for graphs too large
 * to compare with anything else: on sampled pairs (i, j), the Bellman equation
 * d[i][j] = min over k ≠ i of (w[i][k] + d[k][j]) (and d[i][i] = 0), which with positive weights only
 * the shortest distances satisfy. Each rank takes the minimum over its own rows k on its GPU,
 * recomputing w[i][k] from the graph's hash instead of storing the graph, and an all-reduce takes the
 * minimum over the ranks. Call it on every rank with that rank's band ({@link apspDistributed} with
 * output `band`) and the `random` options of the run's input; weights must be ≥ 1
 * (`minWeight` ≥ 1), as zero-weight cycles make the equation hold for other matrices too.
 *
 * @example
 * ```ts
 * const random = { density: 0.05, minWeight: 1, maxWeight: 1000, seed: 7 };
 * const res = await apspDistributed(comm, { random, n: 200064 });
 * const report = await apspBellmanCheck(comm, res, random, { samples: 300 });
 * if (report.failed > 0) throw new Error(JSON.stringify(report.mismatches));
 * ```
 */
export async function apspBellmanCheck(
  comm: Communicator,
  result: Pick<ApspDistResult, 'n' | 'band'>,
  random: ApspRandomInput,
  options: ApspBellmanOptions = {},
): Promise<ApspBellmanReport> {
  if (!(comm instanceof Communicator)) throw typeError('comm', 'a Communicator', comm);
  comm.handle('apspBellmanCheck');
  const { device } = comm;
  // Checked on each rank, then agreed on: a rank with a bad argument must not leave the others
  // waiting in the all-reduce below.
  let failure: unknown = null;
  let n = 0;
  let samples = 0;
  let seed = 0;
  let graph: ReturnType<typeof randomGraphParams> = { density: 0, minWeight: 1, maxWeight: 1, seed: 1 };
  let rows = 0;
  let row0 = 0;
  try {
    if (typeof result !== 'object' || result === null) throw typeError('result', 'an apspDistributed result', result);
    n = checkN('result.n', result.n);
    samples = checkInteger('options.samples', options.samples ?? 256, 1, 1 << 20);
    seed = checkInteger('options.seed', options.seed ?? 1);
    // Weights ≥ 1: with zero-weight cycles the equation has other solutions.
    graph = randomGraphParams('random', random, 1);
    ({ row0, rows } = apspBandOf(n, comm.size, comm.rank));
    if (rows > 0) {
      const b = checkArray('result.band', result.band, 'int32') as DeviceArray<'int32'>;
      b.handle('result.band');
      if (b.device !== device)
        throw rangeError('result.band', `on the communicator's device ${device}`, inWords(`device ${b.device}`));
      if (b.length !== rows * n)
        throw rangeError('result.band', `this rank's ${rows} rows × n = ${rows * n} elements`, elements(b.length));
    }
  } catch (e) {
    failure = e;
  }
  await agree(comm, n, failure, 'checking the arguments', 'apspBellmanCheck');
  await agree(comm, samples, null, 'checking the arguments', 'apspBellmanCheck', 'options.samples');
  const band = result.band;
  const { density, minWeight, maxWeight, seed: graphSeed } = graph;
  // The same pairs on every rank: a deterministic draw from the seed.
  const draw = randomArray(Float64Array, 2 * samples, seed);
  const pairs = new Int32Array(2 * samples);
  for (let p = 0; p < samples; p++) {
    const i = Math.min(n - 1, Math.floor(((draw[2 * p] + 1) / 2) * n));
    // Every 16th pair, and the last when there are fewer than 16, is diagonal: d[i][i] = 0 is what
    // catches a band shifted as a whole (d + c satisfies the equation off the diagonal).
    const diagonal = p % 16 === 15 || (samples < 16 && p === samples - 1);
    const j = diagonal ? i : Math.min(n - 1, Math.floor(((draw[2 * p + 1] + 1) / 2) * n));
    pairs[2 * p] = i;
    pairs[2 * p + 1] = j;
  }
  using onDevice = upload(pairs, { device });
  using partial = empty('int32', samples, { device });
  using own = empty('int32', samples, { device });
  native.apspBellmanPartial(
    rows > 0 ? (band as DeviceArray<'int32'>).handle('result.band') : null,
    n,
    row0,
    rows,
    onDevice.handle(),
    partial.handle(),
    own.handle(),
    density,
    minWeight,
    maxWeight,
    graphSeed,
  );
  await comm.allReduce(partial, 'min');
  await comm.allReduce(own, 'min');
  const [viaK, got] = [await partial.toHost(), await own.toHost()];
  const mismatches: ApspBellmanReport['mismatches'] = [];
  let failed = 0;
  for (let p = 0; p < samples; p++) {
    const i = pairs[2 * p];
    const j = pairs[2 * p + 1];
    const want = i === j ? 0 : viaK[p];
    if (got[p] !== want) {
      failed++;
      if (mismatches.length < 10) mismatches.push({ i, j, got: got[p], want });
    }
  }
  return { pairs, failed, mismatches };
}
