import { checkInteger, rangeError, typeError, inWords, elements } from '../errors';

// What a stencil problem is, shared by the GPU op (lib/ops/stencil.ts) and the CPU reference
// (lib/cpu/stencil.ts): the weights, the options and their checks, the result. It loads no binary,
// so the CPU reference stays usable without one.

/** Named 3×3 weight sets: `jacobi5` (¼ on the four edge neighbours) and `box9` (1/9 each). */
export const stencilPresets = {
  jacobi5: [0, 0.25, 0, 0.25, 0, 0.25, 0, 0.25, 0],
  box9: [1 / 9, 1 / 9, 1 / 9, 1 / 9, 1 / 9, 1 / 9, 1 / 9, 1 / 9, 1 / 9],
} as const;

/** A preset name or 9 finite weights, row-major: w[3a + b] multiplies the cell at (i + a − 1, j + b − 1). */
export type StencilWeights = keyof typeof stencilPresets | ArrayLike<number>;

/** Options shared by the GPU {@link stencil} and `cpu.stencil`. */
export interface StencilOptions {
  /** 3×3 weights (row-major) or a preset name; default `box9`. */
  weights?: StencilWeights;
  /** Stop after the first sweep whose residual (max |new − old|) is ≤ tolerance; default 1e-6. */
  tolerance?: number;
  /** Stop after this many sweeps at most (an integer ≥ 1); default 1000. */
  maxIterations?: number;
}

/** The stencil options with defaults applied and checked. */
export interface ResolvedStencilOptions {
  weights: Float64Array;
  tolerance: number;
  maxIterations: number;
}

/** Applies the defaults and checks every option, throwing TypeError/RangeError naming it. */
export function resolveStencilOptions(options: StencilOptions): ResolvedStencilOptions {
  if (typeof options !== 'object' || options === null) throw typeError('options', 'an object', options);
  const given = options.weights ?? 'box9';
  let weights: Float64Array;
  if (typeof given === 'string') {
    if (!Object.hasOwn(stencilPresets, given))
      throw rangeError('options.weights', `a preset (${Object.keys(stencilPresets).join(', ')}) or 9 numbers`, given);
    weights = Float64Array.from(stencilPresets[given as keyof typeof stencilPresets]);
  } else {
    if (typeof given !== 'object' || given === null || typeof (given as ArrayLike<number>).length !== 'number')
      throw typeError('options.weights', 'a preset name or an array of 9 numbers', given);
    if (given.length !== 9)
      throw rangeError('options.weights', '9 numbers (3×3, row-major)', inWords(`${given.length} numbers`));
    weights = new Float64Array(9);
    for (let i = 0; i < 9; i++) {
      const w = given[i];
      if (typeof w !== 'number') throw typeError(`options.weights[${i}]`, 'a number', w);
      if (!Number.isFinite(w)) throw rangeError(`options.weights[${i}]`, 'finite', w);
      weights[i] = w;
    }
  }
  const tolerance = options.tolerance ?? 1e-6;
  if (typeof tolerance !== 'number') throw typeError('options.tolerance', 'a number', tolerance);
  if (!(tolerance >= 0)) throw rangeError('options.tolerance', '≥ 0', tolerance);
  const maxIterations = checkInteger('options.maxIterations', options.maxIterations ?? 1000, 1);
  return { weights, tolerance, maxIterations };
}

/** Checks rows and cols (integers ≥ 1) against the grid's length. */
export function checkGridShape(length: number, rows: unknown, cols: unknown): void {
  checkInteger('rows', rows, 1);
  checkInteger('cols', cols, 1);
  if ((rows as number) * (cols as number) !== length)
    throw rangeError('grid', `rows·cols = ${(rows as number) * (cols as number)} elements long`, elements(length));
}

/** What {@link stencil} and `cpu.stencil` return. */
export interface StencilResult<G> {
  /** The grid after the last sweep. */
  grid: G;
  /** Sweeps done. */
  iterations: number;
  /** max |new − old| over the grid in the last sweep (NaN once the grid holds NaN). */
  residual: number;
  /** Sum of the final grid (in float64). */
  checksum: number;
}
