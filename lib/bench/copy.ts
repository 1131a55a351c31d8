// The `copy` reference: device-to-device copy bandwidth, counting bytes read plus bytes written.
import { copyDevice, upload, empty } from '../array';
import { firstMismatch } from '../cpu/index';
import { type BenchContext, type BenchFamily, median, timeGpu } from './harness';
import type { BenchRow } from './results';

const MiB = 1 << 20;

function label(bytes: number): string {
  return bytes >= 1024 * MiB ? `${bytes / (1024 * MiB)}GiB` : `${bytes / MiB}MiB`;
}

/** Measures one copy of `bytes` bytes; the result is checked element by element. */
export function benchCopy(ctx: BenchContext, bytes: number): BenchRow {
  const n = bytes / 4;
  const host = new Uint32Array(n);
  for (let i = 0; i < n; i++) host[i] = (i * 2654435761) >>> 0;
  using src = upload(host, { device: ctx.device });
  using dst = empty('uint32', n, { device: ctx.device });
  const samples = timeGpu(() => copyDevice(dst, src), ctx);
  const ms = median(samples);
  const check = firstMismatch(dst.toHostSync(), host) === -1 ? 'ok' : 'fail';
  return {
    op: 'copy',
    method: 'device',
    size: label(bytes),
    ms,
    rate: (2 * bytes) / (ms * 1e-3) / 1e9,
    unit: 'GB/s',
    reps: samples.length,
    check,
    note: 'cudaMemcpyAsync device-to-device; rate counts bytes read + written',
  };
}

/** Bytes per step; `--sizes` are MiB. */
function copySizes(ctx: BenchContext): number[] {
  return ctx.sizes?.map((s) => s * MiB) ?? (ctx.quick ? [64 * MiB] : [16 * MiB, 256 * MiB, 1024 * MiB]);
}

export const copyFamily: BenchFamily = {
  op: 'copy',
  description: 'device-to-device copy bandwidth (the memory-bound reference)',
  bandwidth: true,
  methodNames: () => ['device'],
  // The source is filled from a host array of the same size.
  maxSize: { value: 4096, what: 'MiB' },
  plan: (ctx) => copySizes(ctx).length,
  run(ctx: BenchContext): BenchRow[] {
    return copySizes(ctx).map((bytes) => {
      ctx.progress(`copy ${label(bytes)}`);
      return benchCopy(ctx, bytes);
    });
  },
};
