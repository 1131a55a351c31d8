// How the ranks of apspDistributed agree before they do anything together, without a GPU: the ranks
// are calls in this process on stand-in communicators whose allGather meets in memory, and device
// uploads are host copies. Each case must end with every rank throwing at once, or (the last ones,
// with the rounds a stand-in too) with every rank done (a rank left waiting shows as a test that runs
// past HANG_MS). The runs themselves are in apsp-distributed.test.ts and dist-gpu.test.ts.
import {
  agreeOnFailure,
  apspBellmanCheck,
  apspDistributed,
  type ApspDistInput,
  type ApspDistOptions,
} from '../lib/distributed/apsp';
import { NcclError } from '../lib/distributed/nccl';
import { native } from '../lib/native';
import { standInCommunicator } from './helpers/stand-in-comm';

// Device arrays as host copies: all agree() needs of them (and, for the runs below, a band).
jest.mock('../lib/array', () => {
  const actual = jest.requireActual('../lib/array');
  return {
    ...actual,
    upload: (host: Float64Array) => mockHostArray(Float64Array.from(host)),
    empty: (_dtype: string, length: number) => mockHostArray(new Float64Array(length)),
  };
});
// The weights' check of a run (the band is a host copy of zeros: weights in range).
jest.mock('../lib/ops/scan', () => ({ ...jest.requireActual('../lib/ops/scan'), reduce: () => 0 }));

function mockHostArray(data: Float64Array, delayMs = 0) {
  return {
    data,
    length: data.length,
    freed: false,
    handle: () => ({}),
    toHost: async () => {
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      return data;
    },
    free() {},
    [Symbol.dispose]() {},
  };
}

/**
 * `size` communicators around stand-in handles (`{ rank }`), whose allGather meets in memory as
 * NCCL's do: the k-th collective of every rank meets the k-th of the others, whoever issued it.
 * `log[r]` lists rank r's collectives in issue order (an agreement shows its n, when it has one);
 * `slow(rank, data)` delays the host copy of a gathered result (a rank whose GPU or pool thread is
 * slower), in ms.
 */
function fakeJob(size: number, slow: (rank: number, data: Float64Array) => number = () => 0) {
  const meetings: { parts: Float64Array[]; wake: ((all: Float64Array) => void)[] }[] = [];
  const issued = Array.from({ length: size }, () => 0);
  const log: string[][] = Array.from({ length: size }, () => []);
  const comms = Array.from({ length: size }, (_, rank) => {
    const comm = standInCommunicator(rank, size);
    // As Communicator#queue does: a reserved communicator refuses calls from outside the sequence.
    Object.assign(comm, {
      allGather: (arr: ReturnType<typeof mockHostArray>) => {
        comm.handle('allGather');
        log[rank].push(arr.length > 1 ? `agree n=${arr.data[1]}` : 'agree');
        const k = issued[rank]++;
        const m = (meetings[k] ??= { parts: [], wake: [] });
        return new Promise((resolve) => {
          m.parts[rank] = arr.data;
          m.wake[rank] = (all) => resolve(mockHostArray(all, slow(rank, all)));
          if (m.parts.filter(Boolean).length === size) {
            const all = new Float64Array(m.parts.reduce((s, p) => s + p.length, 0));
            m.parts.forEach((p, r) => all.set(p, r * p.length));
            for (const w of m.wake) w(all);
          }
        });
      },
    });
    return comm;
  });
  return { comms, log };
}

/** Every rank's call, settled: the error of each (null where one resolved). */
async function run(per: (rank: number) => [ApspDistInput, ApspDistOptions?], size = 2): Promise<(Error | null)[]> {
  const { comms } = fakeJob(size);
  const settled = await Promise.allSettled(comms.map((c) => apspDistributed(c, ...per(c.rank))));
  return settled.map((s) => (s.status === 'rejected' ? (s.reason as Error) : null));
}

const matrix = (n: number) => new Int32Array(n * n);
const HANG_MS = 20_000;
const input = (rank: number, n = 5): ApspDistInput => (rank === 0 ? { matrix: matrix(n), n } : { matrix: null });

describe('apspDistributed: what the ranks agree on before anything else', () => {
  test(
    'the output kind: every rank throws a RangeError naming the ranks and their values',
    async () => {
      const errors = await run((r) => [input(r), { output: r === 0 ? 'band' : 'gather' }], 3);
      for (const e of errors) {
        expect(e).toBeInstanceOf(RangeError);
        expect(e!.message).toBe(
          'apspDistributed: the ranks disagree on options.output (rank 0: band; ranks 1, 2: gather); every rank must pass the same',
        );
      }
    },
    HANG_MS,
  );

  test(
    '`validate`, the input kind, n',
    async () => {
      for (const e of await run((r) => [input(r), { validate: r !== 1 }]))
        expect(e?.message).toMatch(/disagree on options\.validate \(rank 0: true; rank 1: false\)/);
      for (const e of await run((r) => [r === 0 ? input(r) : { band: null, n: 5 }]))
        expect(e?.message).toMatch(/disagree on the input kind \(rank 0: \{ matrix \}; rank 1: \{ band, n \}\)/);
      for (const e of await run((r) => [r === 0 ? input(r) : { matrix: null, n: 6 }]))
        expect(e?.message).toMatch(/disagree on n \(rank 0: 5; rank 1: 6\)/);
    },
    HANG_MS,
  );

  test(
    'an argument error on one rank: that rank throws it, the others an Error naming the rank',
    async () => {
      const cases: [string, (r: number) => [ApspDistInput, ApspDistOptions?], RegExp][] = [
        ['output', (r) => [input(r), { output: r === 1 ? ('all' as never) : 'band' }], /options\.output/],
        ['validate', (r) => [input(r), { validate: r === 1 ? ('yes' as never) : true }], /options\.validate/],
        ['onRound', (r) => [input(r), { onRound: r === 1 ? (1 as never) : undefined }], /options\.onRound/],
        ['options', (r) => [input(r), r === 1 ? (null as never) : {}], /options must be an object/],
        ['input', (r) => [r === 1 ? (null as never) : input(r)], /input must be an object/],
        ['input.n', (r) => [r === 1 ? { matrix: null, n: -1 } : input(r)], /input\.n/],
      ];
      for (const [what, per, own] of cases) {
        const errors = await run(per);
        expect([what, errors[1]?.message]).toEqual([what, expect.stringMatching(own)]);
        expect([what, errors[0]?.message]).toEqual([
          what,
          'apspDistributed: reading the input failed on rank 1 (see its error)',
        ]);
      }
    },
    HANG_MS,
  );
});

test(
  'agreeOnFailure: the rank that failed throws its own error, the others one naming it',
  async () => {
    const { comms } = fakeJob(3);
    const own = new Error('bad line 3');
    const settled = await Promise.allSettled(
      comms.map((c) => agreeOnFailure(c, c.rank === 0 ? own : null, 'reading g.txt', 'apsp --distributed')),
    );
    expect(settled.map((s) => (s.status === 'rejected' ? (s.reason as Error).message : 'ok'))).toEqual([
      'bad line 3',
      'apsp --distributed: reading g.txt failed on rank 0 (see its error)',
      'apsp --distributed: reading g.txt failed on rank 0 (see its error)',
    ]);
    // Nobody failed: every rank goes on.
    await expect(Promise.all(fakeJob(2).comms.map((c) => agreeOnFailure(c, null, 'x', 'y')))).resolves.toEqual([
      undefined,
      undefined,
    ]);
  },
  HANG_MS,
);

describe('one apspDistributed at a time on a communicator (its collectives are one sequence)', () => {
  // A run that gets past its agreements: random input (made by a stand-in), the rounds a stand-in
  // that logs which run made them on which rank.
  const random = { density: 0.5, seed: 3 };
  beforeEach(() => {
    jest.spyOn(native, 'apspRandomGraphRows').mockImplementation(() => undefined);
    jest.spyOn(native, 'apspDistRun').mockImplementation(async (h: unknown, _in: unknown, _out: unknown, n: number) => {
      running.push(`rank ${(h as { rank: number }).rank}: run n=${n}`);
      await new Promise((r) => setTimeout(r, 5));
    });
  });
  afterEach(() => {
    jest.restoreAllMocks();
    running.length = 0;
  });
  const running: string[] = [];

  test(
    'two runs at once, the same calls on every rank: every rank makes their collectives in the same order',
    async () => {
      // Rank 1's copy of the first run's first agreement comes back late (its pool thread was
      // busy): without the reservation it then goes on with the second run first, and the ranks
      // pair one run's collectives with the other's (NCCL would hang or mix the two graphs).
      const { comms, log } = fakeJob(2, (rank, all) => (rank === 1 && all[1] === 5 ? 50 : 0));
      const runs = comms.map((c) =>
        Promise.all([apspDistributed(c, { random, n: 5 }), apspDistributed(c, { random, n: 6 })]),
      );
      const results = await Promise.all(runs);
      expect(results.map((r) => r.map((x) => x.n))).toEqual([
        [5, 6],
        [5, 6],
      ]);
      // The rounds (NCCL broadcasts of n-wide panels) of the same run on both ranks, in call order.
      const rounds = (rank: number) => running.filter((r) => r.startsWith(`rank ${rank}:`)).map((r) => r.slice(8));
      expect({ rank1: rounds(1) }).toEqual({ rank1: rounds(0) });
      expect(rounds(0)).toEqual(['run n=5', 'run n=6']);
      // And the agreements: one run's, then the other's.
      expect({ rank1: log[1] }).toEqual({ rank1: log[0] });
      expect(log[0]).toEqual(['agree n=5', 'agree', 'agree n=6', 'agree']);
    },
    HANG_MS,
  );

  test(
    'from the call on, a collective from outside throws that the communicator is busy; free again after',
    async () => {
      const { comms } = fakeJob(2);
      // Rank 0 alone has called: its run waits in the first agreement for rank 1.
      const first = apspDistributed(comms[0], { random, n: 5 });
      let e: unknown = null;
      try {
        comms[0].handle('allReduce');
      } catch (x) {
        e = x;
      }
      expect(e).toBeInstanceOf(NcclError);
      expect((e as NcclError).message).toMatch(/allReduce: the communicator is busy with apspDistributed/);
      await Promise.all([first, apspDistributed(comms[1], { random, n: 5 })]);
      expect(() => comms[0].handle('allReduce')).not.toThrow();
      // A run that fails (here: every rank disagrees on n) releases it too.
      const failed = await Promise.allSettled(comms.map((c) => apspDistributed(c, { random, n: 5 + c.rank })));
      expect(failed.map((f) => f.status)).toEqual(['rejected', 'rejected']);
      expect(() => comms[0].handle('allReduce')).not.toThrow();
      expect(() => comms[1].handle('allReduce')).not.toThrow();
    },
    HANG_MS,
  );
});

test(
  'apspBellmanCheck holds the communicator from its call to its end as well',
  async () => {
    const { comms } = fakeJob(2);
    // Both ranks pass a result without a band: every rank throws after the agreement.
    const checks = comms.map((c) => apspBellmanCheck(c, { n: 5, band: null }, { minWeight: 1 }));
    expect(() => comms[0].handle('allReduce')).toThrow(/busy with apspBellmanCheck/);
    const settled = await Promise.allSettled(checks);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected']);
    expect((settled[0] as PromiseRejectedResult).reason.message).toMatch(/result\.band/);
    expect(() => comms[0].handle('allReduce')).not.toThrow();
  },
  HANG_MS,
);
