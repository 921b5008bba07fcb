import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { AddrCache } from '../../src/symbols/addrcache.js';

describe('AddrCache', () => {
  it('behaves like a Map keyed by (hi, lo) through inserts, overwrites, growth and filtering', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 0xffffffff }), fc.integer()), {
          maxLength: 300,
        }),
        (ops) => {
          const c = new AddrCache<number>(4);
          const m = new Map<string, number>();
          for (const [hiSel, lo, v] of ops) {
            const hi = [0, 1, 0xffffffff, 0x7fff][hiSel]!;
            c.set(hi, lo, v);
            m.set(`${hi}:${lo}`, v);
          }
          assert.equal(c.size, m.size);
          for (const [k, v] of m) {
            const [hi, lo] = k.split(':').map(Number);
            assert.equal(c.get(hi!, lo!), v);
          }
          c.filter((_hi, lo) => lo % 2 === 0);
          for (const [k, v] of m) {
            const [hi, lo] = k.split(':').map(Number);
            assert.equal(c.get(hi!, lo!), lo! % 2 === 0 ? v : undefined);
          }
          assert.equal(c.size, [...m.keys()].filter((k) => Number(k.split(':')[1]) % 2 === 0).length);
        },
      ),
      { seed: 42, numRuns: 200 },
    );
  });

  it('distinguishes keys that differ only in the high half, and clears', () => {
    const c = new AddrCache<string>();
    c.set(0xffffffff, 0x81000000, 'kernel');
    c.set(0, 0x81000000, 'user');
    assert.equal(c.get(0xffffffff, 0x81000000), 'kernel');
    assert.equal(c.get(0, 0x81000000), 'user');
    assert.equal(c.get(1, 0x81000000), undefined);
    c.clear();
    assert.equal(c.size, 0);
    assert.equal(c.get(0, 0x81000000), undefined);
  });
});
