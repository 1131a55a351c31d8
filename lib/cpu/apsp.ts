import { checkInteger, rangeError, typeError, elements, inWords } from '../errors';
import { INF } from '../ops/apsp-spec';

/** Distances and next hops from `cpu.apsp` with `paths: true` (the layout of the GPU's {@link ApspResult}). */
export interface CpuApspResult {
  dist: Int32Array;
  next: Int32Array;
}

/** Options of `cpu.apsp`. */
export interface CpuApspOptions {
  /** Also compute the next-hop matrix. */
  paths?: boolean;
  /** Called after each pivot k with (k + 1, n): the run takes n³ steps, minutes for thousands of vertices. */
  onRound?: (done: number, total: number) => void;
}

/**
 * All-pairs shortest paths by plain Floyd–Warshall (k, i, j loops) — the reference the GPU methods
 * are compared with, exactly. Same contract as the GPU's `apsp`: an n×n row-major Int32Array of
 * weights in [0, INF] (`INF` = no edge), the diagonal taken as 0, distances ≥ INF reported as INF.
 * With `paths: true`, also the next-hop matrix: next[i][j] is the vertex after i on a shortest path
 * with the fewest edges among the shortest (candidates compared by distance, then hop count).
 */
export function apsp(weights: Int32Array, n: number, options?: CpuApspOptions & { paths?: false }): Int32Array;
export function apsp(weights: Int32Array, n: number, options: CpuApspOptions & { paths: true }): CpuApspResult;
export function apsp(weights: Int32Array, n: number, options: CpuApspOptions = {}): Int32Array | CpuApspResult {
  if (!(weights instanceof Int32Array)) throw typeError('weights', 'an Int32Array', weights);
  checkInteger('n', n, 1);
  if (weights.length !== n * n) throw rangeError('weights', `n·n = ${n * n} elements long`, elements(weights.length));
  const paths = options.paths ?? false;
  const onRound = options.onRound;
  if (onRound !== undefined && typeof onRound !== 'function') throw typeError('options.onRound', 'a function', onRound);
  const d = new Int32Array(weights);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      const w = d[i * n + j];
      if (w < 0 || w > INF) throw rangeError('weights', 'weights in [0, INF]', inWords(`${w} at [${i}][${j}]`));
    }
    d[i * n + i] = 0;
  }
  if (!paths) {
    for (let k = 0; k < n; k++) {
      const rowK = k * n;
      for (let i = 0; i < n; i++) {
        const rowI = i * n;
        const dik = d[rowI + k];
        if (dik >= INF) continue; // d_ik + d_kj ≥ INF ≥ d_ij: no improvement possible
        for (let j = 0; j < n; j++) {
          const t = dik + d[rowK + j];
          if (t < d[rowI + j]) d[rowI + j] = t;
        }
      }
      onRound?.(k + 1, n);
    }
    return d;
  }
  // With paths, candidates are ordered by (distance, hops) as on the GPU, so that zero-weight cycles
  // cannot leave next hops that point at each other.
  const next = new Int32Array(n * n);
  const hops = new Int32Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      next[i * n + j] = i === j || d[i * n + j] < INF ? j : -1;
      hops[i * n + j] = i === j ? 0 : 1;
    }
  }
  for (let k = 0; k < n; k++) {
    const rowK = k * n;
    for (let i = 0; i < n; i++) {
      const rowI = i * n;
      const dik = d[rowI + k];
      if (dik >= INF) continue;
      const hik = hops[rowI + k];
      for (let j = 0; j < n; j++) {
        const t = dik + d[rowK + j];
        const v = d[rowI + j];
        if (t < v || (t === v && t < INF && hik + hops[rowK + j] < hops[rowI + j])) {
          d[rowI + j] = t;
          hops[rowI + j] = hik + hops[rowK + j];
          next[rowI + j] = next[rowI + k];
        }
      }
    }
    onRound?.(k + 1, n);
  }
  return { dist: d, next };
}
