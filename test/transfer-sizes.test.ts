// The host side of large transfers, at the sizes where its split into parts has edges. Transfers
// above 1 MiB copy each ring chunk on the host in parts, one thread each; the split lost the last
// bytes of a chunk at some sizes on hosts with ten or more hardware threads (every GPU host), which a
// 2-core machine never splits. The split itself runs here with the part count forced (no GPU
// needed); every transfer path runs over the edge sizes on a GPU, with the host's own part count and
// with CK_HOST_COPY_THREADS=8 in a child process.
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';

import { native } from '../lib/native';
import { describeGpu } from './helpers/gpu';
import { checkTransfers, edgeSizes, lostBefore, type TransferCheck } from './harness/transfer-sizes';

const MiB = 1 << 20;
const root = path.join(__dirname, '..');
const hostCopy = native.debugHostCopy;
const withHook = hostCopy ? describe : describe.skip;

function random(n: number, seed: number): Uint8Array {
  const a = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    a[i] = x & 255;
  }
  return a;
}

/** The first index where a and b differ, or -1. */
function mismatch(a: Uint8Array, b: Uint8Array): number {
  if (Buffer.compare(a, b) === 0) return -1;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return a.length;
}

function child(script: string, env: Record<string, string>): Record<string, unknown> {
  const r = spawnSync(process.execPath, ['-r', './test/harness/ts-register.js', script], {
    cwd: root,
    encoding: 'utf8',
    timeout: 600_000,
    maxBuffer: 1 << 24,
    env: { ...process.env, ...env },
  });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${script} exited ${r.status ?? r.signal}\n${r.stdout}\n${r.stderr}`);
  const out = JSON.parse(r.stdout.trim().split('\n').pop()!);
  if (out.fatal) throw new Error(out.fatal);
  return out;
}

withHook(
  `the host-side split of a large copy covers every byte${hostCopy ? '' : ' [skipped: release build without test hooks]'}`,
  () => {
    // Lengths at the split's edges for each part count: whole pages per part, one to a few bytes more
    // (the lengths that lost their tail), one page short, and odd lengths.
    const lengths = (parts: number) => {
      const out = new Set<number>([1, 4095, 4096, 4097, 2 * MiB - 1, 2 * MiB + 1]);
      for (const k of [1, 2, 512, 513]) {
        const whole = parts * 4096 * k;
        for (const r of [0, 1, 3, 4, 8, parts - 1, parts, 4095, 4096 * parts - 1, -1, -4096])
          if (whole + r > 0) out.add(whole + r);
      }
      return [...out];
    };

    test('parts 1 to 16, every edge length: the copy equals the source (poisoned target)', () => {
      let cases = 0;
      const failures: string[] = [];
      // One random source; each case copies a slice of it from an offset that varies its alignment.
      const all = random(16 * 4096 * 514 + 8192, 17);
      const target = new Uint8Array(all.length);
      for (let parts = 1; parts <= 16; parts++) {
        for (const n of lengths(parts)) {
          const off = (cases * 1031) % 8192;
          const src = all.subarray(off, off + n);
          const dst = target.subarray(0, n).fill(0xa5);
          const used = hostCopy!(dst, src, parts);
          expect(used).toBe(parts);
          const m = mismatch(dst, src);
          if (m !== -1) failures.push(`parts ${parts}, ${n} bytes: first wrong byte ${m}`);
          cases++;
        }
      }
      expect(failures).toEqual([]);
      expect(cases).toBeGreaterThan(600);
    });

    test('the lengths the defect was found at (a ring chunk of float32[10534913]) are among those checked', () => {
      // 42,139,652 bytes = 4 chunks, the last 10,485,764 bytes = 5 parts of 2 MiB + 4 bytes.
      expect(edgeSizes(4, 8)).toContain(10_534_913 * 4);
      expect(lostBefore(4095 * 4095 * 4, 8)).toBe(true);
      const src = random(10_485_764, 3);
      const dst = new Uint8Array(src.length);
      expect(hostCopy!(dst, src, 5)).toBe(5);
      expect(mismatch(dst, src)).toBe(-1);
    });

    test('CK_HOST_COPY_THREADS forces the part count a GPU host uses (child process)', () => {
      const script = path.join(root, 'test', 'harness', 'host-copy-parts.ts');
      const out = child(script, { CK_HOST_COPY_THREADS: '8' }) as { parts: number[]; mismatches: number[] };
      // One part per 2 MiB, at most 8: 1 MiB, 5 MiB + 4 B, 10 MiB + 4 B, 40 MiB.
      expect(out.parts).toEqual([1, 2, 5, 8]);
      expect(out.mismatches).toEqual([-1, -1, -1, -1]);
    });
  },
);

describeGpu('every transfer path at the edge sizes of the host-side split', () => {
  const expectClean = (r: TransferCheck, minSizes = 6) => {
    expect(r.failures).toEqual([]);
    expect(r.sizes).toBeGreaterThan(minSizes);
    expect(r.checked).toBeGreaterThan(7 * minSizes);
  };

  // Natively this takes ~115 s on an H100 host (about 60 transfers of 40–100 MB each way), too close to
  // jest's 120 s; under a compute-sanitizer (slower launches, a soak beside it) it covers one spread
  // size per dtype and the two sizes the defect was found at, which the copies' kernels are checked on.
  const sanitized = Boolean(process.env.CK_SANITIZER_TOOL);
  test("with this host's part count", async () => {
    const threads = hostCopy ? hostCopy(new Uint8Array(16 * MiB), new Uint8Array(16 * MiB), 0) : 8;
    const r = await checkTransfers(threads, sanitized ? 1 : 4);
    // A host with fewer than 10 hardware threads splits into fewer parts than any edge needs.
    if (edgeSizes(4, threads).length > 0) expectClean(r, sanitized ? 3 : 6);
  }, 600_000);

  test('with 8 parts forced, copyFromAsync on its calling-thread path (child process)', () => {
    const script = path.join(root, 'test', 'harness', 'transfer-sizes.ts');
    expectClean(child(script, { CK_HOST_COPY_THREADS: '8', CK_NO_STREAM_STAGING: '1' }) as never);
  });
});
