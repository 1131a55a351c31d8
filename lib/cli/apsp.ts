// `npx cuda-kernels apsp <input> <output>`: read a graph file, run all-pairs shortest paths on the GPU
// (or, with --cpu, the CPU reference) with a progress line over the rounds, write the distance matrix,
// print a summary. This module loads no native binary until the GPU is needed: the files are checked
// and the graph read first, so a bad file is reported as such on any machine, and --cpu runs without
// a binary or a GPU.
import { checkFiles } from './files';

import { apsp as cpuApsp } from '../cpu/apsp';
import {
  type GraphFormat,
  type MatrixFormat,
  graphFormatOf,
  matrixFormatOf,
  readGraph,
  readGraphHeader,
  writeDistances,
} from '../io/graph';
import { apspBlockFactor, apspMethods } from '../ops/apsp-spec';

/**
 * Largest graph `apsp --cpu` takes: `cpu.apsp` is plain Floyd–Warshall on one core, n³ steps — about
 * a minute at n = 2048 and several at 4096 on a current CPU core; anything larger is a job for the GPU.
 */
export const CPU_MAX_N = 4096;

/** Options of the `apsp` command, as commander parses them. */
export interface ApspCliOptions {
  method: string;
  /** Output format (default from the output's extension: `.bin` binary, else text). */
  format?: string;
  /** Input format (default from the input's extension: `.gr` DIMACS, `.bin` binary, else text). */
  inputFormat?: string;
  blockFactor?: number;
  device: number;
  /** false with --no-progress. */
  progress: boolean;
  /** --cpu: run the CPU reference instead of the GPU (up to {@link CPU_MAX_N} vertices). */
  cpu?: boolean;
}

/** The input and output formats of an `apsp` command: the options, else the files' extensions. */
export function cliFormats(
  input: string,
  output: string,
  opts: Pick<ApspCliOptions, 'format' | 'inputFormat'>,
): { inputFormat: GraphFormat; format: MatrixFormat } {
  const inputFormat = (opts.inputFormat ?? graphFormatOf(input)) as GraphFormat;
  if (!['text', 'dimacs', 'binary'].includes(inputFormat)) {
    throw new RangeError(`--input-format must be text, dimacs or binary, got ${JSON.stringify(opts.inputFormat)}`);
  }
  const format = (opts.format ?? matrixFormatOf(output)) as MatrixFormat;
  if (!['text', 'binary'].includes(format)) {
    throw new RangeError(`--format must be text or binary, got ${JSON.stringify(opts.format)}`);
  }
  return { inputFormat, format };
}

/** Where the progress over rounds goes; one small interface so another renderer can replace it. */
export interface ProgressReporter {
  update(done: number, total: number): void;
  finish(): void;
}

/**
 * A progress line on `stream`: redrawn in place (`\r`) when it is a terminal, otherwise a plain line
 * at every tenth of the work, so logs stay short.
 */
export function progressReporter(label: string, stream: NodeJS.WritableStream & { isTTY?: boolean }): ProgressReporter {
  const started = Date.now();
  let lastDecile = -1;
  let drawn = false;
  const width = 30;
  return {
    update(done, total) {
      const frac = total > 0 ? done / total : 1;
      const secs = ((Date.now() - started) / 1000).toFixed(1);
      if (stream.isTTY) {
        const filled = Math.round(frac * width);
        stream.write(
          `\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} rounds ${(frac * 100).toFixed(0)}% ${secs} s`,
        );
        drawn = true;
      } else {
        const decile = Math.floor(frac * 10);
        if (decile !== lastDecile) {
          lastDecile = decile;
          stream.write(`${label}: ${done}/${total} rounds (${(frac * 100).toFixed(0)}%, ${secs} s)\n`);
        }
      }
    },
    finish() {
      if (drawn) stream.write('\n');
    },
  };
}

const seconds = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e9;

/** What {@link apspCommand} reports: the summary's fields. */
export interface ApspCliResult {
  n: number;
  /** The GPU method, or `cpu` for --cpu. */
  method: string;
  /** GPU milliseconds from CUDA events, or the CPU run's wall milliseconds. */
  ms: number;
  /** Relaxations per second, n³ / time. */
  rate: number;
}

/**
 * `npx cuda-kernels apsp <input> <output>`: checks the files, reads the graph (a malformed one is a
 * GraphFileError, whether or not there is a GPU), runs {@link apsp} with a progress line over the
 * rounds on `progressStream` (or `cpu.apsp` with `--cpu`), writes the distance matrix and prints the
 * summary (n, method, GPU ms from CUDA events or CPU wall ms, relaxations/s = n³/time) through `out`;
 * returns the summary fields.
 */
export async function apspCommand(
  input: string,
  output: string,
  opts: ApspCliOptions,
  out: (line: string) => void = console.log,
  progressStream: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
): Promise<ApspCliResult> {
  const method = opts.method;
  if (method !== 'auto' && !(apspMethods as readonly string[]).includes(method)) {
    throw new RangeError(`--method must be one of auto, ${apspMethods.join(', ')}, got ${JSON.stringify(opts.method)}`);
  }
  if (opts.cpu && (method !== 'auto' || opts.blockFactor !== undefined)) {
    throw new RangeError(
      '--cpu runs the CPU reference (plain Floyd–Warshall): --method and --block-factor are for the GPU',
    );
  }
  const { inputFormat, format } = cliFormats(input, output, opts);
  checkFiles(input, output);
  if (opts.cpu) {
    // The header first: a graph too large for the CPU is refused before its n² matrix is read.
    const v = readGraphHeader(input, { format: inputFormat });
    if (v > CPU_MAX_N) {
      throw new RangeError(
        `--cpu runs the CPU reference (Floyd–Warshall on one core, n³ steps) on graphs of up to ${CPU_MAX_N} ` +
          `vertices; ${input} has ${v}: run it on a GPU (without --cpu)`,
      );
    }
  }

  let t0 = process.hrtime.bigint();
  const { n, matrix } = readGraph(input, { format: inputFormat });
  const readS = seconds(t0);
  const run = opts.cpu ? runCpu(n, matrix, opts, progressStream) : await runGpu(n, matrix, opts, progressStream);

  t0 = process.hrtime.bigint();
  writeDistances(output, run.dist, n, { format });
  const writeS = seconds(t0);

  const rate = n ** 3 / (run.ms / 1e3);
  out(
    `${run.summary}: ${run.ms.toFixed(2)} ms ${opts.cpu ? 'CPU' : 'GPU'}, ${rate.toExponential(3)} relaxations/s (n³/t)`,
  );
  out(
    `  read ${input} (${inputFormat}) in ${readS.toFixed(2)} s; wrote ${output} (${format}) in ${writeS.toFixed(2)} s`,
  );
  return { n, method: run.method, ms: run.ms, rate };
}

interface Run {
  dist: Int32Array;
  method: string;
  ms: number;
  summary: string;
}

function runCpu(
  n: number,
  matrix: Int32Array,
  opts: ApspCliOptions,
  progressStream: NodeJS.WritableStream & { isTTY?: boolean },
): Run {
  const reporter = opts.progress ? progressReporter(`apsp cpu n=${n}`, progressStream) : undefined;
  const t0 = process.hrtime.bigint();
  let dist: Int32Array;
  try {
    dist = cpuApsp(matrix, n, { onRound: reporter ? (done, total) => reporter.update(done, total) : undefined });
  } finally {
    reporter?.finish();
  }
  const ms = seconds(t0) * 1e3;
  return {
    dist,
    method: 'cpu',
    ms,
    summary: `apsp: n = ${n}, the CPU reference (cpu.apsp, Floyd–Warshall, ${n} rounds)`,
  };
}

async function runGpu(
  n: number,
  matrix: Int32Array,
  opts: ApspCliOptions,
  progressStream: NodeJS.WritableStream & { isTTY?: boolean },
): Promise<Run> {
  // Loaded only now: the native binary may be missing (BinaryLoadError says what was tried).
  const { deviceCount, deviceProperties, runtimeInfo } = await import('../device');
  if (deviceCount() === 0) {
    throw new Error(
      `apsp needs a GPU: ${runtimeInfo().noDeviceReason}; --cpu runs the CPU reference instead ` +
        `(graphs of up to ${CPU_MAX_N} vertices)`,
    );
  }
  const { upload } = await import('../array');
  const { apsp } = await import('../ops/apsp');
  const { EventTimer } = await import('../timing');
  const resolved = opts.method === 'auto' ? 'fast' : (opts.method as (typeof apspMethods)[number]);
  const factor = apspBlockFactor(resolved, n, opts.blockFactor);
  const rounds = Math.ceil(n / factor);
  const gpu = deviceProperties(opts.device).name;

  using d = upload(matrix, { device: opts.device });
  const reporter = opts.progress ? progressReporter(`apsp ${resolved} n=${n}`, progressStream) : undefined;
  using timer = new EventTimer(opts.device);
  timer.start();
  let dist;
  try {
    dist = apsp(d, n, {
      method: resolved,
      blockFactor: opts.blockFactor,
      onRound: reporter ? (done, total) => reporter.update(done, total) : undefined,
    });
  } finally {
    reporter?.finish();
  }
  timer.stop();
  const ms = timer.elapsedMs();
  using result = dist;
  return {
    dist: result.toHostSync(),
    method: resolved,
    ms,
    summary: `apsp: n = ${n}, method ${resolved} (block factor ${factor}, ${rounds} rounds) on ${gpu}`,
  };
}
