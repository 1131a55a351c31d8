// A TypeScript project that depends on cuda-kernels resolves both entry points, `cuda-kernels` and
// `cuda-kernels/cpu`, whatever its moduleResolution: node16 and bundler read package.json
// "exports"; node10 (TypeScript's old `node`) ignores "exports" and finds the subpath through
// "typesVersions" only. The package's declarations are emitted here from lib/ (not taken from a
// possibly stale dist/), beside package.json and binding.d.ts as the tarball lays them out.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import * as ts from 'typescript';

const root = path.join(__dirname, '..');
let dir: string;
let pkgDir: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-consumer-'));
  pkgDir = path.join(dir, 'node_modules', 'cuda-kernels');
  fs.mkdirSync(pkgDir, { recursive: true });
  fs.copyFileSync(path.join(root, 'binding.d.ts'), path.join(pkgDir, 'binding.d.ts'));
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(root, 'tsconfig.build.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  )!;
  const options = {
    ...config.options,
    outDir: path.join(pkgDir, 'dist'),
    emitDeclarationOnly: true,
    declarationMap: false,
    sourceMap: false,
  };
  const emitted = ts.createProgram(config.fileNames, options).emit();
  expect(emitted.diagnostics).toEqual([]);
  fs.writeFileSync(path.join(dir, 'package.json'), '{"name":"consumer","private":true}');
  fs.writeFileSync(
    path.join(dir, 'index.ts'),
    [
      "import { deviceCount, type DeviceArray } from 'cuda-kernels';",
      "import { atA, apsp, INF } from 'cuda-kernels/cpu';",
      'const n: number = deviceCount();',
      'const c: Float64Array = atA(new Float64Array(4), 2, 2);',
      'const w = new Int32Array(4).fill(INF);',
      'const d: Int32Array = apsp(w, 2);',
      'export const all: [number, Float64Array, Int32Array, DeviceArray<"float64"> | undefined] = [n, c, d, undefined];',
      '',
    ].join('\n'),
  );
}, 120000);

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The consumer's errors under a moduleResolution, with the package.json given. */
function compile(moduleResolution: string, pkg: object): string[] {
  fs.writeFileSync(path.join(pkgDir, 'package.json'), JSON.stringify(pkg));
  const module = moduleResolution === 'node10' ? 'commonjs' : moduleResolution === 'bundler' ? 'esnext' : 'node16';
  const { options, errors } = ts.convertCompilerOptionsFromJson(
    {
      moduleResolution,
      module,
      target: 'es2022',
      strict: true,
      noEmit: true,
      // What the README asks of a consumer: TypeScript's `using` (esnext.disposable), Node's types.
      lib: ['es2022', 'esnext.disposable'],
      types: ['node'],
      typeRoots: [path.join(root, 'node_modules', '@types')],
    },
    dir,
  );
  expect(errors).toEqual([]);
  const program = ts.createProgram([path.join(dir, 'index.ts')], options);
  return ts
    .getPreEmitDiagnostics(program)
    .map(
      (d) => `${d.file ? path.basename(d.file.fileName) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`,
    );
}

const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

describe('a TypeScript consumer', () => {
  test.each(['node10', 'node16', 'bundler'])('resolves cuda-kernels and cuda-kernels/cpu with %s', (resolution) => {
    expect(compile(resolution, pkg)).toEqual([]);
  });

  test('without typesVersions, node10 cannot resolve cuda-kernels/cpu (what the field is for)', () => {
    const { typesVersions, ...without } = pkg;
    expect(typesVersions).toEqual({ '*': { cpu: ['./dist/cpu/index.d.ts'] } });
    expect(compile('node10', without).join('\n')).toMatch(/Cannot find module 'cuda-kernels\/cpu'/);
  });
});
