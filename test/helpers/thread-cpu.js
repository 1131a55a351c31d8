// CPU time per thread of this process, from /proc (Linux): what the async CPU-use test logs and
// bench/dev/overhead/async-cpu.js prints, to tell which thread used a core (a spinning pool thread,
// CUDA's event thread, the JS thread, the runtime's helpers).
'use strict';
const fs = require('node:fs');

const TICK_MS = 10; // USER_HZ = 100

/** tid -> [name, user + system ms] of every thread, or undefined where /proc/self/task is not readable. */
function threadTimes() {
  try {
    const m = new Map();
    for (const tid of fs.readdirSync('/proc/self/task')) {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      // The name is in parentheses and may hold spaces or parentheses itself; utime and stime are
      // fields 14 and 15, the 12th and 13th after it.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      m.set(tid, [stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), (Number(f[11]) + Number(f[12])) * TICK_MS]);
    }
    return m;
  } catch {
    return undefined;
  }
}

/** "name#tid ms, ..." for the threads that used at least `minMs` between two threadTimes() readings. */
function threadsUsed(before, after, minMs) {
  const used = [];
  for (const [tid, [name, ms]] of after ?? []) {
    const d = ms - (before?.get(tid)?.[1] ?? 0);
    if (d >= minMs) used.push(`${name}#${tid} ${d}`);
  }
  return used.join(', ');
}

module.exports = { threadTimes, threadsUsed };
