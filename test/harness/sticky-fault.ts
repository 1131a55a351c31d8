// Child process of test/faults.test.ts: forces a sticky kernel fault (an illegal address), which
// loses the CUDA context for the rest of the process, and prints what the library reported. It
// exits with live device arrays on purpose: their finalizers must cope with the lost context.
import * as ck from '../../lib';
import { native } from '../../lib/native';

const live = ck.upload(new Float64Array([1, 2, 3]));
const seen: Record<string, unknown> = { before: Array.from(live.toHostSync()) };
const describe = (e: unknown) => ({
  name: (e as Error).name,
  isCudaError: e instanceof ck.CudaError,
  code: (e as ck.CudaError).code,
  message: (e as Error).message,
});
try {
  native.debugFault!(1);
  seen.fault = 'no error';
} catch (e) {
  seen.fault = describe(e);
}
try {
  live.toHostSync();
  seen.after = 'no error';
} catch (e) {
  seen.after = describe(e);
}
try {
  ck.empty('float32', 16);
  seen.alloc = 'no error';
} catch (e) {
  seen.alloc = describe(e);
}
process.stdout.write(JSON.stringify(seen) + '\n');
