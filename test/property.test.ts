// Property tests on the GPU: every family and every variant, on random shapes (1, primes, tile
// edges ± 1, anything up to LIMITS) and random data, against the CPU references in lib/cpu. A failure
// prints the seed; CK_FC_SEED / CK_FC_PATH replay it (see test/harness/fc-run.ts).
import fc from 'fast-check';

import * as ck from '../lib';
import { assertProperty } from './harness/fc-run';
import { dim, FAMILIES, hostData, hostGraph, LIMITS, SANITIZER, warmUp } from './harness/families';
import { report } from './harness/report';
import { describeGpu } from './helpers/gpu';

// Problems per family; each problem runs every variant of the family.
// racecheck instruments every shared-memory access: apsp's 128×128 tiles take minutes there.
const RUNS = SANITIZER === 'racecheck' ? 2 : SANITIZER ? 3 : 20;

describeGpu('property tests against the CPU references', () => {
  test.each(FAMILIES.map((f) => [f.name, f] as const))('%s: every variant on random problems', async (name, family) => {
    // Natively, kernels for the sizes ahead are loaded first so the memory check compares like with like.
    await warmUp(family, SANITIZER ? 0 : 5);
    const before = ck.memoryInfo().free;
    let cases = 0;
    const property = fc.asyncProperty(family.params(LIMITS), async (p) => {
      const prepared = family.prepare(p);
      try {
        for (const method of family.methods) {
          const ran = prepared.run(method);
          try {
            const error = await ran.check();
            if (error) throw new Error(`${name} ${method} on ${family.label(p)}: ${error}`);
          } finally {
            for (const o of ran.outputs) o.free();
          }
          cases++;
        }
      } finally {
        for (const a of prepared.inputs) a.free();
      }
    });
    const outcome = await assertProperty(name, property, RUNS);
    ck.synchronize();
    const first = ck.memoryInfo().free;
    report(
      `property ${name}: ${outcome.runs} problems × ${family.methods.length} variants = ${cases} cases passed` +
        ` (seed ${outcome.seed}${SANITIZER ? `, under ${SANITIZER}` : ''}); memoryInfo free ${before} → ${first}`,
    );
    // Under a sanitizer other processes may share the device (scripts/gpu-reliability.sh runs the
    // soak beside it), so only the native runs hold the memory to account: the same problems again
    // must leave free memory where the first pass left it (a leak grows with every run, lazily
    // loaded kernels do not).
    if (SANITIZER) return;
    await fc.assert(property, { seed: outcome.seed, numRuns: outcome.runs });
    ck.synchronize();
    const second = ck.memoryInfo().free;
    report(`property ${name}: the same ${outcome.runs} problems again: memoryInfo free ${first} → ${second}`);
    expect(Math.abs(first - second)).toBeLessThanOrEqual(2 ** 20);
  });
});

// The Promise forms on random problems: each runs with its input overwritten right after the call,
// and must give the blocking form's result on the data of the call (see docs/async.md). The sizes
// cross what their paths do differently: apsp's padding (n a multiple of the block factor or not,
// so the copy the run works on is `out` itself or a workspace), the stencil's steps (several steps of
// checkEvery sweeps, fast's 8-sweep passes, a convergence inside the first pass), the reduction's
// block and tile edges.
describeGpu('property tests of the Promise forms: the inputs as they are at the call', () => {
  const runs = SANITIZER ? 2 : 15;

  test('reduceAsync', async () => {
    const property = fc.asyncProperty(
      fc.record({
        length: fc.oneof(
          fc.constantFrom(1, 2, 255, 256, 257, 1023, 1024, 1025, 4097, 65537),
          fc.integer({ min: 1, max: LIMITS.length }),
        ),
        dtype: fc.constantFrom(...ck.dtypes),
        seed: fc.nat(),
      }),
      async ({ length, dtype, seed }) => {
        using a = ck.upload(hostData(dtype, length, seed));
        const host = await a.toHost();
        for (const op of ['sum', 'min', 'max'] as const) {
          const expected = ck.reduce(a, op);
          const p = ck.reduceAsync(a, op);
          a.fill(dtype === 'float32' || dtype === 'float64' ? NaN : 7);
          const got = await p;
          a.copyFrom(host);
          if (!Object.is(got, expected)) throw new Error(`${dtype}[${length}] ${op}: ${got}, expected ${expected}`);
        }
      },
    );
    const outcome = await assertProperty('reduceAsync snapshot', property, runs * 2);
    report(`property reduceAsync snapshot: ${outcome.runs} problems × 3 ops passed (seed ${outcome.seed})`);
  });

  test('stencilAsync', async () => {
    const property = fc.asyncProperty(
      fc.record({
        rows: dim(Math.min(LIMITS.side, 150)),
        cols: dim(Math.min(LIMITS.side, 150)),
        dtype: fc.constantFrom('float32' as const, 'float64' as const),
        method: fc.constantFrom(...ck.stencilMethods),
        maxIterations: fc.constantFrom(1, 7, 8, 9, 17, 40),
        checkEvery: fc.constantFrom(1, 3, 8, 64),
        tolerance: fc.constantFrom(0, 0, 1e-3, 0.2),
        seed: fc.nat(),
      }),
      async ({ rows, cols, dtype, method, maxIterations, checkEvery, tolerance, seed }) => {
        using g = ck.upload(hostData(dtype, rows * cols, seed)) as ck.DeviceArray<'float32' | 'float64'>;
        const opts = { method, maxIterations, checkEvery, tolerance, weights: 'box9' as const };
        const sync = ck.stencil(g, rows, cols, opts);
        using syncGrid = sync.grid;
        const p = ck.stencilAsync(g, rows, cols, opts);
        g.fill(NaN);
        const r = await p;
        using grid = r.grid;
        const label = `${dtype} ${rows}×${cols} ${method} ≤${maxIterations}/${checkEvery} tol ${tolerance}`;
        if (r.iterations !== sync.iterations || !Object.is(r.residual, sync.residual))
          throw new Error(
            `${label}: ${r.iterations} sweeps, residual ${r.residual}; blocking ${sync.iterations}, ${sync.residual}`,
          );
        const at = ck.cpu.firstMismatch(await grid.toHost(), await syncGrid.toHost());
        if (at >= 0) throw new Error(`${label}: grid differs from the blocking form's at ${at}`);
      },
    );
    const outcome = await assertProperty('stencilAsync snapshot', property, runs);
    report(`property stencilAsync snapshot: ${outcome.runs} problems passed (seed ${outcome.seed})`);
  });

  test('apspAsync', async () => {
    const property = fc.asyncProperty(
      fc.record({
        n: fc.oneof(fc.constantFrom(1, 31, 32, 33, 64, 127, 128, 129, 255, 256, 257), dim(LIMITS.side)),
        method: fc.constantFrom(...ck.apspMethods),
        paths: fc.boolean(),
        density: fc.constantFrom(0.02, 0.1, 0.5),
        seed: fc.nat(),
      }),
      async ({ n, method, paths, density, seed }) => {
        const w = hostGraph(n, density, seed);
        using g = ck.upload(w);
        const p = ck.apspAsync(g, n, { method, paths });
        g.fill(-1); // invalid weights, had the run or its check read them
        const r = await p;
        const dist = paths ? (r as ck.ApspResult).dist : (r as ck.DeviceArray<'int32'>);
        using _d = dist;
        using _n = paths ? (r as ck.ApspResult).next : undefined;
        const at = ck.cpu.firstMismatch(await dist.toHost(), ck.cpu.apsp(w, n));
        if (at >= 0) throw new Error(`n=${n} ${method}${paths ? '/paths' : ''}: dist[${at}] differs from cpu.apsp`);
      },
    );
    const outcome = await assertProperty('apspAsync snapshot', property, runs);
    report(`property apspAsync snapshot: ${outcome.runs} problems passed (seed ${outcome.seed})`);
  });
});
