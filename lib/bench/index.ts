// The benchmark registry: every family plugs its BenchFamily in here.
import { apspFamily } from './apsp';
import { apspMultiFamily } from './apsp-multi';
import { ataFamily } from './ata';
import { copyFamily } from './copy';
import { apspDistFamily, collectivesFamily, mlpDistFamily } from './dist';
import { gemmFamily } from './gemm';
import { kernelsFamily } from './kernels';
import { mlpFamily } from './mlp';
import { overheadFamily } from './overhead';
import { peerFamily } from './peer';
import { scanFamily } from './scan';
import { stencilFamily } from './stencil';
import type { BenchFamily } from './harness';

export const families: Record<string, BenchFamily> = {
  copy: copyFamily,
  ata: ataFamily,
  gemm: gemmFamily,
  scan: scanFamily,
  stencil: stencilFamily,
  apsp: apspFamily,
  mlp: mlpFamily,
  peer: peerFamily,
  'apsp-multi': apspMultiFamily,
  collectives: collectivesFamily,
  'apsp-dist': apspDistFamily,
  'mlp-dist': mlpDistFamily,
  overhead: overheadFamily,
  kernels: kernelsFamily,
};

export * from './harness';
export * from './results';
