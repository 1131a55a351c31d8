// The PTX that nvcc makes of elementwise()'s generated sources (the compiler NVRTC uses): which global
// loads and stores the vector path ends up with. Needs nvcc, not a GPU (skipped, saying why, without it).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { Dtype } from '../lib/array';
import { elementwiseSource, type ElementwiseSpec } from '../lib/kernels/elementwise';
import { describeNeeding } from './helpers/gpu';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const nvcc: string | undefined = require('../scripts/build.js').findNvcc();
const describeNvcc = (name: string, fn: () => void) =>
  describeNeeding(name, fn, nvcc ? null : 'no nvcc ($CUDA_PATH/bin, PATH)');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-ptx-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The PTX of the instance of `spec` for `types` (inputs then outputs), `arrays` telling which inputs are arrays. */
function ptx(spec: ElementwiseSpec, types: Dtype[], arrays: boolean[]): string {
  const b = elementwiseSource(spec, types, arrays);
  const cu = path.join(dir, b.program);
  fs.writeFileSync(cu, b.source);
  execFileSync(nvcc!, ['-std=c++17', '-ptx', '-arch=sm_90', cu, '-o', `${cu}.ptx`], { stdio: 'pipe' });
  return fs.readFileSync(`${cu}.ptx`, 'utf8');
}

const count = (text: string, op: string) => text.split('\n').filter((l) => l.trim().startsWith(`${op} `)).length;

describeNvcc('elementwise PTX: vector accesses', () => {
  test.each([
    // z is a reference into its array; told the alignment, the compiler merges the four elements'
    // stores into one vector store, and for z += … their loads into one vector load.
    ['saxpy', 'z = a * x + y', 'float32', 'v4.f32', 2],
    ['axpy64', 'z = a * x + y', 'float64', 'v2.f64', 2],
    ['accumulate', 'z += a * x + y', 'float32', 'v4.f32', 3],
  ] as const)('%s: %j on %s, %s vectors: %d loads per store', (name, body, dtype, vec, loads) => {
    const text = ptx(
      { in: 'T x, T y, T a', out: 'T z', body, name },
      [dtype, dtype, dtype, dtype],
      [true, true, false],
    );
    const stores = count(text, `st.global.${vec}`);
    expect(stores).toBeGreaterThan(0);
    expect(count(text, `ld.global.${vec}`)).toBe(loads * stores);
  });
});

describeNvcc('elementwise PTX: outputs', () => {
  // z is the element in the array in both paths, so its address can go to intrinsics that need global
  // memory (a copy in registers goes to local memory, which st.global.cs and ld.global.nc do not reach).
  test.each(['__stcs(&z, a * x + y)', '__stwt(&z, x)', 'z = __ldg(&z) + x', 'atomicAdd(&z, a * x + y)'])(
    '%j: z is addressed in global memory, nothing is kept in local memory',
    (body) => {
      const text = ptx({ in: 'T x, T y, T a', out: 'T z', body, name: 'address' }, Array(4).fill('float32'), [
        true,
        true,
        false,
      ]);
      expect(text).not.toMatch(/\.local\b|local_depot/);
    },
  );
});
