// The bench command's options, checked before any GPU work: a bad value must fail at once, not
// after the first family has run for minutes (`--reps 0` used to pass and then fail on an empty
// median; `--sizes 65536` for copy filled a 64 GiB host array before anything said no).
import { COPY_PARTNER, type BenchContext, type BenchFamily, type PairClaim, type PairSpec } from './harness';

/** What `bench` accepts (lib/cli/bench.ts's BenchOptions). */
export interface BenchOptionValues {
  sizes?: number[];
  methods?: string[];
  reps: number;
  warmup: number;
  device: number;
  /** `--pair A,B` (a string, or the two names), or `--pair` alone (true): each family's claims. */
  pair?: boolean | string | readonly string[];
  /** Rounds of the pair protocol. */
  rounds?: number;
}

export const REPS_MAX = 10_000;
export const WARMUP_MAX = 1_000;
export const ROUNDS_MAX = 10_000;
export const ROUNDS_DEFAULT = 20;
/** The bound of `--sizes` for a family that declares none: sizes index int32 arrays. */
export const SIZE_MAX_DEFAULT = 2 ** 31 - 1;

/** `value` as an integer in [min, max], or a RangeError naming the option. */
function integer(option: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    throw new RangeError(`${option} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return value;
}

/**
 * A comma-separated list of sizes as the command line gives it: decimal digits only (no `0x10`,
 * `1e3`, signs or blanks), each a safe integer ≥ 1. Bounds per family are checked later.
 */
export function parseSizeList(text: string): number[] {
  return text.split(',').map((s) => {
    if (!/^[0-9]+$/.test(s)) throw new RangeError(`--sizes: ${JSON.stringify(s)} is not a positive decimal integer`);
    const n = Number(s);
    if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`--sizes: ${s} is not a positive integer`);
    return n;
  });
}

/** The pair named by `--pair A,B`, or undefined for `--pair` alone / no `--pair`. */
function pairNames(pair: BenchOptionValues['pair']): [string, string] | undefined {
  if (pair === undefined || pair === false || pair === true) return undefined;
  const names = typeof pair === 'string' ? pair.split(',') : [...pair];
  if (names.length !== 2 || names.some((n) => !/^[\w.-]+$/.test(n)))
    throw new RangeError(`--pair takes two method names, A,B; got ${JSON.stringify(pair)}`);
  if (names[0] === names[1]) throw new RangeError(`--pair: ${names[0]} against itself`);
  return [names[0], names[1]];
}

/** One family's part of a run: the context it gets (progress aside). */
export interface BenchJob {
  name: string;
  family: BenchFamily;
  ctx: Omit<BenchContext, 'progress'>;
}

/**
 * Checks every option against the named families and returns what each family will run, without
 * touching the GPU. `wanted` are registry names (already checked to exist); `named` is what the
 * caller asked for (sizes and methods belong to those, not to the `copy` reference prepended,
 * unless it is named).
 */
export function planJobs(
  families: Readonly<Record<string, BenchFamily>>,
  wanted: readonly string[],
  named: readonly string[],
  opts: BenchOptionValues & { quick: boolean },
): BenchJob[] {
  const reps = integer('--reps', opts.reps, 1, REPS_MAX);
  const warmup = integer('--warmup', opts.warmup, 0, WARMUP_MAX);
  const device = integer('--device', opts.device, 0, 1023);
  const rounds = integer('--rounds', opts.rounds ?? ROUNDS_DEFAULT, 1, ROUNDS_MAX);
  const sizes = opts.sizes;
  if (sizes !== undefined) {
    if (!Array.isArray(sizes) || sizes.length === 0) throw new RangeError('--sizes must list at least one size');
    for (const n of sizes) integer('--sizes', n, 1, SIZE_MAX_DEFAULT);
    const dup = sizes.find((n, i) => sizes.indexOf(n) !== i);
    if (dup !== undefined) throw new RangeError(`--sizes: ${dup} is given twice`);
  }
  const methods = opts.methods;
  if (methods !== undefined && (methods.length === 0 || methods.some((m) => !m)))
    throw new RangeError('--methods must list method names, A,B,…');
  const pair = pairNames(opts.pair);
  const pairing = pair !== undefined || opts.pair === true;
  if (pairing && methods) throw new RangeError('--pair and --methods: give one (the pair names its two methods)');

  const known = (family: BenchFamily, m: string) => {
    const names = family.methodNames?.();
    return !names || names.includes(m) || (!!family.methodsByPrefix && names.some((n) => n.startsWith(m)));
  };
  const base = { device, reps, warmup, quick: opts.quick };
  const jobs: BenchJob[] = [];
  for (const name of wanted) {
    const family = families[name];
    // `all` (or no name) gives the options to every family but the copy reference, unless named.
    const mine = named.includes(name) || ((named.length === 0 || named.includes('all')) && name !== 'copy');
    const limit = family.maxSize ?? { value: SIZE_MAX_DEFAULT, what: '' };
    if (mine && sizes) {
      const over = sizes.find((n) => n > limit.value);
      if (over !== undefined)
        throw new RangeError(
          `--sizes: ${over} is more than ${name} takes (at most ${limit.value}${limit.what ? ` ${limit.what}` : ''})`,
        );
    }
    if (mine && methods) {
      const unknown = methods.filter((m) => !known(family, m));
      if (unknown.length)
        throw new RangeError(
          `--methods: ${name} has no method ${unknown.join(', ')} (its methods: ${family.methodNames?.().join(', ')})`,
        );
    }
    if (!pairing || !mine) {
      jobs.push({
        name,
        family,
        ctx: { ...base, sizes: mine ? sizes : undefined, methods: mine ? methods : undefined },
      });
      continue;
    }
    if (!family.pairs)
      throw new RangeError(`--pair: ${name} has no pair protocol (families with one: ${withPairs(families)})`);
    const claims: PairClaim[] = pair
      ? [family.pairs.find((c) => c.a === pair[0] && c.b === pair[1]) ?? { a: pair[0], b: pair[1], sizes: [] }]
      : [...family.pairs];
    for (const claim of claims) {
      const exact = family.methodNames?.();
      for (const m of [claim.a, claim.b]) {
        const ok = m === COPY_PARTNER ? !!family.bandwidth : !exact || exact.includes(m);
        if (!ok)
          throw new RangeError(
            `--pair: ${name} has no method ${m} (its methods: ${exact?.join(', ')}${family.bandwidth ? `, and ${COPY_PARTNER}` : ''})`,
          );
      }
      // Sizes: the command line's, else the claim's, else the family's defaults.
      const useClaim = !sizes && claim.sizes.length + (claim.shapes?.length ?? 0) > 0;
      const spec: PairSpec = { a: claim.a, b: claim.b, rounds };
      jobs.push({
        name,
        family,
        ctx: {
          ...base,
          sizes: sizes ?? (useClaim ? claim.sizes : undefined),
          shapes: useClaim ? claim.shapes : undefined,
          methods: claim.b === COPY_PARTNER ? [claim.a] : [claim.a, claim.b],
          pair: spec,
        },
      });
    }
  }
  return jobs;
}

/** The registry's families that have a pair protocol. */
export function withPairs(families: Readonly<Record<string, BenchFamily>>): string {
  return Object.keys(families)
    .filter((k) => families[k].pairs)
    .join(', ');
}
