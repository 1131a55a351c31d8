import * as ck from '../lib';
import { native } from '../lib/native';
import { floatScanError, freshSeed } from './harness/families';
import { describeGpu, describeNeeding } from './helpers/gpu';
import { hugeInputMissing } from './helpers/huge-inputs';

const LENGTHS = [0, 1, 2, 31, 32, 33, 1023, 1024, 1025, 65_537, 2 ** 20 + 7];
const INTEGER = new Set<ck.Dtype>(['int32', 'uint32']);

function hostInput(dtype: ck.Dtype, n: number, seed: number): ck.HostArray {
  const f = ck.cpu.randomArray(Float64Array, n, seed);
  if (dtype === 'float64') return f;
  if (dtype === 'float32') return new Float32Array(f);
  // Large magnitudes so that long prefixes wrap around 2^32.
  const out = dtype === 'int32' ? new Int32Array(n) : new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(f[i] * 2 ** 30);
  return out;
}

// The loops below avoid Math.abs / Math.max: inside jest's sandbox those calls are not inlined and
// cost ~60× more, which made the 10^8-element checks take minutes.
const abs = (x: number) => (x < 0 ? -x : x);

/** floatScanError for an inclusive scan, without building the reference arrays. */
function fusedFloatScanError(out: ArrayLike<number>, input: ArrayLike<number>): number {
  let prefix = 0;
  let absPrefix = 0;
  let worst = 0;
  for (let i = 0; i < input.length; i++) {
    prefix += input[i];
    absPrefix += abs(input[i]);
    const e = abs(out[i] - prefix) / (absPrefix > 1e-300 ? absPrefix : 1e-300);
    if (!(e <= worst)) worst = e === e ? e : Infinity;
  }
  return worst;
}

describe('cpu.scan and cpu.reduce', () => {
  test('inclusive and exclusive prefix sums', () => {
    expect(Array.from(ck.cpu.scan(new Int32Array([3, 1, 4, 1, 5])))).toEqual([3, 4, 8, 9, 14]);
    expect(Array.from(ck.cpu.scan(new Int32Array([3, 1, 4, 1, 5]), false))).toEqual([0, 3, 4, 8, 9]);
    expect(Array.from(ck.cpu.scan(new Float32Array([0.5, 0.25])))).toEqual([0.5, 0.75]);
  });

  test('integer sums wrap around modulo 2^32', () => {
    expect(Array.from(ck.cpu.scan(new Int32Array([2 ** 31 - 1, 1])))).toEqual([2 ** 31 - 1, -(2 ** 31)]);
    expect(Array.from(ck.cpu.scan(new Uint32Array([2 ** 32 - 1, 2])))).toEqual([2 ** 32 - 1, 1]);
    expect(ck.cpu.reduce(new Int32Array([2 ** 31 - 1, 1]), 'sum')).toBe(-(2 ** 31));
  });

  test('reduce of an empty array gives 0, +Infinity and -Infinity', () => {
    expect(ck.cpu.reduce(new Float32Array(0), 'sum')).toBe(0);
    expect(ck.cpu.reduce(new Float32Array(0), 'min')).toBe(Infinity);
    expect(ck.cpu.reduce(new Float32Array(0), 'max')).toBe(-Infinity);
    expect(ck.cpu.reduce(new Float64Array([2, -7, 5]), 'min')).toBe(-7);
  });

  test('an unknown op is a RangeError naming it, as on the GPU', () => {
    expect(() => ck.cpu.reduce(new Float32Array(3), 'mean' as never)).toThrow(RangeError);
    expect(() => ck.cpu.reduce(new Float32Array(3), 'mean' as never)).toThrow(/op must be 'sum', 'min' or 'max', got/);
  });
});

describe('scan arguments (no GPU needed)', () => {
  test('arr must be a DeviceArray', () => {
    expect(() => ck.scan(new Int32Array(3) as never)).toThrow(/arr must be a DeviceArray/);
    expect(() => ck.reduce([1, 2] as never, 'sum')).toThrow(/arr must be a DeviceArray/);
  });

  test('the TS registry lists the native methods in the same order', () => {
    expect(native.scanMethods()).toEqual([...ck.scanMethods]);
  });
});

describeGpu('scan', () => {
  describe.each(ck.scanMethods)('%s', (method) => {
    describe.each(ck.dtypes)('%s', (dtype) => {
      test.each(LENGTHS)('length %i, inclusive and exclusive, against cpu.scan', async (n) => {
        const input = hostInput(dtype, n, freshSeed());
        using a = ck.upload(input);
        for (const inclusive of [true, false]) {
          using out = ck.full(dtype, n, INTEGER.has(dtype) ? 0x5eed : NaN);
          expect(ck.scan(a, { method, inclusive, out })).toBe(out);
          const got = await out.toHost();
          const ref = ck.cpu.scan(input, inclusive);
          if (INTEGER.has(dtype)) {
            expect(ck.cpu.firstMismatch(got, ref)).toBe(-1);
          } else {
            expect(floatScanError(got, ref as Float64Array, input, inclusive)).toBeLessThan(
              dtype === 'float32' ? 1e-5 : 1e-13,
            );
          }
        }
      });
    });
  });

  describe.each(ck.scanMethods)('%s at 10^8 + 3 elements', (method) => {
    const n = 1e8 + 3;
    test.each(['int32', 'uint32'] as const)('%s: equals cub exactly, and the last element is reduce sum', (dtype) => {
      using a = ck.empty(dtype, n).fillRandom(freshSeed());
      using ref = ck.scan(a, { method: 'cub' });
      using out = ck.full(dtype, n, 0x5eed);
      ck.scan(a, { method, out });
      expect(ck.deviceRelativeError(out, ref)).toBe(0);
      // The last prefix is the wrapped sum of everything.
      expect(out.toHostSync()[n - 1]).toBe(ck.reduce(a, 'sum'));
    });

    test.each(['float32', 'float64'] as const)('%s: within the reordering bound of a float64 prefix', (dtype) => {
      using a = ck.empty(dtype, n).fillRandom(freshSeed());
      using out = ck.full(dtype, n, NaN);
      ck.scan(a, { method, out });
      const bound = dtype === 'float32' ? 1e-5 : 1e-13;
      // One fused pass (float64 prefix, |prefix| bound and comparison): the separate reference
      // arrays of the small cases would cost minutes of CPU time at this length.
      expect(fusedFloatScanError(out.toHostSync(), a.toHostSync())).toBeLessThan(bound);
    });
  });

  // 100 003 elements stay below `fast`'s persistent kernel (16 MiB and up); 2^22 + 5 int32 runs it.
  test.each(ck.scanMethods.flatMap((m) => [100_003, 2 ** 22 + 5].map((n) => [m, n] as const)))(
    '%s works in place, %i elements',
    async (method, n) => {
      const input = hostInput('int32', n, freshSeed());
      using a = ck.upload(input);
      expect(ck.scan(a, { method, out: a, inclusive: false })).toBe(a);
      expect(ck.cpu.firstMismatch(await a.toHost(), ck.cpu.scan(input, false))).toBe(-1);
    },
  );

  describe.each(ck.dtypes)('reduce %s', (dtype) => {
    test.each([0, 1, 33, 1025, 2 ** 20 + 7])('length %i: sum, min and max against cpu.reduce', (n) => {
      const input = hostInput(dtype, n, freshSeed());
      using a = ck.upload(input);
      for (const op of ['sum', 'min', 'max'] as const) {
        const got = ck.reduce(a, op);
        const ref = ck.cpu.reduce(input, op);
        if (INTEGER.has(dtype) || op !== 'sum') expect(got).toBe(ref);
        else
          expect(Math.abs(got - ref)).toBeLessThanOrEqual(
            1e-9 * Math.max(1, ck.cpu.reduce(input.map(Math.abs) as never, 'sum')),
          );
      }
    });
  });

  // Where the addon's CUB counts items in an int (before 2.7: the CUDA 12 fallback binary), `cub`
  // refuses longer arrays; here its limit is stood in for by a small one, so the refusal runs on any
  // build (the real one is bench/dev/scan/cub-count-probe.js's, and the big suite below).
  test("cub refuses an array over its CUB's limit, naming it, and leaves out as it was", () => {
    const real = native.scanCubInfo;
    using a = ck.full('int32', 11, 1);
    using out = ck.full('int32', 11, -7);
    try {
      native.scanCubInfo = () => ({ version: 200302, maxItems: 10 });
      expect(() => ck.scan(a, { method: 'cub', out })).toThrow(
        /^options.method 'cub' takes at most 10 elements in this build \(CUB 2\.3\.2 counts items in an int; CUB 2\.7 and newer take any length\), and arr has 11: 'fast' and 'lookback' take any length$/,
      );
      expect(Array.from(out.toHostSync())).toEqual(new Array(11).fill(-7));
      expect(() => ck.scan(a, { method: 'fast', out })).not.toThrow();
    } finally {
      native.scanCubInfo = real;
    }
    ck.scan(a, { method: 'cub', out });
    expect(Array.from(out.toHostSync())).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
  });

  test('bad input gives clear errors', () => {
    using a = ck.zeros('int32', 8);
    using f = ck.zeros('float32', 8);
    using short = ck.zeros('int32', 7);
    expect(() => ck.scan(a, { out: f as never })).toThrow(/options.out must be a DeviceArray of int32/);
    expect(() => ck.scan(a, { out: short })).toThrow(/options.out must be 8 elements long/);
    expect(() => ck.scan(a, { method: 'hillis' as never })).toThrow(
      /options.method must be one of auto, warp, blocks, cub, lookback, fast/,
    );
    expect(() => ck.scan(a, { inclusive: 1 as never })).toThrow(/options.inclusive must be a boolean/);
    expect(() => ck.reduce(a, 'mean' as never)).toThrow(/op must be 'sum', 'min' or 'max'/);
    const freed = ck.zeros('int32', 8);
    freed.free();
    expect(() => ck.scan(freed)).toThrow(/arr has been freed/);
    expect(() => ck.reduce(freed, 'sum')).toThrow(/arr has been freed/);
  });
});

// Past 2^32 elements: int32, n = 2^32 + 2^20 + 7 (17.2 GB in and as much out), filled on the device
// with x(i) = (i mod 7) − 3. Each 7 in a row sum to 0, so the prefix sums repeat every 7 and stay
// small: inclusive S(i) = r(r + 1)/2 − 3(r + 1) for r = i mod 7, exclusive S(i) − x(i). A count
// narrowed to 32 bits would scan only the first 2^20 + 7 (CUB before 2.7 takes num_items as an int):
// every element is checked on the device (a reduction counts the wrong ones and finds the first).
// Where the addon's CUB counts in an int, `cub` must refuse the array and leave `out` as it was.
const BIG_N = 2 ** 32 + 2 ** 20 + 7;

describeNeeding(
  'scan and reduce past 2^32 elements',
  () => {
    const fill = ck.elementwise({
      name: 'scan_big_fill',
      in: 'int32 period',
      out: 'int32 x',
      body: 'x = (int)(i % period) - 3;',
    });
    // Both checks take the scanned array and whether the scan was exclusive; ck_wrong(got, exclusive, i)
    // says whether element i differs from the closed form.
    const closedForm = {
      in: 'int32 got, int32 exclusive',
      preamble:
        '__device__ bool ck_wrong(int got, int exclusive, long long i) { const long long r = i % 7; ' +
        'const int s = (int)(r * (r + 1) / 2 - 3 * (r + 1)) - (exclusive ? (int)r - 3 : 0); return got != s; }',
    };
    const wrong = ck.reduction({
      ...closedForm,
      name: 'scan_big_wrong',
      out: 'float64 count',
      map: 'ck_wrong(got, exclusive, i) ? 1.0 : 0.0',
      reduce: 'a + b',
      identity: '0',
    });
    const first = ck.reduction({
      ...closedForm,
      name: 'scan_big_first_wrong',
      out: 'float64 index',
      map: 'ck_wrong(got, exclusive, i) ? (double)i : 1e300',
      reduce: 'min(a, b)',
      identity: '1e300',
    });
    const cubMax = native.scanCubInfo().maxItems;
    let a: ck.DeviceArray<'int32'>;
    let out: ck.DeviceArray<'int32'>;
    beforeAll(() => {
      a = ck.empty('int32', BIG_N);
      out = ck.empty('int32', BIG_N);
    });
    afterAll(() => {
      a?.free();
      out?.free();
    });

    /** How many elements of `got` differ from the closed form, and the first (-1: none). */
    function check(got: ck.DeviceArray<'int32'>, inclusive: boolean) {
      const ex = inclusive ? 0 : 1;
      using count = wrong(got, ex);
      using at = first(got, ex);
      const index = at.toHostSync()[0];
      return { wrong: count.toHostSync()[0], first: index === 1e300 ? -1 : index };
    }

    test('reduce: sum, min and max of the whole array', () => {
      fill(7, { out: a });
      // Whole periods sum to 0; the (2^32 + 2^20 + 7) mod 7 = 1 element after them is −3.
      const rest = BIG_N % 7;
      let tail = 0;
      for (let r = 0; r < rest; r++) tail += r - 3;
      expect({ sum: ck.reduce(a, 'sum'), min: ck.reduce(a, 'min'), max: ck.reduce(a, 'max') }).toEqual({
        sum: tail,
        min: -3,
        max: 3,
      });
    });

    test.each(ck.scanMethods.flatMap((m) => [true, false].map((inclusive) => [m, inclusive] as const)))(
      '%s, inclusive %s: every element is the closed form (cub: or refused where its CUB counts in an int)',
      (method, inclusive) => {
        fill(7, { out: a });
        out.fill(-1_000_000);
        if (method === 'cub' && BIG_N > cubMax) {
          expect(() => ck.scan(a, { method, inclusive, out })).toThrow(/'cub' takes at most 2147483647 elements/);
          expect(check(out, inclusive).wrong).toBe(BIG_N);
          return;
        }
        ck.scan(a, { method, inclusive, out });
        expect({ method, ...check(out, inclusive) }).toEqual({ method, wrong: 0, first: -1 });
      },
    );

    test.each(['fast', 'cub'] as const)('%s in place', (method) => {
      fill(7, { out: a });
      if (method === 'cub' && BIG_N > cubMax) {
        expect(() => ck.scan(a, { method, out: a })).toThrow(/'cub' takes at most/);
        return;
      }
      ck.scan(a, { method, out: a });
      expect({ method, ...check(a, true) }).toEqual({ method, wrong: 0, first: -1 });
    });
  },
  hugeInputMissing(2 * BIG_N * 4),
);
