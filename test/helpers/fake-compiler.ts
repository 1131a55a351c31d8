// A stand-in for NVRTC behind the kernel cache (lib/kernels/cache.ts's Compiler), so the cache is tested
// where there is no NVRTC: its "code" is a deterministic function of what it was asked to compile, and
// it counts its compilations.
import { createHash } from 'node:crypto';

import type { CompiledCode, CompileJob, Compiler, CompilerLocation } from '../../lib/kernels/cache';
import { CompileError, compileErrorFromLog } from '../../lib/kernels/compile-error';

export interface FakeCompilerOptions {
  /** What locate() says before load(); null: unknown until loaded. */
  identity?: string | null;
  /** What load() says (default: identity, or 'fake-1'). */
  loadedIdentity?: string;
  /** Each compilation takes this long (blocking the thread, as NVRTC does). */
  delayMs?: number;
  /** load() throws the CompileError of a missing compiler. */
  missing?: boolean;
  includeDirs?: string[];
}

export interface FakeCompiler extends Compiler {
  compiles: number;
  loads: number;
  jobs: CompileJob[];
}

function sleep(ms: number): void {
  if (ms > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** The code the fake makes for a job: what the cache must hand back byte for byte. */
export function fakeCode(job: Pick<CompileJob, 'source' | 'deviceArch' | 'options'>): Uint8Array {
  const digest = createHash('sha256').update(job.source).update(job.options.join('\n')).digest('hex');
  return new Uint8Array(Buffer.from(`FAKE-CUBIN sm_${job.deviceArch} ${digest} ${'x'.repeat(200)}`));
}

export function fakeCompiler(o: FakeCompilerOptions = {}): FakeCompiler {
  const identity = o.identity === undefined ? 'fake-1' : o.identity;
  const loadedIdentity = o.loadedIdentity ?? identity ?? 'fake-1';
  const includeDirs = o.includeDirs ?? [];
  const c: FakeCompiler = {
    compiles: 0,
    loads: 0,
    jobs: [],
    locate(): CompilerLocation {
      return { identity, includeDirs };
    },
    load() {
      c.loads++;
      if (o.missing)
        throw new CompileError('NVRTC (the CUDA runtime compiler) could not be loaded (fake)', {
          code: 'nvrtcLibraryNotFound',
        });
      return { identity: loadedIdentity, includeDirs };
    },
    compile(job: CompileJob): CompiledCode {
      c.compiles++;
      c.jobs.push(job);
      sleep(o.delayMs ?? 0);
      if (job.source.includes('SYNTAX_ERROR')) {
        const line = job.source.split('\n').findIndex((l) => l.includes('SYNTAX_ERROR')) + 1;
        const text = job.source.split('\n')[line - 1];
        const col = text.indexOf('SYNTAX_ERROR');
        const log = `${job.name}(${line}): error: identifier "SYNTAX_ERROR" is undefined\n  ${text}\n  ${' '.repeat(col)}^\n\n1 error detected in the compilation of "${job.name}".\n`;
        throw compileErrorFromLog(log, 'NVRTC_ERROR_COMPILATION', new Map([[job.name, job.source]]), 'fake');
      }
      const lowered: Record<string, string> = {};
      for (const e of job.nameExpressions) lowered[e] = `_Z${e.length}${e.replace(/\W/g, '_')}`;
      return { code: fakeCode(job), cubin: true, arch: job.deviceArch, lowered, log: '', note: '' };
    },
    async compileAsync(job: CompileJob): Promise<CompiledCode> {
      await new Promise((r) => setTimeout(r, o.delayMs ?? 0));
      return c.compile({ ...job });
    },
  };
  return c;
}
