// Which GPUs are there, and what are they? Runs everywhere: without a GPU, deviceCount() is 0 and
// runtimeInfo() says why.
import { cublasInfo, deviceCount, deviceProperties, memoryInfo, runtimeInfo } from 'cuda-kernels';

/** Runs without a GPU (it reports that there is none). */
export const needsGpu = false;

export function main(log: (line: string) => void = console.log): void {
  const rt = runtimeInfo();
  log(`CUDA runtime ${rt.runtimeVersion}; driver ${rt.driverVersion ?? 'none'}`);
  const n = deviceCount();
  if (n === 0) {
    log(`no GPU: ${rt.noDeviceReason}`);
    return;
  }
  const cublas = cublasInfo();
  log(cublas.available ? `cuBLAS ${cublas.version}` : 'cuBLAS not found: the cublas methods will throw');
  for (let i = 0; i < n; i++) {
    const p = deviceProperties(i);
    const { free, total } = memoryInfo(i);
    log(
      `${i}: ${p.name}, compute capability ${p.computeCapability}, ${p.smCount} SMs, ${(free / 2 ** 30).toFixed(1)} of ${(total / 2 ** 30).toFixed(1)} GiB free`,
    );
  }
}

if (require.main === module) main();
