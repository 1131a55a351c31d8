// One MLP shape of the property family against the float64 CPU reference, several seeds and batch
// sizes, per parameter block: is a failure the method's, the batching's, or float32 against float64?
//   node -r ./test/harness/ts-register.js test/harness/mlp-case.ts '{"layers":[135,5,13,17],"patterns":256,"activation":"relu","output":"identity"}'
import * as ck from '../../lib';
import { flatWeights } from '../../lib/ops/mlp-spec';
import { kinkAlternatives, parameterBlocks as blocks } from './mlp-margin';

const base = JSON.parse(process.argv[2]);
const floats32 = (n: number, seed: number) => ck.cpu.randomArray(Float32Array, n, seed);
for (const seed of [3, 4, 5, 6]) {
  for (const batch of [6, 8, 1, 256]) {
    for (const epochs of [1, 2]) {
      const { layers, patterns, activation, output } = base;
      const hx = floats32(patterns * layers[0], seed);
      const ht = floats32(patterns * layers[layers.length - 1], seed + 1).map((v) => (v + 1) / 2);
      const spec = { layers, activation, output, eta: 0.05 / (batch * Math.max(...layers)), alpha: 0.5, seed };
      const cpu = new ck.cpu.Mlp(spec);
      const ce = cpu.train(hx, ht, { epochs, batchSize: batch }).map((r) => r.error);
      const want = flatWeights(cpu.getWeights());
      // The trainings that take the other side of a relu kink (test/harness/mlp-margin.ts).
      const { kinks, alternatives } = kinkAlternatives({ spec, x: hx, t: ht, epochs, batch });
      const x = ck.upload(hx);
      const t = ck.upload(ht);
      const parts: string[] = [];
      for (const method of ['custom', 'cublas'] as const) {
        const net = new ck.Mlp({ ...spec, method, streams: 1 });
        const ge = net.train(x, t, { epochs, batchSize: batch }).map((r) => r.error);
        const p = net.copyParameters();
        const got = p.toHostSync();
        p.free();
        net.free();
        const per = blocks(layers)
          .map(([n, a, b]) => `${n} ${ck.cpu.relativeError(got.subarray(a, b), want.subarray(a, b)).toExponential(1)}`)
          .join(' ');
        const alt = alternatives.length
          ? `; ${kinks.length} kinks, nearest alternative ${Math.min(...alternatives.map((a) => ck.cpu.relativeError(got, a.outcome.params))).toExponential(2)}`
          : '';
        parts.push(
          `${method}: all ${ck.cpu.relativeError(got, want).toExponential(2)} [${per}] error ${ge.at(-1)!.toPrecision(7)} vs ${ce.at(-1)!.toPrecision(7)}${alt}`,
        );
      }
      x.free();
      t.free();
      console.log(`seed ${seed} batch ${batch} epochs ${epochs}: ${parts.join(' | ')}`);
    }
  }
}
