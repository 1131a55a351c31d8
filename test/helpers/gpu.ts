// The one place suites are skipped (GPU suites, and suites that need a tool such as nvcc): without
// what they need they are registered as skipped, with the reason in their title, so `npm test` lists
// them and says why. With CK_REQUIRE_GPU=1 (the GPU runner sets it) having no device at all fails
// instead of skipping; a suite that needs more devices than the machine has still skips, with the
// count in its title.
import { deviceCount, runtimeInfo } from '../../lib';

export const gpuCount = deviceCount();

function register(name: string, fn: () => void, run: boolean, reason: string): void {
  if (run) {
    describe(name, fn);
  } else if (process.env.CK_REQUIRE_GPU && gpuCount === 0) {
    // The GPU runner's machine must have a GPU; suites that need more GPUs than it has still skip.
    describe(name, () => {
      test('has the GPU it needs', () => {
        throw new Error(`CK_REQUIRE_GPU is set but ${reason}`);
      });
    });
  } else {
    const skipped = describe.skip;
    skipped(`${name} [skipped: ${reason}]`, fn);
  }
}

/** A suite that needs at least `minDevices` CUDA devices. */
export function describeGpu(name: string, fn: () => void, minDevices = 1): void {
  const reason =
    gpuCount === 0 ? `no GPU — ${runtimeInfo().noDeviceReason}` : `needs ${minDevices} GPUs, found ${gpuCount}`;
  register(name, fn, gpuCount >= minDevices, reason);
}

/**
 * A suite that needs something other than a GPU (a compiler, a tool): skipped where `missing` is a
 * reason (with it in the title, as the GPU suites are), run where it is null.
 */
export function describeNeeding(name: string, fn: () => void, missing: string | null): void {
  const skipped = describe.skip;
  if (missing === null) describe(name, fn);
  else skipped(`${name} [skipped: ${missing}]`, fn);
}

/** A suite about behaviour without any GPU (skipped where a device is present). */
export function describeNoGpu(name: string, fn: () => void): void {
  const skipped = describe.skip;
  if (gpuCount === 0) describe(name, fn);
  else skipped(`${name} [skipped: a GPU is present]`, fn);
}
