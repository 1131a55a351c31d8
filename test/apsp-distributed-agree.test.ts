// How the ranks of apspDistributed agree before they do anything together, without a GPU: the ranks
// are calls in this process on stand-in communicators whose allGather meets in memory, and device
// uploads are host copies. Each case must end with every rank throwing at once (a rank left waiting
// shows as a test that runs past HANG_MS). The runs themselves are in apsp-distributed.test.ts and
// dist-gpu.test.ts.
import { agreeOnFailure, apspDistributed, type ApspDistInput, type ApspDistOptions } from '../lib/distributed/apsp';
import { Communicator } from '../lib/distributed/communicator';

// Device arrays as host copies: all agree() needs of them.
jest.mock('../lib/array', () => {
  const actual = jest.requireActual('../lib/array');
  return {
    ...actual,
    upload: (host: Float64Array) => mockHostArray(Float64Array.from(host)),
  };
});

function mockHostArray(data: Float64Array) {
  return { data, length: data.length, toHost: async () => data, free() {}, [Symbol.dispose]() {} };
}

/** `size` stand-in communicators whose allGather meets in memory, in rank order. */
function fakeJob(size: number): Communicator[] {
  let parts: (Float64Array | undefined)[] = [];
  let waiting: ((all: Float64Array) => void)[] = [];
  return Array.from({ length: size }, (_, rank) => {
    const comm = Object.create(Communicator.prototype) as Communicator;
    Object.assign(comm, {
      rank,
      size,
      device: 0,
      handle: () => ({}),
      allGather: (arr: ReturnType<typeof mockHostArray>) =>
        new Promise((resolve) => {
          parts[rank] = arr.data;
          waiting.push((all) => resolve(mockHostArray(all)));
          if (parts.filter(Boolean).length === size) {
            const all = new Float64Array(parts.reduce((s, p) => s + p!.length, 0));
            parts.forEach((p, r) => all.set(p!, r * p!.length));
            const wake = waiting;
            parts = [];
            waiting = [];
            for (const w of wake) w(all);
          }
        }),
    });
    return comm;
  });
}

/** Every rank's call, settled: the error of each (null where one resolved). */
async function run(per: (rank: number) => [ApspDistInput, ApspDistOptions?], size = 2): Promise<(Error | null)[]> {
  const comms = fakeJob(size);
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
    const comms = fakeJob(3);
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
    await expect(Promise.all(fakeJob(2).map((c) => agreeOnFailure(c, null, 'x', 'y')))).resolves.toEqual([
      undefined,
      undefined,
    ]);
  },
  HANG_MS,
);
