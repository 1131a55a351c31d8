// Charts of a family's results: rate against size, one line per method, as SVG (vega-lite compiled
// to vega, rendered headless) and PNG (resvg). Nothing here touches the GPU, so the report can
// redraw every chart from the committed JSON.
import * as fs from 'node:fs';
import * as path from 'node:path';

import type { BenchRow } from './results';
import { isSquare, sizeDims, sizeValue, sortSizes, splitMethod } from './summary';

/** What a chart says above its plot. */
export interface ChartOptions {
  title: string;
  subtitle?: string;
  /** Draws the run's copy bandwidth as a dashed line (bandwidth families). */
  copyRate?: number;
}

interface Point {
  method: string;
  dtype: string;
  size: string;
  x: number;
  rate: number;
  ms: number;
}

/** Where a size goes on the x axis: n for `n`, `nxn` and `nxnxn`, bytes for `16MiB`, else the product. */
export function axisValue(label: string): number {
  const dims = sizeDims(label);
  return dims && isSquare(label) ? dims[0] : sizeValue(label);
}

/**
 * The rows a chart shows: checked rows with a numeric size. Where a family mixes square and other
 * shapes (AᵀA's 2000²…18000² and its tall-skinny A), only the squares, which form one series; the
 * others stay in the tables.
 */
function points(rows: readonly BenchRow[]): { points: Point[]; left: string[] } {
  const usable = rows.filter((r) => r.check !== 'fail' && r.rate > 0 && Number.isFinite(sizeValue(r.size)));
  const squares = usable.filter((r) => isSquare(r.size));
  const shown = squares.length > 0 ? squares : usable;
  const left = sortSizes(usable.filter((r) => !shown.includes(r)).map((r) => r.size));
  return {
    left,
    points: shown.map((r) => {
      const { base, dtype } = splitMethod(r.method);
      return { method: base, dtype: dtype ?? '', size: r.size, x: axisValue(r.size), rate: r.rate, ms: r.ms };
    }),
  };
}

const spans = (values: number[], ratio: number) => Math.max(...values) / Math.min(...values) >= ratio;

/**
 * The vega-lite spec of a family's chart: rate (log scale when it spans two decades) against the
 * size (log when the sizes span two decades), the axis labelled with the size labels themselves;
 * one colour per method, one panel per dtype where method names carry one. Undefined when no row
 * has a numeric size.
 */
export function chartSpec(all: readonly BenchRow[], opts: ChartOptions): Record<string, unknown> | undefined {
  // A pair row repeats a method already charted from its family's table rows.
  const rows = all.filter((r) => r.protocol !== 'pair');
  const { points: data, left } = points(rows);
  if (data.length === 0) return barSpec(rows, opts);
  const xs = data.map((p) => p.x);
  const rates = data.map((p) => p.rate);
  if (opts.copyRate) rates.push(opts.copyRate);
  const unit = rows.find((r) => r.rate > 0)?.unit ?? 'rate';
  const labels = sortSizes(data.map((p) => p.size));
  const labelOf = Object.fromEntries(labels.map((l) => [String(axisValue(l)), l]));
  const faceted = data.some((p) => p.dtype !== '');
  const methods = [...new Set(data.map((p) => p.method))];
  const logY = spans(rates, 10);
  const x = {
    field: 'x',
    type: 'quantitative',
    title: 'size',
    scale: { type: spans(xs, 10) ? 'log' : 'linear', nice: false, padding: 16 },
    axis: {
      values: labels.map(axisValue),
      labelExpr: `${JSON.stringify(labelOf)}[''+datum.value]`,
      labelAngle: labels.length > 3 ? -35 : 0,
      labelOverlap: false,
      grid: true,
    },
  };
  const y = {
    field: 'rate',
    type: 'quantitative',
    title: unit,
    scale: logY ? { type: 'log' } : { type: 'linear', zero: true },
    axis: { format: '~s' },
  };
  const lines = {
    mark: { type: 'line', point: { size: 50, filled: true }, strokeWidth: 2 },
    encoding: {
      x,
      y,
      color: { field: 'method', type: 'nominal', title: 'method', sort: methods },
      tooltip: [{ field: 'method' }, { field: 'size' }, { field: 'ms' }, { field: 'rate' }],
    },
  };
  const copy = opts.copyRate
    ? [
        {
          mark: { type: 'rule', strokeDash: [6, 4], color: '#555' },
          encoding: { y: { datum: opts.copyRate, type: 'quantitative' } },
        },
        {
          mark: { type: 'text', align: 'left', dx: 4, dy: -7, color: '#555', fontSize: 11 },
          encoding: {
            x: { value: 0 },
            y: { datum: opts.copyRate, type: 'quantitative' },
            text: { value: `copy ${opts.copyRate.toFixed(0)} ${unit}` },
          },
        },
      ]
    : [];
  const layer = { width: faceted ? 330 : 600, height: faceted ? 220 : 340, layer: [lines, ...copy] };
  const subtitle = [opts.subtitle, left.length ? `not charted (not square): ${left.join(', ')}` : undefined].filter(
    (t): t is string => !!t,
  );
  const common = {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: { text: opts.title, subtitle, anchor: 'start', fontSize: 15, subtitleFontSize: 12 },
    background: 'white',
    padding: 12,
    data: { values: data },
    config: {
      font: 'sans-serif',
      axis: { labelFontSize: 11, titleFontSize: 12 },
      legend: { labelFontSize: 12, titleFontSize: 12 },
    },
  };
  if (!faceted) return { ...common, ...layer };
  return {
    ...common,
    facet: { field: 'dtype', type: 'nominal', title: null, header: { labelFontSize: 13 } },
    columns: 2,
    spec: layer,
    resolve: { scale: { y: 'independent' } },
  };
}

/** Renders a vega-lite spec to an SVG string, headless. */
export async function renderSvg(spec: Record<string, unknown>): Promise<string> {
  // Loaded here, not at the top, so that commands without charts do not pay for them.
  const vl = await import('vega-lite');
  const vega = await import('vega');
  const compiled = vl.compile(spec as never).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** Font files tried for the PNG, in order, with the family name each provides. */
const FONTS: [string, string][] = [
  ['/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf', 'DejaVu Sans'],
  ['/usr/share/fonts/dejavu/DejaVuSans.ttf', 'DejaVu Sans'],
  ['/usr/share/fonts/TTF/DejaVuSans.ttf', 'DejaVu Sans'],
  ['/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf', 'DejaVu Sans'],
  ['/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf', 'Liberation Sans'],
  ['/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf', 'Liberation Sans'],
  ['/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf', 'Noto Sans'],
  ['/usr/share/fonts/truetype/freefont/FreeSans.ttf', 'FreeSans'],
  ['/System/Library/Fonts/Supplemental/Arial.ttf', 'Arial'],
];

/** The font the PNG's text is drawn with, or undefined where none of {@link FONTS} exists. */
export function chartFont(): { file: string; family: string } | undefined {
  const found = FONTS.find(([file]) => fs.existsSync(file));
  return found && { file: found[0], family: found[1] };
}

/**
 * Rasterises an SVG at twice its size. resvg draws text only with fonts it is given, so without
 * one of the known fonts there is no PNG (`reason` says why) rather than a PNG without labels.
 */
export function svgToPng(svg: string): { png?: Buffer; reason?: string } {
  const font = chartFont();
  if (!font) {
    return {
      reason:
        'no font for the PNG text (looked for DejaVu Sans, Liberation Sans, Noto Sans, FreeSans; e.g. install fonts-dejavu-core)',
    };
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Resvg } = require('@resvg/resvg-js') as typeof import('@resvg/resvg-js');
  const png = new Resvg(svg, {
    fitTo: { mode: 'zoom', value: 2 },
    background: 'white',
    font: {
      loadSystemFonts: false,
      fontFiles: [font.file],
      defaultFontFamily: font.family,
      sansSerifFamily: font.family,
    },
  })
    .render()
    .asPng();
  return { png };
}

/** What {@link writeChart} wrote. */
export interface ChartFiles {
  svg?: string;
  png?: string;
  /** Why a file is missing (no numeric sizes, no font). */
  note?: string;
}

/** Writes `<dir>/<name>.svg` and `.png` for the rows; returns the paths written. */
export async function writeChart(
  dir: string,
  name: string,
  rows: readonly BenchRow[],
  opts: ChartOptions,
): Promise<ChartFiles> {
  const spec = chartSpec(rows, opts);
  if (!spec) return { note: 'no row with a numeric size to chart' };
  const svg = await renderSvg(spec);
  fs.mkdirSync(dir, { recursive: true });
  const svgFile = path.join(dir, `${name}.svg`);
  fs.writeFileSync(svgFile, svg);
  const { png, reason } = svgToPng(svg);
  if (!png) return { svg: svgFile, note: reason };
  const pngFile = path.join(dir, `${name}.png`);
  fs.writeFileSync(pngFile, png);
  return { svg: svgFile, png: pngFile };
}

/**
 * For a family whose sizes are not numbers (the MLP's layer lists): one panel per size, one bar per
 * method, the rate on a linear axis. Undefined when no row is usable.
 */
function barSpec(rows: readonly BenchRow[], opts: ChartOptions): Record<string, unknown> | undefined {
  const data = rows
    .filter((r) => r.check !== 'fail' && r.rate > 0)
    .map((r) => ({ method: r.method, size: r.size, rate: r.rate, ms: r.ms }));
  if (data.length === 0) return undefined;
  const unit = rows.find((r) => r.rate > 0)?.unit ?? 'rate';
  const methods = [...new Set(data.map((p) => p.method))];
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: { text: opts.title, subtitle: opts.subtitle ?? '', anchor: 'start', fontSize: 15, subtitleFontSize: 12 },
    background: 'white',
    padding: 12,
    data: { values: data },
    facet: { field: 'size', type: 'nominal', title: null, header: { labelFontSize: 13 } },
    columns: 2,
    spec: {
      width: 330,
      height: 220,
      mark: { type: 'bar' },
      encoding: {
        x: { field: 'method', type: 'nominal', title: null, sort: methods, axis: { labelAngle: -35 } },
        y: { field: 'rate', type: 'quantitative', title: unit, scale: { zero: true }, axis: { format: '~s' } },
        color: { field: 'method', type: 'nominal', title: 'method', sort: methods },
        tooltip: [{ field: 'method' }, { field: 'size' }, { field: 'ms' }, { field: 'rate' }],
      },
    },
    config: {
      font: 'sans-serif',
      axis: { labelFontSize: 11, titleFontSize: 12 },
      legend: { labelFontSize: 12, titleFontSize: 12 },
    },
  };
}
