// The child of bench/dev/kernels/cupy_kernels.py (the CHILD string it runs in a new Python process for
// the disk-cache rows), run here with a host-only CuPy (test/helpers/fake-cupy) that logs what would
// reach the GPU. The row 'first call' must time the process's first kernel, as lib/bench/kernels-child.ts
// does for ours. Needs python3 with NumPy; skipped, saying so, without them.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const root = path.join(__dirname, '..');
const script = path.join(root, 'bench', 'dev', 'kernels', 'cupy_kernels.py');
const numpy = spawnSync('python3', ['-c', 'import numpy'], { encoding: 'utf8' });
const haveNumpy = numpy.status === 0;
const describeWithNumpy = haveNumpy ? describe : describe.skip;

/** The script's CHILD string, read without importing the script (which imports CuPy). */
function childSource(): string {
  const read = spawnSync(
    'python3',
    [
      '-c',
      'import ast, sys\n' +
        'tree = ast.parse(open(sys.argv[1]).read())\n' +
        'sys.stdout.write(next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)\n' +
        '                 and any(getattr(t, "id", None) == "CHILD" for t in n.targets)))',
      script,
    ],
    { encoding: 'utf8' },
  );
  if (read.status !== 0) throw new Error(`reading CHILD: ${read.stderr}`);
  return read.stdout;
}

const saxpy = (salt: string) =>
  `// ${salt}\nextern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {\n` +
  `  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = a * x[i] + y[i];\n}\n`;

describeWithNumpy(
  `cupy_kernels.py's disk-hit child${haveNumpy ? '' : ' [skipped: python3 with NumPy not found]'}`,
  () => {
    test('times the first kernel of the process, then a second one, and checks both', () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ck-fake-cupy-'));
      try {
        const log = path.join(dir, 'log');
        const child = spawnSync('python3', ['-c', childSource()], {
          input: JSON.stringify([saxpy('hit first'), saxpy('hit second')]),
          encoding: 'utf8',
          env: {
            ...process.env,
            PYTHONPATH: path.join(__dirname, 'helpers', 'fake-cupy'),
            PYTHONDONTWRITEBYTECODE: '1', // no __pycache__ in the checkout
            FAKE_CUPY_LOG: log,
          },
        });
        expect(child.stderr).toBe('');
        expect(child.status).toBe(0);
        const got = JSON.parse(child.stdout.trim().split('\n').pop()!);
        for (const which of ['first', 'second']) {
          expect(got[which]).toEqual({ us: expect.any(Number), ok: true });
        }
        // No kernel before the first timed one: a CuPy kernel run earlier (a copy on the device, say)
        // would load CuPy's module machinery first and make 'first call' a second call.
        const kernels = fs
          .readFileSync(log, 'utf8')
          .split('\n')
          .filter((l) => l.startsWith('kernel'));
        expect(kernels).toEqual(['kernel saxpy // hit first', 'kernel saxpy // hit second']);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);
