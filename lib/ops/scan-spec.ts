import { rangeError } from '../errors';

// What a reduction is, shared by the GPU op (lib/ops/scan.ts) and the CPU reference (lib/cpu/scan.ts).
// It loads no binary, so the CPU reference stays usable without one.

/** Reduction operators of {@link reduce}. */
export type ReduceOp = 'sum' | 'min' | 'max';

/** The operators in the order of the native code's operator numbers. */
export const REDUCE_OPS: readonly ReduceOp[] = ['sum', 'min', 'max'];

/**
 * The operator's index in {@link REDUCE_OPS} (the native operator number).
 * @throws RangeError for anything else, on the GPU and in the CPU reference alike.
 */
export function reduceOpIndex(op: ReduceOp): number {
  const i = REDUCE_OPS.indexOf(op);
  if (i < 0) throw rangeError('op', "'sum', 'min' or 'max'", op);
  return i;
}
