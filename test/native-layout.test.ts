// The native tree's one layout rule a compiler does not enforce: kernel files (.cu, .cuh) hold no
// N-API. The JS side (unwrapping arguments, throwing JS errors) lives in the .cc bindings, so a
// kernel file reads as CUDA alone and compiles without node-addon-api (docs/architecture.md).
import * as fs from 'node:fs';
import * as path from 'node:path';

const NATIVE = path.join(__dirname, '..', 'native');

function kernelFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return kernelFiles(p);
    return /\.(cu|cuh)$/.test(e.name) ? [p] : [];
  });
}

/** The lines of `source` that pull N-API in or use it, comments left out. */
function napiUses(source: string): string[] {
  return source
    .split('\n')
    .map((line) => line.replace(/\/\/.*$/, ''))
    .filter((line) => /#\s*include\s*[<"](napi\.h|errors\.h|args\.h|addon_data\.h)[>"]|\bNapi::/.test(line));
}

describe('native layout', () => {
  const files = kernelFiles(NATIVE);

  test('finds the kernel files', () => {
    // Every family has kernel files; an empty list would make the next test pass vacuously.
    expect(files.length).toBeGreaterThan(30);
  });

  test('no .cu or .cuh file includes N-API (or a header that does) or names Napi::', () => {
    const offenders = files
      .map((f) => ({ file: path.relative(NATIVE, f), lines: napiUses(fs.readFileSync(f, 'utf8')) }))
      .filter((o) => o.lines.length > 0);
    expect(offenders).toEqual([]);
  });

  test('the check sees an include and a use', () => {
    expect(napiUses('#include <napi.h>\nint x;')).toHaveLength(1);
    expect(napiUses('#include "errors.h"')).toHaveLength(1);
    expect(napiUses('  Napi::Value v;')).toHaveLength(1);
    expect(napiUses('// Napi:: in a comment\n#include "failure.h"')).toHaveLength(0);
  });
});
