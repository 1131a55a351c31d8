// All-pairs shortest paths over the ranks of a communicator, each rank holding only its band of rows.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { checkArray, copyDevice, type DeviceArray, empty, upload } from '../array';
import { holdArrays } from '../async';
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
 * - `{ band, n }`: this rank's rows ({@link apspBandOf}) × n, int32, on the communicator's device,
 *   left as they are; with `inPlace: true` the distances are written into them instead (the result's
 *   `band` is then this array), so that the run needs no second band: only two 128×n panels when n
 *   is a multiple of 128 (else also a padded copy of the band);
 * - `{ matrix, n }` on rank 0 (the whole n×n matrix, host or device), `{ matrix: null }` on the others:
 *   rank 0 scatters the bands, one at a time;
 * - `{ file }`: a binary graph file (int32 n, then the n² weights, as `writeGraph` writes it) that
 *   every rank can read; each reads only its rows, at their offset;
 * - `{ random, n }`: the graph `randomGraph(n, random)` makes, each rank making only its rows on its
 *   device (for graphs no host or disk holds).
 */
export type ApspDistInput =
  | { band: DeviceArray<'int32'> | null; n: number; inPlace?: boolean }
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

/** A value every rank brings to {@link agree}: NaN where this rank does not know it. */
interface Agreed {
  name: string;
  value: number;
  /** How to print a value in the error (default: the number). */
  show?: (v: number) => string;
}

// Every rank learns whether each rank's `step` failed and what values it has: the ranks that failed
// rethrow their own error, the others throw naming them, so that no rank goes on to a collective
// the others never make; then the values must agree (NaN, unknown, agrees with anything). Returns
// the agreed values (NaN where no rank knew one).
async function agree(
  comm: Communicator,
  failure: unknown,
  step: string,
  fields: Agreed[] = [],
  who = 'apspDistributed',
): Promise<number[]> {
  const width = 1 + fields.length;
  const mine = new Float64Array(width);
  mine[0] = failure === null ? 1 : 0;
  fields.forEach((f, i) => (mine[1 + i] = f.value));
  using onDevice = upload(mine, { device: comm.device });
  // A call of the sequence `who`, which may hold the communicator (see apspDistributed).
  using all = await comm.as(who, () => comm.allGather(onDevice));
  const got = await all.toHost();
  const failed: number[] = [];
  for (let r = 0; r < comm.size; r++) if (got[r * width] !== 1) failed.push(r);
  if (failure !== null) throw failure;
  if (failed.length > 0) {
    throw new Error(
      `${who}: ${step} failed on rank${failed.length > 1 ? 's' : ''} ${failed.join(', ')} (see its error)`,
    );
  }
  return fields.map((f, i) => {
    const byValue = new Map<number, number[]>();
    for (let r = 0; r < comm.size; r++) {
      const v = got[r * width + 1 + i];
      if (!Number.isNaN(v)) byValue.set(v, [...(byValue.get(v) ?? []), r]);
    }
    if (byValue.size > 1) {
      const show = f.show ?? String;
      const said = [...byValue].map(
        ([v, ranks]) => `rank${ranks.length > 1 ? 's' : ''} ${ranks.join(', ')}: ${show(v)}`,
      );
      throw new RangeError(
        `${who}: the ranks disagree on ${f.name} (${said.join('; ')}); every rank must pass the same`,
      );
    }
    return byValue.size === 0 ? NaN : [...byValue.keys()][0];
  });
}

/**
 * @internal Every rank of `comm` learns whether `step` failed on any rank: the ranks where it failed
 * throw their own error (`failure`), the others an Error naming them. For the steps of a job that
 * only some ranks take (the command line's rank 0 reading a text graph), so that no rank is left
 * waiting for the others.
 */
export async function agreeOnFailure(comm: Communicator, failure: unknown, step: string, who: string): Promise<void> {
  await agree(comm, failure, step, [], who);
}

function checkN(name: string, n: unknown): number {
  return checkInteger(name, n, 1, APSP_DIST_MAX_N);
}

/** The reservations apspDistributed and apspBellmanCheck hold on their communicator from call to end. */
const SEQUENCE = 'apspDistributed';
const BELLMAN = 'apspBellmanCheck';

const INPUT_KINDS = ['{ band, n }', '{ matrix }', '{ file }', '{ random, n }'];
const OUTPUT_KINDS = ['band', 'gather', '{ file }'];

/**
 * All-pairs shortest paths of a dense directed graph over the ranks of `comm`: blocked Floyd–Warshall
 * with the `fast` kernels, each rank holding only its band of 128-row tile rows ({@link apspBandOf}),
 * so a GPU needs about n²·4/size bytes and two 128×n panels — graphs larger than one GPU fit. (The
 * caller's band of a `{ band, n }` input comes on top unless `inPlace`, and a padded copy of the band
 * when n is not a multiple of 128.)
 *
 * Each round the rank owning the pivot tile row closes the pivot block, computes the pivot row panel
 * and broadcasts the 128×n panel to every rank through NCCL; every rank then updates its part of the
 * pivot column and the rest of its band. The next round's owner updates its next pivot row first and
 * computes and broadcasts the next panel on a high-priority stream while the rest of its band is
 * updated (look-ahead), as the in-process band scheme of {@link apsp} with `devices` does over peer
 * copies. The distances equal the single-GPU ones exactly.
 *
 * Every rank calls it with the same kind of input ({@link ApspDistInput}), the same output kind and
 * the same `validate`: the ranks check that first, and a mismatch, or a failure on any rank (bad
 * input, a missing file, an allocation), makes every rank throw. A rank that dies makes the others
 * throw an {@link NcclError} within the communicator's timeout. A `free()` of the input's arrays
 * while it runs takes effect when it is done with them (the call then throws on every rank when it
 * comes before the rounds). The run itself is on a worker thread. The call reserves the communicator
 * from start to end, as a data-parallel `trainAsync` does: a second run (or a training) waits for it,
 * in call order, and a collective issued meanwhile throws that the communicator is busy.
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
  // Reserved from the call (taken now when free, else queued behind the sequences before it, in call
  // order, the same on every rank) to the end: the agreements, the scatter, the run and the output
  // are one sequence of collectives, which must not interleave with another's (a second run, a
  // trainAsync) in an order that differs between the ranks. The input is taken at the call, queued or not.
  const reserved = comm.reserve(SEQUENCE);
  const { rank, size, device } = comm;

  // 1. Each rank's arguments and input, checked and read locally; then every rank agrees on n and
  // on the kinds (or every rank throws). Nothing here throws before that: a rank that threw alone
  // would leave the others waiting in the agreement.
  let failure: unknown = null;
  let output: ApspDistOutput = 'band';
  let onRound: ApspDistOptions['onRound'];
  const kinds = { input: NaN, output: NaN, validate: NaN };
  let graph = { density: NaN, minWeight: NaN, maxWeight: NaN, seed: NaN };
  let nLocal = NaN;
  // The caller's arrays ({ band } and a device { matrix }), held so that a free() meanwhile is deferred.
  let userBand: DeviceArray<'int32'> | null = null;
  let inPlace = false;
  let matrix: Int32Array | DeviceArray<'int32'> | null = null;
  let release: (() => void) | null = null;
  // The rows the run reads, and whether this call made them (then the run works in them).
  let band: DeviceArray<'int32'> | null = null;
  let owned = false;
  try {
    if (typeof options !== 'object' || options === null) throw typeError('options', 'an object', options);
    output = options.output ?? 'band';
    kinds.output =
      output === 'band'
        ? 0
        : output === 'gather'
          ? 1
          : typeof output === 'object' && output !== null && typeof output.file === 'string'
            ? 2
            : NaN;
    if (Number.isNaN(kinds.output)) throw rangeError('options.output', "'band', 'gather' or { file }", output);
    if (options.onRound !== undefined && typeof options.onRound !== 'function') {
      throw typeError('options.onRound', 'a function', options.onRound);
    }
    onRound = options.onRound;
    const validate = options.validate ?? true;
    if (typeof validate !== 'boolean') throw typeError('options.validate', 'a boolean', validate);
    kinds.validate = validate ? 1 : 0;
    if (typeof input !== 'object' || input === null)
      throw typeError('input', 'an object ({ band | matrix | file | random })', input);
    if ('band' in input) {
      kinds.input = 0;
      nLocal = checkN('input.n', input.n);
      inPlace = input.inPlace ?? false;
      if (typeof inPlace !== 'boolean') throw typeError('input.inPlace', 'a boolean', inPlace);
      const { rows } = apspBandOf(nLocal, size, rank);
      if (rows > 0 || input.band !== null) {
        userBand = checkArray('input.band', input.band, 'int32');
        if (userBand.device !== device)
          throw rangeError(
            'input.band',
            `on the communicator's device ${device}`,
            inWords(`device ${userBand.device}`),
          );
        if (userBand.length !== rows * nLocal) {
          throw rangeError(
            'input.band',
            `this rank's ${rows} rows × n = ${rows * nLocal} elements`,
            elements(userBand.length),
          );
        }
        release = holdArrays('apspDistributed', [userBand], []);
        band = userBand;
      }
    } else if ('matrix' in input) {
      kinds.input = 1;
      if (rank === 0) {
        nLocal = checkN('input.n', input.n);
        const m = input.matrix;
        if (m instanceof Int32Array) {
          if (m.length !== nLocal * nLocal)
            throw rangeError('input.matrix', `n·n = ${nLocal * nLocal} elements`, elements(m.length));
        } else {
          const d = checkArray('input.matrix', m, 'int32');
          if (d.length !== nLocal * nLocal)
            throw rangeError('input.matrix', `n·n = ${nLocal * nLocal} elements`, elements(d.length));
          if (d.device !== device)
            throw rangeError('input.matrix', `on the communicator's device ${device}`, inWords(`device ${d.device}`));
          release = holdArrays('apspDistributed', [d], []);
        }
        matrix = m;
      } else if (input.matrix !== null && input.matrix !== undefined) {
        throw rangeError('input.matrix', 'null on every rank but 0 (rank 0 scatters it)', input.matrix);
      } else if (input.n !== undefined) {
        nLocal = checkN('input.n', input.n);
      }
    } else if ('file' in input) {
      kinds.input = 2;
      nLocal = readHeader(input.file);
      const { row0, rows } = apspBandOf(nLocal, size, rank);
      if (rows > 0) {
        band = readRows(input.file, nLocal, row0, rows, device);
        owned = true;
      }
    } else if ('random' in input) {
      kinds.input = 3;
      nLocal = checkN('input.n', input.n);
      graph = randomGraphParams('input.random', input.random ?? {});
      const { row0, rows } = apspBandOf(nLocal, size, rank);
      if (rows > 0) {
        band = empty('int32', rows * nLocal, { device });
        owned = true;
        const { density, minWeight, maxWeight, seed } = graph;
        native.apspRandomGraphRows(band.handle(), nLocal, row0, rows, density, minWeight, maxWeight, seed);
      }
    } else {
      throw typeError('input', 'one of { band, n }, { matrix, n }, { file }, { random, n }', input);
    }
  } catch (e) {
    failure = e;
  }
  // Rank 0 names the temporary file a { file } output is written to until every rank is done.
  const token = rank === 0 ? randomBytes(6).readUIntBE(0, 6) : NaN;
  // The array the run writes, and the result's band when the output is `band`.
  let out: DeviceArray<'int32'> | null = null;
  let kept: DeviceArray<'int32'> | null = null;
  const endSequence = await reserved;
  try {
    const [n, , , validate, , , , , tmpToken] = await agree(comm, failure, 'reading the input', [
      { name: 'n', value: nLocal },
      { name: 'the input kind', value: kinds.input, show: (v) => INPUT_KINDS[v] },
      { name: 'options.output', value: kinds.output, show: (v) => OUTPUT_KINDS[v] },
      { name: 'options.validate', value: kinds.validate, show: (v) => String(v === 1) },
      { name: 'input.random.density', value: graph.density },
      { name: 'input.random.minWeight', value: graph.minWeight },
      { name: 'input.random.maxWeight', value: graph.maxWeight },
      { name: 'input.random.seed', value: graph.seed },
      { name: 'the file token', value: token },
    ]);
    if (Number.isNaN(n))
      throw new RangeError('apspDistributed: no rank knows n (rank 0 must pass input.n with input.matrix)');
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
            await comm.as(SEQUENCE, () => comm.send(staged, r));
          } else {
            const whole = matrix as DeviceArray<'int32'>;
            await comm.as(SEQUENCE, () => comm.send(whole, r, { offset: b.row0 * n, count: b.rows * n }));
          }
        }
        if (band) {
          if (matrix instanceof Int32Array) band.copyFrom(matrix.subarray(row0 * n, (row0 + rows) * n));
          else copyDevice(band, matrix as DeviceArray<'int32'>, { srcOffset: row0 * n, count: rows * n });
        }
      } else if (band) {
        const mine = band;
        await comm.as(SEQUENCE, () => comm.recv(mine, 0));
      }
    }

    // 3. Weights in [0, INF] everywhere, the run's output allocated, the caller's band still there;
    // or every rank throws.
    if (validate === 1 || userBand !== null) {
      let bad: unknown = null;
      try {
        if (userBand?.freed) throw new TypeError('input.band was freed while apspDistributed was using it');
        if (validate === 1 && band && band.length > 0) {
          const lo = reduce(band, 'min');
          const hi = reduce(band, 'max');
          if (lo < 0 || hi > INF) throw rangeError('input', `weights in [0, INF = ${INF}]`, lo < 0 ? lo : hi);
        }
        // The caller's band stays as it was unless the caller gave it for the distances.
        if (userBand !== null) out = inPlace ? userBand : empty('int32', rows * n, { device, shape: [rows, n] });
      } catch (e) {
        bad = e;
      }
      await agree(comm, bad, validate === 1 ? 'validating the weights' : 'preparing the run');
    }
    if (owned) out = band;

    // 4. The rounds.
    let inHandle: CommHandleArg = null;
    let outHandle: CommHandleArg = null;
    try {
      // A free() of the caller's band during the agreement just made: this rank cannot take part,
      // and the others are already in the rounds; aborting ends their wait at once.
      if (band && rows > 0) inHandle = band.handle('input.band');
      if (out && rows > 0) outHandle = out.handle('out');
    } catch (e) {
      comm.abort();
      throw e;
    }
    try {
      await native.apspDistRun(comm.handle(SEQUENCE), inHandle, outHandle, n, onRound);
    } catch (e) {
      throw asNcclError(e);
    }

    // 5. The output.
    const result: ApspDistResult = { n, row0, rows, band: null, matrix: null };
    if (output === 'band') {
      result.band = out;
      kept = out;
    } else if (output === 'gather') {
      result.matrix = await gather(comm, out, n, row0);
    } else {
      await writeDistanceFile(comm, (output as { file: string }).file, out, n, row0, tmpToken);
    }
    return result;
  } finally {
    endSequence();
    release?.();
    if (owned && band !== kept) band?.free();
    if (out !== userBand && out !== band && out !== kept) out?.free();
  }
}

type CommHandleArg = Parameters<typeof native.apspDistRun>[1];

// `gather`: rank 0 allocates the n×n matrix first, and every rank learns whether it could before
// any rank sends (a rank 0 that cannot would otherwise leave the others waiting in their sends).
async function gather(
  comm: Communicator,
  band: DeviceArray<'int32'> | null,
  n: number,
  row0: number,
): Promise<DeviceArray<'int32'> | null> {
  let whole: DeviceArray<'int32'> | null = null;
  let bad: unknown = null;
  if (comm.rank === 0) {
    try {
      whole = empty('int32', n * n, { device: comm.device, shape: [n, n] });
    } catch (e) {
      bad = e;
    }
  }
  await agree(comm, bad, `allocating the ${n}×${n} matrix on rank 0`);
  if (comm.rank !== 0) {
    if (band) await comm.as(SEQUENCE, () => comm.send(band, 0));
    return null;
  }
  const matrix = whole as DeviceArray<'int32'>;
  try {
    if (band) copyDevice(matrix, band, { dstOffset: row0 * n });
    for (let r = 1; r < comm.size; r++) {
      const b = apspBandOf(n, comm.size, r);
      if (b.rows > 0) await comm.as(SEQUENCE, () => comm.recv(matrix, r, { offset: b.row0 * n, count: b.rows * n }));
    }
  } catch (e) {
    matrix.free();
    throw e;
  }
  return matrix;
}

// `{ file }`: every rank writes its rows into a temporary file beside the target, which rank 0
// renames to the target once every rank has written; after a failure the target is left as it was
// (absent, or an older file) and the temporary file is removed, so no file that looks complete is
// ever half written.
async function writeDistanceFile(
  comm: Communicator,
  file: string,
  band: DeviceArray<'int32'> | null,
  n: number,
  row0: number,
  token: number,
): Promise<void> {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${token.toString(16)}.partial`);
  const leader = comm.rank === 0;
  let done = false;
  try {
    let bad: unknown = null;
    try {
      if (leader) {
        const fd = fs.openSync(temporary, 'wx');
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
    await agree(comm, bad, `creating ${temporary}`);
    try {
      if (band) await writeRows(temporary, band, n, row0);
    } catch (e) {
      bad = e;
    }
    await agree(comm, bad, `writing ${temporary}`);
    try {
      if (leader) fs.renameSync(temporary, file);
      done = true;
    } catch (e) {
      bad = e;
    }
    // The others return only once the file is in place.
    await agree(comm, bad, `renaming ${temporary} to ${file}`);
  } finally {
    if (leader && !done) fs.rmSync(temporary, { force: true });
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
  // One sequence (an agreement and two all-reduces), reserved as apspDistributed reserves its own.
  const endSequence = await comm.reserve(BELLMAN);
  try {
    return await bellmanCheck(comm, result, random, options);
  } finally {
    endSequence();
  }
}

async function bellmanCheck(
  comm: Communicator,
  result: Pick<ApspDistResult, 'n' | 'band'>,
  random: ApspRandomInput,
  options: ApspBellmanOptions,
): Promise<ApspBellmanReport> {
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
  await agree(
    comm,
    failure,
    'checking the arguments',
    [
      { name: 'result.n', value: n },
      { name: 'options.samples', value: samples },
      { name: 'options.seed', value: seed },
      { name: 'random.density', value: graph.density },
      { name: 'random.minWeight', value: graph.minWeight },
      { name: 'random.maxWeight', value: graph.maxWeight },
      { name: 'random.seed', value: graph.seed },
    ],
    BELLMAN,
  );
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
  await comm.as(BELLMAN, () => comm.allReduce(partial, 'min'));
  await comm.as(BELLMAN, () => comm.allReduce(own, 'min'));
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
