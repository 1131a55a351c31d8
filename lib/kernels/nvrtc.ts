// NVRTC behind the kernel cache's Compiler interface, and nvrtcInfo().
import type { NativeCompileResult } from '../../binding';
import { native } from '../native';
import type { CompiledCode, CompileJob, Compiler, CompilerLocation } from './cache';
import { CompileError, compileErrorFromLog } from './compile-error';
import { chooseTarget } from './target';

/** Whether NVRTC can be used, from {@link nvrtcInfo}. */
export interface NvrtcInfo {
  available: boolean;
  /** The file that was loaded (as given to dlopen). */
  path?: string;
  /** NVRTC's version, e.g. `13.0`. */
  version?: string;
  /** The architectures it compiles for (nvrtcGetSupportedArchs), ascending: `[75, 80, …, 120]`. */
  archs?: number[];
  /** The newest of them, e.g. `sm_120`. */
  newestArch?: string;
  /** The toolkit's include folders added to every compilation (cuda_fp16.h, libcu++), when found. */
  includeDirs: string[];
  /**
   * Why it is not available: a code and what to install. `nvrtcLibraryNotFound`: no NVRTC;
   * `cudaErrorNotSupported`: this binary was built with CUDA before 12.5 (the CUDA 12 fallback is built
   * with 12.4) and cannot load compiled code, wherever NVRTC is.
   */
  code?: string;
  reason?: string;
}

/**
 * Whether NVRTC, the CUDA runtime compiler that {@link compile}, {@link elementwise} and
 * {@link reduction} use, can be loaded: where from, its version and the newest architecture it
 * compiles for, or why not and what to install. Never throws. NVRTC is looked for once per process:
 * the file `CUDA_KERNELS_NVRTC` names when that is set, else `libnvrtc.so.13` (then `libnvrtc.so`) in
 * `CUDA_PATH/lib64`, `/usr/local/cuda/lib64` and the loader's path.
 */
export function nvrtcInfo(): NvrtcInfo {
  const r = native.nvrtcInfo();
  const why = r.available ? {} : { code: r.code, reason: r.reason };
  // NVRTC not loaded: only why. (Loaded in a binary that cannot load code: what was found, and why.)
  if (r.path === undefined) return { available: false, ...why, includeDirs: r.includeDirs };
  const archs = [...(r.archs ?? [])].sort((a, b) => a - b);
  return {
    available: r.available,
    path: r.path,
    version: r.version,
    archs,
    newestArch: archs.length ? `sm_${archs[archs.length - 1]}` : undefined,
    includeDirs: r.includeDirs,
    ...why,
  };
}

/** The CompileError that says NVRTC is missing and what to install. */
export function nvrtcMissing(code: string | undefined, reason: string | undefined): CompileError {
  return new CompileError(reason ?? 'NVRTC is not available', { code: code ?? 'nvrtcLibraryNotFound' });
}

/** The texts NVRTC saw, by the file names its log uses, for pointing at the offending line. */
export function sourcesOf(job: CompileJob): Map<string, string> {
  const m = new Map<string, string>(job.headers.map(([n, s]) => [n, s]));
  m.set(job.name, job.source);
  return m;
}

/** NVRTC as the kernel cache's compiler. */
export class NvrtcCompiler implements Compiler {
  #loaded: (CompilerLocation & { identity: string; archs: number[] }) | null = null;
  #located: CompilerLocation | null = null;

  locate(): CompilerLocation {
    if (this.#loaded) return this.#loaded;
    // Once per process: the files do not move under a running process, and looking costs stats.
    if (!this.#located) {
      const r = native.nvrtcLocate();
      this.#located = { identity: r.identity, includeDirs: r.includeDirs };
    }
    return this.#located;
  }

  load(): CompilerLocation & { identity: string; archs: number[] } {
    if (this.#loaded) return this.#loaded;
    const r = native.nvrtcInfo();
    // NVRTC itself missing. (A binary that cannot load user code still compiles: its load then throws
    // the CudaError that says why, whether the code came from NVRTC or from the cache.)
    if (r.identity === undefined) throw nvrtcMissing(r.code, r.reason);
    this.#loaded = { identity: r.identity, includeDirs: r.includeDirs, archs: [...(r.archs ?? [])] };
    return this.#loaded;
  }

  #args(job: CompileJob) {
    const { archs } = this.load();
    const target = chooseTarget(job.deviceArch, archs);
    if (target === null)
      throw new CompileError(
        `NVRTC supports sm_${Math.min(...archs)} and newer; this GPU is sm_${job.deviceArch}, too old for it`,
        { code: 'nvrtcArchitectureUnsupported' },
      );
    const args: [string, string, string[], string[], string[], string[], boolean] = [
      job.source,
      job.name,
      [target.option, ...job.options],
      job.headers.map(([n]) => n),
      job.headers.map(([, s]) => s),
      [...job.nameExpressions],
      !target.cubin,
    ];
    return { target, args };
  }

  #finish(job: CompileJob, target: ReturnType<typeof chooseTarget> & object, r: NativeCompileResult): CompiledCode {
    if (!r.ok) {
      const what =
        r.result === 'NVRTC_ERROR_COMPILATION'
          ? `${job.name} did not compile`
          : `${r.failedCall || 'NVRTC'} failed with ${r.result}`;
      throw compileErrorFromLog(r.log, r.result, sourcesOf(job), what);
    }
    const lowered: Record<string, string> = {};
    job.nameExpressions.forEach((e, i) => (lowered[e] = r.lowered[i]));
    return {
      code: new Uint8Array(r.code),
      cubin: target.cubin,
      arch: target.arch,
      lowered,
      log: r.log,
      note: target.note,
    };
  }

  compile(job: CompileJob): CompiledCode {
    const { target, args } = this.#args(job);
    return this.#finish(job, target, native.nvrtcCompile(...args));
  }

  async compileAsync(job: CompileJob): Promise<CompiledCode> {
    const { target, args } = this.#args(job);
    return this.#finish(job, target, await native.nvrtcCompileAsync(...args));
  }
}
