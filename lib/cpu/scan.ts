import type { HostArray } from '../array';
import { typeError } from '../errors';
import { type ReduceOp, reduceOpIndex } from '../ops/scan-spec';

/**
 * Prefix sums of a typed array. Integer arrays give the same type, wrapping around modulo 2^32 as
 * the GPU does (two's complement for Int32Array); float arrays give a Float64Array computed in
 * float64 (the reference the GPU's float32/float64 scans are compared with). Exclusive scans start
 * at 0.
 */
export function scan(a: HostArray, inclusive = true): Int32Array | Uint32Array | Float64Array {
  const n = a.length;
  if (a instanceof Int32Array || a instanceof Uint32Array) {
    const out = a instanceof Int32Array ? new Int32Array(n) : new Uint32Array(n);
    let acc = 0;
    for (let i = 0; i < n; i++) {
      if (inclusive) acc = (acc + a[i]) | 0;
      out[i] = acc;
      if (!inclusive) acc = (acc + a[i]) | 0;
    }
    return out;
  }
  if (!(a instanceof Float32Array || a instanceof Float64Array)) {
    throw typeError('a', 'a Float32Array, Float64Array, Int32Array or Uint32Array', a);
  }
  const out = new Float64Array(n);
  let acc = 0;
  for (let i = 0; i < n; i++) {
    if (inclusive) acc += a[i];
    out[i] = acc;
    if (!inclusive) acc += a[i];
  }
  return out;
}

export type { ReduceOp };

/**
 * sum, min or max of a typed array as a number, with the GPU's conventions: float sums in float64,
 * integer sums wrapping modulo 2^32 (an Int32Array's as a signed value); an empty array gives 0,
 * +Infinity and -Infinity.
 */
export function reduce(a: HostArray, op: ReduceOp): number {
  reduceOpIndex(op);
  const n = a.length;
  if (op === 'min' || op === 'max') {
    // Comparisons rather than Math.min/max (slow in hot loops inside jest's sandbox); a NaN
    // anywhere gives NaN, as Math.min/max would.
    let r = op === 'min' ? Infinity : -Infinity;
    for (let i = 0; i < n; i++) {
      const x = a[i];
      if (x !== x) return NaN;
      if (op === 'min' ? x < r : x > r) r = x;
    }
    return r;
  }
  let acc = 0;
  if (a instanceof Int32Array) {
    for (let i = 0; i < n; i++) acc = (acc + a[i]) | 0;
  } else if (a instanceof Uint32Array) {
    for (let i = 0; i < n; i++) acc = (acc + a[i]) >>> 0;
  } else {
    for (let i = 0; i < n; i++) acc += a[i];
  }
  return acc;
}
