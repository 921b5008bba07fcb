import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countStart, diffFolded, parseFoldedLine } from '../../src/flame/folded.js';

describe('folded line parsing (flamegraph.pl /^(.*)\\s+?(\\d+(?:\\.\\d*)?)$/)', () => {
  it('splits at the last whitespace before a trailing number', () => {
    assert.deepEqual(parseFoldedLine('a;b;c 31'), { stack: 'a;b;c', samples: 31 });
    assert.deepEqual(parseFoldedLine('a b;c 2.5'), { stack: 'a b;c', samples: 2.5 });
    assert.deepEqual(parseFoldedLine('a;b 12.'), { stack: 'a;b', samples: 12 });
    assert.deepEqual(parseFoldedLine(' 7'), { stack: '', samples: 7 });
  });
  it('keeps extra whitespace in the stack (one character is taken)', () => {
    assert.deepEqual(parseFoldedLine('a;b  4'), { stack: 'a;b ', samples: 4 });
    assert.deepEqual(parseFoldedLine('a;b\t4'), { stack: 'a;b', samples: 4 });
  });
  it('reads differential lines', () => {
    assert.deepEqual(parseFoldedLine('a;b 3 9'), { stack: 'a;b', samples: 3, samples2: 9 });
  });
  it('rejects lines without a proper count', () => {
    for (const bad of ['a;b', 'a;b 1.2.3', 'a;b .5', 'a;b 12\r', 'a;b12', '12', '']) {
      assert.equal(parseFoldedLine(bad), null, JSON.stringify(bad));
    }
    assert.equal(countStart('x 1'), 2);
  });
});

describe('difffolded (difffolded.pl, sorted)', () => {
  const a = ['a;b 5', 'a;c 3', 'x;0x7f00ab 2', 'bad line'];
  const b = ['a;b 10', 'd;e 4', 'x;0x7f11cd 6'];
  it('pairs counts per stack, 0 where a stack is missing', () => {
    assert.equal(diffFolded(a, b), ' 0 0\na;b 5 10\na;c 3 0\nd;e 0 4\nx;0x7f00ab 2 0\nx;0x7f11cd 0 6\n');
  });
  it('-n scales the first profile to the second total', () => {
    assert.equal(
      diffFolded(a, b, { normalize: true }),
      ' 0 0\na;b 10 10\na;c 6 0\nd;e 0 4\nx;0x7f00ab 4 0\nx;0x7f11cd 0 6\n',
    );
  });
  it('-s merges stacks that differ in hex addresses', () => {
    assert.equal(diffFolded(a, b, { stripHex: true }), ' 0 0\na;b 5 10\na;c 3 0\nd;e 0 4\nx;0x... 2 6\n');
    assert.equal(
      diffFolded(a, b, { stripHex: true, normalize: true }),
      ' 0 0\na;b 10 10\na;c 6 0\nd;e 0 4\nx;0x... 4 6\n',
    );
  });
});
