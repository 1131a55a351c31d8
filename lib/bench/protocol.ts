// The order in which a benchmark runs its variants, and the statistics of a pair of them.
//
// On a power-capped GPU a run's time depends on what ran just before it: a heavy FP64 kernel runs
// faster after a light one than after another heavy one (GPU-FACTS.md, "Power cap and the order of
// runs"). A fixed round-robin order therefore favours whichever variant follows the lightest one.
// Here every variant is timed in a de Bruijn order: in each cycle of n² runs every variant runs n
// times and follows every variant, itself included, exactly once, so all variants see the same
// predecessors. Two variants (a pair) give the cycle A A B B: each is timed after itself and after
// the other, in both orders, and every cycle (a round) yields one ratio. Nothing here touches the
// GPU: the timing loop is harness.ts's timeBalanced.
/**
 * The de Bruijn sequence B(n, 2) over 0…n−1, as a cycle: every ordered pair (i, j), i = j included,
 * is adjacent exactly once, counting the pair that wraps from the last element to the first. It
 * starts with 0 and ends with n − 1 (the FKM construction from Lyndon words).
 */
export function deBruijnOrder(n: number): number[] {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`deBruijnOrder: n must be a positive integer, got ${n}`);
  if (n === 1) return [0];
  const a = new Array<number>(3).fill(0);
  const seq: number[] = [];
  const step = (t: number, p: number): void => {
    if (t > 2) {
      if (2 % p === 0) for (let j = 1; j <= p; j++) seq.push(a[j]);
      return;
    }
    a[t] = a[t - p];
    step(t + 1, p);
    for (let j = a[t - p] + 1; j < n; j++) {
      a[t] = j;
      step(t + 1, t);
    }
  };
  step(1, 1);
  return seq;
}

/** Milliseconds since the epoch with sub-millisecond resolution (the clock the GPU sampler uses). */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** One timed run: which variant, its GPU time, and the host's wall-clock window around it. */
export interface TimedRun {
  variant: number;
  ms: number;
  /** Host time (ms since the epoch) just before the start event was recorded. */
  start: number;
  /** Host time just after the stop event completed. */
  end: number;
}

/** Median, minimum and maximum of a non-empty list. */
export interface Spread {
  median: number;
  min: number;
  max: number;
}

/** The spread of a non-empty list of numbers. */
export function spreadOf(values: readonly number[]): Spread {
  if (values.length === 0) throw new RangeError('spread of an empty list');
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return { median: s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2, min: s[0], max: s[s.length - 1] };
}

/** A pair's ratio over its rounds: the median of the per-round ratios, their minimum and maximum. */
export interface PairRatio extends Spread {
  rounds: number;
}

/**
 * The rate of variant `a` over the rate of variant `b`, per round: each variant's rate in a round
 * is its work over the mean of its times in that round (`rateA`, `rateB` turn a time into a rate;
 * for the same work the ratio is B's time over A's). Returns the median and range over rounds.
 */
export function pairRatio(
  rounds: readonly (readonly (readonly number[])[])[],
  a: number,
  b: number,
  rateA: (ms: number) => number,
  rateB: (ms: number) => number,
): PairRatio {
  const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const per = rounds.map((r) => rateA(mean(r[a])) / rateB(mean(r[b])));
  return { ...spreadOf(per), rounds: per.length };
}
