// One rank of test/apsp-distributed.test.ts, started by `cuda-kernels launch` (or directly with
// RANK/WORLD_SIZE set):
//
//   node -r ./test/harness/ts-register.js test/harness/apsp-dist-rank.ts <mode>
//
// Modes:
// - checks (2 or more ranks): the ranks agree on the input kind, the output kind and `validate`;
//   `{ band, n }` with and without `inPlace`; `gather` when rank 0 cannot allocate the matrix;
//   a `{ file }` output that fails on one rank; a free() of the input during the call and right after
//   the native run starts.
// - memory (1 rank): the device memory a `{ band, n }` run takes besides the band, at its peak.
// - cli-bad-graph (started without a launcher): `apsp --distributed` on a malformed text graph.
//
// Every result is checked against cpu.apsp (or single-GPU `fast`). The last line of stdout is
// `CK-RESULT <json>`; the exit code is 0 only when every check passed. CK_HOSTID_PER_RANK=1 gives
// each rank its own NCCL_HOSTID, so that several ranks can share one GPU (GPU-FACTS.md).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import * as ck from '../../lib';
import type { DeviceArray } from '../../lib';
import { native } from '../../lib/native';
import { hostGraph } from './families';

const mode = process.argv[2];
const failures: string[] = [];
let checks = 0;
const t0 = Date.now();
const notes: Record<string, unknown> = {};

function check(ok: boolean, what: string): void {
  checks++;
  if (!ok) failures.push(what);
}

function finish(): void {
  console.log(`CK-RESULT ${JSON.stringify({ mode, checks, failures, seconds: (Date.now() - t0) / 1000, ...notes })}`);
  process.exitCode = failures.length === 0 ? 0 : 1;
}

async function init(): Promise<ck.Communicator> {
  const env = ck.rankFromEnv();
  if (process.env.CK_HOSTID_PER_RANK) process.env.NCCL_HOSTID = `ck-apsp-rank-${env.rank}`;
  // Short enough that a rank left waiting by a bug fails the run instead of hanging it.
  return ck.Communicator.init({ timeoutMs: Number(process.env.CK_TIMEOUT_MS ?? 60_000) });
}

/** Runs `fn`, expecting it to throw: `want(e)` says whether what it threw is right. */
async function expectThrow(what: string, fn: () => Promise<unknown>, want: (e: unknown) => boolean): Promise<void> {
  try {
    const r = (await fn()) as ck.ApspDistResult | undefined;
    r?.band?.free();
    r?.matrix?.free();
    check(false, `${what}: no error`);
  } catch (e) {
    check(want(e), `${what}: threw ${String(e)}`);
  }
}

/** The communicator still works: a barrier, and a small run equal to the CPU. */
async function usable(comm: ck.Communicator, what: string): Promise<void> {
  await comm.barrier();
  check(comm.failure === null, `${what}: the communicator failed: ${String(comm.failure)}`);
  const n = 77;
  const w = hostGraph(n, 0.1, 5);
  const res = await ck.apspDistributed(comm, comm.rank === 0 ? { matrix: w, n } : { matrix: null }, {
    output: 'gather',
  });
  if (comm.rank === 0) {
    check(
      res.matrix !== null && ck.cpu.firstMismatch(await res.matrix.toHost(), ck.cpu.apsp(w, n)) < 0,
      `${what}: a run after it`,
    );
    res.matrix?.free();
  }
}

function rowsOf(w: Int32Array, n: number, row0: number, rows: number): Int32Array {
  return w.subarray(row0 * n, (row0 + rows) * n);
}

async function checksMode(): Promise<void> {
  const comm = await init();
  const { rank, size, device } = comm;
  const dir = fs.mkdtempSync(path.join(process.env.CK_DIST_TMP ?? os.tmpdir(), `ck-apsp-dist-${rank}-`));
  const shared = process.env.CK_SHARED_DIR as string;

  // 1. `{ band, n }`: left as it was by default, overwritten with the distances with inPlace; n a
  // multiple of 128 (the run works in its output, after a copy) and not (a padded copy), every output.
  const cases = [
    { n: 256, inPlace: false, output: 'band' },
    { n: 256, inPlace: true, output: 'band' },
    { n: 301, inPlace: true, output: 'gather' },
    { n: 384, inPlace: false, output: 'file' },
    { n: 129, inPlace: true, output: 'file' },
    { n: 640, inPlace: false, output: 'gather' },
  ] as const;
  for (const c of cases) {
    const { n } = c;
    const w = hostGraph(n, 0.05, 900 + n);
    const ref = ck.cpu.apsp(w, n);
    const { row0, rows } = ck.apspBandOf(n, size, rank);
    const label = `{ band, n = ${n}${c.inPlace ? ', inPlace' : ''} } → ${c.output}`;
    const input = ck.upload(rowsOf(w, n, row0, rows), { device });
    const file = path.join(shared, `dist-${n}.bin`);
    const output: ck.ApspDistOutput = c.output === 'file' ? { file } : c.output;
    const res = await ck.apspDistributed(comm, { band: input, n, inPlace: c.inPlace }, { output });
    const after = await input.toHost();
    const mine = rowsOf(ref, n, row0, rows);
    if (c.inPlace) check(ck.cpu.firstMismatch(after, mine) < 0, `${label}: the input band holds the distances`);
    else check(ck.cpu.firstMismatch(after, rowsOf(w, n, row0, rows)) < 0, `${label}: the input band was changed`);
    if (c.output === 'band') {
      check(res.band !== null && (c.inPlace ? res.band === input : res.band !== input), `${label}: the result's band`);
      check(ck.cpu.firstMismatch(await res.band!.toHost(), mine) < 0, label);
    } else if (c.output === 'gather') {
      check(res.band === null, `${label}: no band`);
      if (rank === 0) check(res.matrix !== null && ck.cpu.firstMismatch(await res.matrix.toHost(), ref) < 0, label);
      else check(res.matrix === null, `${label}: a matrix on rank ${rank}`);
    } else {
      if (rank === 0) {
        const back = ck.readDistances(file, { format: 'binary' });
        check(back.n === n && ck.cpu.firstMismatch(back.matrix, ref) < 0, label);
        const left = fs.readdirSync(shared).filter((f) => f.includes('partial'));
        check(left.length === 0, `${label}: temporary files left: ${left.join(', ')}`);
      }
      await comm.barrier();
      if (rank === 0) fs.rmSync(file, { force: true });
    }
    res.matrix?.free();
    if (res.band !== input) res.band?.free();
    input.free();
  }

  // 2. The ranks must agree on the kinds and `validate`: every rank throws, none is left waiting,
  // and the communicator stays usable.
  const n = 300;
  const w = hostGraph(n, 0.05, 31);
  const random = { density: 0.05, seed: 3 };
  const { row0, rows } = ck.apspBandOf(n, size, rank);
  const disagree = (what: RegExp) => (e: unknown) => e instanceof RangeError && what.test(e.message);
  await expectThrow(
    'output band on rank 0, gather elsewhere',
    () => ck.apspDistributed(comm, { random, n }, { output: rank === 0 ? 'band' : 'gather' }),
    disagree(/disagree on options\.output \(rank 0: band; ranks? [\d, ]+: gather\)/),
  );
  await expectThrow(
    'validate on rank 0 only',
    () => ck.apspDistributed(comm, { random, n }, { validate: rank === 0 }),
    disagree(/disagree on options\.validate/),
  );
  {
    using band = ck.upload(rowsOf(w, n, row0, rows), { device });
    await expectThrow(
      '{ random } on rank 0, { band } elsewhere',
      () => ck.apspDistributed(comm, rank === 0 ? { random, n } : { band, n }),
      disagree(/disagree on the input kind \(rank 0: \{ random, n \}; ranks? [\d, ]+: \{ band, n \}\)/),
    );
  }
  await expectThrow(
    'another random seed on the last rank',
    () => ck.apspDistributed(comm, { random: { ...random, seed: rank === size - 1 ? 4 : 3 }, n }),
    disagree(/disagree on input\.random\.seed/),
  );
  await expectThrow(
    'a bad output on rank 1',
    () => ck.apspDistributed(comm, { random, n }, { output: rank === 1 ? ('all' as never) : 'band' }),
    (e) =>
      rank === 1 ? e instanceof RangeError && /options\.output/.test(e.message) : /failed on rank 1/.test(String(e)),
  );
  await usable(comm, 'after the disagreements');

  // 3. `gather` when rank 0 cannot allocate the n×n matrix: every rank throws (rank 0 the
  // allocation's CudaError), none waits in a send. Rank 0 fills its GPU once its run is done. Only
  // with a GPU per rank: where the ranks share one, what the other rank frees after rank 0 filled
  // it can hold the matrix (an H200 run of 1219c8e gathered with no error).
  if (ck.deviceCount() < size) notes.gatherOutOfMemory = 'skipped: the ranks share a GPU';
  else {
    const big = 8192;
    const filler: DeviceArray[] = [];
    const fill = () => {
      ck.trimMemoryPool(device);
      for (const elements of [1 << 28, 1 << 24]) {
        for (;;) {
          try {
            filler.push(ck.empty('int32', elements, { device }));
          } catch {
            break;
          }
        }
      }
      // Room for the small arrays of the agreement on both ranks, not for the 256 MiB matrix.
      for (let i = 0; i < 2; i++) filler.pop()?.free();
      notes.filledBytes = filler.reduce((s, a) => s + a.byteLength, 0);
    };
    // The input is the caller's band, overwritten in place: the run frees nothing large at its end,
    // so the matrix cannot take memory the run gave back (with a generated input, rank 0's band and
    // its output, freed before the gather, are together as large as the matrix on 2 ranks: a run on
    // 4 × H200 gathered with no error).
    const { rows } = ck.apspBandOf(big, size, rank);
    using band = ck.full('int32', rows * big, 1, { device });
    await expectThrow(
      `gather of n = ${big} with rank 0's GPU full`,
      () =>
        ck.apspDistributed(
          comm,
          { band, n: big, inPlace: true },
          {
            output: 'gather',
            validate: false,
            onRound: (done, total) => {
              if (rank === 0 && done === total) fill();
            },
          },
        ),
      (e) =>
        rank === 0
          ? e instanceof ck.CudaError && e.code === 'cudaErrorMemoryAllocation'
          : /allocating the 8192×8192 matrix on rank 0 failed on rank 0/.test(String(e)),
    );
    for (const a of filler) a.free();
    ck.trimMemoryPool(device);
    await usable(comm, 'after the failed gather');
  }

  // 4. A `{ file }` output that fails on one rank (its relative path leads elsewhere: another working
  // directory) leaves the target as it was and no temporary file; then the same call succeeds.
  {
    const mineDir = rank === 0 ? shared : dir;
    const home = process.cwd();
    process.chdir(mineDir);
    const target = path.join(shared, 'out.bin');
    const old = Buffer.from('an older file that must survive');
    if (rank === 0) fs.writeFileSync(target, old);
    await comm.barrier();
    await expectThrow(
      '{ file } output failing on rank 1',
      () => ck.apspDistributed(comm, { random, n }, { output: { file: 'out.bin' } }),
      (e) => (rank !== 0 ? /ENOENT/.test(String(e)) : /writing .*out\.bin.* failed on ranks? 1\b/.test(String(e))),
    );
    if (rank === 0) {
      check(fs.readFileSync(target).equals(old), '{ file } failing on rank 1: the target was changed');
      const left = fs.readdirSync(shared).filter((f) => f.includes('partial'));
      check(left.length === 0, `{ file } failing on rank 1: temporary files left: ${left.join(', ')}`);
    }
    process.chdir(shared);
    await comm.barrier();
    await ck.apspDistributed(comm, { random, n }, { output: { file: 'out.bin' } });
    if (rank === 0) {
      using g = ck.randomGraph(n, { ...random, device });
      using d = ck.apsp(g, n, { method: 'fast', validate: false });
      const back = ck.readDistances(target, { format: 'binary' });
      check(ck.cpu.firstMismatch(back.matrix, await d.toHost()) < 0, '{ file } after the failure: the distances');
    }
    await comm.barrier();
    process.chdir(home);
  }

  // 5. A free() of the input: during the call (before its rounds), every rank throws and the
  // communicator stays usable; right after the native run starts, the run still reads the rows it
  // was given (the free waits for it), though the pool hands out memory again at once.
  {
    const band = ck.upload(rowsOf(w, n, row0, rows), { device });
    const p = ck.apspDistributed(comm, { band, n });
    if (rank === 0) band.free();
    await expectThrow(
      'input band freed by rank 0 during the call',
      () => p,
      (e) => (rank === 0 ? e instanceof TypeError && /freed/.test(e.message) : /failed on rank 0/.test(String(e))),
    );
    band.free();
    await usable(comm, 'after the freed input');
    for (const m of [1000, 1024]) {
      const wm = hostGraph(m, 0.02, 77 + m);
      const b = ck.apspBandOf(m, size, rank);
      const input = ck.upload(rowsOf(wm, m, b.row0, b.rows), { device });
      using out = ck.empty('int32', b.rows * m, { device });
      const run = native.apspDistRun(comm.handle(), input.handle(), out.handle(), m, undefined);
      input.free();
      // Without the hold this takes the freed memory and zeroes it before the run reads it.
      using junk = ck.empty('int32', b.rows * m, { device }).fill(0);
      await run;
      const got = await out.toHost();
      check(
        ck.cpu.firstMismatch(got, rowsOf(ck.cpu.apsp(wm, m), m, b.row0, b.rows)) < 0,
        `native run, n = ${m}, its input freed right after the call: wrong distances`,
      );
      check(
        (await junk.toHost()).every((v) => v === 0),
        `native run, n = ${m}: another array was written`,
      );
    }
  }

  comm.destroy();
  fs.rmSync(dir, { recursive: true, force: true });
  notes.rank = rank;
  notes.size = size;
  finish();
}

async function memoryMode(): Promise<void> {
  const comm = await init();
  const { device } = comm;
  // Warm up: streams, NCCL's buffers, the pool; then nothing of ours is left but what we measure.
  (await ck.apspDistributed(comm, { random: { seed: 1 }, n: 256 })).band?.free();
  const mib = (b: number) => Math.round(b / 2 ** 20);
  const peaks: Record<string, number> = {};
  for (const [n, inPlace] of [
    [16384, true],
    [16384, false],
    [16384 - 61, true],
  ] as const) {
    const random = { density: 0.01, seed: n };
    const band = ck.randomGraph(n, { ...random, device }); // one rank: the band is the whole matrix
    using ref = ck.apsp(band, n, { method: 'fast', validate: false });
    ck.synchronize(device);
    ck.trimMemoryPool(device);
    const base = ck.memoryInfo(device).free;
    let least = base;
    const res = await ck.apspDistributed(
      comm,
      { band, n, inPlace },
      { validate: false, onRound: () => (least = Math.min(least, ck.memoryInfo(device).free)) },
    );
    const extra = base - least;
    const bandBytes = n * n * 4;
    const panels = 2 * 128 * Math.ceil(n / 128) * 128 * 4;
    const padded = Math.ceil(n / 128) * 128 * Math.ceil(n / 128) * 128 * 4;
    const label = `n = ${n}${inPlace ? ', inPlace' : ''}`;
    peaks[label] = mib(extra);
    // What the docs promise, with 48 MiB for streams, events and the pool's rounding.
    const slack = 48 * 2 ** 20;
    const allowed = panels + (inPlace ? 0 : bandBytes) + (n % 128 === 0 ? 0 : padded) + slack;
    check(extra <= allowed, `${label}: ${mib(extra)} MiB besides the band, allowed ${mib(allowed)} MiB`);
    if (!inPlace)
      check(extra >= bandBytes, `${label}: ${mib(extra)} MiB, less than the output band (sampling missed it?)`);
    check(ck.deviceRelativeError(res.band!, ref) === 0, `${label}: differs from single-GPU fast`);
    if (res.band !== band) res.band?.free();
    band.free();
  }
  notes.peakMiB = peaks;
  comm.destroy();
  finish();
}

// A malformed text graph: rank 0 alone reads it, and every rank must stop with an error at once
// rather than wait for rank 0 until the timeout.
async function cliBadGraphMode(): Promise<void> {
  const { apspDistributedCommand } = await import('../../lib/cli/apsp-dist');
  const file = process.argv[3];
  const env = ck.rankFromEnv();
  if (process.env.CK_HOSTID_PER_RANK) process.env.NCCL_HOSTID = `ck-apsp-cli-${env.rank}`;
  const start = Date.now();
  try {
    const never = path.join(os.tmpdir(), `ck-never-${process.pid}.txt`);
    await apspDistributedCommand(file, never, { method: 'auto', progress: false, device: 0 });
    check(false, 'a malformed graph: no error');
  } catch (e) {
    check(
      env.rank === 0
        ? /GraphFileError|line/.test(`${(e as Error).name} ${String(e)}`)
        : /failed on rank 0/.test(String(e)),
      `rank ${env.rank}: ${String(e)}`,
    );
  }
  notes.ms = Date.now() - start;
  notes.rank = env.rank;
  finish();
}

const modes: Record<string, () => Promise<void>> = {
  checks: checksMode,
  memory: memoryMode,
  'cli-bad-graph': cliBadGraphMode,
};
const run = modes[mode];
if (!run) {
  console.error(`unknown mode ${mode}; one of ${Object.keys(modes).join(', ')}`);
  process.exit(2);
}
run().catch((e: unknown) => {
  failures.push(`threw: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  finish();
});
