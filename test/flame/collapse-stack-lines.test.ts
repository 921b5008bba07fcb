import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { foldedLines, type StackArrays } from '../../src/flame/collapse/stack-lines.js';
import { StackTable } from '../../src/flame/collapse/stack-table.js';

/** Stacks given as name-index lists and counts, in the arrays foldedLines takes (arena, offsets, lengths, counts). */
function arrays(names: string[], stacks: [number[], number][]): StackArrays {
  const arenaLen = stacks.reduce((n, [ids]) => n + ids.length, 0);
  const t: StackArrays = {
    names,
    arena: new Int32Array(arenaLen + 3), // longer than used, as StackTable's are
    arenaLen,
    off: new Int32Array(stacks.length + 2),
    len: new Int32Array(stacks.length + 2),
    count: new Float64Array(stacks.length + 2),
    size: stacks.length,
  };
  let at = 0;
  stacks.forEach(([ids, count], e) => {
    t.off[e] = at;
    t.len[e] = ids.length;
    t.count[e] = count;
    for (const id of ids) t.arena[at++] = id;
  });
  return t;
}

function text(t: StackArrays, pieceBytes?: number): string | null {
  const g = foldedLines(t, pieceBytes);
  if (g === null) return null;
  const pieces: string[] = [];
  for (const p of g) pieces.push(p.toString('latin1')); // a piece is valid until the next is taken
  return pieces.join('');
}

describe('folded output in WebAssembly (stack-lines)', () => {
  it('sorts by the bytes of the texts: an ending text first, ";" between "0" and "b"', () => {
    const names = ['p', 'a', 'a0', 'ab', 'b'];
    const t = arrays(names, [
      [[0, 1], 1],
      [[0, 1, 4], 2],
      [[0, 2], 3],
      [[0, 3], 4],
      [[0], 5],
    ]);
    assert.equal(text(t), 'p 5\np;a 1\np;a0 3\np;a;b 2\np;ab 4\n');
  });

  it('orders latin1 names by byte (0xe9 after "z") and writes them as single bytes', () => {
    const t = arrays(
      ['q', '\u00e9t\u00e9', 'z'],
      [
        [[0, 1], 7],
        [[0, 2], 8],
      ],
    );
    const g = foldedLines(t)!;
    const bytes = Buffer.concat([...g].map((p) => Buffer.from(p)));
    assert.deepEqual([...bytes], [...Buffer.from('q;z 8\nq;\u00e9t\u00e9 7\n', 'latin1')]);
  });

  it('sums the counts of stacks with the same tokens into one line', () => {
    const t = arrays(
      ['m', 'f', 'g'],
      [
        [[0, 1, 2], 3],
        [[0, 2], 10],
        [[0, 1, 2], 4],
        [[0, 1, 2], 5],
      ],
    );
    assert.equal(text(t), 'm;f;g 12\nm;g 10\n');
  });

  it('gives the same bytes across many small windows, prefixes copied from the line before', () => {
    const names = ['main', 'alpha', 'beta', 'gamma', 'delta'];
    const stacks: [number[], number][] = [];
    for (let i = 1; i <= 4; i++) for (let j = 1; j <= 4; j++) stacks.push([[0, i, j, i], i * 10 + j]);
    const expected =
      [
        'main;alpha;alpha;alpha 11',
        'main;alpha;beta;alpha 12',
        'main;alpha;delta;alpha 14',
        'main;alpha;gamma;alpha 13',
        'main;beta;alpha;beta 21',
        'main;beta;beta;beta 22',
        'main;beta;delta;beta 24',
        'main;beta;gamma;beta 23',
        'main;delta;alpha;delta 41',
        'main;delta;beta;delta 42',
        'main;delta;delta;delta 44',
        'main;delta;gamma;delta 43',
        'main;gamma;alpha;gamma 31',
        'main;gamma;beta;gamma 32',
        'main;gamma;delta;gamma 34',
        'main;gamma;gamma;gamma 33',
      ].join('\n') + '\n';
    for (const window of [30, 31, 47, 64, 1 << 20]) assert.equal(text(arrays(names, stacks), window), expected);
  });

  it('grows its window for a line longer than it', () => {
    const long = 'x'.repeat(300);
    const t = arrays(
      ['p', long, 'y'],
      [
        [[0, 1], 1],
        [[0, 1, 2], 2],
        [[0, 2], 3],
      ],
    );
    assert.equal(text(t, 64), `p;${long} 1\np;${long};y 2\np;y 3\n`);
  });

  it('prints counts up to 2^53 - 1 in full, and leaves larger totals and ";" names to the caller', () => {
    assert.equal(text(arrays(['p', 'f'], [[[0, 1], 2 ** 53 - 1]])), 'p;f 9007199254740991\n');
    assert.equal(
      text(
        arrays(
          ['p', 'f'],
          [
            [[0, 1], 2 ** 53 - 1],
            [[0], 1],
          ],
        ),
      ),
      null,
    );
    assert.equal(text(arrays(['p', 'f;g'], [[[0, 1], 1]])), null);
  });

  it("adds another table's stacks through its id map, summing stacks found in both", () => {
    // This table: p;a 1, p;b 2. The other's names are [b, p, c]: its p;b 5 and p;c 7, ids mapped by idOf.
    const t = arrays(
      ['p', 'a', 'b', 'c'],
      [
        [[0, 1], 1],
        [[0, 2], 2],
      ],
    );
    t.parts = [
      {
        arena: Int32Array.of(1, 0, 1, 2),
        off: Int32Array.of(0, 2),
        len: Int32Array.of(2, 2),
        count: Float64Array.of(5, 7),
        idOf: Int32Array.of(2, 0, 3),
      },
    ];
    assert.equal(text(t), 'p;a 1\np;b 7\np;c 7\n');
  });

  it("StackTable: another table's stacks are summed by the JavaScript writer too (a name with ';')", () => {
    const names = ['x;y', 'f', 'g'];
    const mine = new StackTable(names, false);
    mine.add(0, Int32Array.of(1), 1, 3, null); // x;y;f 3
    const theirs = new StackTable(['g', 'x;y', 'f'], false);
    theirs.add(1, Int32Array.of(2), 1, 4, null); // x;y;f 4
    theirs.add(1, Int32Array.of(0), 1, 1, null); // x;y;g 1
    mine.addStacks(theirs.exportStacks(), Int32Array.of(2, 0, 1));
    const out = Array.from(mine.lines(), (p) => p.toString('latin1')).join('');
    assert.equal(out, 'x;y;f 7\nx;y;g 1\n');
    assert.equal(mine.distinct, 2);
  });

  it('StackTable: an arena in WebAssembly memory grows in place, is written once, and then refuses', () => {
    const names = ['p'];
    for (let i = 0; i < 100; i++) names.push(`f${i}`);
    const table = new StackTable(names, false, { arenaInts: 16 });
    const expected: string[] = [];
    // 5,000 stacks of 11 tokens: 55,000 ints, beyond the first 64 KiB page of the memory.
    for (let k = 0; k < 5000; k++) {
      // distinct stacks: the first two frames spell k in base 100
      const ids = Int32Array.from({ length: 10 }, (_, i) =>
        i === 0 ? 1 + (k % 100) : i === 1 ? 1 + Math.floor(k / 100) : 1 + ((k * (i + 3) + i) % 100),
      );
      table.add(0, ids, 10, k + 1, null);
      expected.push(`p;${Array.from(ids, (id) => names[id]).join(';')} ${k + 1}`);
    }
    expected.sort((a, b) =>
      Buffer.compare(Buffer.from(a.slice(0, a.lastIndexOf(' '))), Buffer.from(b.slice(0, b.lastIndexOf(' ')))),
    );
    const out = Array.from(table.lines(), (p) => p.toString('latin1')).join('');
    assert.equal(out, expected.join('\n') + '\n');
    assert.throws(() => [...table.lines()], /written already/);
  });

  it('writes nothing for no stacks', () => {
    assert.equal(text(arrays(['p'], [])), '');
  });
});
