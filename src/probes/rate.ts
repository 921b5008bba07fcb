/**
 * The rate part of `interval` and `profile` attach points, parsed as current bpftrace does
 * (`src/ast/passes/attachpoint_passes.cpp` frequency_parser and checks, `docs/language.md`):
 * - `PROVIDER:UNIT:N` with UNIT one of `s`, `ms`, `us`, `hz` and N a positive integer;
 * - `PROVIDER:N` where N is nanoseconds, optionally with a time suffix (`ns us ms s m h d`): `interval:1s`,
 *   `interval:1000000000`, `interval:500ms`. It must be at least 1000 ns and becomes `us` with N/1000 (truncated),
 *   so `interval:1s` is named `interval:us:1000000`, as bpftrace's `probe` builtin prints it.
 */
import type { AttachPoint } from '../lang/ast.js';
import { attachPointError } from './errors.js';
import { globToRegExp } from './glob.js';

/** The units bpftrace accepts in `interval:UNIT:N` / `profile:UNIT:N`. */
export const TIME_UNITS = ['s', 'ms', 'us', 'hz'] as const;
export type TimeUnit = (typeof TIME_UNITS)[number];

/** A parsed rate: `unit` and `count` as in the canonical name, plus what the perf event needs. */
export interface Rate {
  unit: TimeUnit;
  count: bigint;
  /** Period in ns (`sample_period`) for `s`/`ms`/`us`; absent for `hz`. */
  periodNs?: bigint;
  /** Frequency in Hz (`sample_freq` with the `freq` attr bit) for `hz`; absent otherwise. */
  freqHz?: bigint;
}

const NS_PER: Record<string, bigint> = {
  '': 1n,
  ns: 1n,
  us: 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
  d: 86_400_000_000_000n,
};

const U64_MAX = (1n << 64n) - 1n;

/**
 * Parse an unsigned integer as bpftrace's `util::to_uint` does, for the forms that make sense here: decimal, `0x`
 * hex, `0b` binary, `_` separators, `1e9` style exponents (coefficient 1-9), and, when `timeSuffix`, a time unit
 * suffix (`ns us ms s m h d`) multiplying into nanoseconds. Returns an error text instead of throwing.
 */
export function parseUint(text: string, timeSuffix: boolean): bigint | string {
  const s = text.replace(/_/g, '');
  const m = /^(0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)(?:[eE](\d+))?([a-z]*)$/.exec(s);
  if (!m) return `invalid integer: ${text}`;
  let v = BigInt(m[1]!.startsWith('0b') || m[1]!.startsWith('0B') ? `0b${m[1]!.slice(2)}` : m[1]!);
  if (m[2] !== undefined) {
    if (v <= 0n || v >= 10n) return `coefficient part of scientific literal must be 1-9: ${text}`;
    v *= 10n ** BigInt(m[2]);
  }
  const suffix = m[3]!;
  if (suffix !== '') {
    const mult = timeSuffix ? NS_PER[suffix] : undefined;
    if (mult === undefined) return `invalid trailing bytes: ${text}`;
    v *= mult;
  }
  if (v > U64_MAX) return `overflow error, maximum value is ${U64_MAX}: ${text}`;
  return v;
}

/**
 * Parse `ap.parts` of an `interval` or `profile` attach point (`provider` is the canonical name, for messages).
 * @throws CompileError at the attach point with bpftrace's messages: `interval probe type requires 1 or 2 arguments,
 * found N`, `x is not an accepted unit of time`, `Invalid rate of interval probe: invalid integer: x`,
 * `interval frequency should be a positive integer`, `Invalid rate of interval probe. Minimum is 1000 or 1us. Found:
 * N nanoseconds`.
 */
export function parseRate(ap: AttachPoint, provider: 'interval' | 'profile'): Rate {
  const parts = ap.parts;
  if (parts.length === 1) {
    const ns = parseUint(parts[0]!, true);
    if (typeof ns === 'string') throw attachPointError(ap, `Invalid rate of ${provider} probe: ${ns}`);
    if (ns < 1000n) {
      throw attachPointError(ap, `Invalid rate of ${provider} probe. Minimum is 1000 or 1us. Found: ${ns} nanoseconds`);
    }
    const count = ns / 1000n;
    return { unit: 'us', count, periodNs: count * 1000n };
  }
  if (parts.length !== 2) {
    throw attachPointError(ap, `${provider} probe type requires 1 or 2 arguments, found ${parts.length}`);
  }
  const unit = parts[0]!;
  if (unit === '') throw attachPointError(ap, `${provider} probe must have unit of time`);
  if (!(TIME_UNITS as readonly string[]).includes(unit)) {
    throw attachPointError(ap, `${unit} is not an accepted unit of time`, `accepted units: ${TIME_UNITS.join(', ')}`);
  }
  const count = parseUint(parts[1]!, false);
  if (typeof count === 'string') throw attachPointError(ap, `Invalid rate of ${provider} probe: ${count}`);
  if (count <= 0n) throw attachPointError(ap, `${provider} frequency should be a positive integer`);
  const u = unit as TimeUnit;
  if (u === 'hz') return { unit: u, count, freqHz: count };
  const periodNs = count * NS_PER[u]!;
  if (periodNs > U64_MAX) throw attachPointError(ap, `Invalid rate of ${provider} probe: period overflows 64 bits`);
  return { unit: u, count, periodNs };
}

/** Canonical probe name: `PROVIDER:UNIT:COUNT`. */
export function rateProbeName(provider: string, rate: Rate): string {
  return `${provider}:${rate.unit}:${rate.count}`;
}

/**
 * `-l interval:SEARCH` / `-l profile:SEARCH`: bpftrace lists one `PROVIDER:UNIT:` line per time unit, sorted
 * (`probe_matcher.cpp`, TIME_UNITS); SEARCH is a glob over the `UNIT:` lines, or one unit without its colon.
 */
export function listRateUnits(provider: string, search: string): string[] {
  const re = globToRegExp(search || '*');
  return [...TIME_UNITS]
    .filter((u) => re.test(`${u}:`) || re.test(u))
    .sort()
    .map((u) => `${provider}:${u}:`);
}
