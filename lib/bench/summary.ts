// What the bench table, the charts and the report derive from result rows: size labels parsed into
// numbers, the dtype suffix of method names, and the ratios to the reference method and to `copy`.
// Nothing here touches the GPU. A ratio the committed pages quote comes from a pair row (the pair
// protocol, harness.ts's benchPair), never from two medians of a batch.
import type { PairRatio } from './protocol';
import { rowFamily, type BenchRow } from './results';

/** What the tables and charts need to know about a family (the optional fields of BenchFamily). */
export interface FamilyMeta {
  op: string;
  description?: string;
  reference?: string;
  bandwidth?: boolean;
}

const DTYPE_SUFFIX = /^(.+)-(float32|float64|int32|uint32)$/;

/** `fast-int32` -> `{ base: 'fast', dtype: 'int32' }`; `cublas-syrk` -> `{ base: 'cublas-syrk' }`. */
export function splitMethod(method: string): { base: string; dtype?: string } {
  const m = DTYPE_SUFFIX.exec(method);
  return m ? { base: m[1], dtype: m[2] } : { base: method };
}

/** The reference method for `method` in a family: the family's `reference`, with the method's dtype suffix. */
export function referenceFor(meta: FamilyMeta | undefined, method: string): string | undefined {
  if (!meta?.reference) return undefined;
  const { dtype } = splitMethod(method);
  return dtype ? `${meta.reference}-${dtype}` : meta.reference;
}

const BYTE_UNITS: Record<string, number> = { B: 1, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40 };

/** The dimensions in a size label: `8000x8000` -> [8000, 8000], `268435456` -> [268435456]; undefined if not numeric. */
export function sizeDims(label: string): number[] | undefined {
  if (!/^\d+(x\d+)*$/.test(label)) return undefined;
  return label.split('x').map(Number);
}

/**
 * A number to place a size label on an axis: the product of its dimensions (the elements of an
 * `RxC` matrix, m·k·n for `MxKxN`, n for `N`), or the bytes of a `16MiB` label. NaN when the label
 * has neither form (a layer list, say): such rows are tabulated but not charted.
 */
export function sizeValue(label: string): number {
  const bytes = /^(\d+(?:\.\d+)?)(B|KiB|MiB|GiB|TiB)$/.exec(label);
  if (bytes) return Number(bytes[1]) * BYTE_UNITS[bytes[2]];
  const dims = sizeDims(label);
  return dims ? dims.reduce((a, b) => a * b, 1) : NaN;
}

/** Whether every dimension of a size label is the same (`n`, `nxn`, `nxnxn`, and byte sizes). */
export function isSquare(label: string): boolean {
  const dims = sizeDims(label);
  return !dims || dims.every((d) => d === dims[0]);
}

/**
 * Size labels in increasing order of {@link sizeValue}, squares first (AᵀA's tall shapes after its
 * 2000²…18000²); labels with no numeric value keep their order, last.
 */
export function sortSizes(labels: Iterable<string>): string[] {
  const unique = [...new Set(labels)];
  const key = (label: string) => {
    const v = sizeValue(label);
    return Number.isNaN(v) ? [2, 0] : [isSquare(label) ? 0 : 1, v];
  };
  return unique
    .map((label, i) => ({ label, i, k: key(label) }))
    .sort((a, b) => a.k[0] - b.k[0] || a.k[1] - b.k[1] || a.i - b.i)
    .map((x) => x.label);
}

/**
 * The copy bandwidth a run's bandwidth figures are compared with: the rate of its largest checked
 * `copy` row (large copies run at the sustained rate; small ones pay launch latency).
 */
export function copyReference(rows: readonly BenchRow[]): BenchRow | undefined {
  let best: BenchRow | undefined;
  for (const r of rows) {
    if (r.op !== 'copy' || r.check !== 'ok' || r.protocol === 'pair') continue;
    if (!best || sizeValue(r.size) > sizeValue(best.size)) best = r;
  }
  return best;
}

/**
 * The pair protocol's ratio of `method`'s rate over `versus`'s at `size` in `rows` (op `op`, and
 * family `family` where given): from the pair row of `method` against `versus`, or from the one of
 * `versus` against `method`, inverted. Undefined where neither was measured.
 */
export function pairRatioOf(
  rows: readonly BenchRow[],
  where: { op: string; method: string; versus: string; size: string; family?: string },
): PairRatio | undefined {
  const find = (a: string, b: string) =>
    rows.find(
      (r) =>
        r.protocol === 'pair' &&
        r.ratio &&
        r.op === where.op &&
        r.size === where.size &&
        r.method === a &&
        r.versus?.method === b &&
        (where.family === undefined || rowFamily(r) === where.family),
    )?.ratio;
  const direct = find(where.method, where.versus);
  if (direct) return direct;
  const reverse = find(where.versus, where.method);
  return reverse && { median: 1 / reverse.median, min: 1 / reverse.max, max: 1 / reverse.min, rounds: reverse.rounds };
}

/**
 * A result row with its ratios to the family's reference method and to copy at the same size: from
 * the pair protocol (`vsReference`, `vsCopy`, the ones pages quote), and as the ratio of the rates
 * of one batch's medians (`batchVsReference`, `batchVsCopy`, for a run's own terminal table).
 */
export interface RatedRow extends BenchRow {
  reference?: string;
  vsReference?: PairRatio;
  vsCopy?: PairRatio;
  batchVsReference?: number;
  batchVsCopy?: number;
}

/** Adds the ratio columns to a family's table rows; `all` is where the reference, copy and pair rows are looked up. */
export function rateRows(
  meta: FamilyMeta | undefined,
  rows: readonly BenchRow[],
  all: readonly BenchRow[],
): RatedRow[] {
  const table = all.filter((r) => r.protocol !== 'pair');
  const byKey = new Map(table.map((r) => [`${rowFamily(r)}\u0000${r.op}\u0000${r.method}\u0000${r.size}`, r]));
  const copy = meta?.bandwidth && meta.op !== 'copy' ? copyReference(table) : undefined;
  return rows
    .filter((r) => r.protocol !== 'pair')
    .map((r) => {
      const reference = referenceFor(meta, r.method);
      const ref = reference ? byKey.get(`${rowFamily(r)}\u0000${r.op}\u0000${reference}\u0000${r.size}`) : undefined;
      const where = { op: r.op, method: r.method, size: r.size, family: rowFamily(r) };
      return {
        ...r,
        reference,
        vsReference: reference ? pairRatioOf(all, { ...where, versus: reference }) : undefined,
        vsCopy: meta?.bandwidth && meta.op !== 'copy' ? pairRatioOf(all, { ...where, versus: 'copy' }) : undefined,
        batchVsReference: ref && ref.rate > 0 ? r.rate / ref.rate : undefined,
        batchVsCopy: copy && copy.unit === r.unit && copy.rate > 0 ? r.rate / copy.rate : undefined,
      };
    });
}

/** A number with about 3 significant digits, for tables (`0.0286`, `4.41`, `562.6`, `4882`). */
export function fmt(x: number | undefined): string {
  if (x === undefined || !Number.isFinite(x)) return '—';
  const a = Math.abs(x);
  if (a >= 1000) return x.toFixed(0);
  if (a >= 100) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  if (a === 0) return '0';
  return x.toPrecision(3);
}

/** A ratio as `1.06×`. */
export function fmtRatio(x: number | undefined): string {
  return x === undefined || !Number.isFinite(x) ? '—' : `${x.toFixed(2)}×`;
}

/** A pair ratio as `1.06× (1.03–1.08)`: the median of the per-round ratios and their range. */
export function fmtSpread(x: PairRatio | undefined): string {
  if (!x || !Number.isFinite(x.median)) return '—';
  // Two decimals, or two significant digits below 0.1 (`0.0041×`).
  const f = (v: number) => (v >= 0.1 ? v.toFixed(2) : v.toPrecision(2));
  return `${f(x.median)}× (${f(x.min)}–${f(x.max)})`;
}
