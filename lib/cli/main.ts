#!/usr/bin/env node
// `npx cuda-kernels <command>`. Commands load the addon only when they need it, so `build` works
// where no binary exists yet.
import * as path from 'node:path';

import { Command, InvalidArgumentError } from 'commander';

function intList(value: string): number[] {
  return value.split(',').map((s) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError(`not a positive integer: ${s}`);
    return n;
  });
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`not a non-negative integer: ${value}`);
  return n;
}

function atLeastOne(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`not a positive integer: ${value}`);
  return n;
}

const program = new Command();
program.name('cuda-kernels').description('CUDA kernels for Node.js: device info, demo, benchmarks, APSP files');
// `launch` passes everything after the script to it, options included.
program.enablePositionalOptions();

program
  .command('info')
  .description('print the CUDA devices and their properties (or why there is none)')
  .action(async () => (await import('./info')).info());

program
  .command('demo')
  .description('upload data, run a kernel, time it with CUDA events, check it against the CPU')
  .action(async () => (await import('./demo')).demo());

program
  .command('bench')
  .description('benchmark kernel families and merge the results into bench/results/<gpu>.json')
  .argument('[families...]', 'families to run, or "all"', [])
  .option('--sizes <list>', 'comma-separated sizes (the family says what a size means)', intList)
  .option('--methods <list>', 'comma-separated methods', (v: string) => v.split(','))
  .option('--reps <n>', 'timed repetitions per item (median reported)', positiveInt, 10)
  .option('--warmup <n>', 'untimed runs before timing', positiveInt, 2)
  .option('--quick', 'small sizes only', false)
  .option('--device <i>', 'device index', positiveInt, 0)
  .option('--out <dir>', 'folder of the result files', path.join('bench', 'results'))
  .option('--no-charts', 'skip the SVG and PNG charts')
  .action(async (families: string[], opts) => {
    await (await import('./bench')).bench(families, opts);
  });

program
  .command('report')
  .description('write <results>/README.md and the charts from the result files alone (no GPU needed)')
  .option('--results <dir>', 'folder of the result files', path.join('bench', 'results'))
  .option('--reports <file>', "the reports' tables, transcribed", path.join('bench', 'reports.json'))
  .option('--no-charts', 'skip the SVG and PNG charts')
  .action(async (opts: { results: string; reports: string; charts: boolean }) => {
    (await import('./report')).report(opts);
  });

program
  .command('apsp')
  .description('all-pairs shortest paths of a graph file on the GPU, written as a distance matrix')
  .argument('<input>', 'graph file: text "V E" + edge lines, DIMACS .gr, or binary .bin')
  .argument('<output>', 'distance matrix file: text (INF for unreachable) or binary .bin')
  .option('--method <name>', 'basic, shared, fast or auto', 'auto')
  .option('--format <fmt>', 'output format: text or binary (default: binary for .bin, else text)')
  .option('--input-format <fmt>', 'input format: text, dimacs or binary (default: from the extension)')
  .option('--block-factor <n>', 'block factor of the basic method (1-256)', positiveInt)
  .option('--device <i>', 'device index', positiveInt, 0)
  .option('--no-progress', 'no progress line on stderr')
  .option('--distributed', 'split the graph over the ranks of a job (cuda-kernels launch, mpirun, srun): a band each')
  .action(async (input: string, output: string, opts) => {
    if (opts.distributed) await (await import('./apsp-dist')).apspDistributedCommand(input, output, opts);
    else (await import('./apsp')).apspCommand(input, output, opts);
  });

program
  .command('launch')
  .description("start the ranks of a distributed job on this host, with torchrun's variables (RANK, WORLD_SIZE, …)")
  .argument('<script>', 'the Node.js script every rank runs (a command with --no-node)')
  .argument('[args...]', "the script's arguments")
  .option('--nproc-per-node <n>', 'ranks on this host', atLeastOne, 1)
  .option('--nnodes <n>', 'hosts in the job', atLeastOne, 1)
  .option('--node-rank <i>', "this host's index in the job", positiveInt, 0)
  .option('--master-addr <host>', "rank 0's host (it serves NCCL's bootstrap there)", '127.0.0.1')
  .option('--master-port <port>', "rank 0's bootstrap port", positiveInt, 29500)
  .option('--no-node', 'run <script> as a command of its own instead of with Node.js')
  .option('--no-prefix', "do not prefix the ranks' output lines with [rank<r>]:")
  .option('--kill-timeout <ms>', 'after one rank fails, how long the others get before SIGKILL', positiveInt, 10000)
  .passThroughOptions()
  .action(async (script: string, args: string[], opts) => {
    const { launch } = await import('./launch');
    process.exitCode = await launch(script, args, {
      nprocPerNode: opts.nprocPerNode,
      nnodes: opts.nnodes,
      nodeRank: opts.nodeRank,
      masterAddr: opts.masterAddr,
      masterPort: opts.masterPort,
      node: opts.node,
      prefix: opts.prefix,
      killTimeoutMs: opts.killTimeout,
    });
  });

program
  .command('build')
  .description('build the native addon from source (needs the CUDA toolkit: nvcc)')
  .action(() => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { build } = require(path.join(__dirname, '..', '..', 'scripts', 'build.js')) as { build: () => number };
    process.exitCode = build();
  });

// Every failure is one line on stderr and a non-zero exit, never a stack trace.
program.parseAsync(process.argv).catch((e: unknown) => {
  const message = e instanceof Error ? (e.name === 'Error' ? e.message : `${e.name}: ${e.message}`) : String(e);
  console.error(`cuda-kernels: ${message.replace(/\s*\n\s*/g, ' ')}`);
  process.exitCode = 1;
});
