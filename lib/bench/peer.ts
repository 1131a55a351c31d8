// The `peer` family: copy bandwidth between two GPUs, device to device (peerCopy) against staging
// through pinned host memory (copyViaHost). Rate = bytes copied / time (one direction).
import { empty, upload } from '../array';
import { firstMismatch } from '../cpu/index';
import { deviceCount } from '../device';
import { canAccessPeer, copyViaHost, enablePeerAccess, peerCopy } from '../ops/peer';
import { type BenchContext, type BenchFamily, median, timeBalanced } from './harness';
import type { BenchRow } from './results';

const MiB = 1 << 20;

function label(bytes: number): string {
  return bytes >= 1024 * MiB ? `${bytes / (1024 * MiB)}GiB` : `${bytes / MiB}MiB`;
}

/** Bytes per step; `--sizes` are MiB. */
function peerSizes(ctx: BenchContext): number[] {
  return (
    ctx.sizes?.map((s) => s * MiB) ?? (ctx.quick ? [MiB, 64 * MiB] : [1, 4, 16, 64, 256, 1024].map((s) => s * MiB))
  );
}

const METHODS = ['peer', 'via-host'] as const;

export const peerFamily: BenchFamily = {
  op: 'peer',
  description: 'copy bandwidth between two GPUs: peerCopy (direct) vs copyViaHost (GB/s one way)',
  reference: 'via-host',
  methodNames: () => METHODS,
  // The source is filled from a host array of the same size.
  maxSize: { value: 4096, what: 'MiB' },
  plan: (ctx) => peerSizes(ctx).length,
  run(ctx: BenchContext): BenchRow[] {
    const count = deviceCount();
    const rows: BenchRow[] = [];
    const src = ctx.device;
    const dst = (ctx.device + 1) % Math.max(count, 1);
    const methods = METHODS.filter((m) => !ctx.methods || ctx.methods.includes(m));
    const direct = count >= 2 && canAccessPeer(dst, src) && canAccessPeer(src, dst);
    if (direct) enablePeerAccess(src, dst);
    for (const bytes of peerSizes(ctx)) {
      if (count < 2) {
        ctx.progress(`peer ${label(bytes)} (left out: needs 2 GPUs, found ${count})`);
        continue;
      }
      ctx.progress(`peer ${methods.join(', ')} ${label(bytes)} device ${src} → ${dst}`);
      const n = bytes / 4;
      const host = new Uint32Array(n);
      for (let i = 0; i < n; i++) host[i] = (i * 2654435761) >>> 0;
      using a = upload(host, { device: src });
      const outs = methods.map(() => empty('uint32', n, { device: dst }).fill(0));
      try {
        const reps = bytes >= 256 * MiB ? Math.min(ctx.reps, 10) : Math.max(ctx.reps, 20);
        const { samples } = timeBalanced(
          methods.map((m, i) => () => (m === 'peer' ? peerCopy(outs[i], a) : copyViaHost(outs[i], a))),
          { device: dst, reps, warmup: Math.max(1, ctx.warmup) },
        );
        methods.forEach((m, i) => {
          const ms = median(samples[i]);
          const ok = firstMismatch(outs[i].toHostSync(), host) === -1;
          rows.push({
            op: 'peer',
            method: m,
            size: label(bytes),
            ms,
            rate: bytes / (ms * 1e-3) / 1e9,
            unit: 'GB/s',
            reps: samples[i].length,
            check: ok ? 'ok' : 'fail',
            gpus: 2,
            note:
              `device ${src} → ${dst}, ${m === 'peer' ? (direct ? 'peer access enabled, cudaMemcpyPeerAsync' : 'no peer access: CUDA stages through the host') : 'pinned host ring, 32 MiB chunks, D2H and H2D overlapped'}; ` +
              `${Math.min(...samples[i]).toFixed(3)}–${Math.max(...samples[i]).toFixed(3)} ms; checked element by element`,
          });
        });
      } finally {
        for (const o of outs) o.free();
      }
    }
    return rows;
  },
};
