// Names the suites jest.config.js left out because no native binary loads, with the reason, at the
// start and again after the run (so neither a scrolled log nor a summary hides them).
const path = require('node:path');

class NoBinaryReporter {
  constructor(_globalConfig, options) {
    this.reason = options.reason;
    this.suites = options.suites.map((f) => path.relative(process.cwd(), f));
  }

  message() {
    return (
      `\nSkipped ${this.suites.length} suites that need the native binary (${this.reason}):\n  ${this.suites.join('\n  ')}\n` +
      'Build it with the CUDA toolkit (npm run build:native) to run them; the GPU parts also need a GPU.\n'
    );
  }

  onRunStart() {
    if (this.suites.length) process.stderr.write(this.message());
  }

  onRunComplete() {
    if (this.suites.length) process.stderr.write(this.message());
  }
}
module.exports = NoBinaryReporter;
