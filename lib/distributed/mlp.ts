// Data-parallel training of the Mlp: the checks and the start of Mlp.train with a communicator (the
// per-batch gradient sums are queued by the native training loop itself).
import { type DeviceArray, empty, upload } from '../array';
import { typeError, rangeError, inWords } from '../errors';
import { Communicator } from './communicator';

const ignore = () => {};

/** The reservation a data-parallel `trainAsync` holds on its communicator from start to end. */
const TRAINING = 'Mlp.trainAsync';

/**
 * @internal The communicator of `Mlp.train`, checked: a live {@link Communicator}. Whether it is on
 * the network's device is one of the rank's own checks ({@link dataParallelDevice}), and whether it
 * is free is checked by its first collective (train) or waited for (trainAsync).
 */
export function dataParallelComm(comm: unknown): Communicator {
  if (!(comm instanceof Communicator)) throw typeError('options.comm', 'a Communicator', comm);
  comm.live('Mlp.train');
  return comm;
}

/** @internal Throws unless `comm` is on the network's device. */
export function dataParallelDevice(comm: Communicator, device: number): void {
  if (comm.device !== device) {
    throw rangeError(
      'options.comm',
      `on the network's device ${device}`,
      inWords(`a communicator on device ${comm.device}`),
    );
  }
}

/** @internal What a rank brings to a data-parallel training once its own checks have passed. */
export interface DataParallelStart {
  params: DeviceArray<'float32'>;
  momentum: DeviceArray<'float32'>;
  patterns: number;
  batch: number;
  epochs: number;
}

/**
 * @internal Before the first epoch: every rank checks that all agree on the parameter count, the
 * number of batches per epoch and the epochs (a mismatch would pair one rank's gradient sum with
 * another's error sum, or leave a rank waiting), and learns whether a rank's own checks before it
 * failed (`failure`: a bad argument, a NaN in its shard, a batch larger than its shard; `start` is
 * then null): then every rank throws, the failed ones their own error, instead of the others
 * waiting in their first gradient sum, or here, until the timeout. Then rank 0's weights and
 * momentum are broadcast so that every rank starts from the same network. Blocks until the check
 * is done (the broadcasts are queued before training).
 */
export function dataParallelStart(comm: Communicator, start: DataParallelStart | null, failure: unknown): void {
  const mine = agreementOf(start, failure);
  using onDevice = upload(mine, { device: comm.device });
  using all = empty('float64', AGREED * comm.size, { device: comm.device });
  // Failures surface through waitSync (and later calls); the promises must not go unhandled.
  comm.allGather(onDevice, { out: all }).catch(ignore);
  comm.waitSync();
  checkAgreement(comm, all.toHostSync(), mine, failure);
  const { params, momentum } = start as DataParallelStart;
  comm.broadcast(params, 0).catch(ignore);
  comm.broadcast(momentum, 0).catch(ignore);
}

/**
 * @internal Reserves `comm` for a data-parallel `trainAsync`, at its call and before the rank's own
 * checks: sequences queue in call order, which must be the same on every rank, so a training
 * whose checks fail on one rank must still take its turn there (see {@link Communicator.reserve}).
 */
export function reserveForTraining(comm: Communicator): Promise<() => void> {
  return comm.reserve(TRAINING);
}

/**
 * @internal {@link dataParallelStart} for `Mlp.trainAsync`: the same check and broadcasts, awaiting
 * the other ranks instead of blocking the JS thread, once the reservation `reserved`
 * ({@link reserveForTraining}) is held; `failure` settles to this rank's own checks' error, or null.
 * The reservation keeps the training's gradient sums from interleaving with another sequence's
 * collectives; the training holds it until it calls the release this resolves to (when its last
 * epoch is done, or it fails); when this rejects, it is released. A collective issued meanwhile
 * throws, saying the communicator is busy.
 */
export async function dataParallelStartAsync(
  comm: Communicator,
  reserved: Promise<() => void>,
  start: DataParallelStart | null,
  failure: Promise<unknown>,
): Promise<() => void> {
  const release = await reserved;
  try {
    const failed = await failure;
    const mine = agreementOf(start, failed);
    using onDevice = upload(mine, { device: comm.device });
    using all = empty('float64', AGREED * comm.size, { device: comm.device });
    await comm.as(TRAINING, () => comm.allGather(onDevice, { out: all }));
    checkAgreement(comm, await all.toHost(), mine, failed);
    const { params, momentum } = start as DataParallelStart;
    comm.as(TRAINING, () => comm.broadcast(params, 0)).catch(ignore);
    comm.as(TRAINING, () => comm.broadcast(momentum, 0)).catch(ignore);
    return release;
  } catch (e) {
    release();
    throw e;
  }
}

// What each rank brings to the agreement: parameters, batches per epoch, epochs, and 1 when its own
// checks passed. In float64, exact for every count the checks allow (epochs up to 2^53 − 1): as
// int32, epochs that differ by a multiple of 2^32 would agree.
const AGREED = 4;

function agreementOf(start: DataParallelStart | null, failure: unknown) {
  if (start === null || failure !== null) return Float64Array.of(0, 0, 0, 0);
  const { params, patterns, batch, epochs } = start;
  return Float64Array.of(params.length, Math.ceil(patterns / batch), epochs, 1);
}

function checkAgreement(comm: Communicator, got: Float64Array, mine: Float64Array, failure: unknown): void {
  const failed: number[] = [];
  for (let r = 0; r < comm.size; r++) if (got[AGREED * r + 3] !== 1) failed.push(r);
  if (failure !== null) throw failure;
  if (failed.length > 0) {
    throw new Error(
      `Mlp.train with comm: rank${failed.length > 1 ? 's' : ''} ${failed.join(', ')} failed before training ` +
        '(see its error), so no rank trains',
    );
  }
  const [parameters, batches, epochs] = mine;
  const disagree: string[] = [];
  for (let r = 0; r < comm.size; r++) {
    const [p, b, e] = got.subarray(AGREED * r, AGREED * r + 3);
    if (p !== parameters || b !== batches || e !== epochs) {
      disagree.push(`rank ${r}: ${p} parameters, ${b} batches, ${e} epochs`);
    }
  }
  if (disagree.length > 0) {
    throw new RangeError(
      `Mlp.train with comm: the ranks must agree on the network, on the batches per epoch and on the ` +
        `epochs (rank ${comm.rank}: ${parameters} parameters, ${batches} batches, ${epochs} epochs; ` +
        `${disagree.join('; ')})`,
    );
  }
}
