// The GPU's SM and memory clocks, power draw and temperature, read with nvidia-smi before and after
// each family's run, so that a result can be judged against the state the GPU was in (clocks drift
// with power and temperature on a shared machine). Without nvidia-smi the rows simply lack it.
import { execFileSync } from 'node:child_process';

import type { GpuState } from './results';

const QUERY = 'pci.bus,clocks.sm,clocks.mem,power.draw,temperature.gpu';

/** Parses nvidia-smi's `--query-gpu=pci.bus,…` CSV (no header, no units) for the GPU on PCI bus `bus`. */
export function parseGpuState(csv: string, bus: number): GpuState | undefined {
  for (const line of csv.split('\n')) {
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length < 5 || Number.parseInt(cells[0], 16) !== bus) continue;
    const [smMHz, memMHz, powerW, tempC] = cells.slice(1, 5).map(Number);
    if ([smMHz, memMHz, powerW, tempC].some((v) => !Number.isFinite(v))) return undefined;
    return { smMHz, memMHz, powerW, tempC };
  }
  return undefined;
}

/** The state of the GPU on PCI bus `bus` now, or undefined where nvidia-smi is missing or says nothing. */
export function readGpuState(bus: number): GpuState | undefined {
  try {
    const csv = execFileSync('nvidia-smi', [`--query-gpu=${QUERY}`, '--format=csv,noheader,nounits'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 10_000,
    });
    return parseGpuState(csv, bus);
  } catch {
    return undefined;
  }
}

/** `1980 MHz, 112 W, 43 °C` (→ end state, where given). */
export function describeGpuState(s: { start?: GpuState; end?: GpuState } | undefined): string {
  const one = (g: GpuState) => `SM ${g.smMHz} MHz, ${Math.round(g.powerW)} W, ${g.tempC} °C`;
  if (!s?.start && !s?.end) return 'GPU state not recorded';
  if (s.start && s.end) return `${one(s.start)} → ${one(s.end)}`;
  return one((s.start ?? s.end) as GpuState);
}
