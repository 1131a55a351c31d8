// Long GPU work without blocking the event loop: a stencil run through stencilAsync with progress
// while a timer keeps ticking, then a run cancelled halfway with an AbortController, whose arrays are
// used again at once.
import { AbortError, cpu, empty, stencil, stencilAsync, upload } from 'cuda-kernels';

/** Needs a GPU. */
export const needsGpu = true;

export async function main(log: (line: string) => void = console.log): Promise<void> {
  const [rows, cols] = [1023, 1025]; // not multiples of any tile
  const host = cpu.randomArray(Float32Array, rows * cols, 1);
  using grid = upload(host, { shape: [rows, cols] });

  // 1. A long run, awaited; the event loop runs a timer meanwhile.
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  let reported = 0;
  const r = await stencilAsync(grid, rows, cols, {
    tolerance: 0,
    maxIterations: 20_000,
    onProgress: ({ done, total }) => {
      if (done >= reported + total / 4 || done === total) {
        reported = done;
        log(`  ${done} / ${total} sweeps`);
      }
    },
  });
  clearInterval(timer);
  r.grid.free();
  log(`${r.iterations} sweeps, checksum ${r.checksum.toFixed(3)}; the timer ticked ${ticks} times meanwhile`);

  // 2. The same run into our own arrays, cancelled after 2,000 sweeps.
  using out = empty('float32', rows * cols);
  using scratch = empty('float32', rows * cols);
  const controller = new AbortController();
  try {
    await stencilAsync(grid, rows, cols, {
      tolerance: 0,
      maxIterations: 1_000_000,
      out,
      scratch,
      signal: controller.signal,
      onProgress: ({ done }) => {
        if (done >= 2000) controller.abort();
      },
    });
    throw new Error('the run was not aborted');
  } catch (e) {
    if (!(e instanceof AbortError)) throw e;
    log(`aborted: ${e.message}`);
  }

  // 3. The arrays are usable at once: 10 sweeps into them, checked against the CPU reference.
  const opts = { tolerance: 0, maxIterations: 10 };
  const again = stencil(grid, rows, cols, { ...opts, out, scratch });
  const ref = cpu.stencil(host, rows, cols, opts);
  const err = cpu.relativeError(await again.grid.toHost(), ref.grid);
  log(`10 sweeps into the same arrays after the abort: relative error ${err.toExponential(1)} against cpu.stencil`);
  if (!(err < 1e-5)) throw new Error(`stencil after abort: relative error ${err}`);
}

if (require.main === module)
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  });
