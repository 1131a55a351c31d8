import * as cpu from '../lib/cpu';

describe('cpu helpers', () => {
  test('relativeError is the relative 2-norm of the difference', () => {
    expect(cpu.relativeError([3, 4], [3, 4])).toBe(0);
    expect(cpu.relativeError([3, 5], [3, 4])).toBeCloseTo(1 / 5, 12);
    expect(cpu.relativeError([1, 1], [0, 0])).toBeCloseTo(Math.SQRT2, 12);
    expect(cpu.relativeError([NaN, 4], [3, 4])).toBeNaN();
    expect(() => cpu.relativeError([1], [1, 2])).toThrow(RangeError);
  });

  test('firstMismatch finds the first differing element, NaN included', () => {
    expect(cpu.firstMismatch([1, 2, 3], [1, 2, 3])).toBe(-1);
    expect(cpu.firstMismatch([1, 9, 3], [1, 2, 3])).toBe(1);
    expect(cpu.firstMismatch([NaN], [NaN])).toBe(0);
    expect(cpu.firstMismatch([1, 2], [1, 2, 3])).toBe(2);
  });

  test('randomArray is deterministic per seed, differs across seeds, and lies in [-1, 1)', () => {
    const a = cpu.randomArray(Float64Array, 10000, 3);
    const b = cpu.randomArray(Float64Array, 10000, 3);
    const c = cpu.randomArray(Float64Array, 10000, 4);
    expect(cpu.firstMismatch(a, b)).toBe(-1);
    expect(cpu.firstMismatch(a, c)).toBe(0);
    let mean = 0;
    for (const v of a) {
      expect(v).toBeGreaterThanOrEqual(-1);
      expect(v).toBeLessThan(1);
      mean += v / a.length;
    }
    expect(Math.abs(mean)).toBeLessThan(0.05);
  });
});
