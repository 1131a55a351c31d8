// What a reduction is, shared by the GPU op (lib/ops/scan.ts) and the CPU reference (lib/cpu/scan.ts).
// It loads no binary, so the CPU reference stays usable without one.

/** Reduction operators of {@link reduce}. */
export type ReduceOp = 'sum' | 'min' | 'max';

/** The operators in the order of the native code's operator numbers. */
export const REDUCE_OPS: readonly ReduceOp[] = ['sum', 'min', 'max'];
