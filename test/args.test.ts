// Argument errors that the TS layer raises before anything reaches the GPU (they run everywhere).
import * as ck from '../lib';

describe('argument checks', () => {
  test('dtype must be one of the four supported', () => {
    expect(() => ck.empty('float16' as never, 4)).toThrow(/dtype must be one of float32, float64, int32, uint32/);
    expect(() => ck.zeros(3 as never, 4)).toThrow(TypeError);
  });

  test.each([
    [-1, RangeError],
    [1.5, RangeError],
    [NaN, RangeError],
    [Infinity, RangeError],
    [2 ** 60, RangeError],
    ['4', TypeError],
    [undefined, TypeError],
  ])('length %p is refused with %p', (length, kind) => {
    expect(() => ck.empty('float32', length as number)).toThrow(kind as ErrorConstructor);
    expect(() => ck.empty('float32', length as number)).toThrow(/length/);
  });

  test('device must be a non-negative integer', () => {
    expect(() => ck.empty('float32', 1, { device: -1 })).toThrow(/options.device/);
    expect(() => ck.empty('float32', 1, { device: 0.5 })).toThrow(RangeError);
    expect(() => ck.deviceProperties('0' as never)).toThrow(TypeError);
  });

  test('upload takes only the four typed arrays', () => {
    expect(() => ck.upload([1, 2, 3] as never)).toThrow(/data must be a Float32Array/);
    expect(() => ck.upload(new Uint8Array(3) as never)).toThrow(TypeError);
    expect(() => ck.upload(new Float32Array(3).buffer as never)).toThrow(TypeError);
  });

  test('shape must match the length', () => {
    expect(() => ck.empty('float32', 6, { shape: [2, 4] })).toThrow(/product is the length 6/);
    expect(() => ck.empty('float32', 6, { shape: [2, -3] })).toThrow(RangeError);
  });

  test('timed takes a function', () => {
    expect(() => ck.timed(42 as never)).toThrow(/fn must be a function/);
  });
});
