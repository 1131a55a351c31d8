// Prints, after the run, which suites were skipped and why (the reason is in their title).
class SkipReporter {
  onRunComplete(_contexts, results) {
    const reasons = new Map();
    for (const file of results.testResults) {
      for (const t of file.testResults) {
        if (t.status !== 'pending') continue;
        const title = t.ancestorTitles.find((a) => a.includes('[skipped:')) || '';
        const m = /\[skipped: (.*)\]$/.exec(title);
        if (!m) continue;
        const suite = title.slice(0, title.indexOf(' [skipped:'));
        if (!reasons.has(m[1])) reasons.set(m[1], new Set());
        reasons.get(m[1]).add(suite);
      }
    }
    for (const [reason, suites] of reasons) {
      process.stderr.write(`\nSkipped GPU suites (${reason}):\n  ${[...suites].join('\n  ')}\n`);
    }
  }
}
module.exports = SkipReporter;
