// Child process of test/datapath.test.ts: pinned arrays that the program drops without free() must
// be given back by the garbage collector's finalizers. Run with --expose-gc; prints one JSON line.
//
// The measure is the resident set size. A control first checks that it sees pinned memory at all
// (arrays kept alive grow it) and that free() gives it back; then 4 GiB of arrays are allocated and
// dropped, 64 MiB at a time, with collections in between.
import * as ck from '../../lib';

const MiB = 1 << 20;
const gc = (globalThis as { gc?: () => void }).gc;
const rss = () => process.memoryUsage().rss;
// External-buffer finalizers run from the event loop after a collection.
const settle = async () => {
  for (let i = 0; i < 3; i++) {
    gc!();
    await new Promise((r) => setTimeout(r, 20));
  }
};

async function main() {
  if (!gc) throw new Error('run with --expose-gc');
  ck.pinned('float32', 1).free(); // the CUDA context and the allocator's own state first
  await settle();
  const base = rss();

  // Control: kept arrays show up in the resident set, and free() gives them back.
  const kept = Array.from({ length: 16 }, (_, i) => ck.pinned('uint32', (64 * MiB) / 4).fill(i));
  const withKept = rss();
  for (const a of kept) a.free();
  const lengthsAfterFree = kept.map((a) => a.length);
  const afterFree = rss();

  // Dropped: 64 × 64 MiB, never freed by the program.
  let peak = afterFree;
  for (let i = 0; i < 64; i++) {
    ck.pinned('uint32', (64 * MiB) / 4).fill(i);
    if (i % 4 === 3) {
      await settle();
      peak = Math.max(peak, rss());
    }
  }
  await settle();
  const end = rss();
  process.stdout.write(
    JSON.stringify({ base, withKept, afterFree, peak, end, lengthsAfterFree, droppedBytes: 64 * 64 * MiB }) + '\n',
  );
}

main().catch((e) => {
  process.stdout.write(JSON.stringify({ fatal: String(e?.stack ?? e) }) + '\n');
  process.exitCode = 2;
});
