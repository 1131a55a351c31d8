import * as fs from 'node:fs';
import * as path from 'node:path';

import { makeTable } from './table';

import type { BinaryInfo } from '../loader';

const GiB = 1 << 30;
const KiB = 1024;

/** Options of `cuda-kernels info`. */
export interface InfoOptions {
  /** Exit 1 when no GPU is usable (`--require-gpu`), for a script that needs one. */
  requireGpu?: boolean;
}

function version(): string {
  const pkg = path.join(__dirname, '..', '..', 'package.json');
  return (JSON.parse(fs.readFileSync(pkg, 'utf8')) as { version: string }).version;
}

function system(): string {
  const header = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  const glibc = header?.header?.glibcVersionRuntime;
  return `Node ${process.version}, ${process.platform}-${process.arch}${glibc ? `, glibc ${glibc}` : ''}`;
}

/** The lines that say which binary was loaded, why, and what was tried before it. */
export function binaryLines(b: BinaryInfo): string[] {
  const lines = [`binary: ${b.name} (${b.file})`, `  why: ${b.reason}`];
  if (b.declared) {
    const d = b.declared;
    lines.push(`  needs: NVIDIA driver R${d.minDriver} or newer (CUDA ${d.cuda}), glibc ${d.maxGlibcSymbol} or newer`);
  }
  const others = b.tried.filter((t) => t.error !== null);
  if (others.length) {
    lines.push('  tried first:');
    for (const t of others) lines.push(`    - ${t.name} [${t.how}]: ${t.error}`);
  }
  return lines;
}

/**
 * `cuda-kernels info`: the package and system, which binary was loaded and why, the CUDA runtime,
 * and the device table (or why there is no device). Returns the exit code: 0 when it could say all
 * that, with or without a GPU; 1 when no GPU is usable (no binary loads, no driver, no device) and
 * `requireGpu` asks for one.
 */
export async function info(opts: InfoOptions = {}, out: (line: string) => void = console.log): Promise<number> {
  const noGpu = opts.requireGpu ? 1 : 0;
  out(`cuda-kernels ${version()} (${system()})`);
  let device: typeof import('../device');
  try {
    // Loading the device layer loads the binary; when none loads, say what was tried and what to do.
    device = await import('../device');
  } catch (e) {
    out(e instanceof Error ? e.message : String(e));
    return noGpu;
  }
  const rt = device.runtimeInfo();
  for (const line of binaryLines(rt.binary)) out(line);
  const b = rt.build;
  out(
    `  built: CUDA ${rt.runtimeVersion}; architectures ${b.cudaArchitectures}; glibc ${b.glibc ?? '?'} headers; ` +
      `${b.staticCxxRuntime ? 'C++ runtime linked in' : 'system C++ runtime'}; ${b.lineinfo ? 'with' : 'no'} line info`,
  );
  out(`CUDA runtime ${rt.runtimeVersion} (built in); driver supports CUDA ${rt.driverVersion ?? '— (no driver)'}`);
  const cublas = device.cublasInfo();
  out(cublas.available ? `cuBLAS ${cublas.version} from ${cublas.path}` : `cuBLAS: not available (${cublas.code})`);
  const n = device.deviceCount();
  if (n === 0) {
    out(`No GPU: ${rt.noDeviceReason}`);
    out('The CPU references (cuda-kernels/cpu) still work.');
    return noGpu;
  }
  for (let i = 0; i < n; i++) {
    const p = device.deviceProperties(i);
    const mem = device.memoryInfo(i);
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
  return 0;
}
