// What the ranks of a data-parallel training agree on before the first epoch, without a GPU: the
// ranks are calls in this process on stand-in communicators whose allGather meets in memory, and
// device arrays are host copies. A rank that cannot train must make every rank throw at once: the
// others would otherwise wait in their first gradient sum until the communicator's timeout (a rank
// left waiting shows as a test that runs past HANG_MS). The trainings themselves are in
// dist-gpu.test.ts.
import type { Communicator } from '../lib/distributed/communicator';
import { dataParallelStartAsync } from '../lib/distributed/mlp';
import { standInCommunicator } from './helpers/stand-in-comm';

jest.mock('../lib/array', () => {
  const actual = jest.requireActual('../lib/array');
  return {
    ...actual,
    upload: (host: Int32Array) => hostArray(Int32Array.from(host)),
    empty: (_dtype: string, length: number) => hostArray(new Int32Array(length)),
  };
});

function hostArray(data: Int32Array) {
  return { data, length: data.length, toHost: async () => data, free() {}, [Symbol.dispose]() {} };
}
type HostArray = ReturnType<typeof hostArray>;

/** `size` communicators around stand-in handles whose allGather (into options.out) meets in memory. */
function fakeJob(size: number): Communicator[] {
  let parts: Int32Array[] = [];
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
const params = hostArray(new Int32Array(7)) as never;
const momentum = hostArray(new Int32Array(7)) as never;

test(
  'a rank whose own checks failed (a NaN in its shard): it throws its error, the others one naming it; the communicator is free again',
  async () => {
    const comms = fakeJob(3);
    const nan = new RangeError('X must hold only finite numbers');
    const settled = await Promise.allSettled(
      comms.map((c) =>
        dataParallelStartAsync(c, params, momentum, 20, 5, 3, Promise.resolve(c.rank === 1 ? nan : null)),
      ),
    );
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
    const settled = await Promise.allSettled(
      comms.map((c) => dataParallelStartAsync(c, params, momentum, 20, 5, c.rank === 0 ? 3 : 4)),
    );
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
  'every rank agrees: each holds the communicator for its training until it releases it',
  async () => {
    const comms = fakeJob(2);
    const releases = await Promise.all(comms.map((c) => dataParallelStartAsync(c, params, momentum, 20, 5, 3)));
    for (const c of comms) expect(() => c.handle('allReduce')).toThrow(/busy with Mlp.trainAsync/);
    for (const release of releases) release();
    for (const c of comms) expect(() => c.handle('allReduce')).not.toThrow();
  },
  HANG_MS,
);
