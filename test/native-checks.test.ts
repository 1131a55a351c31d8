// The native re-checks behind the TS layer: what a caller that skips lib/ops (or a bug there) must
// not be able to do to the process. Each case calls the raw binding with sizes the TS layer would
// refuse and expects a RangeError instead of a launch.
import * as ck from '../lib';
import { native } from '../lib/native';
import { expectThrows } from './helpers/errors';
import { describeGpu } from './helpers/gpu';

const TWO32 = 2 ** 32;

describeGpu('native size checks cannot be wrapped around', () => {
  // An empty array "holds" 0 elements, and 2^32 · 2^32 wraps to 0 in 64-bit arithmetic: before the
  // overflow-safe products, these passed the length checks and launched on a null pointer.
  test('AᵀA with rows = cols = 2^32 on empty arrays', () => {
    using a = ck.empty('float64', 0);
    using c = ck.empty('float64', 0);
    for (let m = 0; m < ck.ataMethods.length; m++) {
      expectThrows(() => native.ataRun(a.handle(), c.handle(), TWO32, TWO32, m), 'RangeError', /larger than any array/);
    }
  });

  test('SGEMM with m·k, k·n or m·n wrapping to 0', () => {
    using a = ck.empty('float32', 0);
    using b = ck.empty('float32', 0);
    using c = ck.empty('float32', 0);
    for (let m = 0; m < ck.gemmMethods.length; m++) {
      expectThrows(
        () => native.gemmRun(a.handle(), b.handle(), c.handle(), TWO32, TWO32, TWO32, m, 16),
        'RangeError',
        /larger than any array/,
      );
    }
  });

  test('stencil with rows · cols wrapping to 0', () => {
    using g = ck.empty('float32', 0);
    using a = ck.empty('float32', 0);
    using b = ck.empty('float32', 0);
    const w = new Float64Array(9).fill(1 / 9);
    expectThrows(
      () => native.stencilRun(g.handle(), a.handle(), b.handle(), TWO32, TWO32, w, 0, 1, 1, 0),
      'RangeError',
      /larger than any array/,
    );
  });
});

// Pure arithmetic in the binding: runs without a GPU too.
describe('native MLP size checks', () => {
  test('parameter and workspace counts beyond 2^53', () => {
    // Layers of 2^31 − 1 units: 2^62 parameters per layer, more than any array.
    const wide = 2 ** 31 - 1;
    expectThrows(() => native.mlpWorkspace([wide, wide, wide], 0, 0, 1, 1, true), 'RangeError', /parameter count/);
    // A batch of 2^52 patterns on a net whose own size is fine.
    expectThrows(() => native.mlpWorkspace([4, 8, 3], 0, 0, 2 ** 52, 1, true), 'RangeError', /workspace/);
    expect(native.mlpWorkspace([4, 8, 3], 0, 0, 16, 2, true)).toBeGreaterThan(0);
  });
});
