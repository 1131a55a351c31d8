import * as ck from '../lib';
import { expectThrows } from './helpers/errors';
import { describeGpu } from './helpers/gpu';

describeGpu('CUDA-event timing', () => {
  test('timed() measures a copy of known size at a sane bandwidth', () => {
    const n = 64 << 20; // 256 MiB of float32
    using src = ck.full('float32', n, 1);
    using dst = ck.empty('float32', n);
    ck.copyDevice(dst, src);
    const { ms, result } = ck.timed(() => {
      ck.copyDevice(dst, src);
      return 'done';
    });
    expect(result).toBe('done');
    const gbps = (2 * n * 4) / ms / 1e6;
    // Any CUDA GPU of the last decade moves between 50 GB/s and 20 TB/s.
    expect(gbps).toBeGreaterThan(50);
    expect(gbps).toBeLessThan(20_000);
  });

  test('EventTimer grows with the work between its events', () => {
    using src = ck.full('float32', 16 << 20, 1);
    using dst = ck.empty('float32', 16 << 20);
    const t = new ck.EventTimer();
    t.start();
    ck.copyDevice(dst, src);
    t.stop();
    const one = t.elapsedMs();
    t.start();
    for (let i = 0; i < 10; i++) ck.copyDevice(dst, src);
    t.stop();
    const ten = t.elapsedMs();
    expect(one).toBeGreaterThan(0);
    expect(ten).toBeGreaterThan(3 * one);
  });

  test('elapsedMs before stop is an error, and timed refuses async functions', () => {
    const t = new ck.EventTimer();
    expect(() => t.elapsedMs()).toThrow(ck.CudaError);
    expect(() => ck.timed(async () => 1)).toThrow(/must be synchronous/);
  });

  test('free() destroys the events now (idempotent); using frees at the end of the block', () => {
    const t = new ck.EventTimer();
    t.start().stop();
    expect(t.elapsedMs()).toBeGreaterThanOrEqual(0);
    t.free();
    t.free();
    expect(t.freed).toBe(true);
    // The native events are gone, not just the JS flag: the handle itself refuses every use.
    expectThrows(() => t.start(), 'TypeError', /timer has been freed/);
    expectThrows(() => t.elapsedMs(), 'TypeError', /timer has been freed/);
    let kept: ck.EventTimer | undefined;
    {
      using u = new ck.EventTimer();
      kept = u;
      expect(u.freed).toBe(false);
    }
    expect(kept.freed).toBe(true);
  });
});
