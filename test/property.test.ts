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
const RUNS = SANITIZER ? 3 : 20;

describeGpu('property tests against the CPU references', () => {
  test.each(FAMILIES.map((f) => [f.name, f] as const))('%s: every variant on random problems', async (name, family) => {
    await warmUp(family, 5);
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
    // The same problems again: a leak grows with every run, lazily loaded kernels do not.
    await fc.assert(property, { seed: outcome.seed, numRuns: outcome.runs });
    ck.synchronize();
    const second = ck.memoryInfo().free;
    report(
      `property ${name}: ${outcome.runs} problems × ${family.methods.length} variants, run twice = ${cases} cases passed` +
        ` (seed ${outcome.seed}${SANITIZER ? `, under ${SANITIZER}` : ''}); memoryInfo free ${before} → ${first} → ${second}`,
    );
    // Under a sanitizer other processes may share the device (scripts/gpu-run.sh runs the soak
    // beside it), so only the native runs hold the memory to account.
    if (!SANITIZER) expect(Math.abs(first - second)).toBeLessThanOrEqual(2 ** 20);
  });
});
