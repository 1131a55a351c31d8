// gemm `fast` with k cut into pieces (split-K, native/gemm/3_register_pipelined.cu): a C of at most
// one 128×128 tile per two SMs sums each piece of k into its own slice of a workspace, and a second
// kernel adds the slices in order. The test hook debugGemmSplits forces the piece count, so every
// load path (float4 and scalar A and B, a last piece shorter than a 16-deep slab) runs at small sizes
// against the CPU reference, and reads how many pieces a launch used, so each test checks that k was
// cut as planned or forced. The long shapes themselves run in test/gemm.test.ts (`gemm with long K`).
import * as ck from '../lib';
import { native } from '../lib/native';
import { freshSeed } from './harness/families';
import { describeNeeding, gpuCount } from './helpers/gpu';
import { outsideGemmBound } from './helpers/reference-checks';

const forceSplits = native.debugGemmSplits;
const SANITIZER = process.env.CK_SANITIZER_TOOL;

function missing(): string | null {
  if (gpuCount === 0) return process.env.CK_REQUIRE_GPU ? null : `no GPU — ${ck.runtimeInfo().noDeviceReason}`;
  if (typeof forceSplits !== 'function') return 'a release build (no test hooks)';
  return null;
}

/**
 * The pieces launchFast uses for an m×k×n product on a GPU of `sms` SMs (only where C has at most one
 * 128×128 tile per two SMs; up to two blocks per SM, as on the H100 and H200 these run on; pieces of
 * 32 slabs of 16 or more), or `forced` pieces where k has that many slabs; the count then follows
 * from whole slabs per piece, so no piece is empty.
 */
function plannedPieces(m: number, k: number, n: number, sms: number, forced = 0): number {
  const tiles = Math.ceil(m / 128) * Math.ceil(n / 128);
  const slabs = Math.ceil(k / 16);
  const resident = 2 * sms;
  let want = tiles * 2 <= sms ? Math.min(Math.floor(resident / tiles), Math.floor(slabs / 32)) : 1;
  if (forced > 0) want = forced;
  want = Math.max(1, Math.min(want, 65535));
  return Math.ceil(slabs / Math.ceil(slabs / want));
}

/** The pieces the gemm calls in `run` used (the last launch's), with `forced` pieces (0: the plan). */
function piecesOf(forced: number, run: () => void): number {
  forceSplits?.(forced);
  run();
  return forceSplits?.(0) ?? 0;
}

function randomProduct(m: number, k: number, n: number) {
  const a = ck.cpu.randomArray(Float32Array, m * k, freshSeed());
  const b = ck.cpu.randomArray(Float32Array, k * n, freshSeed());
  return { a, b };
}

// [m, k, n]: float4 loads of both (256×4096×256); scalar B and C (n = 70); scalar A and B (k = 1001,
// n = 65); scalar A, float4 B (k = 1001, n = 68); one row and column; k = 17, two slabs, the second
// 1 deep (pieces capped at 2).
const SHAPES: [number, number, number][] = [
  [256, 4096, 256],
  [130, 1000, 70],
  [129, 1001, 65],
  [130, 1001, 68],
  [1, 333, 1],
  [5, 17, 3],
];

describeNeeding(
  'gemm fast with k in pieces (split-K)',
  () => {
    const sms = gpuCount > 0 ? ck.deviceProperties(0).smCount : 0;
    afterEach(() => forceSplits?.(0));

    describe.each([2, 3, 7, 64])('%i pieces forced', (forced) => {
      test.each(SHAPES)(
        '%i×%i×%i matches cpu.gemm within the float32 bound, every element written',
        async (m, k, n) => {
          const { a, b } = randomProduct(m, k, n);
          using dA = ck.upload(a);
          using dB = ck.upload(b);
          using out = ck.full('float32', m * n, NaN);
          const pieces = piecesOf(forced, () => ck.gemm(dA, dB, m, k, n, { method: 'fast', out }));
          const bad = outsideGemmBound(await out.toHost(), a, b, m, k, n);
          expect({ pieces, bad }).toEqual({ pieces: plannedPieces(m, k, n, sms, forced), bad: -1 });
        },
      );
    });

    test('the plan: a C of few tiles and long k is cut, a C of over one tile per two SMs is not', async () => {
      // 128×16384×128: one tile, 1024 slabs → min(2·SMs, 32) pieces, checked against the CPU.
      const [m, k, n] = [128, 16384, 128];
      const { a, b } = randomProduct(m, k, n);
      using dA = ck.upload(a);
      using dB = ck.upload(b);
      using out = ck.full('float32', m * n, NaN);
      const pieces = piecesOf(0, () => ck.gemm(dA, dB, m, k, n, { method: 'fast', out }));
      expect({ pieces, bad: outsideGemmBound(await out.toHost(), a, b, m, k, n) }).toEqual({
        pieces: plannedPieces(m, k, n, sms),
        bad: -1,
      });
      expect(pieces).toBeGreaterThan(1);
      // Short k, and C's of over one tile per two SMs, are left whole; at the threshold k is cut.
      const half = Math.floor(sms / 2);
      for (const [mm, kk, nn] of [
        [128, 511, 128],
        [128 * (half + 1), 4096, 128],
        [128 * half, 4096, 128],
        [2 * 128 * sms, 4096, 128],
        [1024, 1024, 1024],
      ]) {
        using x = ck.empty('float32', mm * kk).fillRandom(freshSeed());
        using y = ck.empty('float32', kk * nn).fillRandom(freshSeed());
        using whole = ck.empty('float32', mm * nn);
        using cut = ck.empty('float32', mm * nn).fill(NaN);
        piecesOf(1, () => ck.gemm(x, y, mm, kk, nn, { method: 'fast', out: whole }));
        const planned = piecesOf(0, () => ck.gemm(x, y, mm, kk, nn, { method: 'fast', out: cut }));
        const err = ck.deviceRelativeError(cut, whole);
        expect({ shape: [mm, kk, nn], planned, close: err < 1e-5 }).toEqual({
          shape: [mm, kk, nn],
          planned: plannedPieces(mm, kk, nn, sms),
          close: true,
        });
      }
      expect(plannedPieces(128, 511, 128, sms)).toBe(1);
      expect(plannedPieces(128 * (half + 1), 4096, 128, sms)).toBe(1);
      expect(plannedPieces(128 * half, 4096, 128, sms)).toBeGreaterThan(1);
    });

    test('the pieces are summed in a fixed order: two runs give the same bits', () => {
      const [m, k, n] = [200, 30001, 130];
      using a = ck.empty('float32', m * k).fillRandom(freshSeed());
      using b = ck.empty('float32', k * n).fillRandom(freshSeed());
      using first = ck.gemm(a, b, m, k, n, { method: 'fast' });
      const runs: number[] = [];
      for (let i = 0; i < 3; i++) {
        using again = ck.empty('float32', m * n).fill(NaN);
        runs.push(piecesOf(0, () => ck.gemm(a, b, m, k, n, { method: 'fast', out: again })));
        expect(Buffer.from(again.toHostSync().buffer).equals(Buffer.from(first.toHostSync().buffer))).toBe(true);
      }
      expect(runs).toEqual([1, 2, 3].map(() => plannedPieces(m, k, n, sms)));
      expect(runs[0]).toBeGreaterThan(1);
    });

    // The workspace comes from the pool; with the device full, fast runs k in one piece instead of
    // failing. Skipped under a sanitizer, which would have to track every byte of the filled device.
    (SANITIZER ? test.skip : test)('with the device full, fast runs unsplit instead of failing', async () => {
      const [m, k, n] = [256, 4096, 256];
      const { a, b } = randomProduct(m, k, n);
      using dA = ck.upload(a);
      using dB = ck.upload(b);
      using out = ck.full('float32', m * n, NaN);
      const held: ck.DeviceArray[] = [];
      let pieces: number;
      // Both kernels loaded first: loading one with the device full could fail on its own.
      piecesOf(64, () => ck.gemm(dA, dB, m, k, n, { method: 'fast', out }));
      piecesOf(1, () => ck.gemm(dA, dB, m, k, n, { method: 'fast', out }));
      out.fill(NaN);
      try {
        // Fill down to under 1 MiB free; 64 pieces need a 16 MiB workspace.
        for (const bytes of [2 ** 30, 2 ** 26, 2 ** 20]) {
          for (;;) {
            try {
              held.push(ck.empty('uint32', bytes / 4));
            } catch {
              break;
            }
          }
        }
        pieces = piecesOf(64, () => ck.gemm(dA, dB, m, k, n, { method: 'fast', out }));
      } finally {
        for (const h of held) h.free();
      }
      ck.synchronize();
      expect({ held: held.length > 0, pieces, bad: outsideGemmBound(await out.toHost(), a, b, m, k, n) }).toEqual({
        held: true,
        pieces: 1,
        bad: -1,
      });
    });
  },
  missing(),
);
