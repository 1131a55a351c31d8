// Child process of test/kernels-nvrtc.test.ts, started with CUDA_KERNELS_NVRTC naming a file that does
// not exist (or on a machine without NVRTC): what nvrtcInfo() says and what compile() throws, as JSON.
import * as ck from '../../lib';

const seen: Record<string, unknown> = { info: ck.nvrtcInfo() };
try {
  ck.compile('extern "C" __global__ void k() {}');
  seen.compile = 'no error';
} catch (e) {
  seen.compile = {
    isCompileError: e instanceof ck.CompileError,
    name: (e as Error).name,
    code: (e as ck.CompileError).code,
    message: (e as Error).message,
  };
}
process.stdout.write(JSON.stringify(seen) + '\n');
