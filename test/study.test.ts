// docs/study.md is generated from the variant files and the H100 result file (scripts/study.js): this
// fails when either changed without the page being regenerated.
import * as fs from 'node:fs';
import * as path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const study = require('../scripts/study.js') as {
  render(): string;
  variantFiles(family: string): { file: string; step: number | null; methods: string[]; summary: string }[];
  FAMILIES: { name: string }[];
};

const root = path.join(__dirname, '..');

test('docs/study.md is what scripts/study.js writes (run `node scripts/study.js --write`)', () => {
  expect(fs.readFileSync(path.join(root, 'docs/study.md'), 'utf8')).toBe(study.render());
});

test.each(study.FAMILIES.map((f) => [f.name]))(
  '%s: every numbered variant file opens with a comment and names its benchmark method',
  (family) => {
    for (const f of study.variantFiles(family).filter((v) => v.step !== null)) {
      expect([f.file, f.summary.length > 20]).toEqual([f.file, true]);
      expect([f.file, f.methods.length > 0]).toEqual([f.file, true]);
    }
  },
);
