/**
 * Number formatting and string helpers that reproduce what FlameGraph's Perl scripts print, so our output matches
 * theirs byte for byte:
 * - `printf("%.Nf")` as C does it (exact binary value, ties to even), where JavaScript's `toFixed` rounds ties away
 *   from zero and switches to exponent notation at 1e21;
 * - Perl's default number stringification (`"$x"`, which is C's `%.15g`);
 * - Perl's `split` with a literal separator, which drops trailing empty fields;
 * - perlfaq5's thousands separators, as flamegraph.pl applies them to sample counts.
 */

/**
 * C's `printf("%.<digits>f", x)` for a finite double: the exact binary value rounded to `digits` decimals, an exact
 * tie going to the even neighbour (glibc's rounding), never exponent notation. `digits` is 0..20.
 * Non-finite values print as Perl does ("Inf", "-Inf", "NaN").
 */
export function cFixed(x: number, digits: number): string {
  if (digits <= 2 && x > 0) {
    // Fast path (flame graph geometry): t = x * 10^digits below 2^31 is computed with an error under 1.2e-7, so
    // when its fraction is further than 1e-6 from .5, Math.round gives C's result; integers print without toFixed.
    const t = x * POW10[digits]!;
    if (t < 0x7fffffff) {
      const f = t - Math.floor(t);
      if (f < 0.499999 || f > 0.500001) {
        const r = Math.round(t);
        if (digits === 0) return `${r}`;
        const ip = Math.floor(r / POW10[digits]!);
        const fp = r - ip * POW10[digits]!;
        return digits === 1 ? `${ip}.${fp}` : fp < 10 ? `${ip}.0${fp}` : `${ip}.${fp}`;
      }
    }
  }
  if (x >= 0 && x < 1e21) {
    // Common case. A decimal tie at `digits` places is a value j / 2^(digits+1) with j odd (5^digits divides out of
    // the 10^digits denominator only for such values); toFixed rounds those up, C rounds them to even.
    const scaled = x * TIE_SCALE[digits]!;
    if (!Number.isInteger(scaled) || scaled % 2 !== 1 || Object.is(x, -0)) return x.toFixed(digits);
  }
  return cFixedSlow(x, digits);
}

const TIE_SCALE = Array.from({ length: 21 }, (_, d) => 2 ** (d + 1));

function cFixedSlow(x: number, digits: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'NaN' : x > 0 ? 'Inf' : '-Inf';
  const neg = x < 0 || Object.is(x, -0);
  const a = Math.abs(x);
  let body: string;
  if (a >= 1e21) {
    // Every double this large is an integer.
    body = BigInt(a).toString() + (digits > 0 ? `.${'0'.repeat(digits)}` : '');
  } else {
    body = a.toFixed(digits);
    const scaled = a * 2 ** (digits + 1); // exact (a power of two)
    if (Number.isInteger(scaled) && scaled % 2 === 1) {
      // a * 10^digits = scaled * 5^digits / 2, an odd number over 2: exactly halfway. Round to even, exactly.
      const half = BigInt(scaled) * 5n ** BigInt(digits);
      const lo = (half - 1n) / 2n;
      body = insertPoint((lo % 2n === 0n ? lo : lo + 1n).toString(), digits);
    }
  }
  // C prints a minus sign for negative values that round to zero ("-0.00"), and for -0.0.
  return neg ? `-${body}` : body;
}

function insertPoint(intDigits: string, digits: number): string {
  if (digits === 0) return intDigits;
  const padded = intDigits.padStart(digits + 1, '0');
  return `${padded.slice(0, padded.length - digits)}.${padded.slice(padded.length - digits)}`;
}

/**
 * Perl's stringification of a numeric value (`"$x"`): integers as integers, everything else as C's `%.15g`
 * (15 significant digits, trailing zeros removed, exponent form below 1e-4 or from 1e15 on).
 */
export function perlNum(x: number): string {
  if (Number.isInteger(x) && Math.abs(x) < 1e15) return Object.is(x, -0) ? '0' : String(x);
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'NaN' : x > 0 ? 'Inf' : '-Inf';
  const a = Math.abs(x);
  if (a >= 1e-4 && a < 1e15) {
    // JavaScript's shortest round-trip digits equal %.15g's whenever there are at most 15 of them.
    const s = String(x);
    let digits = 0;
    let leading = true;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 48 || c > 57) continue;
      if (leading && c === 48) continue;
      leading = false;
      digits++;
    }
    if (digits <= 15) return s;
  }
  // %.15g: the exponent is the one %.14e gives (after rounding to 15 significant digits).
  const [mant, e] = x.toExponential(14).split('e') as [string, string];
  const exp = Number(e);
  if (exp < -4 || exp >= 15) {
    const ae = Math.abs(exp);
    return `${stripZeros(mant)}e${exp < 0 ? '-' : '+'}${ae < 10 ? `0${ae}` : ae}`;
  }
  return stripZeros(x.toFixed(14 - exp));
}

function stripZeros(s: string): string {
  if (!s.includes('.')) return s;
  s = s.replace(/0+$/, '');
  return s.endsWith('.') ? s.slice(0, -1) : s;
}

/**
 * Perl's `split(/SEP/, $s)` for a literal separator: like `String.prototype.split`, but trailing empty fields are
 * removed (so `"a;b;"` gives `["a", "b"]` and `""` gives `[]`).
 */
export function perlSplit(s: string, sep: string): string[] {
  const parts = s.split(sep);
  let n = parts.length;
  while (n > 0 && parts[n - 1] === '') n--;
  if (n !== parts.length) parts.length = n;
  return parts;
}

/** Thousands separators for an integer string such as `"-1234567"` -> `"-1,234,567"` (perlfaq5's recipe). */
export function commas(intStr: string): string {
  if (intStr.length <= 3) return intStr; // at most three digits: nothing to separate
  const m = /^([-+]?)(\d+)(.*)$/s.exec(intStr);
  if (!m) return intStr;
  const digits = m[2]!;
  if (digits.length <= 3) return intStr;
  let out = '';
  const head = digits.length % 3;
  if (head) out = digits.slice(0, head);
  for (let i = head; i < digits.length; i += 3) out += (out ? ',' : '') + digits.slice(i, i + 3);
  return m[1]! + out + m[3]!;
}

/**
 * Perl's numeric value of a string (`"12abc" + 0` is 12, `"abc"` is 0): the longest leading decimal number, after
 * leading whitespace. Used where the scripts numify user input (`--minwidth 1.2.3` is 1.2).
 */
export function perlNumify(s: string): number {
  const m = /^[\t\n\v\f\r ]*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?))/.exec(s);
  if (m) return Number(m[1]);
  if (/^[\t\n\v\f\r ]*[-+]?inf/i.test(s)) return s.includes('-') ? -Infinity : Infinity;
  return 0;
}

/**
 * The value Perl gets back from `sprintf("%.<digits>f", x)` when it uses the string as a number: the double
 * nearest to the printed decimal. Same as `Number(cFixed(x, digits))`, without formatting and parsing when x is
 * not close to a rounding boundary. `digits` is 0..3.
 */
export function cFixedValue(x: number, digits: number): number {
  const scale = POW10[digits]!;
  const t = x * scale;
  if (Math.abs(t) < 1e15) {
    const f = t - Math.floor(t);
    // Far from a tie the product's rounding error cannot change the result.
    if (Math.abs(f - 0.5) > 1e-6) return Math.round(t) / scale;
  }
  return Number(cFixed(x, digits));
}

const POW10 = [1, 10, 100, 1000];
