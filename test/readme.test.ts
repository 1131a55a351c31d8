// The README is the package's page on the registry, which shows it without the repository around it:
// it stays short, its links are absolute (or name files the package ships), those into the
// repository name files and headings that exist, and its first example is examples/quick-start.ts.
// The guides it links (docs/, CONTRIBUTING.md, bench/results/README.md) link each other relatively;
// those links must name files and headings that exist. Needs no native binary.
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.join(__dirname, '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');
const readme = read('README.md');

/** At most 12 KB, counted the strict way (12,000 bytes, not 12 KiB). */
const MAX_README_BYTES = 12_000;

/**
 * Files that another branch adds and this one links: their links are checked once they exist.
 * docs/async.md (the Promise forms) comes with the async work.
 */
const PENDING = new Set(['docs/async.md']);

/** The repository's web address from package.json: `git+https://github.com/o/r.git` → `https://github.com/o/r`. */
const repository = String(pkg.repository?.url ?? '')
  .replace(/^git\+/, '')
  .replace(/\.git$/, '');

/** Markdown without its fenced code blocks, whose `#` lines are not headings. */
function withoutFences(md: string): string {
  return md.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** Markdown without its code, fenced or inline, whose brackets are not links. */
function prose(md: string): string {
  return withoutFences(md).replace(/`[^`\n]*`/g, '');
}

/** The targets of a markdown text's links and images: inline, reference definitions, autolinks, HTML. */
function links(md: string): string[] {
  const text = prose(md).replace(/<!--[\s\S]*?-->/g, '');
  const found = [
    ...[...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]),
    ...[...text.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)].map((m) => m[1]),
    ...[...text.matchAll(/<(https?:\/\/[^>\s]+)>/g)].map((m) => m[1]),
    ...[...text.matchAll(/\b(?:href|src)="([^"]+)"/g)].map((m) => m[1]),
  ];
  return found;
}

/** GitHub's anchors for a markdown file's headings (duplicates get -1, -2, …). */
function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of withoutFences(md).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]
      .toLowerCase()
      .replace(/<[^>]+>/g, '')
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Why a link to `file` (relative to the repository root) with `#anchor` does not resolve, or undefined. */
function problem(file: string, anchor: string | undefined): string | undefined {
  const full = path.join(root, file);
  if (!fs.existsSync(full)) return PENDING.has(file) ? undefined : 'no such file';
  if (anchor === undefined || !file.endsWith('.md')) return undefined;
  return anchors(fs.readFileSync(full, 'utf8')).has(decodeURIComponent(anchor)) ? undefined : `no heading #${anchor}`;
}

/** Whether a path relative to the package root is in what `files` ships. */
function shipped(file: string): boolean {
  return (pkg.files as string[]).some((f) => !f.startsWith('!') && (f.endsWith('/') ? file.startsWith(f) : file === f));
}

describe('README.md', () => {
  test(`is at most ${MAX_README_BYTES} bytes`, () => {
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(MAX_README_BYTES);
    expect(Buffer.byteLength(readme)).toBeGreaterThan(1000);
  });

  test('package.json names the repository, its page and where to report bugs', () => {
    expect(repository).toMatch(/^https:\/\/github\.com\/[\w.-]+\/[\w.-]+$/);
    expect(pkg.repository.type).toBe('git');
    expect(pkg.homepage).toBe(`${repository}#readme`);
    expect(pkg.bugs.url).toBe(`${repository}/issues`);
  });

  test('every link is absolute or names a file the package ships', () => {
    const found = links(readme);
    expect(found.length).toBeGreaterThan(5);
    const bad = found.filter((l) => !/^https:\/\//.test(l) && !shipped(l.split('#')[0]));
    expect(bad).toEqual([]);
  });

  test('every link into the repository names its address, the main branch, and a file and heading there', () => {
    const ours = links(readme).filter((l) => /^https:\/\/github\.com\//.test(l));
    expect(ours.length).toBeGreaterThan(5);
    const bad: string[] = [];
    for (const l of ours) {
      const m = l.match(/^(https:\/\/github\.com\/[^/]+\/[^/#]+)(?:\/(?:blob|tree)\/main\/([^#]+))?(?:#(.+))?$/);
      if (!m || m[1] !== repository) bad.push(`${l}: not ${repository}/blob/main/…`);
      else if (m[2]) {
        const why = problem(m[2].replace(/\/$/, ''), m[3]);
        if (why) bad.push(`${l}: ${why}`);
      }
    }
    expect(bad).toEqual([]);
  });

  test('the first example is examples/quick-start.ts, which the example tests run', () => {
    const block = readme.match(/```ts\n([\s\S]*?)```/)?.[1];
    const example = read('examples/quick-start.ts');
    const region = example.match(/\n {2}\/\/ #region readme\n([\s\S]*?)\n {2}\/\/ #endregion\n/)?.[1];
    const imports = example.match(/^import [^\n]+\n/m)?.[0];
    expect(region).toBeDefined();
    // The example prints through `log` (so the test sees the lines); the README through console.log.
    const expected = `${imports}\n${region!.replace(/^ {2}/gm, '').replace(/^log\(/gm, 'console.log(')}\n`;
    expect(block).toBe(expected);
  });

  test('keeps the sections that errors and the issue point readers to', () => {
    // lib/loader.ts's "no binary" message says: see the README, Requirements.
    expect(read('lib/loader.ts')).toMatch(/see the README, Requirements/);
    for (const h of ['Try it', 'Install', 'Requirements', 'Command line', 'Dependencies and why']) {
      expect(readme).toMatch(new RegExp(`^## ${h}$`, 'm'));
    }
    expect(readme).toMatch(/TypeScript\s+≥ 5\.2/);
    expect(readme).toMatch(/Node ≥ 24/);
  });
});

describe("the README's first screen", () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { readmeCommands } = require('../scripts/readme-commands.js');
  const commands: string[] = readmeCommands(readme);

  test('two commands for a clone: set up and run the demo, then the tests', () => {
    expect(commands).toEqual(['npm install && npx cuda-kernels demo', 'npm test']);
    // On the first screen: before the project-side install and the first example.
    const lines = readme.split('\n');
    const at = (text: string) => lines.findIndex((l) => l.includes(text));
    expect(at(commands[0])).toBeGreaterThan(0);
    expect(at(commands[0])).toBeLessThan(25);
    expect(at('## Try it')).toBeLessThan(at('## Install'));
    expect(at('## Install')).toBeLessThan(at('## First example'));
  });

  test('CI runs them: the README test command itself, and both in a fresh copy of the tree', () => {
    const ci = read('.ci/run');
    expect(ci).toMatch(new RegExp(`^${commands[1]}( |$)`, 'm'));
    expect(ci).toMatch(/^bash scripts\/check-readme-commands\.sh /m);
    const check = read('scripts/check-readme-commands.sh');
    expect(check).toContain('node scripts/readme-commands.js');
  });

  test('the commands are read off the "## Try it" block, comments dropped', () => {
    expect(
      readmeCommands('# x\n\n## Try it\n\ntext\n\n```sh\na && b   # one\n\nc # two\n```\n\n## Next\n```sh\nd\n```\n'),
    ).toEqual(['a && b', 'c']);
    expect(() => readmeCommands('# x\n## Install\n')).toThrow(/no "## Try it" section/);
  });
});

describe('the guides', () => {
  const guides = [
    'CONTRIBUTING.md',
    'examples/README.md',
    'bench/results/README.md',
    ...fs
      .readdirSync(path.join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];

  test.each(guides)('%s: every relative link names a file and heading that exist', (guide) => {
    const bad: string[] = [];
    for (const l of links(read(guide))) {
      if (/^[a-z]+:/i.test(l)) continue; // absolute: https://, mailto:
      const [target, anchor] = l.split('#');
      const file = target ? path.relative(root, path.resolve(root, path.dirname(guide), target)) : guide;
      if (file.startsWith('..')) bad.push(`${l}: outside the repository`);
      const why = problem(file.split(path.sep).join('/'), anchor);
      if (why) bad.push(`${l}: ${why}`);
    }
    expect(bad).toEqual([]);
  });

  test('the checks above catch a missing file and a missing heading', () => {
    expect(problem('docs/no-such-guide.md', undefined)).toBe('no such file');
    expect(problem('README.md', 'no-such-heading')).toBe('no heading #no-such-heading');
    expect(problem('README.md', 'dependencies-and-why')).toBeUndefined();
    expect([shipped('LICENSE'), shipped('dist/index.js'), shipped('docs/api.md'), shipped('test/x.ts')]).toEqual([
      true,
      true,
      false,
      false,
    ]);
    expect(anchors('# A `b` (c × d)\n\n```sh\n# not a heading\n```\n## A `b` (c × d)')).toEqual(
      new Set(['a-b-c--d', 'a-b-c--d-1']),
    );
    expect(links('[a](x.md) `[b](y.md)` ![c](z.svg#q)\n\n[d]: w.md\n<https://e>')).toEqual([
      'x.md',
      'z.svg#q',
      'w.md',
      'https://e',
    ]);
  });
});
