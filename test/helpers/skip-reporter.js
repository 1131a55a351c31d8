// Prints, after the run, what was skipped and why: suites (describe blocks) and single tests whose
// title ends in `[skipped: reason]` (test/helpers/gpu.ts, and tests that need a tool such as npm).
class SkipReporter {
  onRunComplete(_contexts, results) {
    const reasons = new Map();
    for (const file of results.testResults) {
      for (const t of file.testResults) {
        if (t.status !== 'pending') continue;
        // The suite's title when a suite was skipped, else the test's own.
        const title = t.ancestorTitles.find((a) => a.includes('[skipped:')) || t.title;
        const m = /\[skipped: (.*)\]$/.exec(title);
        if (!m) continue;
        const what = title.slice(0, title.indexOf(' [skipped:'));
        if (!reasons.has(m[1])) reasons.set(m[1], new Set());
        reasons.get(m[1]).add(what);
      }
    }
    for (const [reason, names] of reasons) {
      process.stderr.write(`\nSkipped (${reason}):\n  ${[...names].join('\n  ')}\n`);
    }
  }
}
module.exports = SkipReporter;
