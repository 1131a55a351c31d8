// Child process of test/kernels-cache.test.ts: a new process's lookups in a disk cache (the fake compiler,
// the package's native reader), then a natural exit, so what the cache left pending runs or not as it
// would in a user's short script. argv: the folder as given (it may be relative to the cwd), the bound
// in bytes, then one JSON request per lookup. Prints where each came from as one JSON line.
import { type CompileRequest, KernelCache } from '../../lib/kernels/cache';
import { native } from '../../lib/native';
import { fakeCompiler } from '../helpers/fake-compiler';

const [dir, maxBytes, ...requests] = process.argv.slice(2);
const cache = new KernelCache({
  compiler: fakeCompiler(),
  dir,
  maxBytes: Number(maxBytes),
  packageVersion: '1.0.0',
  readEntry: native.kernelsReadEntry,
});
const from = requests.map((r) => cache.get(JSON.parse(r) as CompileRequest).from);
process.stdout.write(JSON.stringify(from) + '\n');
