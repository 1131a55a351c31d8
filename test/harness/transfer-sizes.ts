// Sizes chosen against the thresholds of the host side of large transfers, and a check of every
// path through it. Used by test/transfer-sizes.test.ts in its own process and, run as a script, in a
// child process with CK_HOST_COPY_THREADS forced (prints one JSON line).
//
// A transfer above 1 MiB goes through a pinned ring (native/core/transfer.cc): chunks of
// clamp(⌈bytes / 4⌉ rounded up to 64 KiB, 1 MiB, 16 MiB), each copied on the host in
// p = min(threads, ⌊chunk / 2 MiB⌋) page-aligned parts. The split used to round ⌊len / p⌋ up to a page,
// which loses len mod p bytes when ⌊len / p⌋ is already a whole number of pages: the sizes below are
// built so that a chunk has exactly that length.
import * as ck from '../../lib';
import { freshSeed, hostData } from './families';

const MiB = 1 << 20;
const PAGE = 4096;
const SLOTS = 4;

/** The chunk lengths of a ring transfer of `bytes`, as ringDownload/ringUpload cut them. */
export function ringChunks(bytes: number): number[] {
  const quarter = Math.ceil(Math.ceil(bytes / SLOTS) / 65536) * 65536;
  const chunk = Math.min(Math.max(quarter, MiB), 16 * MiB);
  const out: number[] = [];
  for (let off = 0; off < bytes; off += chunk) out.push(Math.min(chunk, bytes - off));
  return out;
}

/** The parts the host copy of `len` bytes is split into with `threads` threads. */
export function hostParts(len: number, threads: number): number {
  return Math.max(1, Math.min(threads, Math.floor(len / (2 * MiB))));
}

/** Whether the old split (⌊len / p⌋ rounded up to a page, p times) missed bytes of a `len` copy. */
export function oldSplitLoses(len: number, parts: number): boolean {
  if (parts <= 1) return false;
  const per = Math.ceil(Math.floor(len / parts) / PAGE) * PAGE;
  return per * parts < len;
}

/** Whether a ring transfer of `bytes` lost bytes before the fix, with `threads` host threads. */
export function lostBefore(bytes: number, threads: number): boolean {
  return ringChunks(bytes).some((len) => oldSplitLoses(len, hostParts(len, threads)));
}

/**
 * Byte counts (multiples of `elem`) whose ring transfer has a chunk of length p·4096·k + elem for a
 * part count p the host uses: the old split dropped its last `elem` bytes. Both shapes: a last chunk
 * after 16 MiB ones (transfers above 64 MiB), and a last chunk after three shorter ones (below).
 */
export function edgeSizes(elem: number, threads: number): number[] {
  const out = new Set<number>();
  for (let p = 2; p <= Math.min(threads, 8); p++) {
    for (const e of [elem, 2 * elem, 3 * elem]) {
      if (e >= p) continue; // ⌊len / p⌋ must stay p·4096·k / p
      for (const k of [512, 513, 530, 560, 584]) {
        const len = p * PAGE * k + e;
        if (hostParts(len, threads) !== p) continue;
        if (len < 16 * MiB) out.add(4 * 16 * MiB + len);
        const c = Math.ceil(len / 65536) * 65536;
        out.add(3 * c + len);
      }
    }
  }
  return [...out].filter((b) => b % elem === 0 && lostBefore(b, threads)).sort((a, b) => a - b);
}

export interface TransferCheck {
  threads: number;
  sizes: number;
  checked: number;
  failures: string[];
}

type Dt = 'int32' | 'float32';

/**
 * Every transfer path through the host-side split, on sizes that lost bytes before the fix and their
 * neighbours (± one element): upload, copyFrom, copyFromAsync (its calling-thread path when
 * CK_NO_STREAM_STAGING is set), toHostSync and toHost into new and into pageable targets. Device data
 * is written and read back through pinned memory (no host split), so each check sees one path only.
 */
export async function checkTransfers(threads: number, perDtype = 4): Promise<TransferCheck> {
  const failures: string[] = [];
  let checked = 0;
  let sizes = 0;
  for (const dtype of ['int32', 'float32'] as Dt[]) {
    const edges = edgeSizes(4, threads);
    // Spread over the list (small, middle and large shapes), and the sizes the defect was found at:
    // float32[10534913] and the int32 matrix of a 4095-vertex graph.
    const picked = edges.filter((_, i) => i % Math.max(1, Math.floor(edges.length / perDtype)) === 0);
    picked.push(...[10_534_913 * 4, 4095 * 4095 * 4].filter((b) => lostBefore(b, threads)));
    for (const bytes of picked) {
      for (const n of [bytes / 4, bytes / 4 - 1, bytes / 4 + 1]) {
        sizes++;
        const host = hostData(dtype, n, freshSeed()) as Int32Array | Float32Array;
        const fail = (path: string, at: number) => failures.push(`${dtype}[${n}] ${path}: first mismatch at ${at}`);
        using pin = ck.pinned(dtype, n);
        // Host → device paths, read back through pinned memory.
        const viaPinned = (a: ck.DeviceArray<Dt>) => {
          pin.fill(-7);
          a.toHostSync(pin as never);
          return ck.cpu.firstMismatch(pin, host);
        };
        {
          using a = ck.upload(host);
          const m = viaPinned(a);
          if (m !== -1) fail('upload', m);
          checked++;
        }
        {
          using a = ck.full(dtype, n, -5);
          a.copyFrom(host as never);
          const m = viaPinned(a);
          if (m !== -1) fail('copyFrom', m);
          checked++;
        }
        {
          using a = ck.full(dtype, n, -5);
          await a.copyFromAsync(host as never);
          const m = viaPinned(a);
          if (m !== -1) fail('copyFromAsync', m);
          checked++;
        }
        // Device → host paths, the device written from pinned memory.
        pin.set(host as never);
        using a = ck.empty(dtype, n);
        a.copyFrom(pin as never);
        const poisoned = () => new (host.constructor as typeof Int32Array)(n).fill(-9);
        const downs: [string, () => Promise<ck.HostArray> | ck.HostArray][] = [
          ['toHostSync()', () => a.toHostSync()],
          ['toHostSync(target)', () => a.toHostSync(poisoned() as never)],
          ['toHost()', () => a.toHost()],
          ['toHost(target)', () => a.toHost(poisoned() as never)],
        ];
        for (const [path, run] of downs) {
          const m = ck.cpu.firstMismatch(await run(), host);
          if (m !== -1) fail(path, m);
          checked++;
        }
      }
    }
  }
  return { threads, sizes, checked, failures };
}

if (require.main === module) {
  const threads = Number(process.env.CK_HOST_COPY_THREADS);
  checkTransfers(threads)
    .then((r) => process.stdout.write(JSON.stringify(r) + '\n'))
    .catch((e) => {
      process.stdout.write(JSON.stringify({ fatal: String(e?.stack ?? e) }) + '\n');
      process.exitCode = 1;
    });
}
