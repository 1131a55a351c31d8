// Finding a native binary that loads on this system (lib/native.ts uses it once per process or
// worker). No side effects here, so the tests can drive it with candidates of their own.
//
// node-gyp-build finds the file in each place, as it does for any prebuildify package: the
// package's own build/Release (a clone, the install step's build, `npx cuda-kernels build`), and in
// each platform package (@cuda-kernels/<platform>-<arch>-cuda13, then -cuda12 for drivers older
// than CUDA 13) the prebuilds/<platform>-<arch>/ file whose tags (napi, glibc) match this system.
// CUDA_KERNELS_BINARY=<file> replaces them all with that one file. The first one present is loaded
// in this process. Only when it fails to load, or loads but finds the driver too old for its CUDA,
// are the others tried, and each of them first in a child process: a binary that crashes or misses
// a symbol then costs a child, not this process.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import type { NativeBinding, NativeRuntimeInfo } from '../binding';

/** A place a binary may be. `missing` says why it is not there (then `file` is where it was looked for). */
export interface BinaryCandidate {
  /** `CUDA_KERNELS_BINARY`, `local build`, or the package name. */
  name: string;
  file: string;
  missing?: string;
  /** What a platform package declares about its binary (its package.json `cudaKernels`). */
  declared?: DeclaredRequirements;
}

/** A platform package's declared requirements, checked by `npm run prebuild` when it was built. */
export interface DeclaredRequirements {
  /** The CUDA toolkit it was built with, e.g. `13.0`. */
  cuda: string;
  /** The oldest NVIDIA driver branch it runs on, e.g. `580`. */
  minDriver: string;
  /** The highest GLIBC_ symbol version it needs: the oldest glibc it loads with, e.g. `2.17`. */
  maxGlibcSymbol: string;
}

/** One candidate as tried: how, and the error (null when it loaded). */
export interface BinaryAttempt {
  name: string;
  file: string;
  /** `in-process` (the first one present), `child process` (the fallbacks), or `absent`. */
  how: 'in-process' | 'child process' | 'absent';
  error: string | null;
}

/** Which binary was loaded, from where, why, and every candidate tried on the way. */
export interface BinaryInfo {
  name: string;
  file: string;
  reason: string;
  tried: BinaryAttempt[];
  /** For a platform package, the CUDA, driver and glibc it declares (absent for a local build). */
  declared?: DeclaredRequirements;
}

/** The platform packages for this system, newest CUDA first. */
export function platformPackages(platform = process.platform, arch = process.arch): string[] {
  return [`@cuda-kernels/${platform}-${arch}-cuda13`, `@cuda-kernels/${platform}-${arch}-cuda12`];
}

/** node-gyp-build's resolver: the binary it would load from a package folder, or a throw saying why none. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const findBuild = (require('node-gyp-build') as { path(dir: string): string }).path;

/** What node-gyp-build looked for ("platform=linux arch=x64 … libc=glibc"), from its error. */
function soughtTags(e: unknown): string {
  const m = /No native build was found for ([^\n]*)/.exec(e instanceof Error ? e.message : String(e));
  return m ? m[1].trim() : String(e);
}

/** Where binaries may be for the package at `root`, in the order they are tried. */
export function binaryCandidates(root: string, env: NodeJS.ProcessEnv = process.env): BinaryCandidate[] {
  // A binary named by the user is the only one tried: a typo must not fall back silently.
  if (env.CUDA_KERNELS_BINARY) {
    const file = path.resolve(env.CUDA_KERNELS_BINARY);
    return [
      fs.existsSync(file)
        ? { name: 'CUDA_KERNELS_BINARY', file }
        : { name: 'CUDA_KERNELS_BINARY', file, missing: 'no such file' },
    ];
  }
  const out: BinaryCandidate[] = [];
  try {
    out.push({ name: 'local build', file: findBuild(root) });
  } catch {
    out.push({
      name: 'local build',
      file: path.join(root, 'build', 'Release', 'cuda_kernels.node'),
      missing: 'not built',
    });
  }
  for (const name of platformPackages()) {
    let dir: string;
    try {
      dir = path.dirname(require.resolve(`${name}/package.json`, { paths: [root] }));
    } catch {
      out.push({ name, file: name, missing: 'not installed' });
      continue;
    }
    let candidate: BinaryCandidate;
    try {
      candidate = { name, file: findBuild(dir) };
    } catch (e) {
      const where = path.join(dir, 'prebuilds', `${process.platform}-${process.arch}`);
      candidate = { name, file: where, missing: `installed without a prebuild for ${soughtTags(e)}` };
    }
    try {
      const meta = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        cudaKernels?: DeclaredRequirements;
      };
      if (meta.cudaKernels) candidate.declared = meta.cudaKernels;
    } catch {
      // An unreadable package.json only costs the declared requirements in runtimeInfo().
    }
    out.push(candidate);
  }
  return out;
}

function message(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).replace(/\s*\n\s*/g, ' ');
}

/** The probe a child process runs: load the binary, print what it sees. */
const probeScript = `
const b = require(process.argv[1]);
const r = b.runtimeInfo();
process.stdout.write(JSON.stringify({ deviceCount: r.deviceCount, noDeviceCode: r.noDeviceCode, noDeviceReason: r.noDeviceReason }));
`;

type Probe = Pick<NativeRuntimeInfo, 'deviceCount' | 'noDeviceCode' | 'noDeviceReason'>;

/** Loads `file` in a child process; what it reports, or why it failed (exit code, signal, stderr). */
export function probeInChild(
  file: string,
  timeoutMs = 120000,
): { ok: true; info: Probe } | { ok: false; error: string } {
  const r = spawnSync(process.execPath, ['-e', probeScript, file], { encoding: 'utf8', timeout: timeoutMs });
  if (r.error) return { ok: false, error: `child process: ${r.error.message}` };
  if (r.status !== 0) {
    const how = r.signal ? `killed by ${r.signal}` : `exit code ${r.status}`;
    const err =
      (r.stderr || '').split('\n').find((l) => /Error|error:/.test(l)) ?? r.stderr.trim().split('\n').pop() ?? '';
    return { ok: false, error: `child process ${how}${err ? `: ${err.trim()}` : ''}` };
  }
  try {
    return { ok: true, info: JSON.parse(r.stdout) as Probe };
  } catch {
    return { ok: false, error: `child process printed no runtime info: ${r.stdout.slice(0, 200)}` };
  }
}

/** A driver that is too old for the binary's CUDA: another binary (an older CUDA) may still work. */
const driverTooOld = (info: Probe): boolean =>
  info.deviceCount === 0 && info.noDeviceCode === 'cudaErrorInsufficientDriver';

/** Thrown when no binary loads: what was tried, and the possible solutions. */
export class BinaryLoadError extends Error {
  /** Every candidate and why it did not load. */
  readonly tried: BinaryAttempt[];

  constructor(tried: BinaryAttempt[]) {
    super(noBinaryMessage(tried));
    this.name = 'Error';
    this.tried = tried;
  }
}

function glibcVersion(): string | undefined {
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return report?.header?.glibcVersionRuntime;
}

/** sharp-style: what was tried, then what to do about it for this system. */
export function noBinaryMessage(tried: BinaryAttempt[]): string {
  const system = `${process.platform}-${process.arch}`;
  const glibc = process.platform === 'linux' ? glibcVersion() : undefined;
  const lines = [
    `cuda-kernels: no native binary could be loaded on ${system} (Node ${process.versions.node}` +
      (glibc ? `, glibc ${glibc}` : process.platform === 'linux' ? ', not glibc (musl?)' : '') +
      ').',
    'Tried:',
    ...tried.map((t) => `  - ${t.name}${t.file === t.name ? '' : ` (${t.file})`}: ${t.error}`),
    'Possible solutions:',
  ];
  if (tried.some((t) => t.name === 'CUDA_KERNELS_BINARY'))
    lines.push('  - CUDA_KERNELS_BINARY names the only binary tried: fix the path, or unset it to use the others.');
  // What works today, before any package is on the registry: a build for the local toolkit first.
  lines.push(
    "  - Build one for this system's CUDA toolkit (needs nvcc): npx cuda-kernels build",
    '    (npm install builds it unless npm blocks install scripts; approve ours: npm install-scripts approve cuda-kernels,',
    '    then npm rebuild cuda-kernels).',
  );
  if (system !== 'linux-x64') {
    lines.push(`  - Prebuilt binaries are made for linux-x64 only, not ${system}.`);
  } else if (!glibc) {
    lines.push('  - The prebuilt binaries need glibc (not musl, e.g. Alpine): use a glibc-based image, or build.');
  } else {
    lines.push(
      '  - Or install a platform package with a prebuilt binary: in a clone, npm run prebuild, then',
      '    npm pack -w @cuda-kernels/linux-x64-cuda13, and npm install the .tgz (docs/install.md). npm leaves these',
      '    optional packages out with --omit=optional, and where their os/cpu/libc do not match.',
      '  - The prebuilt binaries need glibc 2.17 or newer and an NVIDIA driver R525 or newer (R580 for CUDA 13);',
      '    see the README, Requirements.',
    );
  }
  lines.push("  - The CPU references need no binary: require('cuda-kernels/cpu').");
  return lines.join('\n');
}

/**
 * Loads the first binary that works. `load` is `require` (a parameter for the tests); `probe` runs
 * a candidate in a child process.
 */
export function loadBinary(
  candidates: BinaryCandidate[],
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  load: (file: string) => NativeBinding = (file) => require(file) as NativeBinding,
  probe: (file: string) => ReturnType<typeof probeInChild> = (file) => probeInChild(file),
): { binding: NativeBinding; info: BinaryInfo } {
  const tried: BinaryAttempt[] = [];
  let kept: { binding: NativeBinding; candidate: BinaryCandidate; reason: string } | undefined;
  for (const c of candidates) {
    if (c.missing !== undefined) {
      tried.push({ name: c.name, file: c.file, how: 'absent', error: c.missing });
      continue;
    }
    const first = tried.every((t) => t.how === 'absent');
    if (!first) {
      // A fallback: prove it in a child before it can take this process down.
      const p = probe(c.file);
      if (!p.ok) {
        tried.push({ name: c.name, file: c.file, how: 'child process', error: p.error });
        continue;
      }
      if (driverTooOld(p.info)) {
        tried.push({ name: c.name, file: c.file, how: 'child process', error: p.info.noDeviceReason });
        continue;
      }
    }
    let binding: NativeBinding;
    try {
      binding = load(c.file);
    } catch (e) {
      tried.push({ name: c.name, file: c.file, how: first ? 'in-process' : 'child process', error: message(e) });
      continue;
    }
    const info = binding.runtimeInfo();
    if (first && driverTooOld(info)) {
      // Keep it (its CPU-side calls work, and it explains the driver) unless a fallback does better.
      tried.push({ name: c.name, file: c.file, how: 'in-process', error: info.noDeviceReason });
      kept = { binding, candidate: c, reason: `no other binary works with this driver: ${info.noDeviceReason}` };
      continue;
    }
    const fellBack = tried.filter((t) => t.how !== 'absent').map((t) => t.name);
    const reason = fellBack.length
      ? `${fellBack.join(', ')} did not work (see tried); this one loaded in a child process, then here`
      : c.name === 'local build'
        ? 'a local build takes precedence over the platform packages'
        : c.name === 'CUDA_KERNELS_BINARY'
          ? 'named by CUDA_KERNELS_BINARY'
          : 'the first binary present for this platform';
    tried.push({ name: c.name, file: c.file, how: first ? 'in-process' : 'child process', error: null });
    return { binding, info: { name: c.name, file: c.file, reason, tried, declared: c.declared } };
  }
  if (kept)
    return {
      binding: kept.binding,
      info: {
        name: kept.candidate.name,
        file: kept.candidate.file,
        reason: kept.reason,
        tried,
        declared: kept.candidate.declared,
      },
    };
  throw new BinaryLoadError(tried);
}
