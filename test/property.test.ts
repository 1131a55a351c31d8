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
  const before = new Map<string, number>();

  test.each(FAMILIES.map((f) => [f.name, f] as const))('%s: every variant on random problems', async (name, family) => {
    await warmUp(family);
    before.set(name, ck.memoryInfo().free);
    let cases = 0;
    const outcome = await assertProperty(
      name,
      fc.asyncProperty(family.params(LIMITS), async (p) => {
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
      }),
      RUNS,
    );
    ck.synchronize();
    const leaked = before.get(name)! - ck.memoryInfo().free;
    report(
      `property ${name}: ${outcome.runs} problems × ${family.methods.length} variants = ${cases} cases passed` +
        ` (seed ${outcome.seed}${SANITIZER ? `, under ${SANITIZER}` : ''}); device memory change ${leaked} bytes`,
    );
    // Everything the cases allocated was freed (the stream-ordered pool returns memory at a sync).
    expect(Math.abs(leaked)).toBeLessThanOrEqual(2 ** 20);
  });
});
