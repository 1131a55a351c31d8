#!/usr/bin/env node
// The README's first commands, the ones a newcomer copies in a clone: the lines of the first ```sh
// block under "## Try it", without their trailing comments. scripts/check-readme-commands.sh runs
// them in a fresh copy of the tree; test/readme.test.ts checks what they are.
//
//   node scripts/readme-commands.js     prints them, one per line
'use strict';
const fs = require('node:fs');
const path = require('node:path');

/** The commands of the README text `md`, in order. */
function readmeCommands(md) {
  const section = md.split(/^## Try it\n/m)[1];
  if (section === undefined) throw new Error('README.md has no "## Try it" section');
  const block = /^```sh\n([\s\S]*?)^```$/m.exec(section.split(/^## /m)[0]);
  if (!block) throw new Error('the "## Try it" section of README.md has no ```sh block');
  return block[1]
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
}

module.exports = { readmeCommands };

if (require.main === module) {
  const md = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');
  for (const command of readmeCommands(md)) console.log(command);
}
