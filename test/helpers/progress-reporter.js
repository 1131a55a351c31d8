// Writes one line per finished test case (status, duration, name) to the file named by
// CK_PROGRESS_FILE as it happens, so a GPU run killed by a time limit still shows how far it got
// and which test was slow. Used by scripts/gpu-run.sh; does nothing when the variable is unset.
const fs = require('node:fs');

class ProgressReporter {
  constructor() {
    this.file = process.env.CK_PROGRESS_FILE;
    this.started = Date.now();
  }

  line(text) {
    if (this.file) fs.appendFileSync(this.file, `${((Date.now() - this.started) / 1000).toFixed(1)}s ${text}\n`);
  }

  onTestFileStart(test) {
    this.line(`start ${test.path}`);
  }

  onTestCaseResult(_test, r) {
    this.line(`${r.status} ${r.duration ?? '?'}ms ${r.fullName}`);
  }
}
module.exports = ProgressReporter;
