/**
 * Python's printf-style string formatting (`"%-6d %-16s" % (pid, comm)`), the subset bcc's tools use, so that a
 * tool can keep bcc's format strings verbatim and print byte-identical columns.
 *
 * Supported conversions: `d i u` (integers; a non-integer number is truncated toward zero as Python's `int()`
 * does), `s` (String(arg)), `f` (fixed point), `o`, `x`, `X`, `c` and `%%`; flags `- 0 + space #`; a width and a
 * precision, each a number or `*` (taken from the arguments). Source: Python 3 "printf-style String Formatting"
 * (docs.python.org/3/library/stdtypes.html#old-string-formatting).
 *
 * Widths count UTF-16 code units (Python counts code points for str and bytes for bytes): equal for ASCII text,
 * which is what comm names and paths almost always are.
 */

export type PyArg = number | bigint | string;

const SPEC = /%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?[hlL]?([diuscfoxX%])/g;

function toBigInt(v: PyArg, conv: string): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new TypeError(`%${conv} format: a finite number is required, not ${v}`);
    return BigInt(Math.trunc(v));
  }
  throw new TypeError(`%${conv} format: a number is required, not ${JSON.stringify(v)}`);
}

function pad(body: string, sign: string, width: number, flags: string, numeric: boolean): string {
  const len = sign.length + body.length;
  if (len >= width) return sign + body;
  if (flags.includes('-')) return sign + body + ' '.repeat(width - len);
  if (numeric && flags.includes('0')) return sign + '0'.repeat(width - len) + body;
  return ' '.repeat(width - len) + sign + body;
}

/**
 * Fixed-point text of |v| with `prec` decimals, as Python's `%f` prints it: the exact binary value rounded half
 * to even (JavaScript's toFixed rounds exact ties up: `(1.125).toFixed(2)` is 1.13, Python prints 1.12).
 */
function fixed(v: number, prec: number): string {
  const x = Math.abs(v);
  // x = mant * 2^exp exactly, from its IEEE-754 bits.
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  let mant = bits & ((1n << 52n) - 1n);
  let exp: number;
  if (biased === 0) exp = -1074;
  else {
    mant |= 1n << 52n;
    exp = biased - 1075;
  }
  const scale = 10n ** BigInt(prec);
  let q: bigint;
  if (exp >= 0) q = (mant << BigInt(exp)) * scale;
  else {
    const num = mant * scale;
    const den = 1n << BigInt(-exp);
    q = num / den;
    const r2 = (num % den) * 2n;
    if (r2 > den || (r2 === den && q % 2n === 1n)) q += 1n;
  }
  const digits = q.toString().padStart(prec + 1, '0');
  return prec > 0 ? `${digits.slice(0, -prec)}.${digits.slice(-prec)}` : digits;
}

/**
 * Format `fmt` with `args` as Python's `fmt % tuple(args)` does.
 * @throws TypeError when an argument is missing, of the wrong kind, or left over (as Python raises)
 */
export function pyFormat(fmt: string, ...args: PyArg[]): string {
  let i = 0;
  const next = (conv: string): PyArg => {
    if (i >= args.length) throw new TypeError(`not enough arguments for format string ${JSON.stringify(fmt)}`);
    void conv;
    return args[i++]!;
  };
  const out = fmt.replace(SPEC, (_m, flags: string, w: string | undefined, p: string | undefined, conv: string) => {
    if (conv === '%') return '%';
    let width = 0;
    if (w === '*') {
      width = Number(next(conv));
      if (width < 0) {
        flags += '-';
        width = -width;
      }
    } else if (w) width = Number(w);
    let prec: number | undefined;
    if (p === '*') prec = Number(next(conv));
    else if (p !== undefined) prec = Number(p);
    const v = next(conv);
    switch (conv) {
      case 's': {
        let s = String(v);
        if (prec !== undefined) s = s.slice(0, prec);
        return pad(s, '', width, flags.replace('0', ''), false);
      }
      case 'c': {
        const s = typeof v === 'string' ? v : String.fromCodePoint(Number(v));
        return pad(s, '', width, flags.replace('0', ''), false);
      }
      case 'f': {
        if (typeof v === 'string') throw new TypeError('%f format: a real number is required, not str');
        const n = Number(v);
        const sign = n < 0 || Object.is(n, -0) ? '-' : flags.includes('+') ? '+' : flags.includes(' ') ? ' ' : '';
        let body = fixed(n, prec ?? 6);
        if (flags.includes('#') && prec === 0) body += '.';
        return pad(body, sign, width, flags, true);
      }
      default: {
        const n = toBigInt(v, conv);
        const neg = n < 0n;
        const mag = neg ? -n : n;
        let body: string;
        let prefix = '';
        if (conv === 'o') {
          body = mag.toString(8);
          if (flags.includes('#')) prefix = '0o';
        } else if (conv === 'x' || conv === 'X') {
          body = mag.toString(16);
          if (flags.includes('#')) prefix = '0x';
          if (conv === 'X') {
            body = body.toUpperCase();
            prefix = prefix.toUpperCase();
          }
        } else body = mag.toString();
        if (prec !== undefined && body.length < prec) body = '0'.repeat(prec - body.length) + body;
        const sign = neg ? '-' : flags.includes('+') ? '+' : flags.includes(' ') ? ' ' : '';
        return pad(body, sign + prefix, width, flags, true);
      }
    }
  });
  if (i < args.length) throw new TypeError(`not all arguments converted during string formatting of ${fmt}`);
  return out;
}

/**
 * Python 3's `str(x)` of a float (its shortest round-trip `repr`), for bcc columns that print a float with `%s`
 * (biotop's `v.bytes / 1024`): integral values keep `.0` (`64.0`), exponent notation below 1e-4 and from 1e16 up
 * (`1e+16`, `1.5e-05`), `inf`, `nan`. Source: CPython `float_repr` (format code 'r').
 */
export function pyFloatStr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x < 0 ? '-inf' : 'inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  // toExponential() without digits gives the shortest digits that round-trip, as Python's repr.
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(x.toExponential())!;
  const [, sign, lead, rest = '', expText] = m;
  const digits = lead! + rest;
  const exp = Number(expText);
  if (exp < -4 || exp >= 16) {
    const mant = rest ? `${lead}.${rest}` : lead!;
    return `${sign}${mant}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
  const frac = digits.slice(exp + 1);
  return `${sign}${intPart}.${frac || '0'}`;
}

/** Python 3's `round(x)` of a float: to the nearest integer, exact halves to the even one (`round(12.5)` is 12). */
export function pyRound(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}
