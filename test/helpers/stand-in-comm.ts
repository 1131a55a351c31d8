// A Communicator around a stand-in handle (`{ rank }`) instead of NCCL's, for the tests that run the
// ranks of a job as calls in one process (the agreement tests): they replace its collectives with
// ones that meet in memory. The constructor's arguments: handle, rank, size, device, timeoutMs,
// address (none), and how the job was configured.
import { Communicator } from '../../lib/distributed/communicator';

export function standInCommunicator(rank: number, size: number): Communicator {
  return new (Communicator as unknown as new (...a: unknown[]) => Communicator)(
    { rank },
    rank,
    size,
    0,
    1000,
    undefined,
    'options',
  );
}
