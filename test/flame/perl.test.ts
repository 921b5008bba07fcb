import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { cFixed, cFixedValue, commas, perlNum, perlNumify, perlSplit } from '../../src/flame/perl.js';

describe('cFixed (C printf %.Nf)', () => {
  it('rounds exact binary ties to even, as glibc does', () => {
    assert.equal(cFixed(0.25, 1), '0.2');
    assert.equal(cFixed(0.75, 1), '0.8');
    assert.equal(cFixed(0.125, 2), '0.12');
    assert.equal(cFixed(2.5, 0), '2');
    assert.equal(cFixed(3.5, 0), '4');
    assert.equal(cFixed(-0.5, 0), '-0');
  });
  it('rounds non-ties by the exact binary value', () => {
    assert.equal(cFixed(0.35, 1), '0.3'); // 0.35 is 0.34999999999999997779...
    assert.equal(cFixed(1.005, 2), '1.00');
    assert.equal(cFixed(114.85000000000001, 1), '114.9');
  });
  it('keeps the sign of negative values that round to zero', () => {
    assert.equal(cFixed(-0.001, 2), '-0.00');
    assert.equal(cFixed(0, 2), '0.00');
  });
  it('prints large values in full', () => {
    assert.equal(cFixed(1e21, 0), '1000000000000000000000');
    assert.equal(cFixed(1e21, 1), '1000000000000000000000.0');
  });
  it('agrees with exact decimal rounding of the binary value for 0-2 digits (the fast path)', () => {
    // Deterministic values like flame graph geometry: pixels, percentages, near-ties, large counts.
    let seed = 12345;
    const rand = (): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    const values = [0.05, 0.15, 1.005, 2.675, 10.5, 99.995, 1200, 21474836.47, 214748364.75, 2 ** 31 / 100];
    for (let i = 0; i < 20000; i++) {
      values.push(rand() * 1200, Math.round(rand() * 1e6) / 1000, (Math.floor(rand() * 1e5) + 0.5) / 100);
      values.push(rand() * 1e9 * rand(), (rand() * 1e4) / 3);
    }
    for (const x of values) {
      for (const d of [0, 1, 2]) assert.equal(cFixed(x, d), exactFixed(x, d), `cFixed(${x}, ${d})`);
    }
  });
});

/** printf("%.<d>f", x) for a finite x >= 0 by exact big-integer arithmetic: the reference for cFixed. */
function exactFixed(x: number, d: number): string {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const exp = Number((bits >> 52n) & 0x7ffn);
  let mant = bits & ((1n << 52n) - 1n);
  let e = -1074;
  if (exp !== 0) {
    mant |= 1n << 52n;
    e = exp - 1075;
  }
  let num = mant * 10n ** BigInt(d);
  let den = 1n;
  if (e >= 0) num <<= BigInt(e);
  else den <<= BigInt(-e);
  let q = num / den;
  const r = num - q * den;
  if (2n * r > den || (2n * r === den && q % 2n === 1n)) q += 1n;
  const s = q.toString().padStart(d + 1, '0');
  return d ? `${s.slice(0, s.length - d)}.${s.slice(s.length - d)}` : s;
}

describe('perlNum (Perl number stringification, %.15g)', () => {
  it('matches perl -e print', () => {
    assert.equal(perlNum(959.5), '959.5');
    assert.equal(perlNum(0.1 + 0.2), '0.3');
    assert.equal(perlNum(1 / 3), '0.333333333333333');
    assert.equal(perlNum(1e15), '1e+15');
    assert.equal(perlNum(1e-5), '1e-05');
    assert.equal(perlNum(2 ** 64), '1.84467440737096e+19');
    assert.equal(perlNum(-0), '0');
    assert.equal(perlNum(1157), '1157');
  });
});

describe('helpers', () => {
  it('commas groups thousands', () => {
    assert.equal(commas('1234567'), '1,234,567');
    assert.equal(commas('-1234'), '-1,234');
    assert.equal(commas('999'), '999');
    assert.equal(commas('1000'), '1,000');
  });
  it('perlSplit drops trailing empty fields only', () => {
    assert.deepEqual(perlSplit('a;b;', ';'), ['a', 'b']);
    assert.deepEqual(perlSplit(';a', ';'), ['', 'a']);
    assert.deepEqual(perlSplit('a;;b', ';'), ['a', '', 'b']);
    assert.deepEqual(perlSplit('', ';'), []);
    assert.deepEqual(perlSplit('->', '->'), []);
  });
  it('perlNumify takes the leading number', () => {
    assert.equal(perlNumify('1.2.3'), 1.2);
    assert.equal(perlNumify('12abc'), 12);
    assert.equal(perlNumify('abc'), 0);
    assert.equal(perlNumify(' 5e2x'), 500);
  });
});

const hasPerl = spawnSync('perl', ['-e', '1']).status === 0;
describe('against perl itself', { skip: !hasPerl && 'perl not installed' }, () => {
  it('formats 5000 varied doubles as perl\'s print and sprintf("%.1f|%.2f|%.0f") do', () => {
    // Deterministic values: integers, halves and eighths (exact ties), thirds, tenths, wide magnitudes, negatives.
    const xs: number[] = [];
    let seed = 12345;
    const rnd = (): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    for (let i = 0; i < 1000; i++) {
      const r = rnd();
      xs.push(r * 10 ** (Math.floor(rnd() * 22) - 6), Math.round(r * 1e4) / 8, 0.1 * i, i / 3, -r * 100);
    }
    const text = xs.map((x) => x.toPrecision(17)).join('\n');
    const out = spawnSync(
      'perl',
      ['-ne', 'chomp; my $x = $_ + 0; print "$x|", sprintf("%.1f|%.2f|%.0f", $x, $x, $x), "\\n"'],
      {
        input: `${text}\n`,
      },
    );
    const want = out.stdout.toString().trimEnd().split('\n');
    const got = xs.map((x0) => {
      const x = Number(x0.toPrecision(17));
      return `${perlNum(x)}|${cFixed(x, 1)}|${cFixed(x, 2)}|${cFixed(x, 0)}`;
    });
    assert.deepEqual(got, want);
  });
});

describe('cFixedValue', () => {
  it('equals Number(cFixed(x, d)) near and far from ties', () => {
    const xs = [0.25, 0.35, 114.85000000000001, 2.5, 3.5, 1180, 0.05, 1e-7, 123456.789, 1 / 3, 2 / 3, 1e20];
    for (let i = 0; i < 2000; i++) xs.push(i / 8, i / 10, i * 1.1, (i * 1180) / 247);
    for (const x of xs) for (const d of [0, 1, 2]) assert.equal(cFixedValue(x, d), Number(cFixed(x, d)), `${x} ${d}`);
  });
});
