// The wording of argument errors: what was given reads as what it is ("got 3 elements", "got an
// Int32Array"), never as a string the user passed. Needs no native binary: the CPU references and
// lib/errors.ts produce the same messages as the GPU ops.
import * as fs from 'node:fs';
import * as path from 'node:path';

import * as ts from 'typescript';

import { atA, stencil, apsp } from '../lib/cpu/index';
import { elements, inWords, rangeError, typeError } from '../lib/errors';

const root = path.join(__dirname, '..');

describe('what was given', () => {
  test('a length is a count of elements, not the string "3 elements"', () => {
    expect(() => atA(new Float64Array(3), 2, 2)).toThrow(
      new RangeError('a must be rows·cols = 4 elements long, got 3 elements'),
    );
    expect(() => apsp(new Int32Array(1), 2)).toThrow(/^weights must be n·n = 4 elements long, got 1 element$/);
    expect(rangeError('x', 'on device 0', inWords('device 1')).message).toBe('x must be on device 0, got device 1');
    expect(elements(0).text).toBe('0 elements');
  });

  test('a type name takes "an" before a vowel sound', () => {
    expect(() => stencil(new Int32Array(4) as never, 2, 2)).toThrow(
      new TypeError('grid must be a Float32Array or Float64Array, got an Int32Array'),
    );
    expect(typeError('x', 'y', new Uint8Array(1)).message).toBe('x must be y, got a Uint8Array');
    expect(typeError('x', 'y', new Float32Array(1)).message).toBe('x must be y, got a Float32Array');
    expect(typeError('x', 'y', {}).message).toBe('x must be y, got an Object');
    expect(typeError('x', 'y', new Map()).message).toBe('x must be y, got a Map');
    expect(typeError('x', 'y', Object.create(null)).message).toBe('x must be y, got an object');
  });

  test('a string the user passed is still quoted as one; undefined and numbers say what they are', () => {
    expect(typeError('n', 'a number', '3').message).toBe('n must be a number, got the string "3"');
    expect(typeError('n', 'a number', undefined).message).toBe('n must be a number, got undefined');
    expect(rangeError('n', 'an integer ≥ 1', 0).message).toBe('n must be an integer ≥ 1, got number 0');
  });

  test("no call in lib/ passes a description as a string literal (it would read as the user's string)", () => {
    const offenders: string[] = [];
    const files = (dir: string): string[] =>
      fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const p = path.join(dir, e.name);
        return e.isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
      });
    for (const file of files(path.join(root, 'lib'))) {
      const src = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      const visit = (n: ts.Node): void => {
        if (
          ts.isCallExpression(n) &&
          ts.isIdentifier(n.expression) &&
          (n.expression.text === 'typeError' || n.expression.text === 'rangeError') &&
          n.arguments.length >= 3
        ) {
          const got = n.arguments[2];
          if (ts.isStringLiteral(got) || ts.isTemplateExpression(got) || ts.isNoSubstitutionTemplateLiteral(got)) {
            const line = src.getLineAndCharacterOfPosition(got.getStart()).line + 1;
            offenders.push(
              `${path.relative(root, file)}:${line}: ${got.getText()} (wrap it: inWords(...) or elements(n))`,
            );
          }
        }
        ts.forEachChild(n, visit);
      };
      visit(src);
    }
    expect(offenders).toEqual([]);
  });
});
