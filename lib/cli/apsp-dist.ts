// `npx cuda-kernels apsp <input> <output> --distributed`, run on every rank of a job (under
// `cuda-kernels launch`, mpirun or srun): the graph is split into row bands over the ranks.
import { performance } from 'node:perf_hooks';

import { agreeOnFailure, apspDistributed, type ApspDistInput } from '../distributed/apsp';
import { Communicator } from '../distributed/communicator';
import { readGraph, writeDistances } from '../io/graph';
import { type ApspCliOptions, cliFormats, progressReporter } from './apsp';

/**
 * The `apsp --distributed` command on one rank. A binary graph is read by every rank at its rows'
 * offset and a binary output written the same way; other formats are read by rank 0 and scattered,
 * and the distances gathered to rank 0 to be written. Rank 0 prints the summary (n, ranks, wall
 * seconds, relaxations/s = n³/t) through `out` and shows the rounds' progress on stderr.
 */
export async function apspDistributedCommand(
  input: string,
  output: string,
  opts: ApspCliOptions,
  out: (line: string) => void = console.log,
): Promise<{ n: number; ranks: number; seconds: number; rate: number }> {
  if (opts.method !== 'auto' && opts.method !== 'fast') {
    throw new RangeError(
      `--distributed runs the fast kernels: --method must be auto or fast, got ${JSON.stringify(opts.method)}`,
    );
  }
  const { inputFormat, format } = cliFormats(input, output, opts);
  using comm = await Communicator.init();
  let source: ApspDistInput = { matrix: null };
  if (inputFormat === 'binary') source = { file: input };
  else {
    // Rank 0 alone reads a text graph; a bad file must stop the others too, not leave them waiting.
    let failure: unknown = null;
    try {
      if (comm.rank === 0) {
        const g = readGraph(input, { format: inputFormat });
        source = { matrix: g.matrix, n: g.n };
      }
    } catch (e) {
      failure = e;
    }
    await agreeOnFailure(comm, failure, `reading ${input}`, 'apsp --distributed');
  }
  const reporter =
    opts.progress && comm.rank === 0
      ? progressReporter(`apsp distributed over ${comm.size} ranks`, process.stderr)
      : undefined;
  await comm.barrier();
  const t0 = performance.now();
  let result;
  try {
    result = await apspDistributed(comm, source, {
      output: format === 'binary' ? { file: output } : 'gather',
      onRound: reporter ? (done, total) => reporter.update(done, total) : undefined,
    });
  } finally {
    reporter?.finish();
  }
  if (format !== 'binary') {
    let failure: unknown = null;
    try {
      if (result.matrix) {
        using m = result.matrix;
        writeDistances(output, await m.toHost(), result.n, { format });
      }
    } catch (e) {
      failure = e;
    }
    await agreeOnFailure(comm, failure, `writing ${output}`, 'apsp --distributed');
  }
  const seconds = (performance.now() - t0) / 1000;
  const rate = result.n ** 3 / seconds;
  if (comm.rank === 0) {
    out(
      `apsp --distributed: n = ${result.n} over ${comm.size} ranks (fast kernels, row bands, NCCL panel broadcasts): ` +
        `${seconds.toFixed(2)} s wall including input and output, ${rate.toExponential(3)} relaxations/s (n³/t)`,
    );
    out(`  read ${input} (${inputFormat}); wrote ${output} (${format})`);
  }
  return { n: result.n, ranks: comm.size, seconds, rate };
}
