// Data-parallel training of the Mlp: the checks and the start of Mlp.train with a communicator (the
// per-batch gradient sums are queued by the native training loop itself).
import { type DeviceArray, empty, upload } from '../array';
import { typeError, rangeError, inWords } from '../errors';
import { Communicator } from './communicator';

const ignore = () => {};

/** The reservation a data-parallel `trainAsync` holds on its communicator from start to end. */
const TRAINING = 'Mlp.trainAsync';

/**
 * @internal The communicator of `Mlp.train`, checked: live, and on the network's device. Whether it
 * is free is checked by its first collective (train) or waited for (trainAsync).
 */
export function dataParallelHandle(comm: unknown, device: number): Communicator {
  if (!(comm instanceof Communicator)) throw typeError('options.comm', 'a Communicator', comm);
  comm.live('Mlp.train');
  if (comm.device !== device) {
    throw rangeError(
      'options.comm',
      `on the network's device ${device}`,
      inWords(`a communicator on device ${comm.device}`),
    );
  }
  return comm;
}

/**
 * @internal Before the first epoch: every rank checks that all agree on the parameter count and the
 * number of batches per epoch (a mismatch would pair one rank's gradient sum with another's error sum,
 * or leave a rank waiting), then rank 0's weights and momentum are broadcast so that every rank starts
 * from the same network. Blocks until the check is done (the broadcasts are queued before training).
 */
export function dataParallelStart(
  comm: Communicator,
  params: DeviceArray<'float32'>,
  momentum: DeviceArray<'float32'>,
  patterns: number,
  batch: number,
): void {
  const batches = Math.ceil(patterns / batch);
  using mine = upload(Int32Array.of(params.length, batches), { device: comm.device });
  using all = empty('int32', 2 * comm.size, { device: comm.device });
  // Failures surface through waitSync (and later calls); the promises must not go unhandled.
  comm.allGather(mine, { out: all }).catch(ignore);
  comm.waitSync();
  checkAgreement(comm, all.toHostSync(), params.length, batches);
  comm.broadcast(params, 0).catch(ignore);
  comm.broadcast(momentum, 0).catch(ignore);
}

/**
 * @internal {@link dataParallelStart} for `Mlp.trainAsync`: the same check and broadcasts, awaiting
 * the other ranks instead of blocking the JS thread. The training reserves the communicator first
 * (queued behind another training on it, in call order, which is the same on every rank), so that
 * its gradient sums never interleave with another sequence's collectives; it holds it until it calls
 * the release this resolves to (when its last epoch is done, or it fails). A collective issued
 * meanwhile throws, saying the communicator is busy.
 */
export async function dataParallelStartAsync(
  comm: Communicator,
  params: DeviceArray<'float32'>,
  momentum: DeviceArray<'float32'>,
  patterns: number,
  batch: number,
): Promise<() => void> {
  const release = await comm.reserve(TRAINING);
  try {
    const batches = Math.ceil(patterns / batch);
    using mine = upload(Int32Array.of(params.length, batches), { device: comm.device });
    using all = empty('int32', 2 * comm.size, { device: comm.device });
    await comm.as(TRAINING, () => comm.allGather(mine, { out: all }));
    checkAgreement(comm, await all.toHost(), params.length, batches);
    comm.as(TRAINING, () => comm.broadcast(params, 0)).catch(ignore);
    comm.as(TRAINING, () => comm.broadcast(momentum, 0)).catch(ignore);
    return release;
  } catch (e) {
    release();
    throw e;
  }
}

function checkAgreement(comm: Communicator, got: Int32Array, parameters: number, batches: number): void {
  const disagree: string[] = [];
  for (let r = 0; r < comm.size; r++) {
    if (got[2 * r] !== parameters || got[2 * r + 1] !== batches) {
      disagree.push(`rank ${r}: ${got[2 * r]} parameters, ${got[2 * r + 1]} batches`);
    }
  }
  if (disagree.length > 0) {
    throw new RangeError(
      `Mlp.train with comm: the ranks must agree on the network and on the batches per epoch ` +
        `(rank ${comm.rank}: ${parameters} parameters, ${batches} batches; ${disagree.join('; ')})`,
    );
  }
}
