// Child process of test/transfer-sizes.test.ts: the part counts the host-side copy uses by itself
// (run with CK_HOST_COPY_THREADS set), and that its copies are exact. Prints one JSON line.
import { native } from '../../lib/native';

const MiB = 1 << 20;
const parts: number[] = [];
const mismatches: number[] = [];
for (const n of [MiB, 5 * MiB + 4, 10 * MiB + 4, 40 * MiB]) {
  const src = new Uint8Array(n);
  for (let i = 0; i < n; i++) src[i] = (i * 2654435761) >>> 24;
  const dst = new Uint8Array(n).fill(0xa5);
  parts.push(native.debugHostCopy!(dst, src, 0));
  mismatches.push(Buffer.compare(dst, src) === 0 ? -1 : dst.findIndex((v, i) => v !== src[i]));
}
process.stdout.write(JSON.stringify({ parts, mismatches }) + '\n');
