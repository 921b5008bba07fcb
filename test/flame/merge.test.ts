import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergeFrames, parseStacks } from '../../src/flame/merge.js';

/** The frames merged the general way; also checks that the ASCII path (bytes compared) gives the same. */
function frames(lines: string[], minTime = 0, opts = {}): string[] {
  const general = framesOf(lines, minTime, opts, false);
  assert.deepEqual(framesOf(lines, minTime, opts, true), general, 'ASCII path');
  return general;
}

function framesOf(lines: string[], minTime: number, opts: object, ascii: boolean): string[] {
  const f = mergeFrames(parseStacks(lines, opts), minTime, { ascii });
  const out: string[] = [];
  for (let i = 0; i < f.count; i++) {
    const d = f.delta[i]!;
    out.push(`${f.names[i]}@${f.depth[i]} ${f.stime[i]}-${f.etime[i]}${Number.isNaN(d) ? '' : ` d=${d}`}`);
  }
  return out.sort();
}

describe('merging stacks into frames', () => {
  it('merges shared prefixes of sorted lines', () => {
    assert.deepEqual(frames(['a;c 2', 'a;b 3', 'x 1']), ['@0 0-6', 'a@1 0-5', 'b@2 0-3', 'c@2 3-5', 'x@1 5-6']);
  });
  it('treats trailing ";" as nothing and empty frames as frames (Perl split)', () => {
    assert.deepEqual(frames(['a;b; 2', 'a;;c 1']), ['@0 0-3', '@2 0-1', 'a@1 0-3', 'b@2 1-3', 'c@3 0-1']);
  });
  it('does not merge "foo" with "foo.bar" or a prefix name', () => {
    assert.deepEqual(frames(['foo;x 1', 'foo.bar;x 1', 'foob 1']), [
      '@0 0-3',
      'foo.bar@1 0-1',
      'foo@1 1-2',
      'foob@1 2-3',
      'x@2 0-1',
      'x@2 1-2',
    ]);
  });
  it('prunes frames narrower than the minimum', () => {
    assert.deepEqual(frames(['a;b 10', 'a;c 1'], 2), ['@0 0-11', 'a@1 0-11', 'b@2 0-10']);
  });
  it('gives the leaf of a differential line its delta, other new frames 0', () => {
    assert.deepEqual(frames(['a;b 5 8', 'a;c 4 2']), ['@0 0-10 d=0', 'a@1 0-10 d=0', 'b@2 0-8 d=3', 'c@2 8-10 d=-2']);
  });
  it('keeps a frame that a zero-width one of the same name would overwrite in flamegraph.pl', () => {
    // flamegraph.pl loses "p;a" (width 3): "q;a" (count 0) closes at the same time with the same name and depth.
    assert.deepEqual(frames(['p;a 5 3', 'q;a 4 0', 'r 1 1']), [
      '@0 0-4 d=0',
      'a@2 0-3 d=-2',
      'a@2 3-3 d=-4',
      'p@1 0-3 d=0',
      'q@1 3-3 d=0',
      'r@1 3-4 d=0',
    ]);
  });
  it('keeps input order for flame charts', () => {
    assert.deepEqual(frames(['b 1', 'a 1', 'b 1'], 0, { order: 'input' }), ['@0 0-3', 'a@1 1-2', 'b@1 0-1', 'b@1 2-3']);
  });
});

/** flamegraph.pl's flow() written the plain way (split every line), for comparison on random input. */
function naiveFrames(lines: string[]): string[] {
  const parsed = parseStacks(lines);
  const out: string[] = [];
  let last: string[] = [];
  const start: number[] = [];
  let time = 0;
  const flow = (next: string[], v: number): void => {
    let same = 0;
    while (same < last.length && same < next.length && last[same] === next[same]) same++;
    for (let i = last.length - 1; i >= same; i--) out.push(`${last[i]}@${i} ${start[i]}-${v}`);
    for (let i = same; i < next.length; i++) start[i] = v;
    last = next;
  };
  parsed.stacks.forEach((stack, k) => {
    const parts = stack.split(';');
    while (parts.length && parts[parts.length - 1] === '') parts.pop();
    flow(['', ...parts], time);
    time += parsed.samples[k]!;
  });
  flow([], time);
  return out.sort();
}

describe('merging matches the plain algorithm on random stacks', () => {
  it('agrees on 300 random inputs with prefix-heavy names, empty frames and trailing ";"', () => {
    let seed = 7;
    const rnd = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    // Names of 1-9 and 40-41 characters: the ASCII path compares four bytes at a time, then bytes.
    const words = ['a', 'ab', 'a.b', 'a;', '', 'b', 'ba', 'abcd', 'abce', 'abcdefgh', 'abcdefgi', 'x'.repeat(40)];
    words.push(`${'x'.repeat(40)}y`, 'a b', 'x'.repeat(9));
    for (let round = 0; round < 300; round++) {
      const lines: string[] = [];
      const count = 1 + rnd(12);
      for (let l = 0; l < count; l++) {
        const depth = rnd(8);
        const frames: string[] = [];
        for (let d = 0; d < depth; d++) frames.push(words[rnd(words.length)]!);
        lines.push(`${frames.join(';')} ${1 + rnd(5)}`);
      }
      assert.deepEqual(frames(lines), naiveFrames(lines), lines.join(' | '));
    }
  });
});
