/**
 * strftime(3) in TypeScript, for the `time()` and `strftime()` builtins. Behaves like glibc's strftime in the C
 * locale (bpftrace does not set a locale): every POSIX conversion plus the GNU ones (`%k %l %P %s %e %C %g %G %V`),
 * GNU flags `_ - 0 ^ #` and a field width (`%-d`, `%_H`, `%10Y`, `%^a`), `E`/`O` modifiers accepted and ignored;
 * an unknown conversion is copied literally (as glibc does). One deliberate difference: `%s` of a UTC breakdown is
 * the real epoch (glibc computes `%s` with mktime(), which reads a gmtime() result as local time).
 * Local time uses the process time zone (`TZ`); `%Z` comes from Intl (`CET` may print as `GMT+1` for zones
 * without an English abbreviation, where glibc prints the tz database abbreviation).
 *
 * bpftrace specifics (v0.26 `src/async_action.cpp` `time`, `src/bpftrace.cpp` `format_timestamp`):
 * - `time(fmt)`: wall time now, local, plain strftime, default format `%H:%M:%S\n`, the result must fit in
 *   63 bytes;
 * - `strftime(fmt, ns)`: `%f` (microseconds, 6 digits), `%k` (nanoseconds, 9 digits) and `%l` (milliseconds,
 *   3 digits) are replaced first (they shadow glibc's `%k`/`%l`), the result must fit in `max_strlen - 1`
 *   bytes, otherwise it is `(?)`; a timestamp of 0 seconds prints `(?)`.
 */
import { BpfscopeError } from '../../errors.js';

/** bpftrace's default `time()` format. */
export const DEFAULT_TIME_FORMAT = '%H:%M:%S\n';

/** Broken-down time, as C's `struct tm` plus what `%s`, `%z` and `%Z` need. */
export interface BrokenDownTime {
  year: number;
  /** 0..11 */
  month: number;
  /** 1..31 */
  mday: number;
  hour: number;
  minute: number;
  second: number;
  /** 0 = Sunday */
  wday: number;
  /** 0..365 */
  yday: number;
  /** Seconds east of UTC. */
  gmtoff: number;
  zone: string;
  /** Seconds since the epoch. */
  epoch: bigint;
}

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

let zoneFormatter: { tz: string | undefined; fmt: Intl.DateTimeFormat } | null = null;

function zoneName(d: Date): string {
  const tz = process.env.TZ;
  if (!zoneFormatter || zoneFormatter.tz !== tz) {
    zoneFormatter = { tz, fmt: new Intl.DateTimeFormat('en-US', { timeZoneName: 'short' }) };
  }
  return zoneFormatter.fmt.formatToParts(d).find((p) => p.type === 'timeZoneName')?.value ?? '';
}

/** Break `epochMs` (ms since the epoch) down in local time (or UTC, where `%Z` is `GMT` as glibc's gmtime). */
export function breakDown(epochMs: number, utc = false): BrokenDownTime {
  const d = new Date(epochMs);
  const year = utc ? d.getUTCFullYear() : d.getFullYear();
  const month = utc ? d.getUTCMonth() : d.getMonth();
  const mday = utc ? d.getUTCDate() : d.getDate();
  const yday = Math.round((Date.UTC(year, month, mday) - Date.UTC(year, 0, 1)) / 86400000);
  return {
    year,
    month,
    mday,
    hour: utc ? d.getUTCHours() : d.getHours(),
    minute: utc ? d.getUTCMinutes() : d.getMinutes(),
    second: utc ? d.getUTCSeconds() : d.getSeconds(),
    wday: utc ? d.getUTCDay() : d.getDay(),
    yday,
    gmtoff: utc ? 0 : -d.getTimezoneOffset() * 60,
    zone: utc ? 'GMT' : zoneName(d),
    epoch: BigInt(Math.floor(epochMs / 1000)),
  };
}

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

/** ISO 8601 week-based year and week number (glibc's `iso_week_days` logic). */
function isoWeek(t: BrokenDownTime): { year: number; week: number } {
  // Days since the Monday starting ISO week 1 of `year`.
  const isoWeekDays = (yday: number, wday: number): number => {
    const bigEnoughMultipleOf7 = (Math.floor(366 / 7) + 2) * 7;
    return yday - ((yday - wday + 4 + bigEnoughMultipleOf7) % 7) + 3;
  };
  let year = t.year;
  let days = isoWeekDays(t.yday, t.wday);
  if (days < 0) {
    year--;
    days = isoWeekDays(t.yday + (isLeap(year) ? 366 : 365), t.wday);
  } else {
    const d = isoWeekDays(t.yday - (isLeap(year) ? 366 : 365), t.wday);
    if (d >= 0) {
      year++;
      days = d;
    }
  }
  return { year, week: Math.floor(days / 7) + 1 };
}

function floorDiv(a: number, b: number): number {
  return Math.floor(a / b);
}

interface Field {
  /** Flags `_ - 0 ^ #` as written. */
  flag: string;
  upcase: boolean;
  swapcase: boolean;
  /** Explicit width, -1 when absent. */
  width: number;
}

function num(f: Field, value: number | bigint, digits: number, padChar: '0' | ' '): string {
  const neg = value < 0;
  const s = (neg ? -value : value).toString();
  // glibc: `-` drops the default padding, but an explicit width still pads (with spaces).
  if (f.flag === '-' && f.width < 0) return neg ? `-${s}` : s;
  let fill: string = padChar;
  if (f.flag === '_' || f.flag === '-') fill = ' ';
  else if (f.flag === '0') fill = '0';
  const w = f.width >= 0 ? f.width : digits;
  if (fill === '0') {
    const body = s.padStart(w - (neg ? 1 : 0), '0');
    return neg ? `-${body}` : body;
  }
  return (neg ? `-${s}` : s).padStart(w, ' ');
}

/** Text conversions: `^` uppercases, `#` flips case (`caseFlip`); `%P` is always lowercase (glibc). */
function text(f: Field, s: string, caseFlip: 'upper' | 'lower' | null, forceLower = false): string {
  let r = s;
  if (forceLower) r = r.toLowerCase();
  else if (f.upcase) r = r.toUpperCase();
  else if (f.swapcase && caseFlip) r = caseFlip === 'upper' ? r.toUpperCase() : r.toLowerCase();
  if (f.width > r.length) r = r.padStart(f.width, f.flag === '0' ? '0' : ' ');
  return r;
}

/**
 * Format broken-down time `t` with a strftime(3) format (see the module docstring for what is supported).
 * Returns the whole result; callers apply bpftrace's length limits.
 */
export function strftime(fmt: string, t: BrokenDownTime): string {
  let out = '';
  let i = 0;
  while (i < fmt.length) {
    const pct = fmt.indexOf('%', i);
    if (pct === -1) {
      out += fmt.slice(i);
      break;
    }
    out += fmt.slice(i, pct);
    let j = pct + 1;
    const f: Field = { flag: '', upcase: false, swapcase: false, width: -1 };
    for (;;) {
      const c = fmt[j];
      if (c === '_' || c === '-' || c === '0') f.flag = c;
      else if (c === '^') f.upcase = true;
      else if (c === '#') f.swapcase = true;
      else break;
      j++;
    }
    const ws = j;
    while (j < fmt.length && fmt.charCodeAt(j) >= 0x30 && fmt.charCodeAt(j) <= 0x39) j++;
    if (j > ws) f.width = Number.parseInt(fmt.slice(ws, j), 10);
    if (fmt[j] === 'E' || fmt[j] === 'O') j++;
    const conv = fmt[j];
    const r = conv === undefined ? null : convert(conv, f, t);
    if (r === null) {
      // Unknown conversion or `%` at the end: copied literally, as glibc does.
      out += fmt.slice(pct, conv === undefined ? j : j + 1);
      i = conv === undefined ? j : j + 1;
      continue;
    }
    out += r;
    i = j + 1;
  }
  return out;
}

function composite(f: Field, sub: string, t: BrokenDownTime): string {
  return text(f, strftime(sub, t), null);
}

function convert(conv: string, f: Field, t: BrokenDownTime): string | null {
  const hour12 = t.hour % 12 === 0 ? 12 : t.hour % 12;
  switch (conv) {
    case '%':
      return text(f, '%', null);
    case 'a':
      return text(f, DAYS[t.wday]!.slice(0, 3), 'upper');
    case 'A':
      return text(f, DAYS[t.wday]!, 'upper');
    case 'b':
    case 'h':
      return text(f, MONTHS[t.month]!.slice(0, 3), 'upper');
    case 'B':
      return text(f, MONTHS[t.month]!, 'upper');
    case 'c':
      return composite(f, '%a %b %e %H:%M:%S %Y', t);
    case 'C':
      return num(f, floorDiv(t.year, 100), 2, '0');
    case 'd':
      return num(f, t.mday, 2, '0');
    case 'D':
      return composite(f, '%m/%d/%y', t);
    case 'e':
      return num(f, t.mday, 2, ' ');
    case 'F':
      return composite(f, '%Y-%m-%d', t);
    case 'g':
      return num(f, ((isoWeek(t).year % 100) + 100) % 100, 2, '0');
    case 'G':
      return num(f, isoWeek(t).year, 1, '0');
    case 'H':
      return num(f, t.hour, 2, '0');
    case 'I':
      return num(f, hour12, 2, '0');
    case 'j':
      return num(f, t.yday + 1, 3, '0');
    case 'k':
      return num(f, t.hour, 2, ' ');
    case 'l':
      return num(f, hour12, 2, ' ');
    case 'm':
      return num(f, t.month + 1, 2, '0');
    case 'M':
      return num(f, t.minute, 2, '0');
    case 'n':
      return text(f, '\n', null);
    case 'p':
      return text(f, t.hour < 12 ? 'AM' : 'PM', 'lower');
    case 'P':
      return text(f, t.hour < 12 ? 'am' : 'pm', null, true);
    case 'r':
      return composite(f, '%I:%M:%S %p', t);
    case 'R':
      return composite(f, '%H:%M', t);
    case 's':
      return num(f, t.epoch, 1, '0');
    case 'S':
      return num(f, t.second, 2, '0');
    case 't':
      return text(f, '\t', null);
    case 'T':
      return composite(f, '%H:%M:%S', t);
    case 'u':
      return num(f, t.wday === 0 ? 7 : t.wday, 1, '0');
    case 'U':
      return num(f, floorDiv(t.yday - t.wday + 7, 7), 2, '0');
    case 'V':
      return num(f, isoWeek(t).week, 2, '0');
    case 'w':
      return num(f, t.wday, 1, '0');
    case 'W':
      return num(f, floorDiv(t.yday - ((t.wday - 1 + 7) % 7) + 7, 7), 2, '0');
    case 'x':
      return composite(f, '%m/%d/%y', t);
    case 'X':
      return composite(f, '%H:%M:%S', t);
    case 'y':
      return num(f, ((t.year % 100) + 100) % 100, 2, '0');
    case 'Y':
      return num(f, t.year, 1, '0');
    case 'z': {
      const off = Math.abs(t.gmtoff);
      const hhmm = Math.floor(off / 3600) * 100 + Math.floor((off % 3600) / 60);
      const s = hhmm.toString().padStart(4, '0');
      return text(f, (t.gmtoff < 0 ? '-' : '+') + s, null);
    }
    case 'Z':
      return text(f, t.zone, 'lower');
    default:
      return null;
  }
}

function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/**
 * The `time(fmt)` builtin: the current wall-clock time (or `nowMs`) in local time, formatted with strftime.
 * Throws BpfscopeError `strftime returned zero` when the result is empty or longer than 63 bytes (bpftrace's
 * 64-byte buffer).
 */
export function formatTimeBuiltin(fmt: string = DEFAULT_TIME_FORMAT, nowMs: number = Date.now()): string {
  const s = strftime(fmt, breakDown(nowMs));
  const n = byteLength(s);
  if (n === 0 || n >= 64) throw new BpfscopeError('time(): strftime returned zero');
  return s;
}

/**
 * The `strftime(fmt, ns)` builtin's user-space half: `epochNs` is wall-clock nanoseconds since the epoch (the
 * runtime converts the boot-time timestamp). Applies bpftrace's `%f`/`%k`/`%l` extensions, formats in local time
 * (or UTC), and returns `(?)` when the result is empty or does not fit in `maxStrlen - 1` bytes (bpftrace's
 * `max_strlen`, default 64), or when the time is 0 seconds.
 */
export function formatStrftimeBuiltin(
  fmt: string,
  epochNs: bigint,
  opts: { utc?: boolean; maxStrlen?: number } = {},
): string {
  const sec = epochNs >= 0n ? epochNs / 1_000_000_000n : -((-epochNs + 999_999_999n) / 1_000_000_000n);
  if (sec === 0n) return '(?)';
  const rem = epochNs - sec * 1_000_000_000n;
  const usecs = (rem / 1000n).toString().padStart(6, '0');
  const nsecs = rem.toString().padStart(9, '0');
  const msecs = (rem / 1_000_000n).toString().padStart(3, '0');
  const f = fmt.replaceAll('%f', usecs).replaceAll('%k', nsecs).replaceAll('%l', msecs);
  const s = strftime(f, breakDown(Number(sec) * 1000, opts.utc ?? false));
  const n = byteLength(s);
  if (n === 0 || n >= (opts.maxStrlen ?? 64)) return '(?)';
  return s;
}
