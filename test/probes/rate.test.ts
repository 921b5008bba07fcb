import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CompileError } from '../../src/lang/diagnostics.js';
import { IntervalProvider } from '../../src/probes/interval.js';
import { ProfileProvider } from '../../src/probes/profile.js';
import { parseRate, parseUint } from '../../src/probes/rate.js';
import { BPF_PROG_TYPE } from '../../src/probes/types.js';
import { attachPoint } from './helpers.js';

function message(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof CompileError);
    return e.diagnostics.map((d) => d.message).join('\n');
  }
  assert.fail('expected a CompileError');
}

describe('parseUint', () => {
  it('accepts bpftrace integer forms', () => {
    assert.equal(parseUint('100', false), 100n);
    assert.equal(parseUint('1_000', false), 1000n);
    assert.equal(parseUint('0x10', false), 16n);
    assert.equal(parseUint('0b101', false), 5n);
    assert.equal(parseUint('1e9', false), 1_000_000_000n);
    assert.equal(parseUint('5s', true), 5_000_000_000n);
    assert.equal(parseUint('250ms', true), 250_000_000n);
    assert.equal(parseUint('3us', true), 3000n);
    assert.equal(parseUint('2m', true), 120_000_000_000n);
  });
  it('rejects junk, suffixes where not allowed, bad exponents and overflow', () => {
    assert.equal(parseUint('abc', false), 'invalid integer: abc');
    assert.equal(parseUint('5s', false), 'invalid trailing bytes: 5s');
    assert.equal(parseUint('5parsecs', true), 'invalid trailing bytes: 5parsecs');
    assert.equal(parseUint('12e3', false), 'coefficient part of scientific literal must be 1-9: 12e3');
    assert.equal(
      parseUint('99999999999999999999', false),
      'overflow error, maximum value is 18446744073709551615: 99999999999999999999',
    );
  });
});

describe('parseRate', () => {
  it('parses UNIT:N forms into period or frequency', () => {
    assert.deepEqual(parseRate(attachPoint('interval:s:1'), 'interval'), {
      unit: 's',
      count: 1n,
      periodNs: 1_000_000_000n,
    });
    assert.deepEqual(parseRate(attachPoint('interval:ms:100'), 'interval'), {
      unit: 'ms',
      count: 100n,
      periodNs: 100_000_000n,
    });
    assert.deepEqual(parseRate(attachPoint('interval:us:50'), 'interval'), {
      unit: 'us',
      count: 50n,
      periodNs: 50_000n,
    });
    assert.deepEqual(parseRate(attachPoint('profile:hz:99'), 'profile'), { unit: 'hz', count: 99n, freqHz: 99n });
  });
  it('parses the one-part nanosecond form as bpftrace does (us, truncated)', () => {
    assert.deepEqual(parseRate(attachPoint('interval:1s'), 'interval'), {
      unit: 'us',
      count: 1_000_000n,
      periodNs: 1_000_000_000n,
    });
    assert.deepEqual(parseRate(attachPoint('interval:1500'), 'interval'), { unit: 'us', count: 1n, periodNs: 1000n });
  });
  it("reports bpftrace's errors", () => {
    assert.equal(
      message(() => parseRate(attachPoint('interval:100'), 'interval')),
      'Invalid rate of interval probe. Minimum is 1000 or 1us. Found: 100 nanoseconds',
    );
    assert.equal(
      message(() => parseRate(attachPoint('interval'), 'interval')),
      'interval probe type requires 1 or 2 arguments, found 0',
    );
    assert.equal(
      message(() => parseRate(attachPoint('profile:a:b:c'), 'profile')),
      'profile probe type requires 1 or 2 arguments, found 3',
    );
    assert.equal(
      message(() => parseRate(attachPoint('interval:m:1'), 'interval')),
      'm is not an accepted unit of time',
    );
    assert.equal(
      message(() => parseRate(attachPoint('interval::1'), 'interval')),
      'interval probe must have unit of time',
    );
    assert.equal(
      message(() => parseRate(attachPoint('interval:s:x'), 'interval')),
      'Invalid rate of interval probe: invalid integer: x',
    );
    assert.equal(
      message(() => parseRate(attachPoint('profile:hz:0'), 'profile')),
      'profile frequency should be a positive integer',
    );
    assert.equal(
      message(() => parseRate(attachPoint('interval:s:1s'), 'interval')),
      'Invalid rate of interval probe: invalid trailing bytes: 1s',
    );
  });
});

describe('IntervalProvider / ProfileProvider', () => {
  it('name probes as the probe builtin prints them, with PERF_EVENT programs', () => {
    const [i] = new IntervalProvider().expand(attachPoint('i:ms:100'));
    assert.deepEqual(
      [i!.name, i!.provider, i!.progType, i!.args],
      ['interval:ms:100', 'interval', BPF_PROG_TYPE.PERF_EVENT, null],
    );
    assert.equal(new IntervalProvider().expand(attachPoint('interval:1s'))[0]!.name, 'interval:us:1000000');
    const [p] = new ProfileProvider().expand(attachPoint('p:hz:99'));
    assert.deepEqual([p!.name, p!.provider, p!.progType], ['profile:hz:99', 'profile', BPF_PROG_TYPE.PERF_EVENT]);
    assert.equal(new ProfileProvider().expand(attachPoint('profile:0x10ms'))[0]!.name, 'profile:us:16000');
  });
});
