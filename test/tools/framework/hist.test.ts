/**
 * bcc's histogram formats (src/tools/framework/hist.ts) against bcc's own formatter: the fixture
 * test/tools/fixtures/bcc-hist.json holds the text iovisor/bcc's table.py (_print_log2_hist, _print_linear_hist,
 * _get_json_hist) printed for each set of slots under CPython 3.11. Also: bpftrace hist()/lhist() buckets →
 * bcc slots, checked against bcc's bpf_log2l().
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { linearBucketIndex, log2BucketIndex } from '../../../src/runtime/output/hist.js';
import {
  bccLinearSlots,
  bccLog2Slots,
  formatLinearHist,
  formatLog2Hist,
  formatSectionedLog2Hist,
  jsonLog2Hist,
  LOG2_SLOTS,
  stars,
} from '../../../src/tools/framework/hist.js';
import { repoRoot } from '../../helpers/cli.js';

interface Fixture {
  log2: { name: string; slots: Record<string, string>; valType: string; strip: boolean; text: string }[];
  linear: { name: string; vals: string[]; valType: string; strip: boolean; text: string }[];
  json: { name: string; slots: Record<string, string>; section: [string, string] | null; value: unknown }[];
}

const fixture = JSON.parse(
  readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', 'bcc-hist.json'), 'utf8'),
) as Fixture;

function slotArray(slots: Record<string, string>): bigint[] {
  const v = new Array<bigint>(LOG2_SLOTS).fill(0n);
  for (const [k, c] of Object.entries(slots)) v[Number(k)] = BigInt(c);
  return v;
}

/** bcc's bpf_log2l() (bcc/src/cc/export/helpers.h): 0 and 1 → 1, else floor(log2(v)) + 1. */
function bpfLog2l(v: bigint): number {
  return v <= 1n ? 1 : v.toString(2).length;
}

describe('bcc print_log2_hist', () => {
  for (const c of fixture.log2) {
    it(`matches bcc's table.py: ${c.name}`, () => {
      assert.equal(formatLog2Hist(slotArray(c.slots), c.valType, c.strip), c.text);
    });
  }

  it('the bitesize example, literally', () => {
    const vals = slotArray({ 1: '1', 3: '2' });
    assert.equal(
      formatLog2Hist(vals, 'Kbytes'),
      '     Kbytes              : count     distribution\n' +
        '         0 -> 1          : 1        |********************                    |\n' +
        '         2 -> 3          : 0        |                                        |\n' +
        '         4 -> 7          : 2        |****************************************|\n',
    );
  });

  it('sections: "\\n<header> = <label>" before each histogram', () => {
    const text = formatSectionedLog2Hist(
      [
        { label: 'sda', vals: slotArray({ 2: '4' }) },
        { label: 'loop0', vals: slotArray({ 1: '1' }) },
      ],
      'disk',
      'usecs',
    );
    assert.equal(
      text,
      '\ndisk = sda\n' +
        '     usecs               : count     distribution\n' +
        '         0 -> 1          : 0        |                                        |\n' +
        '         2 -> 3          : 4        |****************************************|\n' +
        '\ndisk = loop0\n' +
        '     usecs               : count     distribution\n' +
        '         0 -> 1          : 1        |****************************************|\n',
    );
  });

  it('stars: floor(width * val / max), capped', () => {
    assert.equal(stars(0n, 10n, 40), '');
    assert.equal(stars(1n, 3n, 40), '*'.repeat(13));
    assert.equal(stars(2n, 3n, 40), '*'.repeat(26));
    assert.equal(stars(3n, 3n, 40), '*'.repeat(40));
    assert.equal(stars(39n, 40n, 40), '*'.repeat(39));
  });
});

describe('bcc print_linear_hist', () => {
  for (const c of fixture.linear) {
    it(`matches bcc's table.py: ${c.name}`, () => {
      assert.equal(formatLinearHist(c.vals.map(BigInt), c.valType, c.strip), c.text);
    });
  }
});

describe('bcc JSON histogram', () => {
  for (const c of fixture.json) {
    it(`matches bcc's _get_json_hist: ${c.name}`, () => {
      const got = jsonLog2Hist(slotArray(c.slots), 'usecs', '2024-01-02 03:04:05', c.section ?? undefined);
      assert.deepEqual(got, c.value);
    });
  }
});

describe('bpftrace buckets → bcc slots', () => {
  const toBuckets = (values: bigint[], index: (v: bigint) => number): Map<number, bigint> => {
    const m = new Map<number, bigint>();
    for (const v of values) m.set(index(v), (m.get(index(v)) ?? 0n) + 1n);
    return m;
  };

  it('log2: each value lands in the slot bcc would give it', () => {
    const values = [
      0n,
      1n,
      2n,
      3n,
      4n,
      7n,
      8n,
      1023n,
      1024n,
      (1n << 62n) + 5n,
      (1n << 63n) - 1n,
      1n << 63n,
      (1n << 64n) - 1n,
    ];
    for (const v of values) {
      const slots = bccLog2Slots(toBuckets([v], (x) => log2BucketIndex(x)));
      const expected = new Array<bigint>(LOG2_SLOTS).fill(0n);
      expected[bpfLog2l(v)] = 1n;
      assert.deepEqual(slots, expected, `value ${v}`);
    }
  });

  it('log2: random u64 values (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), { maxLength: 50 }), (values) => {
        const slots = bccLog2Slots(toBuckets(values, (x) => log2BucketIndex(x)));
        const expected = new Array<bigint>(LOG2_SLOTS).fill(0n);
        for (const v of values) expected[bpfLog2l(v)]! += 1n;
        assert.deepEqual(slots, expected);
      }),
    );
  });

  it('linear: lhist(v, 0, max, 1) → slot v; overflow in slot max; negatives dropped', () => {
    const values = [0n, 2n, 2n, 5n, 9n, -3n];
    const slots = bccLinearSlots(toBuckets(values, (x) => linearBucketIndex(x, 0, 8, 1)));
    assert.deepEqual(slots, [1n, 0n, 2n, 0n, 0n, 1n, 0n, 0n, 1n]);
  });
});
