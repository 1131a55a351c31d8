import { makeTable } from './table';

import { cublasInfo, deviceCount, deviceProperties, memoryInfo, runtimeInfo } from '../device';

const GiB = 1 << 30;
const KiB = 1024;

/** `cuda-kernels info`: the device table, or why there is no device. */
export function info(out: (line: string) => void = console.log): void {
  const rt = runtimeInfo();
  out(`CUDA runtime ${rt.runtimeVersion} (built in); driver supports CUDA ${rt.driverVersion ?? '— (no driver)'}`);
  const cublas = cublasInfo();
  out(cublas.available ? `cuBLAS ${cublas.version} from ${cublas.path}` : `cuBLAS: not available (${cublas.code})`);
  const n = deviceCount();
  if (n === 0) {
    out(`No GPU: ${rt.noDeviceReason}`);
    out('The CPU references (cpu.*) still work.');
    return;
  }
  for (let i = 0; i < n; i++) {
    const p = deviceProperties(i);
    const mem = memoryInfo(i);
    const t = makeTable([`device ${i}`, p.name]);
    const rows: [string, string][] = [
      ['compute capability', p.computeCapability],
      ['multiprocessors', String(p.smCount)],
      ['global memory', `${(p.totalGlobalMem / GiB).toFixed(1)} GiB (${(mem.free / GiB).toFixed(1)} GiB free)`],
      ['constant memory', `${p.totalConstMem / KiB} KiB`],
      ['shared memory / block', `${p.sharedMemPerBlock / KiB} KiB (opt-in ${p.sharedMemPerBlockOptin / KiB} KiB)`],
      ['shared memory / SM', `${p.sharedMemPerMultiprocessor / KiB} KiB`],
      ['registers / block', String(p.regsPerBlock)],
      ['warp size', String(p.warpSize)],
      ['max threads / block', String(p.maxThreadsPerBlock)],
      ['max block dims', p.maxBlockDim.join(' × ')],
      ['max grid dims', p.maxGridDim.join(' × ')],
      ['SM clock', `${(p.clockRateKHz / 1000).toFixed(0)} MHz`],
      ['memory clock', `${(p.memoryClockRateKHz / 1000).toFixed(0)} MHz`],
      ['memory bus', `${p.memoryBusWidth} bit`],
      ['L2 cache', `${(p.l2CacheSize / (1 << 20)).toFixed(1)} MiB`],
      ['peer access to', p.peers.length ? p.peers.join(', ') : 'none'],
    ];
    t.push(...rows);
    out(t.toString());
  }
}
