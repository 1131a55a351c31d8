// The PTX that nvcc makes of elementwise()'s generated sources (the compiler NVRTC uses): which global
// loads and stores the vector path ends up with. Needs nvcc, not a GPU (skipped, saying why, without it).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { Dtype } from '../lib/array';
import { elementwiseSource, type ElementwiseSpec } from '../lib/kernels/elementwise';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const nvcc: string | undefined = require('../scripts/build.js').findNvcc();
const describeNvcc = nvcc
  ? describe
  : (name: string, fn: () => void) => describe.skip(`${name} [skipped: no nvcc ($CUDA_PATH/bin, PATH)]`, fn);

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

describeNvcc('elementwise PTX', () => {
  test.each([
    // Two inputs read, z only assigned: its load is dropped, so each vector store goes with two loads.
    ['saxpy', 'z = a * x + y', 'float32', 'v4.f32', 2],
    ['axpy64', 'z = a * x + y', 'float64', 'v2.f64', 2],
    // z read or maybe kept: loaded too.
    ['accumulate', 'z += a * x + y', 'float32', 'v4.f32', 3],
    ['keep', 'if (x > 0) z = a * x + y', 'float32', 'v4.f32', 3],
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
