// Where a rank learns who it is: the variables each launcher sets. One script runs unchanged under
// our launcher (torchrun's variables), mpirun, srun or MPICH's Hydra; only the launch line changes.

/** The launcher convention a {@link RankEnv} was read from. */
export type RankSource = 'options' | 'torchrun' | 'openmpi' | 'slurm' | 'pmi' | 'single';

/** One rank's place in the job, as {@link rankFromEnv} reads it. */
export interface RankEnv {
  /** This process's rank, 0 … size − 1. */
  rank: number;
  /** Number of ranks. */
  size: number;
  /** Rank among the processes of this host (picks the default device). */
  localRank: number;
  /** Processes on this host, when the launcher says. */
  localSize: number | undefined;
  /**
   * `host:port` where rank 0 serves the job's bootstrap store (MASTER_ADDR:MASTER_PORT), or undefined
   * for a single rank, which needs none.
   */
  address: string | undefined;
  /** Which variables these came from. */
  source: RankSource;
}

/** Default port of rank 0's bootstrap, as torchrun's. */
export const DEFAULT_MASTER_PORT = 29500;

/** Environment variables by name, as `process.env` holds them. */
export type EnvVars = Record<string, string | undefined>;

function intVar(env: EnvVars, name: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const v = Number(raw.trim());
  if (!/^\s*\d+\s*$/.test(raw) || !Number.isSafeInteger(v) || v < min || v > max) {
    throw new RangeError(
      `environment variable ${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(raw)}`,
    );
  }
  return v;
}

/** `host:port`, with IPv6 literals bracketed. */
export function bootstrapAddress(host: string, port: number): string {
  const h = host.trim();
  return h.includes(':') && !h.startsWith('[') ? `[${h}]:${port}` : `${h}:${port}`;
}

/**
 * This process's rank, size, local rank and rank 0's address, read from the first convention whose
 * variables are set:
 *
 * - torchrun and `cuda-kernels launch`: `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`;
 * - Open MPI (`mpirun`): `OMPI_COMM_WORLD_RANK`, `…_SIZE`, `…_LOCAL_RANK`, `…_LOCAL_SIZE`;
 * - Slurm (`srun`): `SLURM_PROCID`, `SLURM_NTASKS`, `SLURM_LOCALID`, `SLURM_NNODES`;
 * - MPICH / Hydra: `PMI_RANK`, `PMI_SIZE`, `MPI_LOCALRANKID`, `MPI_LOCALNRANKS`;
 * - none of them: a single rank (rank 0 of 1).
 *
 * Rank 0's address is `MASTER_ADDR`:`MASTER_PORT` (port default 29500), else — when every rank is
 * on this host — `127.0.0.1:MASTER_PORT`. Ranks on several hosts without MASTER_ADDR is an error
 * naming what to set. Bad values are RangeErrors naming the variable. `NCCL_COMM_ID` is not read:
 * NCCL would bootstrap on that fixed address itself, where two jobs can merge, so
 * `Communicator.init` refuses to run while it is set.
 */
export function rankFromEnv(env: EnvVars = process.env): RankEnv {
  let rank: number | undefined;
  let size: number | undefined;
  let localRank: number | undefined;
  let localSize: number | undefined;
  let singleHost: boolean | undefined;
  let source: RankSource;
  if (env.RANK !== undefined && env.WORLD_SIZE !== undefined) {
    source = 'torchrun';
    size = intVar(env, 'WORLD_SIZE', 1);
    rank = intVar(env, 'RANK', 0);
    localRank = intVar(env, 'LOCAL_RANK', 0);
    localSize = intVar(env, 'LOCAL_WORLD_SIZE', 1);
  } else if (env.OMPI_COMM_WORLD_RANK !== undefined && env.OMPI_COMM_WORLD_SIZE !== undefined) {
    source = 'openmpi';
    size = intVar(env, 'OMPI_COMM_WORLD_SIZE', 1);
    rank = intVar(env, 'OMPI_COMM_WORLD_RANK', 0);
    localRank = intVar(env, 'OMPI_COMM_WORLD_LOCAL_RANK', 0);
    localSize = intVar(env, 'OMPI_COMM_WORLD_LOCAL_SIZE', 1);
  } else if (env.SLURM_PROCID !== undefined && env.SLURM_NTASKS !== undefined) {
    source = 'slurm';
    size = intVar(env, 'SLURM_NTASKS', 1);
    rank = intVar(env, 'SLURM_PROCID', 0);
    localRank = intVar(env, 'SLURM_LOCALID', 0);
    const nodes = intVar(env, 'SLURM_NNODES', 1) ?? intVar(env, 'SLURM_JOB_NUM_NODES', 1);
    if (nodes !== undefined) singleHost = nodes === 1;
    // SLURM_NTASKS_PER_NODE is a plain count only when every node runs the same number of tasks.
    const perNode = env.SLURM_NTASKS_PER_NODE;
    if (perNode !== undefined && /^\d+$/.test(perNode)) localSize = intVar(env, 'SLURM_NTASKS_PER_NODE', 1);
    else if (singleHost) localSize = size;
  } else if (env.PMI_RANK !== undefined && env.PMI_SIZE !== undefined) {
    source = 'pmi';
    size = intVar(env, 'PMI_SIZE', 1);
    rank = intVar(env, 'PMI_RANK', 0);
    localRank = intVar(env, 'MPI_LOCALRANKID', 0);
    localSize = intVar(env, 'MPI_LOCALNRANKS', 1);
  } else {
    source = 'single';
    size = 1;
    rank = 0;
  }
  size ??= 1;
  rank ??= 0;
  if (rank >= size)
    throw new RangeError(`the rank (${rank}) must be below the size (${size}) (from the ${source} variables)`);
  if (localSize !== undefined && localRank !== undefined && localRank >= localSize)
    throw new RangeError(
      `the local rank (${localRank}) must be below the local size (${localSize}) (from the ${source} variables)`,
    );
  if (singleHost === undefined && localSize !== undefined) singleHost = localSize === size;
  localRank ??= singleHost ? rank : 0;
  return { rank, size, localRank, localSize, address: addressFromEnv(env, size, singleHost ?? false), source };
}

function addressFromEnv(env: EnvVars, size: number, singleHost: boolean): string | undefined {
  const host = env.MASTER_ADDR?.trim();
  const port = intVar(env, 'MASTER_PORT', 1, 65535) ?? DEFAULT_MASTER_PORT;
  if (host) return bootstrapAddress(host, port);
  if (size === 1) return undefined;
  if (singleHost) return bootstrapAddress('127.0.0.1', port);
  throw new RangeError(
    `${size} ranks on several hosts need rank 0's address: set MASTER_ADDR (and MASTER_PORT, default ` +
      `${DEFAULT_MASTER_PORT}) to rank 0's host, e.g. mpirun -x MASTER_ADDR=node0 -x MASTER_PORT=29500 …`,
  );
}

/** A job's token, and the variables it came from. */
export interface JobId {
  /** The token every rank of the job presents to rank 0's bootstrap store. */
  jobId: string;
  /** Where it came from: `options.jobId`, `CUDA_KERNELS_JOB_ID`, or the launcher's variables. */
  from: string;
}

/**
 * The token that tells this job's ranks from another job's at rank 0's bootstrap store, read from
 * the environment: `CUDA_KERNELS_JOB_ID` (which `cuda-kernels launch` sets to a random value for each
 * job) when set, else derived from the ids the launcher gives the job: Open MPI's `PMIX_NAMESPACE`
 * (Open MPI 5), `OMPI_MCA_ess_base_jobid` or `OMPI_MCA_orte_hnp_uri` (Open MPI 4); Slurm's
 * `SLURM_JOB_ID` and `SLURM_STEP_ID` (two `srun`s in one allocation differ); torchrun's
 * `TORCHELASTIC_RUN_ID` (unless `none`). Null when none applies (`Communicator.init` then uses a
 * fixed default and warns). Only the variables of the convention `rankFromEnv` reads are used.
 */
export function jobIdFromEnv(env: EnvVars = process.env): JobId | null {
  const explicit = env.CUDA_KERNELS_JOB_ID?.trim();
  if (explicit) return { jobId: explicit, from: 'CUDA_KERNELS_JOB_ID' };
  const first = (prefix: string, names: string[]): JobId | null => {
    for (const name of names) {
      const v = env[name]?.trim();
      if (v) return { jobId: `${prefix}:${v}`, from: name };
    }
    return null;
  };
  if (env.RANK !== undefined && env.WORLD_SIZE !== undefined) {
    const run = env.TORCHELASTIC_RUN_ID?.trim();
    return run && run !== 'none' ? { jobId: `torchrun:${run}`, from: 'TORCHELASTIC_RUN_ID' } : null;
  }
  if (env.OMPI_COMM_WORLD_RANK !== undefined && env.OMPI_COMM_WORLD_SIZE !== undefined) {
    return first('openmpi', ['PMIX_NAMESPACE', 'OMPI_MCA_ess_base_jobid', 'OMPI_MCA_orte_hnp_uri']);
  }
  if (env.SLURM_PROCID !== undefined && env.SLURM_NTASKS !== undefined) {
    const job = (env.SLURM_JOB_ID ?? env.SLURM_JOBID)?.trim();
    if (!job) return null;
    const step = (env.SLURM_STEP_ID ?? env.SLURM_STEPID)?.trim();
    return { jobId: `slurm:${job}.${step || 'batch'}`, from: step ? 'SLURM_JOB_ID and SLURM_STEP_ID' : 'SLURM_JOB_ID' };
  }
  return null;
}
