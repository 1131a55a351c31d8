import { makeTable } from './table';

import { copyDevice, empty, upload } from '../array';
import { deviceCount, deviceProperties, runtimeInfo } from '../device';
import { firstMismatch, randomArray } from '../cpu/index';
import { timed } from '../timing';

/**
 * `npm run demo`: upload data, run a kernel on it, time it with CUDA events, check it against the
 * CPU and print a small table. Until the AᵀA family lands the kernel is a device-to-device copy.
 */
export function demo(out: (line: string) => void = console.log): void {
  const n = 1 << 26; // 64 Mi float32 = 256 MiB
  const host = randomArray(Float32Array, n, (Date.now() & 0xffff) + 1);
  const bytes = host.byteLength;
  const table = makeTable(['where', 'work', 'ms', 'GB/s (read+write)', 'check']);

  const t0 = process.hrtime.bigint();
  const cpuCopy = host.slice();
  const cpuMs = Number(process.hrtime.bigint() - t0) / 1e6;
  table.push(['CPU', `copy ${bytes >> 20} MiB`, cpuMs.toFixed(3), ((2 * bytes) / cpuMs / 1e6).toFixed(1), 'reference']);

  if (deviceCount() === 0) {
    out(`No GPU: ${runtimeInfo().noDeviceReason}`);
    out('Ran the CPU reference only.');
    out(table.toString());
    return;
  }
  const name = deviceProperties(0).name;
  using src = upload(host);
  using dst = empty('float32', n);
  copyDevice(dst, src); // warm-up
  const { ms } = timed(() => copyDevice(dst, src));
  const ok = firstMismatch(dst.toHostSync(), cpuCopy) === -1;
  table.push([
    name,
    `copy ${bytes >> 20} MiB`,
    ms.toFixed(3),
    ((2 * bytes) / ms / 1e6).toFixed(1),
    ok ? 'ok' : 'MISMATCH',
  ]);
  out(table.toString());
  if (!ok) process.exitCode = 1;
}
