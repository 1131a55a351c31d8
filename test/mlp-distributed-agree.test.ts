// What the ranks of a data-parallel training agree on before the first epoch, without a GPU: the
// ranks are calls in this process on stand-in communicators whose allGather meets in memory, and
// device arrays are host copies. A rank that cannot train must make every rank throw at once: the
// others would otherwise wait in their first gradient sum until the communicator's timeout (a rank
// left waiting shows as a test that runs past HANG_MS). The trainings themselves are in
// dist-gpu.test.ts.
import type { Communicator } from '../lib/distributed/communicator';
import { dataParallelStartAsync, reserveForTraining } from '../lib/distributed/mlp';
import { Mlp } from '../lib/ops/mlp';
import { standInCommunicator } from './helpers/stand-in-comm';

jest.mock('../lib/array', () => {
  const actual = jest.requireActual('../lib/array');
  const typed = { int32: Int32Array, float32: Float32Array, float64: Float64Array } as const;
  return {
    ...actual,
    upload: (host: Int32Array | Float32Array | Float64Array) => hostArray(host.slice()),
    empty: (dtype: keyof typeof typed, length: number) => hostArray(new typed[dtype](length)),
  };
});
// What Mlp.trainAsync does on the device before the agreement: the finite checks' sums, the workspace.
jest.mock('../lib/ops/scan', () => {
  const sum = (a: { data: ArrayLike<number> }) => Array.from(a.data).reduce((s, v) => s + v, 0);
  return { ...jest.requireActual('../lib/ops/scan'), reduce: sum, reduceAsync: async (a: never) => sum(a) };
});
jest.mock('../lib/native', () => {
  const actual = jest.requireActual('../lib/native');
  return { ...actual, native: { ...actual.native, mlpWorkspace: () => 16 } };
});

function hostArray(data: Int32Array | Float32Array | Float64Array) {
  const a = {
    data,
    length: data.length,
    freed: false,
    toHost: async () => data,
    fill(v: number) {
      data.fill(v);
      return a;
    },
    handle: () => ({}),
    free() {
      a.freed = true;
    },
    [Symbol.dispose]() {},
  };
  return a;
}
type HostArray = ReturnType<typeof hostArray>;

/** `size` communicators around stand-in handles whose allGather (into options.out) meets in memory. */
function fakeJob(size: number): Communicator[] {
  let parts: HostArray['data'][] = [];
  let outs: HostArray[] = [];
  let wake: (() => void)[] = [];
  return Array.from({ length: size }, (_, rank) => {
    const comm = standInCommunicator(rank, size);
    Object.assign(comm, {
      allGather: (arr: HostArray, options: { out: HostArray }) => {
        comm.handle('allGather');
        return new Promise<void>((resolve) => {
          parts[rank] = arr.data;
          outs[rank] = options.out;
          wake[rank] = resolve;
          if (parts.filter(Boolean).length === size) {
            for (const out of outs) parts.forEach((p, r) => out.data.set(p, r * p.length));
            const all = wake;
            parts = [];
            outs = [];
            wake = [];
            for (const w of all) w();
          }
        });
      },
      broadcast: () => {
        comm.handle('broadcast');
        return Promise.resolve();
      },
    });
    return comm;
  });
}

const HANG_MS = 20_000;
const params = hostArray(new Float32Array(7)) as never;
const momentum = hostArray(new Float32Array(7)) as never;

/** dataParallelStartAsync as trainAsync calls it: reserved at the call, 20 patterns in batches of 5. */
function start(comm: Communicator, epochs = 3, failure: unknown = null) {
  const mine = failure === null ? { params, momentum, patterns: 20, batch: 5, epochs } : null;
  return dataParallelStartAsync(comm, reserveForTraining(comm), mine, Promise.resolve(failure));
}

test(
  'a rank whose own checks failed (a NaN in its shard): it throws its error, the others one naming it; the communicator is free again',
  async () => {
    const comms = fakeJob(3);
    const nan = new RangeError('X must hold only finite numbers');
    const settled = await Promise.allSettled(comms.map((c) => start(c, 3, c.rank === 1 ? nan : null)));
    expect(settled.map((s) => (s.status === 'rejected' ? (s.reason as Error).message : 'trains'))).toEqual([
      'Mlp.train with comm: rank 1 failed before training (see its error), so no rank trains',
      'X must hold only finite numbers',
      'Mlp.train with comm: rank 1 failed before training (see its error), so no rank trains',
    ]);
    for (const c of comms) expect(() => c.handle('allReduce')).not.toThrow();
  },
  HANG_MS,
);

test(
  'the epochs, as the batches per epoch and the network: a mismatch is a RangeError on every rank',
  async () => {
    const comms = fakeJob(2);
    const settled = await Promise.allSettled(comms.map((c) => start(c, c.rank === 0 ? 3 : 4)));
    for (const s of settled) {
      expect(s.status).toBe('rejected');
      expect((s as PromiseRejectedResult).reason).toBeInstanceOf(RangeError);
      const message = (s as PromiseRejectedResult).reason.message as string;
      expect(message).toMatch(/must agree on the network, on the batches per epoch and on the epochs/);
      expect(message).toContain('rank 0: 7 parameters, 4 batches, 3 epochs');
      expect(message).toContain('rank 1: 7 parameters, 4 batches, 4 epochs');
    }
  },
  HANG_MS,
);

test(
  'epochs that differ by a multiple of 2^32 (or any other amount) still differ',
  async () => {
    // Number.MAX_SAFE_INTEGER epochs ("until the signal aborts") against 2^32 − 1: both are −1 as int32.
    for (const [a, b] of [
      [3, 2 ** 32 + 3],
      [Number.MAX_SAFE_INTEGER, 2 ** 32 - 1],
    ]) {
      const comms = fakeJob(2);
      const settled = await Promise.allSettled(comms.map((c) => start(c, c.rank === 0 ? a : b)));
      for (const s of settled) {
        const message = s.status === 'rejected' ? String((s as PromiseRejectedResult).reason.message) : 'trains';
        expect(message).toMatch(/must agree on the network, on the batches per epoch and on the epochs/);
        expect(message).toContain(`rank 0: 7 parameters, 4 batches, ${a} epochs`);
        expect(message).toContain(`rank 1: 7 parameters, 4 batches, ${b} epochs`);
      }
    }
  },
  HANG_MS,
);

test(
  'every rank agrees: each holds the communicator for its training until it releases it',
  async () => {
    const comms = fakeJob(2);
    const releases = await Promise.all(comms.map((c) => start(c)));
    for (const c of comms) expect(() => c.handle('allReduce')).toThrow(/busy with Mlp.trainAsync/);
    for (const release of releases) release();
    for (const c of comms) expect(() => c.handle('allReduce')).not.toThrow();
  },
  HANG_MS,
);

describe("Mlp.trainAsync with comm: whatever fails on one rank before training reaches every rank's agreement", () => {
  // Two patterns of 2 inputs and 1 target per rank unless a case says otherwise.
  const shard = (P: number) => ({ X: new Float32Array(2 * P).fill(0.5), T: new Float32Array(P).fill(1) });
  const cases: [string, (rank: number) => [Float32Array, Float32Array, object], RegExp][] = [
    // Uneven shards with one batch size: the smaller shard cannot hold a batch.
    [
      'a batch larger than the last rank’s shard',
      (r) => [shard(r === 1 ? 3 : 4).X, shard(r === 1 ? 3 : 4).T, { batchSize: 4 }],
      /options\.batchSize/,
    ],
    ['T shorter than X on the last rank', (r) => [shard(4).X, shard(r === 1 ? 3 : 4).T, {}], /^T /],
    [
      'a signal already aborted on the last rank',
      (r) => [shard(4).X, shard(4).T, r === 1 ? { signal: AbortSignal.abort() } : {}],
      /abort/i,
    ],
    ['a NaN in the last rank’s X', (r) => [r === 1 ? shard(4).X.fill(NaN) : shard(4).X, shard(4).T, {}], /finite/],
  ];
  test.each(cases)(
    '%s: that rank rejects with its error, the others at once with one naming it',
    async (_what, per, own) => {
      const comms = fakeJob(2);
      const nets = comms.map(() => new Mlp({ layers: [2, 3, 1], eta: 0.1, device: 0, method: 'custom' }));
      const settled = Promise.allSettled(
        comms.map((comm, r) => {
          const [X, T, extra] = per(r);
          return nets[r].trainAsync(X, T, { epochs: 2, comm, ...extra });
        }),
      );
      let timer: NodeJS.Timeout | undefined;
      const hung = new Promise<'a rank is still waiting'>(
        (r) => (timer = setTimeout(() => r('a rank is still waiting'), 3000)),
      );
      const outcome = await Promise.race([settled, hung]);
      clearTimeout(timer);
      expect(outcome).not.toBe('a rank is still waiting');
      const [r0, r1] = outcome as PromiseSettledResult<unknown>[];
      expect(r1.status === 'rejected' && String((r1 as PromiseRejectedResult).reason.message)).toMatch(own);
      expect(r0.status === 'rejected' && (r0 as PromiseRejectedResult).reason.message).toBe(
        'Mlp.train with comm: rank 1 failed before training (see its error), so no rank trains',
      );
      // Nothing is left reserved.
      for (const c of comms) expect(() => c.handle('allReduce')).not.toThrow();
    },
    HANG_MS,
  );

  test(
    'a training that fails on one rank still takes its turn there: the sequence after it pairs alike on every rank',
    async () => {
      const comms = fakeJob(2);
      const nets = comms.map(() => new Mlp({ layers: [2, 3, 1], eta: 0.1, device: 0, method: 'custom' }));
      const settled = Promise.all(
        comms.map((comm, r) => {
          const P = r === 1 ? 3 : 4;
          const X = new Float32Array(2 * P);
          const T = new Float32Array(P);
          // Rank 1's shard cannot hold a batch of 4; then a second training (its start) on the same communicator.
          const first = nets[r].trainAsync(X, T, { epochs: 2, batchSize: 4, comm }).then(
            () => 'trained',
            (e: Error) => e.message,
          );
          return Promise.all([first, start(comm).then((release) => (release(), 'second agreed'))]);
        }),
      );
      let timer: NodeJS.Timeout | undefined;
      const hung = new Promise<string>((r) => (timer = setTimeout(() => r('a rank is still waiting'), 3000)));
      const outcome = await Promise.race([settled, hung]);
      clearTimeout(timer);
      expect(outcome).toEqual([
        ['Mlp.train with comm: rank 1 failed before training (see its error), so no rank trains', 'second agreed'],
        [expect.stringMatching(/options\.batchSize/), 'second agreed'],
      ]);
    },
    HANG_MS,
  );
});
