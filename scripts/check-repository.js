#!/usr/bin/env node
// `npm publish` runs this first (prepublishOnly). No public address of the repository was known when
// the README's links were made absolute (the registry's page cannot follow relative ones), so the
// links, package.json's repository/homepage/bugs and the docs' clone commands use the placeholder
// below. Publishing stops here until every file has the real address instead.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

/** Stands in for the repository's address, https://github.com/<owner>/<name>, until it is known. */
const REPOSITORY_PLACEHOLDER = 'https://github.com/OWNER/cuda-kernels';

function main() {
  const root = path.join(__dirname, '..');
  const docs = fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md'));
  const files = ['package.json', 'README.md', 'CONTRIBUTING.md', ...docs.map((f) => `docs/${f}`)].filter((f) =>
    fs.readFileSync(path.join(root, f), 'utf8').includes(REPOSITORY_PLACEHOLDER),
  );
  if (files.length === 0) return 0;
  console.error(
    `cuda-kernels: ${files.join(', ')} still use ${REPOSITORY_PLACEHOLDER} for the repository's address; ` +
      'replace it with the real one before publishing (test/readme.test.ts then checks the links against package.json)',
  );
  return 1;
}

if (require.main === module) process.exit(main());

module.exports = { REPOSITORY_PLACEHOLDER };
