// Runs a fast-check property with a seed that can be replayed: CK_FC_SEED (and CK_FC_PATH, for the
// shrunk counterexample) from a failure message reproduce it; CK_FC_RUNS overrides the case count.
import fc from 'fast-check';

export interface FcOutcome {
  runs: number;
  seed: number;
}

export function fcParameters(defaultRuns: number): { seed: number; numRuns: number; path?: string } {
  const seed = process.env.CK_FC_SEED ? Number(process.env.CK_FC_SEED) : (Date.now() ^ (Math.random() * 2 ** 31)) | 0;
  const numRuns = process.env.CK_FC_RUNS ? Number(process.env.CK_FC_RUNS) : defaultRuns;
  const path = process.env.CK_FC_PATH || undefined;
  return { seed, numRuns, path };
}

/** Checks the property; throws with fast-check's report and the replay command when it fails. */
export async function assertProperty<T>(
  name: string,
  property: fc.IAsyncPropertyWithHooks<T> | fc.IPropertyWithHooks<T>,
  defaultRuns: number,
): Promise<FcOutcome> {
  const params = fcParameters(defaultRuns);
  const details = await fc.check(property as fc.IAsyncProperty<T>, params);
  if (details.failed) {
    throw new Error(
      `${name}: property failed. Replay with CK_FC_SEED=${details.seed} CK_FC_PATH=${details.counterexamplePath}` +
        ` (and the same CK_SANITIZER_TOOL)\n${fc.defaultReportMessage(details)}`,
    );
  }
  return { runs: details.numRuns, seed: details.seed };
}
