// The command line as users run it (a child process running lib/cli/main.ts): --version, help,
// file errors, info's exit code, report's output folder. Runs without a native binary: where a
// case needs none, CUDA_KERNELS_BINARY points at a file that does not exist, so the loader finds
// nothing, whatever is built here.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { checkFiles } from '../lib/cli/files';
import { missingPackages, requirePackages } from '../lib/cli/optional';
import { makeTable } from '../lib/cli/table';
import { GraphFileError } from '../lib/io/graph';

const root = path.join(__dirname, '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { binaryStatus } = require('./helpers/native-suites.js');
const hasBinary: boolean = binaryStatus().ok;

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-cli-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function cli(args: string[], env: NodeJS.ProcessEnv = {}, user: { uid?: number; gid?: number } = {}) {
  const r = spawnSync(process.execPath, ['-r', './test/harness/ts-register.js', 'lib/cli/main.ts', ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    ...user,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
const noBinary = { CUDA_KERNELS_BINARY: '/nonexistent/cuda_kernels.node' };

// Root may write any file, so the permission cases run the CLI as nobody (uid 65534), who must be
// able to read this tree: a clone inside a 0700 folder (root's home, a mktemp -d) is not. There they
// are reported skipped, not passed; CI's fresh copies make their folders readable.
const asRoot = process.getuid?.() === 0;
const nobodyReadsTree =
  !asRoot ||
  spawnSync(
    process.execPath,
    ['-e', 'require("fs").accessSync(process.argv[1], 4)', path.join(root, 'lib/cli/main.ts')],
    {
      uid: 65534,
      gid: 65534,
    },
  ).status === 0;
const permissionTest = nobodyReadsTree ? test : test.skip;
// Root may write any file: the permission cases then run the command as nobody.
const user = asRoot ? { uid: 65534, gid: 65534 } : {};

if (!nobodyReadsTree)
  console.warn(
    `cli.test.ts: the permission cases are skipped: uid 65534 cannot read ${root} (a folder above it is not o+x)`,
  );

describe('cuda-kernels --version and help', () => {
  test('--version prints the package version', () => {
    const r = cli(['--version'], noBinary);
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  test('bench --help lists the families', () => {
    const r = cli(['bench', '--help']);
    expect(r.status).toBe(0);
    if (hasBinary) {
      expect(r.stdout).toMatch(/Families \("all" runs every one/);
      for (const family of ['ata', 'gemm', 'stencil', 'scan', 'mlp', 'apsp', 'copy']) {
        expect(r.stdout).toMatch(new RegExp(`^  ${family}\\s+\\S`, 'm'));
      }
    } else {
      expect(r.stdout).toMatch(/Families: not listed, no native binary loads/);
    }
  });
});

/** A fresh folder in `dir` with a two-vertex graph and an existing output of mode `outputMode`. */
function graphAndOutput(prefix: string, outputMode: number) {
  fs.chmodSync(dir, 0o755); // mkdtemp made it 0700: nobody could not reach the files in it
  const sub = fs.mkdtempSync(path.join(dir, prefix));
  fs.chmodSync(sub, 0o777);
  const graph = path.join(sub, 'g.txt');
  fs.writeFileSync(graph, '2 1\n0 1 3\n');
  fs.chmodSync(graph, 0o644);
  const output = path.join(sub, 'd.txt');
  fs.writeFileSync(output, 'old\n');
  fs.chmodSync(output, outputMode);
  return { sub, graph, output };
}

describe('apsp file errors are file errors', () => {
  test('a missing input file, whether or not there is a GPU or a binary', () => {
    for (const env of [{}, noBinary]) {
      const r = cli(['apsp', path.join(dir, 'missing.txt'), path.join(dir, 'out.txt')], env);
      expect(r.status).toBe(1);
      expect(r.stderr.trim()).toBe(
        `cuda-kernels: GraphFileError: ${path.join(dir, 'missing.txt')}: cannot read the input graph: no such file`,
      );
    }
  });

  permissionTest('a read-only output file is refused before the graph is read or any GPU work', () => {
    const { graph, output } = graphAndOutput('ro-', 0o444);
    for (const extra of [[], ['--cpu']]) {
      const r = cli(['apsp', graph, output, ...extra], noBinary, user);
      expect(r.stderr.trim()).toBe(
        `cuda-kernels: GraphFileError: ${output}: cannot write the distance matrix over the existing file: permission denied`,
      );
      expect(r.status).toBe(1);
    }
    expect(fs.readFileSync(output, 'utf8')).toBe('old\n');
    if (!asRoot) expect(() => checkFiles(graph, output)).toThrow(/permission denied/);
  });

  // The folder was checked for write access even when the output existed: an existing file needs
  // none (it is truncated and written in place), so /dev/null, or a writable file in a read-only
  // folder, was refused ("cannot write the distance matrix into /dev: permission denied").
  permissionTest(
    'an existing writable output is written whatever its folder allows (/dev/null, a read-only folder)',
    () => {
      const { sub, graph, output } = graphAndOutput('rodir-', 0o666);
      fs.chmodSync(sub, 0o555); // no new files here, for anyone but root
      try {
        const r = cli(['apsp', graph, output, '--cpu', '--no-progress'], noBinary, user);
        expect(r.stderr).toBe('');
        expect(r.status).toBe(0);
        expect(fs.readFileSync(output, 'utf8')).toBe('0 3\nINF 0\n');
        const toNull = cli(['apsp', graph, '/dev/null', '--cpu', '--no-progress'], noBinary, user);
        expect(toNull.stderr).toBe('');
        expect(toNull.status).toBe(0);
      } finally {
        fs.chmodSync(sub, 0o777);
      }
      if (!asRoot) expect(() => checkFiles(graph, output)).not.toThrow();
    },
  );

  test('apsp --cpu runs without a binary or a GPU and writes the distances', () => {
    const graph = path.join(dir, 'cpu.gr');
    fs.writeFileSync(graph, 'c three vertices\np sp 3 3\na 1 2 4\na 2 3 5\na 1 3 20\n');
    const output = path.join(dir, 'cpu-d.txt');
    const r = cli(['apsp', graph, output, '--cpu', '--no-progress'], noBinary);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^apsp: n = 3, the CPU reference \(cpu.apsp, Floyd–Warshall, 3 rounds\): /);
    expect(fs.readFileSync(output, 'utf8')).toBe('0 4 9\nINF 0 5\nINF INF 0\n');
    const both = cli(['apsp', graph, output, '--cpu', '--distributed'], noBinary);
    expect(both.status).toBe(1);
    expect(both.stderr.trim()).toBe('cuda-kernels: RangeError: --cpu and --distributed do not go together');
  });

  test('a malformed graph is reported as such even without a binary', () => {
    const graph = path.join(dir, 'bad.txt');
    fs.writeFileSync(graph, '3 1\n0 7 1\n');
    const r = cli(['apsp', graph, path.join(dir, 'o.txt')], noBinary);
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe(`cuda-kernels: GraphFileError: ${graph}:2: dst vertex out of range: 7 (expected 0…2)`);
  });

  test('checkFiles: input not a file, output folder missing or a folder', () => {
    const graph = path.join(dir, 'g.txt');
    fs.writeFileSync(graph, '1 0\n');
    expect(() => checkFiles(graph, path.join(dir, 'd.txt'))).not.toThrow();
    expect(() => checkFiles(dir, path.join(dir, 'd.txt'))).toThrow(/cannot read the input graph: not a file/);
    expect(() => checkFiles(graph, path.join(dir, 'no', 'such', 'd.txt'))).toThrow(GraphFileError);
    expect(() => checkFiles(graph, path.join(dir, 'no', 'd.txt'))).toThrow(
      /cannot write the distance matrix into .*: no such file/,
    );
    expect(() => checkFiles(graph, dir)).toThrow(/it is a folder/);
  });
});

describe('info', () => {
  test('no binary: says what was tried and what to do, exits 0 (1 with --require-gpu)', () => {
    const r = cli(['info'], noBinary);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^cuda-kernels ${pkg.version.replace(/\./g, '\\.')} \\(Node `));
    expect(r.stdout).toContain('CUDA_KERNELS_BINARY (/nonexistent/cuda_kernels.node): no such file');
    expect(r.stdout).toContain('Possible solutions:');
    expect(cli(['info', '--require-gpu'], noBinary).status).toBe(1);
  });

  (hasBinary ? test : test.skip)(
    'with a binary: which one and why, how it was built; exit 1 only without a GPU and with --require-gpu',
    () => {
      const r = cli(['info', '--require-gpu']);
      expect(r.stdout).toMatch(/^binary: (local build|@cuda-kernels\/\S+) \(/m);
      expect(r.stdout).toMatch(/^ {2}why: /m);
      expect(r.stdout).toMatch(/^ {2}built: CUDA \d+\.\d; architectures /m);
      const noGpu = /^No GPU: /m.test(r.stdout);
      expect(r.status).toBe(noGpu ? 1 : 0);
      expect(cli(['info']).status).toBe(0);
    },
  );
});

describe('report', () => {
  const result = {
    device: { name: 'Test GPU' },
    createdAt: '2026-01-01T00:00:00Z',
    commit: 'abc',
    rows: [{ op: 'copy', method: 'd2d', size: '1024', ms: 1, rate: 100, unit: 'GB/s', reps: 3, check: 'ok' }],
  };

  test('without result files it writes nothing and says where it looked', () => {
    const empty = path.join(dir, 'empty-results');
    fs.mkdirSync(empty);
    const r = cli(['report', '--results', empty, '--no-charts'], noBinary);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/no result files .* in .*empty-results: nothing to report/);
    expect(fs.readdirSync(empty)).toEqual([]);
  });

  test('--out puts README.md there, and nothing into the results folder or the current one', () => {
    const results = path.join(dir, 'results');
    const out = path.join(dir, 'report-out');
    fs.mkdirSync(results);
    fs.writeFileSync(path.join(results, 'test-gpu.json'), JSON.stringify(result));
    const cwd = path.join(dir, 'cwd');
    fs.mkdirSync(cwd);
    const r = spawnSync(
      process.execPath,
      [
        '-r',
        path.join(root, 'test/harness/ts-register.js'),
        path.join(root, 'lib/cli/main.ts'),
        'report',
        '--results',
        results,
        '--out',
        out,
        '--no-charts',
      ],
      { cwd, encoding: 'utf8' },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(fs.readFileSync(path.join(out, 'README.md'), 'utf8')).toMatch(/## Test GPU/);
    expect(fs.readdirSync(results)).toEqual(['test-gpu.json']);
    expect(fs.readdirSync(cwd)).toEqual([]);
  });

  test("keeps the replaced README's hand-written summary; a table it cannot fill stops it before writing", () => {
    const results = path.join(dir, 'results-notes');
    fs.mkdirSync(results);
    fs.writeFileSync(path.join(results, 'test-gpu.json'), JSON.stringify(result));
    const notes = '<!-- notes -->\n## Summary\n\nWritten by hand.\n<!-- /notes -->';
    fs.writeFileSync(path.join(results, 'README.md'), `# old page\n\n${notes}\n\n## Old GPU\n`);
    expect(cli(['report', '--results', results, '--no-charts'], noBinary).status).toBe(0);
    const page = fs.readFileSync(path.join(results, 'README.md'), 'utf8');
    expect(page).toMatch(new RegExp(`\\n${notes}\\n\\n## Test GPU\\n`));
    expect(page).not.toMatch(/Old GPU/);

    // A summary table of a GPU with no result file here: an error, and the page is left as it was.
    const withTable = page.replace('Written by hand.', '<!-- bench-table gemm-h100 -->\n<!-- /bench-table -->');
    fs.writeFileSync(path.join(results, 'README.md'), withTable);
    const r = cli(['report', '--results', results, '--no-charts'], noBinary);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/bench-table gemm-h100: no result file nvidia-h100-80gb-hbm3\.json/);
    expect(fs.readFileSync(path.join(results, 'README.md'), 'utf8')).toBe(withTable);
  });
});

describe('optional packages', () => {
  test('a missing one is named with the install command and the alternative', () => {
    expect(missingPackages(['commander', 'no-such-package-ck'])).toEqual(['no-such-package-ck']);
    expect(() => requirePackages(['commander'], 'x')).not.toThrow();
    expect(() => requirePackages(['no-such-package-ck'], 'drawing the charts', 'pass --no-charts')).toThrow(
      'drawing the charts needs the optional package no-such-package-ck, not installed with cuda-kernels. ' +
        'Install: npm install --save-dev no-such-package-ck; or pass --no-charts',
    );
  });

  test('the chart packages are optional peers (and dev dependencies here)', () => {
    for (const name of ['vega', 'vega-lite', '@resvg/resvg-js']) {
      expect(pkg.peerDependencies[name]).toBeDefined();
      expect(pkg.peerDependenciesMeta[name]).toEqual({ optional: true });
      expect(pkg.devDependencies[name]).toBe(pkg.peerDependencies[name]);
      expect(pkg.dependencies[name]).toBeUndefined();
    }
  });
});

describe('tables', () => {
  test('columns are as wide as their widest cell, in display width', () => {
    const t = makeTable(['method', 'ms']);
    t.push(['fast', '1.5'], ['‖C−ref‖', '12.25']);
    const lines = t.toString().split('\n');
    expect(lines).toEqual([
      '┌─────────┬───────┐',
      '│ method  │ ms    │',
      '├─────────┼───────┤',
      '│ fast    │ 1.5   │',
      '│ ‖C−ref‖ │ 12.25 │',
      '└─────────┴───────┘',
    ]);
  });
});
