// Property tests on the GPU: every family and every variant, on random shapes (1, primes, tile
// edges ± 1, anything up to LIMITS) and random data, against the CPU references in lib/cpu. A failure
// prints the seed; CK_FC_SEED / CK_FC_PATH replay it (see test/harness/fc-run.ts).
import fc from 'fast-check';

import * as ck from '../lib';
import { assertProperty } from './harness/fc-run';
import { FAMILIES, LIMITS, SANITIZER, warmUp } from './harness/families';
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
