// compile() / compileAsync() → Module → module.kernel(name) → kernel.launch(config, ...args): a user's
// CUDA C++ compiled by NVRTC (through the kernel cache), loaded once per binary, its kernels launched
// on the library stream of their device, in order with every built-in op, transfer and collective.
import * as fs from 'node:fs';
import * as path from 'node:path';

import type { BufferHandle, KernelHandle, LibraryHandle, NativeKernelDeviceInfo } from '../../binding';
import { DeviceArray } from '../array';
import { checkDevice } from '../device';
import { CudaError, typeError } from '../errors';
import { native } from '../native';
import {
  type CacheSource,
  type CompiledCode,
  type CompileRequest,
  defaultCacheDir,
  defaultCacheMaxBytes,
  KernelCache,
  type KernelCacheInfo,
} from './cache';
import { isParamType, type ParamType, type ParsedParam, type TypeContext } from './ctypes';
import {
  argWriter,
  type ArgWriter,
  checkLaunchConfig,
  type KernelArg,
  type LaunchConfig,
  type LaunchLimits,
} from './launch';
import { NvrtcCompiler } from './nvrtc';
import { type CompileOptions, nvrtcOptions, resolveCompileOptions, type ResolvedOptions } from './options';
import {
  findKernels,
  isIdentifier,
  type KernelDeclaration,
  kernelSignature,
  normalizeExpression,
  type SignatureLookup,
  typeContext,
} from './signature';

function packageVersion(): string {
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
      version?: string;
    };
    return String(pkg.version ?? 'unknown');
  } catch {
    return 'unknown';
  }
}

let theCache: KernelCache | null = null;
const compiler = new NvrtcCompiler();

/** @internal The process's kernel cache (created on first use from the environment). */
export function kernelCache(): KernelCache {
  if (theCache === null)
    theCache = new KernelCache({
      compiler,
      dir: defaultCacheDir(),
      maxBytes: defaultCacheMaxBytes(),
      packageVersion: packageVersion(),
      // A hit's read, check and entry time in one native call instead of fs's and crypto's JavaScript.
      readEntry: native.kernelsReadEntry,
    });
  return theCache;
}

/**
 * Empties the kernel cache: this process's memory of compiled code, and every entry of the disk cache
 * (`CUDA_KERNELS_CACHE_DIR`, else `$XDG_CACHE_HOME/cuda-kernels/kernels` or
 * `~/.cache/cuda-kernels/kernels`). Modules compiled before stay usable. Returns how many entries
 * were removed from the disk.
 */
export function clearKernelCache(): number {
  return kernelCache().clear();
}

/** Where the disk cache is, how many entries and bytes it holds, its bound, and this process's hits and misses. */
export function kernelCacheInfo(): KernelCacheInfo {
  return kernelCache().info();
}

/** Loaded code by cache key: a second compile of the same source loads nothing. Kept for the process. */
const loaded = new Map<string, LibraryHandle>();

const properties = new Map<number, NativeKernelDeviceInfo>();

/** @internal What compiling for and launching on a device needs, read once per process. */
export function deviceLimits(device: number): NativeKernelDeviceInfo {
  let p = properties.get(device);
  if (p === undefined) {
    p = native.kernelsDeviceInfo(checkDevice(device));
    properties.set(device, p);
  }
  return p;
}

const props = deviceLimits;

function deviceArch(device: number): number {
  const p = props(device);
  return p.major * 10 + p.minor;
}

/** NVRTC present, or the CompileError that says what to install; before any device is touched. */
function requireCompiler(): void {
  if (compiler.locate().identity === null) compiler.load();
}

/** One compiled binary of a module (one per device architecture) and its loaded code. */
interface Binary {
  compiled: CompiledCode;
  key: string | null;
  from: CacheSource;
  library: LibraryHandle | null;
}

/** A parameter of a kernel, as {@link Kernel.params} lists it. */
export interface KernelParam {
  name: string;
  /** The C++ type, as declared. */
  type: string;
  /** `pointer` (a DeviceArray or null) or `scalar` (a number, bigint or boolean). */
  kind: 'pointer' | 'scalar';
  /** For a pointer: the dtype its arrays must have (null: any), and whether the kernel only reads them. */
  dtype?: string | null;
  readOnly?: boolean;
}

/** What the runtime says about a compiled kernel on one device. */
export interface KernelAttributes {
  maxThreadsPerBlock: number;
  numRegs: number;
  sharedSizeBytes: number;
  maxDynamicSharedSizeBytes: number;
  localSizeBytes: number;
  constSizeBytes: number;
  /** The virtual and binary architecture of its code (90 for sm_90). */
  ptxVersion: number;
  binaryVersion: number;
}

/**
 * Compiled CUDA C++ (see {@link compile}): its kernels, by name. Compiled code stays loaded for the life
 * of the process (a launch still queued may be using it); compiling the same source again reuses it.
 */
export class Module {
  /** The source's file name (options.name). */
  readonly name: string;
  readonly #source: string;
  readonly #options: ResolvedOptions;
  readonly #declarations: KernelDeclaration[];
  /** Parameter lists of extern "C" kernels kept with the cache entry, by name (empty when parsed here). */
  readonly #params: Readonly<Record<string, ParsedParam[]>>;
  readonly #binaries = new Map<number, Binary>();
  readonly #kernels = new Map<string, Kernel>();
  /** Whether kernel() may take an extern "C" kernel's kept parameters as they are (no signature or name expression given). */
  readonly #plain: boolean;

  /** @internal Use {@link compile} or {@link compileAsync}. */
  constructor(source: string, options: ResolvedOptions, arch: number, first: Binary) {
    this.#source = source;
    this.#options = options;
    this.name = options.name;
    // A hit brings what was found in the source when it was compiled (the key covers the source).
    const stored = storedKernels(first.compiled.info);
    this.#declarations = stored?.kernels ?? findKernels(source);
    this.#params = stored?.params ?? {};
    this.#plain = options.nameExpressions.length === 0 && Object.keys(options.signatures).length === 0;
    this.#binaries.set(arch, first);
  }

  /** NVRTC's log of the first compilation (its warnings; empty when there were none or it came from the cache). */
  get log(): string {
    return [...this.#binaries.values()][0].compiled.log;
  }

  /**
   * What the code was compiled for on the first device: `sm_90`, or `compute_90 (PTX: …why)` when
   * NVRTC is older than the GPU and the driver compiles PTX instead.
   */
  get target(): string {
    const c = [...this.#binaries.values()][0].compiled;
    return c.cubin ? `sm_${c.arch}` : `compute_${c.arch} (PTX: ${c.note})`;
  }

  /** Where the first compilation came from: `compiled`, `disk` (the disk cache) or `memory`. */
  get from(): CacheSource {
    return [...this.#binaries.values()][0].from;
  }

  /** The kernels found in the source (extern "C" names and templates) and the name expressions compiled. */
  get kernelNames(): string[] {
    const names = this.#declarations.filter((d) => d.externC && d.template === null).map((d) => d.name);
    return [...new Set([...names, ...this.#options.nameExpressions, ...Object.keys(this.#options.signatures)])];
  }

  /**
   * The kernel `name`: an `extern "C"` kernel's name, or a name expression given at compile time in
   * `options.nameExpressions` or `options.signatures` (`scale<float, 4>`, `ns::step`). Its parameters
   * come from its declaration in the source (template parameters substituted), or from
   * `signature` / `options.signatures[name]` (a parameter list such as `float* x, float a, int n`).
   *
   * @throws RangeError when the source declares no such kernel, or a C++ name was not compiled as a
   *   name expression; TypeError when a parameter's type cannot be passed from JavaScript (a struct by
   *   value, a reference).
   */
  kernel(name: string, signature?: string): Kernel {
    if (typeof name !== 'string' || name.trim() === '') throw typeError('name', 'a kernel name', name);
    if (signature !== undefined && typeof signature !== 'string')
      throw typeError('signature', 'a parameter list string', signature);
    const memoKey = `${normalizeExpression(name)}\u0000${signature ?? ''}`;
    const known = this.#kernels.get(memoKey);
    if (known) return known;
    // The usual case, in few steps (a process's second compile() is the disk hit bench kernels times):
    // an extern "C" kernel whose parameters the cache entry kept, and nothing given that could change them.
    if (signature === undefined && this.#plain && Object.hasOwn(this.#params, name)) {
      const k = new Kernel(this, name, null, this.#params[name]);
      this.#kernels.set(memoKey, k);
      return k;
    }
    const signatures =
      signature === undefined ? this.#options.signatures : { ...this.#options.signatures, [name]: signature };
    // An extern "C" kernel whose parameters the cache entry kept, with no signature given for it.
    const kept =
      Object.hasOwn(this.#params, name) &&
      !Object.keys(signatures).some((k) => normalizeExpression(k) === normalizeExpression(name))
        ? this.#params[name]
        : undefined;
    const sig: SignatureLookup =
      kept !== undefined
        ? { ok: true, params: kept, source: 'declaration' }
        : kernelSignature(name, this.#declarations, signatures, this.#types());
    if (!sig.ok) {
      const message = `${this.name}: kernel ${name}: ${sig.reason}`;
      throw sig.kind === 'unsupported' ? new TypeError(message) : new RangeError(message);
    }
    const wanted = normalizeExpression(name);
    const expression = this.#options.nameExpressions.find((e) => normalizeExpression(e) === wanted);
    const declaredC = this.#declarations.some((d) => d.name === name && d.externC && d.template === null);
    if (expression === undefined && !declaredC && !(sig.source === 'signatures' && isIdentifier(name))) {
      throw new RangeError(
        `${this.name}: kernel ${name} is a C++ name (mangled in the compiled code): declare it extern "C", ` +
          `or compile with options.nameExpressions: ['${name}']`,
      );
    }
    const k = new Kernel(this, name, expression ?? null, sig.params);
    this.#kernels.set(memoKey, k);
    return k;
  }

  #typeCache: TypeContext | undefined;
  /** What the source, its string headers and options.defines tell about type names (scanned once, when needed). */
  #types(): TypeContext {
    return (this.#typeCache ??= typeContext(this.#source, this.#options.headers, this.#options.defines));
  }

  /** @internal The binary for `device`, compiled (synchronously, through the cache) and loaded on first use. */
  binaryFor(device: number): Binary {
    const arch = deviceArch(device);
    let b = this.#binaries.get(arch);
    if (b === undefined) {
      b = compileBinary(this.#source, this.#options, arch);
      this.#binaries.set(arch, b);
    }
    if (b.library === null) b.library = loadLibrary(b, device);
    return b;
  }

  /** @internal The device a launch without arrays and without config.device uses. */
  get defaultDevice(): number {
    return this.#options.device;
  }
}

/**
 * Bumped whenever what the parsers (signature.ts, ctypes.ts) make of a source changes: entries keep
 * their results, and the cache key covers this package only through its version, which a checkout
 * under development does not change.
 */
const STORED_KERNELS_VERSION = 5;

/** What a cache entry keeps of its source (CompileRequest.describe): its kernels and parameter lists. */
export interface StoredKernels {
  /** STORED_KERNELS_VERSION when it was made. */
  version: number;
  /** findKernels of the source. */
  kernels: KernelDeclaration[];
  /** The parameters of each extern "C" kernel that is not a template, parsed from its declaration. */
  params: Record<string, ParsedParam[]>;
}

/**
 * @internal What an entry keeps of `source`: its kernels and their parsed parameter lists (type names
 * read with the string headers and the defines of `options`, which the entry's key covers).
 */
export function describeKernels(
  source: string,
  options: Pick<ResolvedOptions, 'headers' | 'defines'> = { headers: [], defines: [] },
): StoredKernels {
  const kernels = findKernels(source);
  const params: Record<string, ParsedParam[]> = {};
  let types: TypeContext | undefined;
  for (const d of kernels) {
    if (!d.externC || d.template !== null || Object.hasOwn(params, d.name)) continue;
    types ??= typeContext(source, options.headers, options.defines);
    const sig = kernelSignature(d.name, kernels, {}, types);
    if (sig.ok) params[d.name] = sig.params;
  }
  return { version: STORED_KERNELS_VERSION, kernels, params };
}

/**
 * @internal What a cache entry kept of its source (describeKernels), or null when `info` is not that
 * (an entry written without it is parsed again).
 */
export function storedKernels(info: unknown): StoredKernels | null {
  if (typeof info !== 'object' || info === null) return null;
  const { version, kernels, params } = info as Record<string, unknown>;
  if (
    version !== STORED_KERNELS_VERSION ||
    !Array.isArray(kernels) ||
    typeof params !== 'object' ||
    params === null ||
    Array.isArray(params)
  )
    return null;
  const isTemplateParam = (t: unknown): boolean => {
    if (typeof t !== 'object' || t === null) return false;
    const p = t as Record<string, unknown>;
    return (
      (p.kind === 'type' || p.kind === 'value') &&
      typeof p.name === 'string' &&
      (p.default === undefined || typeof p.default === 'string')
    );
  };
  const declarationsOk = kernels.every((d: unknown) => {
    if (typeof d !== 'object' || d === null) return false;
    const k = d as Record<string, unknown>;
    return (
      typeof k.name === 'string' &&
      typeof k.externC === 'boolean' &&
      typeof k.paramsText === 'string' &&
      (k.template === null || (Array.isArray(k.template) && k.template.every(isTemplateParam)))
    );
  });
  const paramsOk = Object.values(params).every(
    (list: unknown) =>
      Array.isArray(list) &&
      list.every(
        (p: unknown) =>
          typeof p === 'object' &&
          p !== null &&
          typeof (p as ParsedParam).name === 'string' &&
          isParamType((p as ParsedParam).type),
      ),
  );
  return declarationsOk && paramsOk ? (info as StoredKernels) : null;
}

function requestOf(source: string, o: ResolvedOptions, arch: number): CompileRequest {
  return {
    describe: () => describeKernels(source, o),
    source,
    name: o.name,
    options: nvrtcOptions(o, []),
    includePaths: o.includePaths,
    headers: o.headers,
    nameExpressions: o.nameExpressions,
    deviceArch: arch,
  };
}

function compileBinary(source: string, o: ResolvedOptions, arch: number): Binary {
  const r = kernelCache().get(requestOf(source, o, arch), { disk: o.cache });
  return { compiled: r.code, key: r.key, from: r.from, library: r.key === null ? null : (loaded.get(r.key) ?? null) };
}

function loadLibrary(b: Binary, device: number): LibraryHandle {
  const lib = native.kernelsLoad(device, b.compiled.code, !b.compiled.cubin);
  if (b.key !== null) loaded.set(b.key, lib);
  return lib;
}

function checkSource(source: unknown): string {
  if (typeof source !== 'string') throw typeError('source', 'a string of CUDA C++', source);
  return source;
}

/**
 * Compiles CUDA C++ with NVRTC for the device `options.device` (default 0) and loads it: to a cubin
 * for the device's architecture (PTX, saying so in `module.target`, only when NVRTC is older than the
 * GPU). Compiled code is cached in memory and on disk (see {@link clearKernelCache}); a second compile
 * of the same source costs a hash. Blocks the JS thread while NVRTC runs (tens of milliseconds on a
 * miss): {@link compileAsync} does not.
 *
 * @example
 * ```ts
 * const mod = compile(`
 *   extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
 *     int i = blockIdx.x * blockDim.x + threadIdx.x;
 *     if (i < n) y[i] = a * x[i] + y[i];
 *   }`, { name: 'saxpy.cu' });
 * mod.kernel('saxpy').launch({ grid: Math.ceil(n / 256), block: 256 }, n, 2.0, x, y);
 * ```
 *
 * @throws CompileError when the source does not compile (the first error with its line and a caret;
 *   `.log` is NVRTC's log) or NVRTC cannot be loaded (saying what to install); TypeError/RangeError
 *   for bad options; CudaError when there is no such device.
 */
export function compile(source: string, options: CompileOptions = {}): Module {
  const src = checkSource(source);
  const o = resolveCompileOptions(options);
  requireCompiler();
  const arch = deviceArch(o.device);
  const b = compileBinary(src, o, arch);
  if (b.library === null) b.library = loadLibrary(b, o.device);
  return new Module(src, o, arch, b);
}

/**
 * {@link compile} as a Promise: the disk cache is read and NVRTC runs on libuv pool threads, so the
 * event loop keeps turning during a compilation. Concurrent calls for the same source share one
 * compilation. Devices of another architecture compile synchronously on their first launch.
 *
 * Rejects, never throws: CompileError, TypeError/RangeError, CudaError as {@link compile} throws them.
 */
export async function compileAsync(source: string, options: CompileOptions = {}): Promise<Module> {
  const src = checkSource(source);
  const o = resolveCompileOptions(options);
  requireCompiler();
  const arch = deviceArch(o.device);
  const r = await kernelCache().getAsync(requestOf(src, o, arch), { disk: o.cache });
  const b: Binary = {
    compiled: r.code,
    key: r.key,
    from: r.from,
    library: r.key === null ? null : (loaded.get(r.key) ?? null),
  };
  if (b.library === null) b.library = loadLibrary(b, o.device);
  return new Module(src, o, arch, b);
}

/** A kernel's state on one device: its handle, packed-argument buffer, writers and limits. */
interface DeviceState {
  handle: KernelHandle;
  bytes: Uint8Array;
  view: DataView;
  config: Uint32Array;
  writers: ArgWriter[];
  limits: LaunchLimits;
  /** What kernelsGetKernel wrote: the attributes (read by Kernel.attributes), then the offsets. */
  info: Float64Array;
}

/** Where kernelsGetKernel's `out` holds the parameters' offsets (binding.d.ts). */
const INFO_OFFSETS = 10;

/** One kernel of a {@link Module}; launch it with {@link Kernel.launch}. */
export class Kernel {
  /** The name it was asked for by (an extern "C" name or a name expression). */
  readonly name: string;
  readonly #module: Module;
  readonly #expression: string | null;
  readonly #types: ParamType[];
  readonly #names: string[];
  readonly #devices = new Map<number, DeviceState>();
  readonly #handles: (BufferHandle | null)[] = [];
  #params: readonly KernelParam[] | null = null;

  /** @internal Use {@link Module.kernel}. */
  constructor(module: Module, name: string, expression: string | null, params: { name: string; type: ParamType }[]) {
    this.#module = module;
    this.name = name;
    this.#expression = expression;
    this.#types = [];
    this.#names = [];
    for (const p of params) {
      this.#types.push(p.type);
      this.#names.push(p.name);
    }
  }

  /** Its parameters, in order (made when first asked for: a launch does not need them). */
  get params(): readonly KernelParam[] {
    this.#params ??= Object.freeze(
      this.#types.map((type, i) =>
        Object.freeze(
          type.kind === 'pointer'
            ? {
                name: this.#names[i],
                type: type.text,
                kind: 'pointer' as const,
                dtype: type.dtype,
                readOnly: type.readOnly,
              }
            : { name: this.#names[i], type: type.text, kind: 'scalar' as const },
        ),
      ),
    );
    return this.#params;
  }

  #state(device: number): DeviceState {
    let s = this.#devices.get(device);
    if (s !== undefined) return s;
    const binary = this.#module.binaryFor(device);
    const symbol = this.#expression === null ? this.name : binary.compiled.lowered[this.#expression];
    if (!symbol) throw new RangeError(`${this.#module.name}: no lowered name for ${this.name}`);
    const count = this.#types.length;
    const layout = new Int32Array(count * 2);
    for (let i = 0; i < count; i++) {
      const t = this.#types[i];
      layout[2 * i] = t.size;
      layout[2 * i + 1] = t.kind === 'scalar' ? 0 : t.readOnly ? 1 : 2;
    }
    const where = `${this.#module.name}: ${this.name}`;
    // [bytes, paramsChecked, maxThreadsPerBlock, sharedSizeBytes, maxDynamicSharedSizeBytes,
    //  constSizeBytes, localSizeBytes, numRegs, ptxVersion, binaryVersion, offsets…] (binding.d.ts).
    const info = new Float64Array(INFO_OFFSETS + count);
    let handle: KernelHandle;
    try {
      handle = native.kernelsGetKernel(binary.library!, device, symbol, where, layout, this.#names, info);
    } catch (e) {
      if (e instanceof CudaError && e.code === 'cudaErrorSymbolNotFound')
        throw new RangeError(
          `${this.#module.name}: the compiled code has no kernel ${this.name}` +
            (this.#expression === null ? ' (is it declared extern "C" and defined, not only declared?)' : ''),
          { cause: e },
        );
      throw e;
    }
    const p = props(device);
    const bytes = new Uint8Array(info[0]);
    const maxThreadsPerBlock = info[2];
    const sharedSizeBytes = info[3];
    const writers: ArgWriter[] = [];
    for (let i = 0; i < count; i++)
      writers.push(argWriter(where, this.#names[i], this.#types[i], info[INFO_OFFSETS + i], device));
    s = {
      handle,
      bytes,
      view: new DataView(bytes.buffer),
      config: new Uint32Array(7),
      writers,
      limits: {
        device,
        maxGridDim: p.maxGridDim,
        maxBlockDim: p.maxBlockDim,
        maxThreadsPerBlock: Math.min(p.maxThreadsPerBlock, maxThreadsPerBlock),
        kernelLimitsThreads: maxThreadsPerBlock < p.maxThreadsPerBlock,
        maxDynamicSharedMem: Math.max(0, p.sharedMemPerBlockOptin - sharedSizeBytes),
      },
      info,
    };
    this.#devices.set(device, s);
    return s;
  }

  /** Registers, shared memory, thread limit and architecture of the compiled kernel on `device` (default: the module's). */
  attributes(device: number = this.#module.defaultDevice): KernelAttributes {
    const info = this.#state(device).info;
    return {
      maxThreadsPerBlock: info[2],
      numRegs: info[7],
      sharedSizeBytes: info[3],
      maxDynamicSharedSizeBytes: info[4],
      localSizeBytes: info[6],
      constSizeBytes: info[5],
      ptxVersion: info[8],
      binaryVersion: info[9],
    };
  }

  /**
   * Queues the kernel on the library stream of its device, after every op, transfer and collective
   * queued there before, and before those queued after; returns without waiting for it. Arguments are
   * checked against the parameters before anything is queued: a `DeviceArray` (its dtype must match
   * the pointee: `float*` takes float32, `double*` float64, `int*` int32, `unsigned*` uint32; `void*`,
   * `char*` and other pointees take any array) or `null` for each pointer, a number (or bigint, or
   * boolean for `bool`) within the type's range for each scalar.
   *
   * A kernel that faults (an illegal address, a trap) is reported as a {@link CudaError} by the next
   * call that waits for the device; the CUDA context is then lost, and every later call on the device
   * says so: the process must be restarted.
   *
   * @throws TypeError (wrong argument count, wrong kind of value, wrong dtype) or RangeError (a number
   *   out of range, an array on another device, a launch shape beyond the device's or the kernel's
   *   limits), naming the parameter or the limit; CudaError when CUDA refuses the launch.
   */
  launch(config: LaunchConfig, ...args: KernelArg[]): void {
    const s = this.#prepare(config, args);
    native.kernelsLaunch(s.handle, s.config, s.bytes, ...this.#handles);
  }

  /**
   * @internal The checked arguments of kernelsLaunch for this launch, without launching:
   * [kernel, config, params, ...arrays] (bench/dev/kernels/launch_overhead.ts times the native side).
   * Copies: the device state's buffers are rewritten by the next launch, which would otherwise pair
   * its config and scalars with these arrays.
   */
  launchArguments(
    config: LaunchConfig,
    ...args: KernelArg[]
  ): [KernelHandle, Uint32Array, Uint8Array, ...(BufferHandle | null)[]] {
    const s = this.#prepare(config, args);
    return [s.handle, s.config.slice(), s.bytes.slice(), ...this.#handles];
  }

  /** Checks a launch and packs it into the device's state (and #handles); nothing is queued. */
  #prepare(config: LaunchConfig, args: KernelArg[]): DeviceState {
    if (typeof config !== 'object' || config === null) throw typeError('config', 'an object { grid, block }', config);
    let device = config.device;
    if (device === undefined) {
      for (const a of args)
        if (a instanceof DeviceArray) {
          device = a.device;
          break;
        }
      device ??= this.#module.defaultDevice;
    } else if (typeof device !== 'number' || !Number.isInteger(device) || device < 0) {
      throw typeError('config.device', 'a device index', device);
    }
    if (args.length !== this.#types.length)
      throw new TypeError(
        `${this.#module.name}: ${this.name} takes ${this.#types.length} argument(s) (${this.#names.join(', ')}), got ${args.length}`,
      );
    const s = this.#state(device);
    checkLaunchConfig(config, s.limits, s.config);
    const handles = this.#handles;
    handles.length = 0;
    for (let i = 0; i < args.length; i++) s.writers[i](s.view, args[i], handles);
    return s;
  }
}
