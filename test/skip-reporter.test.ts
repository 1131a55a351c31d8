// The reporter that lists, after `npm test`, what was skipped and why.
/* eslint-disable @typescript-eslint/no-require-imports -- the reporter is plain CommonJS, as jest loads it */
const SkipReporter = require('./helpers/skip-reporter.js');
/* eslint-enable @typescript-eslint/no-require-imports */

type Result = { status: string; title: string; ancestorTitles: string[] };

function report(tests: Result[]): string {
  let text = '';
  const write = jest.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => {
    text += String(s);
    return true;
  });
  try {
    new SkipReporter().onRunComplete(new Set(), { testResults: [{ testResults: tests }] });
  } finally {
    write.mockRestore();
  }
  return text;
}

test('skipped suites and skipped single tests are listed under their reason; other tests are not', () => {
  const text = report([
    { status: 'pending', title: 'a', ancestorTitles: ['ata [skipped: no GPU — none found]'] },
    { status: 'pending', title: 'b', ancestorTitles: ['ata [skipped: no GPU — none found]', 'inner'] },
    { status: 'pending', title: 'c', ancestorTitles: ['gemm [skipped: no GPU — none found]'] },
    { status: 'pending', title: 'the packed package [skipped: no npm here]', ancestorTitles: ['package.json'] },
    { status: 'pending', title: 'skipped without a reason', ancestorTitles: ['x'] },
    { status: 'passed', title: 'ran [skipped: not really]', ancestorTitles: ['y'] },
  ]);
  expect(text).toBe(
    '\nSkipped (no GPU — none found):\n  ata\n  gemm\n' + '\nSkipped (no npm here):\n  the packed package\n',
  );
});
