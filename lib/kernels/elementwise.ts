// elementwise(): CuPy's ElementwiseKernel for DeviceArrays. The user writes the body for one element;
// we generate a grid-stride kernel around it (any length; 16-byte vector loads where the arrays are
// aligned, stores the compiler merges, four elements in flight per thread in the scalar loops),
// compile one instance per combination of dtypes and array/scalar arguments (through the kernel
// cache), and launch it on the arrays' device.
import { type DeviceArray, DeviceArray as DeviceArrayClass, type Dtype, empty } from '../array';
import { checkInteger, rangeError, typeError } from '../errors';
import {
  arrayOn,
  checkScalar,
  cType,
  type GeneratedCompileOptions,
  mapCompileError,
  parseSpec,
  PRELUDE,
  SourceBuilder,
  type SpecParam,
  TypeBinding,
} from './generated';
import { compile, compileAsync, deviceLimits, type Kernel, type Module } from './module';

/** What {@link elementwise} builds a kernel from. */
export interface ElementwiseSpec extends GeneratedCompileOptions {
  /**
   * The inputs: `'float32 x, float32 y, float32 a'`. Types are dtypes (or `float`, `double`, `int`,
   * `unsigned int`), or placeholders such as `T` that take the dtype of the arrays passed for them. Each
   * input is a DeviceArray (the body sees its element `x[i]` as `x`) or a number (the same value for
   * every element). `raw float32 x`: the body sees the whole array as a pointer and indexes it itself.
   */
  in: string;
  /** The outputs: `'float32 z'`; the body assigns them (`z` is a reference to `z[i]`). `raw` as for inputs. */
  out: string;
  /**
   * C++ statements run for each index `i` (a `long long`, 0 ≤ i < n): `'z = a * x + y'`. `n` is the
   * length. Errors in it are reported at its own lines (`saxpy:body(1)`).
   */
  body: string;
  /** Names the kernel in errors and the generated file (default `elementwise`). */
  name?: string;
  /** C++ placed before the kernel: helper functions, constants, #includes. */
  preamble?: string;
}

/** Options of a call, passed as its last argument. */
export interface ElementwiseCallOptions {
  /** Where the outputs go (one DeviceArray per output, of its dtype and length); default: new arrays. */
  out?: DeviceArray | readonly DeviceArray[];
  /** The length when no argument is an array. */
  size?: number;
  /** The device when no argument is an array (default 0). */
  device?: number;
}

/** A kernel made by {@link elementwise}: call it with one argument per input, then optionally the call's options. */
export interface ElementwiseKernel {
  (...args: (DeviceArray | number | ElementwiseCallOptions)[]): DeviceArray | DeviceArray[];
  /** The name given in the spec. */
  readonly kernelName: string;
  /** The generated source of the instance these arguments would run (for reading and debugging; compiles nothing). */
  source(...args: (DeviceArray | number | ElementwiseCallOptions)[]): string;
  /**
   * Compiles the instance these arguments would run off the JS thread ({@link compileAsync}, through
   * the cache), so that the first call with such arguments does not block the event loop on NVRTC (a
   * call made first compiles it synchronously). Rejects as a call would (a CompileError for a body
   * that does not compile, a TypeError or RangeError for the arguments); launches nothing.
   */
  prepare(...args: (DeviceArray | number | ElementwiseCallOptions)[]): Promise<void>;
}

const RESERVED = new Set(['i', 'n']);
const BLOCK = 256;
/** Elements each thread has in flight per loop iteration: loads are issued together, then the bodies run. */
const UNROLL = 4;
/**
 * Bytes per thread per access of the widest array in the vector path: 16-byte loads (float4, double2),
 * and stores where the compiler can merge them, move the same bytes in a quarter of the instructions. A float4 saxpy at 2^28, one vector per
 * thread, moved 3035 GB/s on an H100 against 2749 for the scalar grid-stride kernel and 2983 for the
 * device copy (bench/dev/kernels/elementwise_grid.ts, 2026-11-26).
 */
const VECTOR_BYTES = 16;

const dtypeBytes = (d: Dtype) => (d === 'float64' ? 8 : 4);

/**
 * How many elements each thread takes per vector access (1: no vector path): 16 bytes of the widest
 * dtype among the arrays read or written element by element (raw arrays and scalars do not count).
 */
function vectorWidth(ins: SpecParam[], outs: SpecParam[], types: Dtype[], arrays: boolean[]): number {
  const sizes = [
    ...ins.filter((p, k) => arrays[k] && !p.raw).map((p) => dtypeBytes(types[ins.indexOf(p)])),
    ...outs.filter((p) => !p.raw).map((p) => dtypeBytes(types[ins.length + outs.indexOf(p)])),
  ];
  return sizes.length === 0 ? 1 : VECTOR_BYTES / Math.max(...sizes);
}

function isOptions(v: unknown): v is ElementwiseCallOptions {
  return typeof v === 'object' && v !== null && !(v instanceof DeviceArrayClass) && !Array.isArray(v);
}

interface Call {
  device: number;
  n: number;
  /** The dtype of each input then each output. */
  types: Dtype[];
  /** Whether each input is an array. */
  arrays: boolean[];
  outs: (DeviceArray | undefined)[];
}

/** Generates the source of one instance. */
function generate(
  name: string,
  spec: ElementwiseSpec,
  ins: SpecParam[],
  outs: SpecParam[],
  types: Dtype[],
  arrays: boolean[],
): SourceBuilder {
  const b = new SourceBuilder(`${name}.generated.cu`);
  b.line(`// Generated by cuda-kernels elementwise() for ${name}.`).line(PRELUDE);
  if (spec.preamble) b.user(`${name}:preamble`, spec.preamble);
  const params: string[] = [];
  ins.forEach((p, k) => {
    const t = cType(types[k]);
    if (!arrays[k]) params.push(`${t} ${p.name}`);
    else if (p.raw) params.push(`const ${t}* ${p.name}`);
    else params.push(`const ${t}* ck_in_${p.name}`);
  });
  outs.forEach((p, k) => {
    const t = cType(types[ins.length + k]);
    params.push(p.raw ? `${t}* ${p.name}` : `${t}* ck_out_${p.name}`);
  });
  params.push('long long ck_n');
  const loaded = ins.filter((p, k) => arrays[k] && !p.raw).map((p) => ({ p, t: cType(types[ins.indexOf(p)]) }));
  const body = (u: number) => {
    b.line('    {');
    b.line(`      [[maybe_unused]] const long long i = ck_i${u === 0 ? '' : ` + ${u} * ck_stride`};`);
    for (const { p, t } of loaded) b.line(`      [[maybe_unused]] const ${t} ${p.name} = ck_${p.name}_${u};`);
    outs.forEach((p, k) => {
      if (!p.raw) b.line(`      ${cType(types[ins.length + k])}& ${p.name} = ck_out_${p.name}[i];`);
    });
    // In do { } while (0), `continue` and `break` end this element only, as `continue` does in CuPy: in
    // the unrolled loop they would skip (or, through the tail loop, repeat) the iteration's others.
    b.line('      do {');
    b.user(`${name}:body`, spec.body);
    // The body's last statement may leave out its semicolon, as in CuPy ('z = a * x + y').
    b.line('      ;').line('      } while (0);').line('    }');
  };
  const loads = (count: number) => {
    for (const { p, t } of loaded)
      for (let u = 0; u < count; u++)
        b.line(`    const ${t} ck_${p.name}_${u} = ck_in_${p.name}[ck_i${u === 0 ? '' : ` + ${u} * ck_stride`}];`);
  };
  const stored = outs.map((p, k) => ({ p, t: cType(types[ins.length + k]) })).filter(({ p }) => !p.raw);
  const width = vectorWidth(ins, outs, types, arrays);
  if (width > 1) {
    b.line('template <typename T, int V> struct alignas(sizeof(T) * V) ck_vec { T v[V]; };');
    // defines: { CK_ELEMENTWISE_SCALAR_ONLY: 1 } sends every element to the scalar loops (the tests
    // compare both paths; arrays are always aligned otherwise).
    b.line('#ifndef CK_ELEMENTWISE_SCALAR_ONLY').line('#define CK_ELEMENTWISE_SCALAR_ONLY 0').line('#endif');
  }
  b.line(`extern "C" __global__ void ck_elementwise(${params.join(', ')}) {`);
  b.line('  [[maybe_unused]] const long long n = ck_n;');
  b.line('  const long long ck_stride = (long long)gridDim.x * blockDim.x;');
  b.line('  long long ck_i = (long long)blockIdx.x * blockDim.x + threadIdx.x;');
  if (width > 1) {
    // The vector path: elements [0, n - n % width) in vectors of `width`, each array's vector aligned
    // to its own size (checked: an unaligned array sends every element to the scalar loops below).
    const vec = (t: string) => `ck_vec<${t}, ${width}>`;
    const all = [
      ...loaded.map(({ p, t }) => ({ ptr: `ck_in_${p.name}`, t })),
      ...stored.map(({ p, t }) => ({ ptr: `ck_out_${p.name}`, t })),
    ];
    const misaligned = all.map(({ ptr, t }) => `((unsigned long long)${ptr} % sizeof(${vec(t)}))`).join(' | ');
    b.line(`  if (!CK_ELEMENTWISE_SCALAR_ONLY && (${misaligned}) == 0) {`);
    b.line(`    const long long ck_nv = ck_n / ${width};`);
    // Outputs are references into their arrays, as in the scalar loops: what the body leaves unwritten
    // is kept, and &z is the element's address (a copy in registers would go to local memory for
    // __stcs(&z, v) or __ldg(&z)). Told the alignment, the compiler merges the stores of a body that
    // surely assigns into one vector store (and the loads of one that reads, such as z += x).
    for (const { p, t } of stored)
      b.line(
        `    ${t}* const ck_${p.name}_a = static_cast<${t}*>(__builtin_assume_aligned(ck_out_${p.name}, sizeof(${vec(t)})));`,
      );
    b.line('    for (long long ck_j = ck_i; ck_j < ck_nv; ck_j += ck_stride) {');
    for (const { p, t } of loaded)
      b.line(`      const ${vec(t)} ck_${p.name}_v = reinterpret_cast<const ${vec(t)}*>(ck_in_${p.name})[ck_j];`);
    b.line('#pragma unroll');
    b.line(`      for (int ck_k = 0; ck_k < ${width}; ++ck_k) {`);
    b.line(`        [[maybe_unused]] const long long i = ck_j * ${width} + ck_k;`);
    for (const { p, t } of loaded) b.line(`        [[maybe_unused]] const ${t} ${p.name} = ck_${p.name}_v.v[ck_k];`);
    for (const { p, t } of stored) b.line(`        ${t}& ${p.name} = ck_${p.name}_a[i];`);
    b.line('        do {');
    b.user(`${name}:body`, spec.body);
    b.line('        ;').line('        } while (0);').line('      }');
    b.line('    }');
    b.line(`    ck_i += ck_nv * ${width};`);
    b.line('  }');
  }
  b.line(`  for (; ck_i + ${UNROLL - 1} * ck_stride < ck_n; ck_i += ${UNROLL} * ck_stride) {`);
  loads(UNROLL);
  for (let u = 0; u < UNROLL; u++) body(u);
  b.line('  }');
  b.line('  for (; ck_i < ck_n; ck_i += ck_stride) {');
  loads(1);
  body(0);
  b.line('  }');
  b.line('}');
  return b;
}

/**
 * @internal The generated source for inputs and outputs of `types` (inputs first), `arrays` telling
 * which inputs are arrays: for the tests, which read it without a GPU.
 */
export function elementwiseSource(spec: ElementwiseSpec, types: Dtype[], arrays: boolean[]): SourceBuilder {
  const taken = new Set<string>();
  const ins = parseSpec('spec.in', spec.in, RESERVED, taken);
  const outs = parseSpec('spec.out', spec.out, RESERVED, taken);
  return generate(spec.name ?? 'elementwise', spec, ins, outs, types, arrays);
}

/**
 * An element-wise kernel from a one-element body, as CuPy's `ElementwiseKernel`:
 *
 * ```ts
 * const saxpy = elementwise({ in: 'float32 x, float32 y, float32 a', out: 'float32 z', body: 'z = a * x + y' });
 * const z = saxpy(x, y, 2);          // a new float32 array of x's length
 * saxpy(x, y, 2, { out: y });        // in place
 * ```
 *
 * Each call checks its arguments (arrays of one length and device, dtypes as the spec says or
 * consistent for a placeholder, numbers in range), compiles the instance for its types on first use
 * (through the kernel cache: later processes read it from disk), and queues it on the device's library
 * stream. Several outputs are returned as an array.
 *
 * @throws TypeError/RangeError for a bad spec (when made) or bad arguments (when called), naming them;
 *   CompileError (on the first call of an instance) pointing into `body` or `preamble`.
 */
export function elementwise(spec: ElementwiseSpec): ElementwiseKernel {
  if (typeof spec !== 'object' || spec === null) throw typeError('spec', 'an object { in, out, body }', spec);
  const name = spec.name ?? 'elementwise';
  if (typeof name !== 'string' || !/^[A-Za-z_][\w.-]*$/.test(name))
    throw rangeError('spec.name', 'a name of letters, digits, _ . -', name);
  const taken = new Set<string>();
  const ins = parseSpec('spec.in', spec.in, RESERVED, taken);
  const outs = parseSpec('spec.out', spec.out, RESERVED, taken);
  if (outs.length === 0) throw new RangeError('spec.out must name at least one output');
  if (typeof spec.body !== 'string') throw typeError('spec.body', 'a string of C++ statements', spec.body);
  if (spec.preamble !== undefined && typeof spec.preamble !== 'string')
    throw typeError('spec.preamble', 'a string of C++', spec.preamble);
  for (const p of outs)
    if (p.placeholder && !ins.some((q) => q.placeholder && q.type === p.type))
      throw new RangeError(`spec.out: the type ${p.type} of ${p.name} appears in no input, so no call could tell it`);
  const compileOptions: GeneratedCompileOptions = {
    headers: spec.headers,
    includePaths: spec.includePaths,
    defines: spec.defines,
    std: spec.std,
    flags: spec.flags,
    cache: spec.cache,
  };
  const instances = new Map<string, { kernel: Kernel; source: string; width: number }>();

  const analyse = (args: unknown[]): Call => {
    let options: ElementwiseCallOptions = {};
    if (args.length === ins.length + 1 && isOptions(args[args.length - 1]))
      options = args.pop() as ElementwiseCallOptions;
    if (args.length !== ins.length)
      throw new TypeError(
        `${name} takes ${ins.length} argument(s) (${ins.map((p) => p.name).join(', ')}), got ${args.length}`,
      );
    const outList = options.out === undefined ? [] : Array.isArray(options.out) ? options.out : [options.out];
    if (options.out !== undefined && outList.length !== outs.length)
      throw new RangeError(`${name}: options.out must hold ${outs.length} DeviceArray(s), one per output`);
    outList.forEach((o, k) => {
      if (!(o instanceof DeviceArrayClass)) throw typeError(`${name}: options.out[${k}]`, 'a DeviceArray', o);
    });
    if (new Set(outList).size !== outList.length) throw new RangeError(`${name}: options.out holds one array twice`);
    // An input may be its own output only element by element: where either side is raw, the body reads
    // or writes other elements than its own, which other threads are writing at the same time.
    outList.forEach((o, k) => {
      ins.forEach((p, j) => {
        if (args[j] === o && (p.raw || outs[k].raw))
          throw new RangeError(
            `${name}: options.out[${k}] is also the input ${p.name}, and ${p.raw ? p.name : outs[k].name} is raw: ` +
              'threads would read elements that others are writing; give the output its own array',
          );
      });
    });
    const firstArray = [...args, ...outList].find((a): a is DeviceArray => a instanceof DeviceArrayClass);
    const device =
      options.device !== undefined
        ? checkInteger(`${name}: options.device`, options.device, 0, 1 << 20)
        : (firstArray?.device ?? 0);
    const binding = new TypeBinding();
    const arrays = args.map((a) => a instanceof DeviceArrayClass);
    let n: number | undefined;
    let nFrom = '';
    const length = (p: SpecParam, a: DeviceArray) => {
      if (p.raw) return;
      if (n === undefined) {
        n = a.length;
        nFrom = p.name;
      } else if (a.length !== n)
        throw new RangeError(
          `${name}: ${p.name} has ${a.length} elements, ${nFrom} has ${n}: non-raw arrays must have one length`,
        );
    };
    ins.forEach((p, k) => {
      const a = args[k];
      if (a instanceof DeviceArrayClass) {
        binding.bind(name, p, arrayOn(name, p.name, a, device));
        length(p, a);
      } else if (p.raw) {
        throw typeError(`${name}: ${p.name} (raw)`, 'a DeviceArray', a);
      } else if (typeof a !== 'number') {
        throw typeError(`${name}: ${p.name}`, 'a DeviceArray or a number', a);
      }
    });
    outList.forEach((o, k) => {
      binding.bind(name, outs[k], arrayOn(name, `options.out[${k}]`, o, device));
      length(outs[k], o);
    });
    if (n === undefined) {
      if (options.size === undefined)
        throw new TypeError(`${name}: no argument is an array, so options.size must give the length`);
      n = checkInteger(`${name}: options.size`, options.size);
    } else if (options.size !== undefined && options.size !== n) {
      throw rangeError(`${name}: options.size`, `the arrays' length ${n}`, options.size);
    }
    const types = [...ins, ...outs].map((p) => binding.resolve(name, p));
    ins.forEach((p, k) => {
      if (!arrays[k]) checkScalar(name, p.name, types[k], args[k]);
    });
    const outsChecked: (DeviceArray | undefined)[] = outs.map((_, k) => outList[k]);
    return { device, n, types, arrays, outs: outsChecked };
  };

  type Instance = { kernel: Kernel; source: string; width: number };
  const instanceKey = (call: Call) => `${call.types.join(',')}|${call.arrays.map((a) => (a ? 'a' : 's')).join('')}`;
  const optionsFor = (program: string, call: Call) => ({ ...compileOptions, name: program, device: call.device });
  /** The instance of `call` made from its compiled module (or the one made meanwhile, by prepare). */
  const keep = (call: Call, source: string, mod: Module): Instance => {
    const key = instanceKey(call);
    if (!instances.has(key))
      instances.set(key, {
        kernel: mod.kernel('ck_elementwise'),
        source,
        width: vectorWidth(ins, outs, call.types, call.arrays),
      });
    return instances.get(key)!;
  };
  const instance = (call: Call): Instance => {
    const known = instances.get(instanceKey(call));
    if (known !== undefined) return known;
    const b = generate(name, spec, ins, outs, call.types, call.arrays);
    try {
      return keep(call, b.source, compile(b.source, optionsFor(b.program, call)));
    } catch (e) {
      throw mapCompileError(e, b.sources, `${name} did not compile`);
    }
  };
  const prepare = async (...given: (DeviceArray | number | ElementwiseCallOptions)[]): Promise<void> => {
    const call = analyse([...given]);
    if (instances.has(instanceKey(call))) return;
    const b = generate(name, spec, ins, outs, call.types, call.arrays);
    try {
      keep(call, b.source, await compileAsync(b.source, optionsFor(b.program, call)));
    } catch (e) {
      throw mapCompileError(e, b.sources, `${name} did not compile`);
    }
  };

  const run = (...given: (DeviceArray | number | ElementwiseCallOptions)[]): DeviceArray | DeviceArray[] => {
    const args = [...given];
    const call = analyse(args);
    const { kernel, width } = instance(call);
    const made: DeviceArray[] = [];
    const results = call.outs.map((o, k) => {
      if (o !== undefined) return o;
      const a = empty(call.types[ins.length + k], call.n, { device: call.device });
      made.push(a);
      return a;
    });
    try {
      if (call.n > 0) {
        // With a vector path: one vector per thread (the float4 saxpy moved 3035 GB/s on an H100 so,
        // 2832 with 4 blocks per SM). Without (no element-wise arrays): 4 blocks of 256 per SM, each
        // thread with UNROLL loads in flight (2720 GB/s, against 2631 with 8 blocks). Both from
        // bench/dev/kernels/elementwise_grid.ts, 2026-11-26; the grid-stride loops cover any length.
        const sms = deviceLimits(call.device).smCount;
        const grid =
          width > 1
            ? Math.max(1, Math.min(Math.ceil(call.n / (BLOCK * width)), 2 ** 31 - 1))
            : Math.max(1, Math.min(Math.ceil(call.n / BLOCK), sms * 4));
        kernel.launch(
          { grid, block: BLOCK, device: call.device },
          ...(args as (DeviceArray | number)[]),
          ...results,
          call.n,
        );
      }
    } catch (e) {
      for (const a of made) a.free();
      throw e;
    }
    return results.length === 1 ? results[0] : results;
  };

  return Object.assign(run, {
    kernelName: name,
    source: (...given: (DeviceArray | number | ElementwiseCallOptions)[]) => {
      const call = analyse([...given]);
      return generate(name, spec, ins, outs, call.types, call.arrays).source;
    },
    prepare,
  });
}
