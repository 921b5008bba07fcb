/** Python %-formatting (src/tools/framework/pyformat.ts); expected strings checked with CPython 3.11. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pyFloatStr, pyFormat } from '../../../src/tools/framework/pyformat.js';
import { wrap } from '../../../src/tools/framework/textwrap.js';

describe('pyFormat', () => {
  const cases: [string, (number | bigint | string)[], string][] = [
    ['%-6d %-16s %4d %3d ', [181, 'bash', 3, 0], '181    bash                3   0 '],
    ['%-6d %-16s %4d %3d ', [181, 'a-very-long-command-name', -1, 2], '181    a-very-long-command-name   -1   2 '],
    ['%-14.9f', [1.5], '1.500000000   '],
    ['%16.3f', [3415860.022], '     3415860.022'],
    ['%16.6f', [0.009806], '        0.009806'],
    ['%7.2f', [12.345], '  12.35'],
    ['%7.2f', [1.005], '   1.00'],
    ['%.2f %.2f %.0f %.0f', [1.125, 1.375, 0.5, 1.5], '1.12 1.38 0 2'],
    ['%.3f', [1e22], '10000000000000000000000.000'],
    ['%.9f', [5e-324], '0.000000000'],
    ['%08o n/a  ', [0o2000000], '02000000 n/a  '],
    ['%04o', [0o644], '0644'],
    ['%-*s|', [6, 'ab'], 'ab    |'],
    ['%-*d|', [8, 42], '42      |'],
    ['%-22s %8d', ['[unknown: 321]', 32n], '[unknown: 321]               32'],
    ['%10d -> %-10d : %-8d |%-*s|', [0, 1, 3n, 5, '**'], '         0 -> 1          : 3        |**   |'],
    ['%d%%', [50], '50%'],
    ['%+d % d %05d %-05d|', [3, 3, -42, 7], '+3  3 -0042 7    |'],
    ['%x %X %#x %#o', [255, 255, 255, 8], 'ff FF 0xff 0o10'],
    ['%d', [2.9], '2'],
    ['%d', [-2.9], '-2'],
    ['%.3s|%5.1s|', ['abcdef', 'xyz'], 'abc|    x|'],
    ['%ld', [18446744073709551615n], '18446744073709551615'],
    ['%c', [65], 'A'],
  ];
  for (const [fmt, args, want] of cases) {
    it(`${JSON.stringify(fmt)} % ${JSON.stringify(args.map(String))}`, () => {
      assert.equal(pyFormat(fmt, ...args), want);
    });
  }

  it('raises on missing and extra arguments, as Python does', () => {
    assert.throws(() => pyFormat('%d %d', 1), TypeError);
    assert.throws(() => pyFormat('%d', 1, 2), TypeError);
    assert.throws(() => pyFormat('%d', 'x'), TypeError);
  });
});

describe('textwrap.wrap', () => {
  it('wraps like Python (hyphens, long words)', () => {
    // textwrap.wrap(t, 20) in CPython 3.11
    assert.deepEqual(wrap('Summarize on- and off-CPU time per task as a histogram.', 20), [
      'Summarize on- and',
      'off-CPU time per',
      'task as a histogram.',
    ]);
    assert.deepEqual(wrap('display latency in milliseconds (default: microseconds)', 54), [
      'display latency in milliseconds (default:',
      'microseconds)',
    ]);
    assert.deepEqual(wrap('supercalifragilisticexpialidocious word', 10), [
      'supercalif',
      'ragilistic',
      'expialidoc',
      'ious word',
    ]);
    assert.deepEqual(wrap('well-known self-contained', 12), ['well-known', 'self-', 'contained']);
  });
});

describe('pyFloatStr (Python 3 str(float))', () => {
  it('matches CPython 3.11 repr', () => {
    const cases: [number, string][] = [
      [64, '64.0'],
      [4.5, '4.5'],
      [0.0009765625, '0.0009765625'],
      [1e-4, '0.0001'],
      [1e-5, '1e-05'],
      [1e15, '1000000000000000.0'],
      [1e16, '1e+16'],
      [1.5e16, '1.5e+16'],
      [1 / 3, '0.3333333333333333'],
      [-2.5, '-2.5'],
      [0, '0.0'],
      [123456789.125, '123456789.125'],
    ];
    for (const [x, want] of cases) assert.equal(pyFloatStr(x), want, String(x));
  });
});
