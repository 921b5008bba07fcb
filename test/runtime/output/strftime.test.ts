/**
 * strftime against glibc's strftime(3) (a C oracle compiled with cc, TZ set per case), and bpftrace's time() /
 * strftime() specifics.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  breakDown,
  DEFAULT_TIME_FORMAT,
  formatStrftimeBuiltin,
  formatTimeBuiltin,
  strftime,
} from '../../../src/runtime/output/strftime.js';
import { compileC, haveCc, runOracle } from './util.js';

const savedTz = process.env.TZ;
function setTz(tz: string | undefined): void {
  if (tz === undefined) delete process.env.TZ;
  else process.env.TZ = tz;
}
after(() => setTz(savedTz));

const ORACLE_C = `
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
int main(void) {
  static char line[4096], out[4096];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\\n")] = 0;
    char *tz = strtok(line, "\\t"), *sec = strtok(NULL, "\\t"), *utc = strtok(NULL, "\\t");
    char *fmt = utc + strlen(utc) + 1;
    setenv("TZ", tz, 1);
    tzset();
    time_t t = (time_t)strtoll(sec, NULL, 10);
    struct tm tm;
    if (utc[0] == '1') gmtime_r(&t, &tm); else localtime_r(&t, &tm);
    /* the format may contain an escaped newline/tab as \\n and \\t */
    static char f[4096]; size_t j = 0;
    for (size_t i = 0; fmt[i]; i++) {
      if (fmt[i] == '\\\\' && fmt[i + 1] == 'n') { f[j++] = '\\n'; i++; }
      else if (fmt[i] == '\\\\' && fmt[i + 1] == 't') { f[j++] = '\\t'; i++; }
      else f[j++] = fmt[i];
    }
    f[j] = 0;
    size_t n = strftime(out, sizeof out, f, &tm);
    printf("%zu:", n);
    fwrite(out, 1, n, stdout);
  }
  return 0;
}
`;

const FORMATS = [
  '%a %A %b %B %h',
  '%C %d %e %j %m %y %Y',
  '%H %I %k %l %M %S %p %P',
  '%u %w %U %W %V %G %g',
  '%c|%D|%F|%r|%R|%T|%x|%X',
  '%z',
  '%-d %-m %-H %-j %_d %_H %_m %0e %0k',
  '%10Y|%_10Y|%-10Y|%3d|%_5M|%05e|%3j',
  '%^a %^A %^b %^B %#a %#B %#p %^p %^P',
  '%Ey %EY %Od %OH %Om',
  '%%|%n|%t|%Q|abc%',
  '%10a|%-10a|%010b',
  DEFAULT_TIME_FORMAT,
  '%Y-%m-%dT%H:%M:%S%z',
];

const EPOCHS = [
  0, 86399, 951782400, 1009843199, 1104537600, 1230768000, 1262303999, 1262304000, 1609459199, 1700000000, 1710054000,
  1720000000, 1735689599, 1767225600, -34560000,
];

const ZONES = ['UTC', 'America/New_York', 'Asia/Kolkata', 'Europe/Berlin', 'Australia/Adelaide'];

describe('strftime against glibc (C oracle)', { skip: haveCc() ? false : 'no C compiler (cc)' }, () => {
  it('every conversion, flag and width, in several time zones, local and UTC', () => {
    const bin = compileC(ORACLE_C);
    const cases: { tz: string; sec: number; utc: boolean; fmt: string }[] = [];
    for (const tz of ZONES) {
      for (const sec of EPOCHS) {
        for (const fmt of FORMATS) {
          for (const utc of [false, true]) cases.push({ tz, sec, utc, fmt });
        }
        // %Z: Intl has English abbreviations for UTC and US zones (not for CET and friends).
        if ((tz === 'UTC' || tz === 'America/New_York') && sec >= 0) {
          cases.push({ tz, sec, utc: false, fmt: '%Z|%#Z|%^Z' });
        }
        // %s: glibc computes it with mktime(), which reads a gmtime() result as local time; only local is compared.
        cases.push({ tz, sec, utc: false, fmt: '%s' });
        cases.push({ tz, sec, utc: true, fmt: '%Z' });
      }
    }
    const esc = (s: string) => s.replaceAll('\n', '\\n').replaceAll('\t', '\\t');
    const input = cases.map((c) => `${c.tz}\t${c.sec}\t${c.utc ? 1 : 0}\t${esc(c.fmt)}\n`).join('');
    const want = runOracle(bin, input);
    assert.equal(want.length, cases.length);
    const failures: string[] = [];
    for (let i = 0; i < cases.length; i++) {
      const c = cases[i]!;
      setTz(c.tz);
      const got = strftime(c.fmt, breakDown(c.sec * 1000, c.utc));
      if (got !== want[i]) {
        failures.push(
          `${c.tz} ${c.sec} utc=${c.utc} ${JSON.stringify(c.fmt)}: got ${JSON.stringify(got)}, C ${JSON.stringify(want[i])}`,
        );
      }
    }
    assert.deepEqual(failures.slice(0, 20), [], `${failures.length} of ${cases.length} differ`);
  });
});

describe('bpftrace time() and strftime()', () => {
  it('time() default format %H:%M:%S\\n in local time', () => {
    setTz('Asia/Kolkata');
    // 2023-11-14T22:13:20Z = 03:43:20 on the 15th in India (+05:30)
    assert.equal(formatTimeBuiltin(undefined, 1700000000000), '03:43:20\n');
    assert.equal(formatTimeBuiltin('%Y-%m-%d', 1700000000000), '2023-11-15');
  });

  it('time() fails like bpftrace when the result does not fit in 64 bytes or is empty', () => {
    setTz('UTC');
    assert.throws(() => formatTimeBuiltin('%Y'.repeat(16), 0), /strftime returned zero/);
    assert.equal(formatTimeBuiltin('%Y'.repeat(15), 0).length, 60);
    assert.throws(() => formatTimeBuiltin('', 0), /strftime returned zero/);
  });

  it('strftime() extensions %f (us), %k (ns), %l (ms)', () => {
    setTz('UTC');
    const ns = 1700000000_012345678n;
    assert.equal(formatStrftimeBuiltin('%H:%M:%S.%f', ns), '22:13:20.012345');
    assert.equal(formatStrftimeBuiltin('%S.%k', ns), '20.012345678');
    assert.equal(formatStrftimeBuiltin('%S.%l', ns), '20.012');
    assert.equal(formatStrftimeBuiltin('%H', ns, { utc: true }), '22');
  });

  it('strftime() prints (?) for time 0 and for results that do not fit max_strlen', () => {
    setTz('UTC');
    assert.equal(formatStrftimeBuiltin('%s', 999_999_999n), '(?)');
    // the result and its NUL must fit in max_strlen bytes
    assert.equal(formatStrftimeBuiltin('%Y%Y%Y', 1700000000_000000000n, { maxStrlen: 13 }), '202320232023');
    assert.equal(formatStrftimeBuiltin('%Y%Y%Y', 1700000000_000000000n, { maxStrlen: 12 }), '(?)');
  });
});
