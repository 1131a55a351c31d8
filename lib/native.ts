// The one place that touches the compiled addon.
import * as path from 'node:path';

import type { NativeBinding } from '../binding';
import { CudaError } from './errors';

const packageRoot = path.join(__dirname, '..');

function load(): NativeBinding {
  let binding: NativeBinding;
  try {
    // A local build (build/Release) wins over the shipped prebuilds/<platform>-<arch>/.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    binding = require('node-gyp-build')(packageRoot) as NativeBinding;
  } catch (cause) {
    const message =
      `cuda-kernels: no native binary loads for ${process.platform}-${process.arch} ` +
      `(Node ${process.versions.node}, N-API ${process.versions.napi}). ` +
      'Build it from source with the CUDA toolkit: `npx cuda-kernels build` ' +
      '(in a clone of the repository: `npm run build:native`). Cause: ' +
      (cause instanceof Error ? cause.message : String(cause));
    throw new Error(message, { cause });
  }
  binding.setErrorClass(CudaError);
  return binding;
}

/** The raw native module. */
export const native: NativeBinding = load();
