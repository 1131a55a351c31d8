// The one place that touches the compiled addon: loads the binary lib/loader.ts finds (with
// node-gyp-build: a local build, else a platform package's prebuild), and remembers which one it
// took and why (runtimeInfo().binary, `npx cuda-kernels info`).
import * as path from 'node:path';

import type { NativeBinding } from '../binding';
import { CudaError } from './errors';
import { binaryCandidates, loadBinary, type BinaryInfo } from './loader';

const loaded = loadBinary(binaryCandidates(path.join(__dirname, '..')));
loaded.binding.setErrorClass(CudaError);

/** The raw native module. */
export const native: NativeBinding = loaded.binding;

/** Which binary this process loaded, and why. */
export const binaryInfo: BinaryInfo = loaded.info;
