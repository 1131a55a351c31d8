// The numbers the reliability suites produce (cases run, fuzz calls, memory before/after), one
// line each: appended to the file named by CK_REPORT_FILE (scripts/gpu-run.sh sets it) and printed.
import * as fs from 'node:fs';

export function report(line: string): void {
  const file = process.env.CK_REPORT_FILE;
  if (file) fs.appendFileSync(file, `${new Date().toISOString()} ${line}\n`);
  process.stdout.write(`[report] ${line}\n`);
}
