/**
 * printf() rendering, for every printf event in user space. The format string was parsed at compile time
 * (`lang/printf.ts`: syntax, argument classes and the compile-time argument check, after bpftrace v0.26
 * `src/format_string.cpp`); what follows applies each conversion to a value:
 * `%x` of -1 is `ffffffff`, `%lx` is `ffffffffffffffff`; `%c` prints the low byte; `%s` prints any value's text
 * form (an int prints in decimal, a tuple as `(1, abc)`).
 * Flags, width and precision are applied with C printf(3) semantics (glibc): `%.3d` → `042`, `%06d` of -42 →
 * `-00042`, `% d` → ` 42`, `%.2s` truncates, `%p` of 0 → `(nil)`. bpftrace 0.17 used C printf; bpftrace 0.26 formats
 * through C++ iostreams and ignores precision and the space flag — see docs/compat.md.
 */
import type { CompiledPrintf, PrintfSpec } from '../../lang/printf.js';
import type { SType } from '../../lang/types.js';
import type { Value } from './model.js';
import { valueText } from './text.js';

// The parser moved to lang/printf.ts (the analyser uses it and must not import the runtime); re-exported here.
export { checkPrintfArgs, compilePrintf, type CompiledPrintf, type PrintfSpec } from '../../lang/printf.js';

function pad(spec: PrintfSpec, prefix: string, body: string, zeroOk: boolean): string {
  const len = prefix.length + body.length;
  if (spec.width <= len) return prefix + body;
  const n = spec.width - len;
  if (spec.leftAlign) return prefix + body + ' '.repeat(n);
  if (zeroOk && spec.zeroPad && spec.precision < 0) return prefix + '0'.repeat(n) + body;
  return ' '.repeat(n) + prefix + body;
}

function formatInteger(spec: PrintfSpec, v: bigint, signed: boolean): string {
  const neg = v < 0n;
  const mag = neg ? -v : v;
  let digits = mag.toString(spec.base);
  if (spec.uppercase) digits = digits.toUpperCase();
  if (spec.precision >= 0) {
    if (mag === 0n && spec.precision === 0) digits = '';
    else if (digits.length < spec.precision) digits = digits.padStart(spec.precision, '0');
  }
  let prefix = '';
  if (signed) prefix = neg ? '-' : spec.showSign ? '+' : spec.spacePrefix ? ' ' : '';
  if (spec.alternate) {
    if (spec.base === 8 && digits.charCodeAt(0) !== 0x30) digits = '0' + digits;
    else if (spec.base === 16 && mag !== 0n) prefix += spec.uppercase ? '0X' : '0x';
  }
  return pad(spec, prefix, digits, true);
}

function formatPointer(spec: PrintfSpec, v: bigint): string {
  if (v === 0n) return pad(spec, '', '(nil)', false);
  let digits = v.toString(16);
  if (spec.precision >= 0 && digits.length < spec.precision) digits = digits.padStart(spec.precision, '0');
  const sign = spec.showSign ? '+' : spec.spacePrefix ? ' ' : '';
  return pad(spec, `${sign}0x`, digits, true);
}

function formatString(spec: PrintfSpec, s: string): string {
  if (spec.precision < 0 && spec.width === 0) return s;
  // C counts bytes; only non-ASCII strings need the byte view.
  const bytes = Buffer.byteLength(s, 'utf8');
  if (bytes === s.length) {
    const t = spec.precision >= 0 && s.length > spec.precision ? s.slice(0, spec.precision) : s;
    return pad(spec, '', t, false);
  }
  let t = s;
  let tlen = bytes;
  if (spec.precision >= 0 && bytes > spec.precision) {
    const b = Buffer.from(s, 'utf8').subarray(0, spec.precision);
    t = b.toString('utf8');
    tlen = b.length;
  }
  if (spec.width <= tlen) return t;
  const fill = ' '.repeat(spec.width - tlen);
  return spec.leftAlign ? t + fill : fill + t;
}

/** The integer a value converts to for `%d`-style conversions, or null for strings, tuples and none. */
function numericArg(v: Value): bigint | null {
  if (v.kind === 'int') return v.value;
  if (v.kind === 'bool') return v.value ? 1n : 0n;
  return null;
}

/** Format one argument for one conversion; a value of the wrong kind prints `!{message}` as bpftrace does. */
export function formatArg(spec: PrintfSpec, v: Value | undefined): string {
  if (v === undefined) return '!{missing argument}';
  if (spec.conv === 'r' && v.kind === 'string' && v.raw) return formatString(spec, v.value);
  if ((spec.conv === 'rx' || spec.conv === 'rh') && v.kind === 'string' && v.raw) {
    // %rx: every byte as \xNN; %rh: hex bytes separated by spaces (bpftrace)
    const hex = [...v.raw].map((b) => b.toString(16).padStart(2, '0'));
    return spec.conv === 'rx' ? hex.map((h) => `\\x${h}`).join('') : hex.join(' ');
  }
  if (spec.argClass === 'string') return formatString(spec, valueText(v));
  if (spec.argClass === 'unsupported') return `!{unsupported format specifier: ${spec.conv}}`;
  const n = numericArg(v);
  if (n === null) return `!{invalid integer conversion: ${valueText(v)}}`;
  switch (spec.argClass) {
    case 'signed':
      return formatInteger(spec, BigInt.asIntN(spec.bits, n), true);
    case 'unsigned':
      return formatInteger(spec, BigInt.asUintN(spec.bits, n), false);
    case 'char':
      return pad(spec, '', String.fromCharCode(Number(BigInt.asUintN(8, n))), false);
    case 'pointer':
      return formatPointer(spec, BigInt.asUintN(64, n));
  }
}

/**
 * Render a compiled format with its arguments (one per spec, in order). The hot path of printf events: no
 * parsing, no regular expressions.
 */
export function renderPrintf(compiled: CompiledPrintf, args: Value[]): string {
  const { fragments, specs } = compiled;
  let out = fragments[0]!;
  for (let i = 0; i < specs.length; i++) out += formatArg(specs[i]!, args[i]) + fragments[i + 1]!;
  return out;
}

/** Reads one integer argument and formats it, or returns null when it needs the general (BigInt) path. */
type IntArgFormatter = (data: Buffer, off: number) => string | null;

/** 2^32, for assembling 64-bit values from two 32-bit halves. */
const TWO_32 = 4294967296;
/** |high half| below this keeps hi * 2^32 + lo an exact double (< 2^53). */
const SAFE_HIGH = 2097152;

/**
 * The value of an integer argument of storage type `t` at `data[off..]` as a Number, or null if it is a 64-bit
 * value beyond 2^53 (the general path formats those with BigInt).
 */
function intReader(t: Extract<SType, { kind: 'int' }>): (data: Buffer, off: number) => number | null {
  switch (t.size) {
    case 1:
      return t.signed ? (d, o) => d.readInt8(o) : (d, o) => d[o]!;
    case 2:
      return t.signed ? (d, o) => d.readInt16LE(o) : (d, o) => d.readUInt16LE(o);
    case 4:
      return t.signed ? (d, o) => d.readInt32LE(o) : (d, o) => d.readUInt32LE(o);
    default:
      return t.signed
        ? (d, o) => {
            const hi = d.readInt32LE(o + 4);
            return hi < SAFE_HIGH && hi >= -SAFE_HIGH ? hi * TWO_32 + d.readUInt32LE(o) : null;
          }
        : (d, o) => {
            const hi = d.readUInt32LE(o + 4);
            return hi < SAFE_HIGH ? hi * TWO_32 + d.readUInt32LE(o) : null;
          };
  }
}

/**
 * The formatter of one plain integer conversion (`%d %i %u %x %X %o` with a length modifier but no flags, width or
 * precision) of an integer argument, equal to {@link formatArg}'s result: the value truncated to the spec's bits as
 * C's printf reads it. Undefined for anything else.
 */
function plainIntFormatter(spec: PrintfSpec, t: SType): IntArgFormatter | undefined {
  if (t.kind !== 'int' || (spec.argClass !== 'signed' && spec.argClass !== 'unsigned')) return undefined;
  if (spec.leftAlign || spec.showSign || spec.spacePrefix || spec.alternate || spec.zeroPad) return undefined;
  if (spec.width !== 0 || spec.precision !== -1) return undefined;
  // conversions of 32 bits or fewer only need the low half of a 64-bit value (the same in either signedness)
  const read = spec.bits <= 32 && t.size === 8 ? intReader({ ...t, size: 4 }) : intReader(t);
  const base = spec.base;
  const upper = spec.uppercase;
  const signed = spec.argClass === 'signed';
  let narrow: (n: number) => number;
  switch (spec.bits) {
    case 8:
      narrow = signed ? (n) => (n << 24) >> 24 : (n) => n & 0xff;
      break;
    case 16:
      narrow = signed ? (n) => (n << 16) >> 16 : (n) => n & 0xffff;
      break;
    case 32:
      // the low 32 bits of a double's integer value: exact for |n| < 2^53 (ToInt32/ToUint32 are modulo 2^32)
      narrow = signed ? (n) => n | 0 : (n) => n >>> 0;
      break;
    default:
      // 64 bits: an unsigned conversion of a negative value needs 2^64 + n, left to the general path
      narrow = signed ? (n) => n : (n) => (n < 0 ? NaN : n);
  }
  return (data, off) => {
    const v = read(data, off);
    if (v === null) return null;
    const n = narrow(v);
    if (n !== n) return null;
    const s = n.toString(base);
    return upper ? s.toUpperCase() : s;
  };
}

/**
 * A specialised renderer for a printf whose arguments are all integers printed by plain conversions (the common
 * `printf("%d %d\n", tid, nsecs)`): it reads the record with Number arithmetic instead of decoding BigInt values,
 * and produces exactly what {@link renderPrintf} would. `offsets` are the arguments' byte offsets from `base`.
 * Returns null when some argument does not qualify; the renderer itself returns null for a value it cannot
 * format exactly (a 64-bit value beyond 2^53), and the caller then uses the general path.
 */
export function compileIntPrintf(
  compiled: CompiledPrintf,
  argTypes: SType[],
  offsets: number[],
): ((data: Buffer, base: number) => string | null) | null {
  const { fragments, specs } = compiled;
  if (specs.length !== argTypes.length || specs.length === 0) return null;
  const fmts: IntArgFormatter[] = [];
  for (let i = 0; i < specs.length; i++) {
    const f = plainIntFormatter(specs[i]!, argTypes[i]!);
    if (!f) return null;
    fmts.push(f);
  }
  const n = fmts.length;
  return (data, base) => {
    let out = fragments[0]!;
    for (let i = 0; i < n; i++) {
      const s = fmts[i]!(data, base + offsets[i]!);
      if (s === null) return null;
      out += s + fragments[i + 1]!;
    }
    return out;
  };
}
