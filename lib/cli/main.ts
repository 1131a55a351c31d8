#!/usr/bin/env node
// `npx cuda-kernels <command>`. Commands load the addon only when they need it, so `build` works
// where no binary exists yet.
import * as fs from 'node:fs';
import * as path from 'node:path';

import { Command, InvalidArgumentError, Option } from 'commander';

import { BinaryLoadError } from '../loader';

function intList(value: string): number[] {
  // Decimal digits only: Number() also reads `0x10`, `1e300` and `' 5'`.
  return value.split(',').map((s) => {
    const n = Number(s);
    if (!/^[0-9]+$/.test(s) || !Number.isSafeInteger(n) || n <= 0)
      throw new InvalidArgumentError(`not a positive decimal integer: ${s}`);
    return n;
  });
}

function packageVersion(): string {
  const file = path.join(__dirname, '..', '..', 'package.json');
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
}

/** A parser for integer options from `min` to `max`, in decimal digits only (Number() also reads `0x10`, `1e3` and ''). */
function intFrom(min: number, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(
        `not an integer ${max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`}: ${value}`,
      );
    return n;
  };
}
const nonNegativeInt = intFrom(0);
const atLeastOne = intFrom(1);

const program = new Command();
program
  .name('cuda-kernels')
  .description('CUDA kernels for Node.js: device info, demo, benchmarks, APSP files, distributed jobs')
  .version(packageVersion(), '-V, --version');
// `launch` passes everything after the script to it, options included.
program.enablePositionalOptions();

// The exit status, for every command (docs/cli.md): 1 when the command failed — an error, a check
// that did not pass, or no GPU for a command that needs one (bench, apsp on the GPU). A missing GPU
// alone is not a failure of info (it says why there is none) or demo (it runs the CPU reference).
program
  .command('info')
  .description('print the loaded binary, the CUDA devices and their properties, or why there is no GPU')
  .option('--require-gpu', 'exit 1 when no GPU is usable (for scripts that need one)')
  // Before the rule above, info exited 1 without a GPU and this kept 0; now a no-op, kept for scripts.
  .addOption(new Option('--allow-no-gpu').hideHelp())
  .action(async (opts: { requireGpu?: boolean }) => {
    process.exitCode = await (await import('./info')).info(opts);
  });

program
  .command('demo')
  .description(
    'time AᵀA and SGEMM with every method on the GPU, checked against the CPU (without a GPU: the CPU reference)',
  )
  .action(async () => {
    process.exitCode = await (await import('./demo')).demo();
  });

program
  .command('bench')
  .description('benchmark kernel families and merge the results into bench/results/<gpu>.json')
  .argument('[families...]', 'families to run, or "all" (the default)')
  .option('--sizes <list>', 'comma-separated sizes (the family says what a size means)', intList)
  .option('--methods <list>', 'comma-separated methods', (v: string) => v.split(','))
  .option(
    '--pair [a,b]',
    "time only methods a and b, alternating in both orders over many rounds (the protocol of every quoted ratio); without a,b each family's own claims",
  )
  .option('--rounds <n>', 'rounds of the pair protocol (each runs a, a, b, b)', atLeastOne, 20)
  .option(
    '--energy-ms <ms>',
    "with --pair: also each method's joules per run, from the GPU's energy counter (NVML) over phases a, b, b, a of at least ms each (2000 is a good length; 0: off)",
    nonNegativeInt,
    0,
  )
  .option('--reps <n>', 'timed repetitions per item (median reported)', atLeastOne, 10)
  .option('--warmup <n>', 'untimed runs before timing', nonNegativeInt, 2)
  .option('--quick', 'small sizes only', false)
  .option('--device <i>', 'device index', nonNegativeInt, 0)
  .option('--out <dir>', 'folder of the result files', path.join('bench', 'results'))
  .option('--no-charts', 'skip the SVG and PNG charts (they need the optional vega, vega-lite, @resvg/resvg-js)')
  .addHelpText('after', () => familiesHelp())
  .action(async (families: string[], opts) => {
    await (await import('./bench')).bench(families, opts);
  });

program
  .command('report')
  .description('write <results>/README.md and the charts from the result files alone (no GPU needed)')
  .option('--results <dir>', 'folder of the result files', path.join('bench', 'results'))
  .option('--out <dir>', 'folder to write README.md and the charts into (default: the results folder)')
  .option('--reports <file>', "the reports' tables, transcribed", path.join('bench', 'reports.json'))
  .option('--no-charts', 'skip the SVG and PNG charts (they need the optional vega, vega-lite, @resvg/resvg-js)')
  .option(
    '--readme <file>',
    'also regenerate the <!-- bench-table --> blocks of another file (those of the results README are always)',
  )
  .option(
    '--prose',
    "also regenerate the <!-- pair --> ratios of the repository's prose (README, docs, CHANGELOG, sources)",
  )
  .action(async (opts: import('./report').ReportCliOptions) => {
    await (await import('./report')).report(opts);
  });

program
  .command('apsp')
  .description('all-pairs shortest paths of a graph file on the GPU (or the CPU), written as a distance matrix')
  .argument('<input>', 'graph file: text "V E" + edge lines, DIMACS .gr, or binary .bin')
  .argument('<output>', 'distance matrix file: text (INF for unreachable) or binary .bin')
  .option('--method <name>', 'basic, shared, fast or auto', 'auto')
  .option('--format <fmt>', 'output format: text or binary (default: binary for .bin, else text)')
  .option('--input-format <fmt>', 'input format: text, dimacs or binary (default: from the extension)')
  .option('--block-factor <n>', 'block factor of the basic method (1-256)', intFrom(1, 256))
  .option('--device <i>', 'device index', nonNegativeInt, 0)
  .option('--no-progress', 'no progress line on stderr')
  .option('--distributed', 'split the graph over the ranks of a job (cuda-kernels launch, mpirun, srun): a band each')
  .option('--cpu', 'run the CPU reference (Floyd–Warshall on one core) instead of the GPU: graphs up to 4096 vertices')
  .action(async (input: string, output: string, opts) => {
    // The files first: a wrong path is a file error, whether or not a binary or GPU is there.
    (await import('./files')).checkFiles(input, output);
    if (opts.distributed && opts.cpu) throw new RangeError('--cpu and --distributed do not go together');
    if (opts.distributed) await (await import('./apsp-dist')).apspDistributedCommand(input, output, opts);
    else await (await import('./apsp')).apspCommand(input, output, opts);
  });

program
  .command('launch')
  .description("start the ranks of a distributed job on this host, with torchrun's variables (RANK, WORLD_SIZE, …)")
  .argument('<script>', 'the Node.js script every rank runs (a command with --no-node)')
  .argument('[args...]', "the script's arguments")
  .option('--nproc-per-node <n>', 'ranks on this host', atLeastOne, 1)
  .option('--nnodes <n>', 'hosts in the job', atLeastOne, 1)
  .option('--node-rank <i>', "this host's index in the job", nonNegativeInt, 0)
  .option(
    '--master-addr <host>',
    "rank 0's host, where it serves the bootstrap (default 127.0.0.1; required with --nnodes > 1)",
  )
  .option('--master-port <port>', "rank 0's bootstrap port", intFrom(1, 65535), 29500)
  .option(
    '--job-id <id>',
    'the job token every rank presents (default: $CUDA_KERNELS_JOB_ID, else random; required with --nnodes > 1)',
  )
  .option('--no-node', 'run <script> as a command of its own instead of with Node.js')
  .option('--no-prefix', "do not prefix the ranks' output lines with [rank<r>]:")
  .option('--kill-timeout <ms>', 'after one rank fails, how long the others get before SIGKILL', nonNegativeInt, 10000)
  .passThroughOptions()
  .action(async (script: string, args: string[], opts) => {
    const { launch } = await import('./launch');
    process.exitCode = await launch(script, args, {
      nprocPerNode: opts.nprocPerNode,
      nnodes: opts.nnodes,
      nodeRank: opts.nodeRank,
      masterAddr: opts.masterAddr,
      masterPort: opts.masterPort,
      jobId: opts.jobId,
      node: opts.node,
      prefix: opts.prefix,
      killTimeoutMs: opts.killTimeout,
    });
  });

program
  .command('build')
  .description('build the native addon from source for the local CUDA toolkit (needs nvcc; fetches cmake-js once)')
  .action(() => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { build } = require(path.join(__dirname, '..', '..', 'scripts', 'build.js')) as { build: () => number };
    process.exitCode = build();
  });

/** The benchmark families for `bench --help` (the registry loads the addon: without one, say so). */
function familiesHelp(): string {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { families } = require('../bench/index') as typeof import('../bench/index');
    const width = Math.max(...Object.keys(families).map((k) => k.length));
    const lines = Object.entries(families).map(([k, f]) => `  ${k.padEnd(width)}  ${f.description}`);
    return `\nFamilies ("all" runs every one; copy, the bandwidth reference, always runs):\n${lines.join('\n')}`;
  } catch (e) {
    return `\nFamilies: not listed, no native binary loads (${(e instanceof Error ? e.message : String(e)).split('\n')[0]})`;
  }
}

// Every failure is one line on stderr and a non-zero exit, never a stack trace.
program.parseAsync(process.argv).catch((e: unknown) => {
  if (e instanceof BinaryLoadError) {
    // What was tried and the possible solutions: a list, kept as one.
    console.error(e.message);
    process.exitCode = 1;
    return;
  }
  const message = e instanceof Error ? (e.name === 'Error' ? e.message : `${e.name}: ${e.message}`) : String(e);
  console.error(`cuda-kernels: ${message.replace(/\s*\n\s*/g, ' ')}`);
  process.exitCode = 1;
});
