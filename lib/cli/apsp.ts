// `npx cuda-kernels apsp <input> <output>`: read a graph file, run all-pairs shortest paths on the GPU
// with a progress line over the rounds, write the distance matrix, print a summary.
import { checkFiles } from './files';

import { upload } from '../array';
import { deviceCount, deviceProperties, runtimeInfo } from '../device';
import {
  type GraphFormat,
  type MatrixFormat,
  graphFormatOf,
  matrixFormatOf,
  readGraph,
  writeDistances,
} from '../io/graph';
import { apsp, apspBlockFactor, apspMethods, type ApspMethod } from '../ops/apsp';
import { EventTimer } from '../timing';

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

/**
 * `npx cuda-kernels apsp <input> <output>`: reads the graph, runs {@link apsp} with a progress line
 * over the rounds on `progressStream`, writes the distance matrix and prints the summary (n, method,
 * GPU ms from CUDA events, relaxations/s = n³/time) through `out`; returns the summary fields.
 */
export function apspCommand(
  input: string,
  output: string,
  opts: ApspCliOptions,
  out: (line: string) => void = console.log,
  progressStream: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
): { n: number; method: string; ms: number; rate: number } {
  const method = opts.method as ApspMethod;
  if (method !== 'auto' && !(apspMethods as readonly string[]).includes(method)) {
    throw new RangeError(`--method must be one of auto, ${apspMethods.join(', ')}, got ${JSON.stringify(opts.method)}`);
  }
  const { inputFormat, format } = cliFormats(input, output, opts);
  checkFiles(input, output);
  if (deviceCount() === 0) throw new Error(`apsp needs a GPU: ${runtimeInfo().noDeviceReason}`);

  let t0 = process.hrtime.bigint();
  const { n, matrix } = readGraph(input, { format: inputFormat });
  const readS = seconds(t0);
  const resolved = method === 'auto' || method === 'replicated' ? 'fast' : method;
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
  const host = result.toHostSync();
  t0 = process.hrtime.bigint();
  writeDistances(output, host, n, { format });
  const writeS = seconds(t0);

  const rate = n ** 3 / (ms / 1e3);
  out(
    `apsp: n = ${n}, method ${resolved} (block factor ${factor}, ${rounds} rounds) on ${gpu}: ` +
      `${ms.toFixed(2)} ms GPU, ${rate.toExponential(3)} relaxations/s (n³/t)`,
  );
  out(
    `  read ${input} (${inputFormat}) in ${readS.toFixed(2)} s; wrote ${output} (${format}) in ${writeS.toFixed(2)} s`,
  );
  return { n, method: resolved, ms, rate };
}
