// What the bench table, the charts and the report derive from result rows: size labels parsed into
// numbers, the dtype suffix of method names, and the ratios to the reference method and to `copy`.
// Nothing here touches the GPU.
import type { BenchRow } from './results';

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
    if (r.op !== 'copy' || r.check !== 'ok') continue;
    if (!best || sizeValue(r.size) > sizeValue(best.size)) best = r;
  }
  return best;
}

/** A result row with its ratios: rate over the reference method's rate at the same size, and over copy's. */
export interface RatedRow extends BenchRow {
  reference?: string;
  vsReference?: number;
  vsCopy?: number;
}

/** Adds the ratio columns to a family's rows; `all` is where the reference and copy rows are looked up. */
export function rateRows(
  meta: FamilyMeta | undefined,
  rows: readonly BenchRow[],
  all: readonly BenchRow[],
): RatedRow[] {
  const byKey = new Map(all.map((r) => [`${r.op}\u0000${r.method}\u0000${r.size}`, r]));
  const copy = meta?.bandwidth && meta.op !== 'copy' ? copyReference(all) : undefined;
  return rows.map((r) => {
    const reference = referenceFor(meta, r.method);
    const ref = reference ? byKey.get(`${r.op}\u0000${reference}\u0000${r.size}`) : undefined;
    return {
      ...r,
      reference,
      vsReference: ref && ref.rate > 0 ? r.rate / ref.rate : undefined,
      vsCopy: copy && copy.unit === r.unit && copy.rate > 0 ? r.rate / copy.rate : undefined,
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
