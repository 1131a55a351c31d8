// What an APSP problem is, shared by the GPU op (lib/ops/apsp.ts), the CPU reference
// (lib/cpu/apsp.ts), the multi-process scheme (lib/distributed/apsp.ts), the graph files (lib/io/graph.ts)
// and the CLI (lib/cli/apsp.ts): INF, the size limit, the method names and their block factors. It loads
// no binary, so the CPU reference and the file checks stay usable without one.
import { checkInteger, rangeError } from '../errors';

/**
 * "No edge" in a weight matrix and "unreachable" in a distance matrix: 2^30 − 1. Two entries of at
 * most `INF` add up to less than 2^31, so sums never overflow int32, and a distance that would reach
 * `INF` reads as `INF`.
 */
export const INF = 0x3fffffff;

/** Largest vertex count {@link apsp} accepts (n² int32 is then 64 GiB). */
export const APSP_MAX_N = 131072;

/**
 * The APSP variants (blocked Floyd–Warshall), in the order of native/apsp/methods.cc (the test suite
 * checks the two agree).
 *
 * - `basic`: the report's first design — one thread per element, global memory only, block factor
 *   up to 256 (`blockFactor`, default min(256, n)), one launch per k of phases 1 and 2.
 * - `shared`: the report's shared-memory design — 32×32 tiles, thread x along the columns so the
 *   tile reads are broadcasts or 32 consecutive words (no bank conflicts).
 * - `fast`: ours — pivot depth 128; the pivot block closed in shared memory, then the panels and the
 *   rest as min-plus tile products (128×128 tiles, 8×8 outputs per thread, cp.async slabs, DPX
 *   `VIADDMNMX` on sm_90).
 */
export const apspMethods = ['basic', 'shared', 'fast'] as const;

const FIXED_FACTOR: Record<(typeof apspMethods)[number], number> = { basic: 0, shared: 32, fast: 128 };

/** The block factor (pivot depth) a method runs with for n vertices: `basic` takes `requested`. */
export function apspBlockFactor(method: (typeof apspMethods)[number], n: number, requested?: number): number {
  const fixed = FIXED_FACTOR[method];
  if (fixed) {
    if (requested !== undefined && requested !== fixed) {
      throw rangeError('options.blockFactor', `${fixed} for method ${method} (only basic takes others)`, requested);
    }
    return fixed;
  }
  if (requested === undefined) return Math.min(256, n);
  return checkInteger('options.blockFactor', requested, 1, 256);
}

/** Rounds (pivot blocks) a run of `method` without paths makes for n vertices: ⌈n / block factor⌉. */
export function apspRounds(method: (typeof apspMethods)[number], n: number, blockFactor?: number): number {
  return Math.ceil(n / apspBlockFactor(method, n, blockFactor));
}
