// Every example in examples/ runs as a test: those that need a GPU are skipped, with the reason,
// where there is none; the CPU ones run everywhere.
import * as fs from 'node:fs';
import * as path from 'node:path';

import { describeGpu } from './helpers/gpu';

interface Example {
  needsGpu: boolean;
  main(log: (line: string) => void): void | Promise<void>;
}

const dir = path.join(__dirname, '..', 'examples');
const names = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.ts'))
  .sort();

// eslint-disable-next-line @typescript-eslint/no-require-imports
const load = (name: string) => require(path.join(dir, name)) as Example;

test('there are examples, and the examples page lists each one', () => {
  expect(names.length).toBeGreaterThanOrEqual(4);
  const page = fs.readFileSync(path.join(dir, 'README.md'), 'utf8');
  for (const name of names) expect(page).toContain(name);
});

const run = (name: string) => async () => {
  const lines: string[] = [];
  await load(name).main((l) => lines.push(l));
  expect(lines.length).toBeGreaterThan(0);
};

describe('examples without a GPU', () => {
  for (const name of names.filter((n) => !load(n).needsGpu)) test(`${name} runs`, run(name));
});

describeGpu('examples on the GPU', () => {
  for (const name of names.filter((n) => load(n).needsGpu)) test(`${name} runs`, run(name));
});
