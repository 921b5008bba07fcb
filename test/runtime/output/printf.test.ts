/**
 * printf: parsing (bpftrace 0.26 grammar), compile-time argument checks (bpftrace 0.26 messages) and rendering,
 * checked against glibc printf(3) (a C oracle compiled with cc) for every flag/width/precision/length/conversion
 * combination, against real bpftrace 0.17 output, and against bpftrace 0.26's runtime tests.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { SType } from '../../../src/lang/types.js';
import type { Value } from '../../../src/runtime/output/model.js';
import { checkPrintfArgs, compileIntPrintf, compilePrintf, renderPrintf } from '../../../src/runtime/output/printf.js';
import { compileC, haveCc, i64, int, runOracle, str, tuple, u64 } from './util.js';

function render(fmt: string, ...args: Value[]): string {
  return renderPrintf(compilePrintf(fmt), args);
}

const I32: SType = { kind: 'int', size: 4, signed: true };
const U64T: SType = { kind: 'int', size: 8, signed: false };
const STR16: SType = { kind: 'string', size: 16 };

describe('compilePrintf', () => {
  it('splits fragments and specs; %% is a literal percent', () => {
    const c = compilePrintf('a %d b %-05.3lx%% c %s');
    assert.deepEqual(c.fragments, ['a ', ' b ', '% c ', '']);
    assert.deepEqual(
      c.specs.map((s) => [s.text, s.conv, s.length, s.width, s.precision, s.leftAlign, s.zeroPad]),
      [
        ['%d', 'd', '', 0, -1, false, false],
        ['%-05.3lx', 'x', 'l', 5, 3, true, true],
        ['%s', 's', '', 0, -1, false, false],
      ],
    );
  });

  it('flags only in bpftrace order (- + space # 0); anything else stays literal', () => {
    assert.equal(compilePrintf('%-+ #08d').specs.length, 1);
    assert.deepEqual(compilePrintf('%0-5d').specs, []);
    assert.deepEqual(compilePrintf('%0-5d').fragments, ['%0-5d']);
    assert.deepEqual(compilePrintf('% +d').specs, []);
  });

  it('a lone or unknown % is literal; %5% and %-% print %', () => {
    assert.deepEqual(compilePrintf('100%').fragments, ['100%']);
    assert.deepEqual(compilePrintf('%y %').fragments, ['%y %']);
    assert.deepEqual(compilePrintf('[%5%][%-%]').fragments, ['[%][%]']);
    assert.deepEqual(compilePrintf('%.d').specs, []);
  });

  it('* width/precision is ignored and takes no argument', () => {
    const c = compilePrintf('%*d|%.*s');
    assert.equal(c.specs.length, 2);
    assert.equal(c.specs[0]!.width, 0);
    assert.equal(c.specs[1]!.precision, -1);
  });

  it('bpftrace extensions gr, rh, rx, r; g alone', () => {
    assert.deepEqual(
      compilePrintf('%gr %rh %rx %r %g %grx').specs.map((s) => s.conv),
      ['gr', 'rh', 'rx', 'r', 'g', 'gr'],
    );
    assert.deepEqual(compilePrintf('%grx').fragments, ['', 'x']);
  });
});

describe('checkPrintfArgs (bpftrace 0.26 messages)', () => {
  it('argument counts', () => {
    assert.equal(
      checkPrintfArgs(compilePrintf('%d %d\n'), [I32]),
      'not enough arguments for format string (1 supplied, 2 expected)',
    );
    assert.equal(
      checkPrintfArgs(compilePrintf('%d\n'), [I32, I32]),
      'too many arguments for format string (2 supplied, 1 expected)',
    );
    assert.equal(checkPrintfArgs(compilePrintf('hi\n'), []), null);
  });

  it('types', () => {
    assert.equal(checkPrintfArgs(compilePrintf('%d %s %x %p %c'), [I32, I32, { kind: 'bool' }, U64T, I32]), null);
    assert.equal(
      checkPrintfArgs(compilePrintf('%d'), [STR16]),
      "unsupported format specifier for type 'string[16]': d",
    );
    assert.equal(checkPrintfArgs(compilePrintf('%s'), [STR16]), null);
    assert.equal(checkPrintfArgs(compilePrintf('%f'), [I32]), 'unsupported format specifier: f');
    assert.equal(checkPrintfArgs(compilePrintf('%e'), [I32]), 'unsupported format specifier: e');
    assert.equal(
      checkPrintfArgs(compilePrintf('%d'), [{ kind: 'none' }]),
      'unable to print none type for specifier: d',
    );
    assert.equal(
      checkPrintfArgs(compilePrintf('%r'), [STR16]),
      "unsupported format specifier for type 'string[16]': r",
    );
    assert.equal(
      checkPrintfArgs(compilePrintf('%x'), [{ kind: 'tuple', elems: [I32, STR16] }]),
      "unsupported format specifier for type '(int32,string[16])': x",
    );
    assert.equal(checkPrintfArgs(compilePrintf('%p'), [{ kind: 'pointer', to: I32, space: 'kernel' }]), null);
    assert.match(checkPrintfArgs(compilePrintf('%gr'), [I32]) ?? '', /^unsupported format specifier: gr/);
  });
});

describe('renderPrintf against bpftrace', () => {
  it('bpftrace 0.17 real output', () => {
    // bpftrace 0.17: BEGIN { $x = 0x12345678abcdef; printf("%hhx %hx %x %jx %lx %d %ld|\n", $x x7); }
    const x = i64(0x12345678abcdefn);
    assert.equal(
      render('%hhx %hx %x %jx %lx %d %ld|\n', x, x, x, x, x, x, x),
      'ef cdef 78abcdef 12345678abcdef 12345678abcdef 2024525295 5124095577148911|\n',
    );
    // bpftrace 0.17: printf("[%F]\n", 42) and printf("[%F]\n", -42) for each format F
    const cases: [string, number, string][] = [
      ['%-5d', 42, '[42   ]'],
      ['%-5d', -42, '[-42  ]'],
      ['%05x', 42, '[0002a]'],
      ['%05x', -42, '[ffffffd6]'],
      ['%06d', 42, '[000042]'],
      ['%06d', -42, '[-00042]'],
      ['%-06d', 42, '[42    ]'],
      ['%-06d', -42, '[-42   ]'],
      ['%.3d', 42, '[042]'],
      ['%.3d', -42, '[-042]'],
      ['%5d', -42, '[  -42]'],
      ['%X', -42, '[FFFFFFD6]'],
      ['%o', -42, '[37777777726]'],
      ['%u', -42, '[4294967254]'],
      ['%c', 42, '[*]'],
      ['%x', -42, '[ffffffd6]'],
      ['%lu', -42, '[18446744073709551574]'],
      ['%llu', -42, '[18446744073709551574]'],
      ['%ld', -42, '[-42]'],
      ['%lld', -42, '[-42]'],
      ['%hhu', -42, '[214]'],
      ['%hhd', -42, '[-42]'],
      ['%hd', -42, '[-42]'],
      ['%lx', -42, '[ffffffffffffffd6]'],
      ['%p', 42, '[0x2a]'],
      ['%p', -42, '[0xffffffffffffffd6]'],
      ['%zu', -42, '[18446744073709551574]'],
      ['%jd', -42, '[-42]'],
    ];
    for (const [f, v, want] of cases) assert.equal(render(`[${f}]`, i64(v)), want, f);
    // bpftrace 0.17: printf("[%.2s][%5s][%-5s][%s][%10.3s]\n", "abcdef", "ab", "ab", "", "abcdef")
    assert.equal(
      render('[%.2s][%5s][%-5s][%s][%10.3s]\n', str('abcdef'), str('ab'), str('ab'), str(''), str('abcdef')),
      '[ab][   ab][ab   ][][       abc]\n',
    );
    // bpftrace 0.17: printf("[%p][%d][%5%][%%][%s]\n", 0, 1==1, "x")
    assert.equal(
      render('[%p][%d][%5%][%%][%s]\n', i64(0), { kind: 'bool', value: true }, str('x')),
      '[(nil)][1][%][%][x]\n',
    );
  });

  it('bpftrace 0.26 runtime tests (tests/runtime/call)', () => {
    const x = i64(0x12345678abcdefn);
    assert.equal(render('%hhx %hx %x %jx\n', x, x, x, x), 'ef cdef 78abcdef 12345678abcdef\n');
    assert.equal(render('%c%c%c%c\n', i64(0x41), i64(0x42), i64(0x43), i64(0x44)), 'ABCD\n');
    assert.equal(
      render(
        '%dst: %sa; %dnd: %sb;; %drd: %sc;;; %dth: %sd;;;;\n',
        i64(1),
        str('a'),
        i64(2),
        str('ab'),
        i64(3),
        str('abc'),
        i64(4),
        str('abcd'),
      ),
      '1st: aa; 2nd: abb;; 3rd: abcc;;; 4th: abcdd;;;;\n',
    );
    const e = (n: number, name: string): Value => ({
      kind: 'int',
      value: BigInt(n),
      signed: false,
      size: 8,
      symbol: name,
    });
    assert.equal(
      render(
        '%d %s %d %s %d %s\n',
        e(1, 'ONE'),
        e(1, 'ONE'),
        e(2, 'TWO'),
        e(2, 'TWO'),
        e(99999, 'OTHER'),
        e(99999, 'OTHER'),
      ),
      '1 ONE 2 TWO 99999 OTHER\n',
    );
    assert.equal(render('%-5s %5s %s\n', e(0, 'A'), e(1, 'B'), e(2, 'C')), 'A         B C\n');
  });

  it('%s prints any value; a non-number for %d prints !{...} (bpftrace 0.26)', () => {
    assert.equal(render('%s|%s|%s', i64(-5), tuple(i64(1), str('abc')), u64(-1n)), '-5|(1, abc)|18446744073709551615');
    assert.equal(render('%d', str('abc')), '!{invalid integer conversion: abc}');
    assert.equal(render('%x', tuple(i64(1))), '!{invalid integer conversion: (1)}');
    assert.equal(render('%d %d', int(-1, 1, true), int(255, 1, false)), '-1 255');
  });
});

const ORACLE_C = `
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
  static char line[8192], out[8192];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\\n")] = 0;
    char *type = strtok(line, "\\t"), *val = strtok(NULL, "\\t"), *fmt = strtok(NULL, "\\t");
    if (!fmt) { fmt = val; val = ""; }
    unsigned long long v = strtoull(val, NULL, 0);
    int n = 0;
    switch (type[0]) {
      case 'i': n = snprintf(out, sizeof out, fmt, (int)v); break;
      case 'u': n = snprintf(out, sizeof out, fmt, (unsigned)v); break;
      case 'l': n = snprintf(out, sizeof out, fmt, (long long)v); break;
      case 'U': n = snprintf(out, sizeof out, fmt, v); break;
      case 'p': n = snprintf(out, sizeof out, fmt, (void *)(unsigned long)v); break;
      case 's': n = snprintf(out, sizeof out, fmt, val); break;
    }
    printf("%d:", n);
    fwrite(out, 1, n, stdout);
  }
  return 0;
}
`;

/** Flag prefixes in bpftrace's accepted order: every subset of "-", "+", " ", "#", "0". */
function flagSets(): string[] {
  const flags = ['-', '+', ' ', '#', '0'];
  const out: string[] = [];
  for (let m = 0; m < 32; m++) out.push(flags.filter((_, i) => m & (1 << i)).join(''));
  return out;
}

interface OracleCase {
  fmt: string;
  tag: string;
  /** Value passed to C (decimal or the string). */
  cval: string;
  arg: Value;
}

function integerCases(): OracleCase[] {
  const values = [
    0n,
    1n,
    -1n,
    42n,
    -42n,
    255n,
    (1n << 31n) - 1n,
    -(1n << 31n),
    (1n << 32n) + 5n,
    0x12345678abcdefn,
    (1n << 63n) - 1n,
    -(1n << 63n),
  ];
  const cases: OracleCase[] = [];
  for (const conv of ['d', 'i', 'u', 'o', 'x', 'X']) {
    const signed = conv === 'd' || conv === 'i';
    for (const len of ['', 'hh', 'h', 'l', 'll', 'j', 'z', 't']) {
      const wide = ['l', 'll', 'j', 'z', 't'].includes(len);
      const tag = signed ? (wide ? 'l' : 'i') : wide ? 'U' : 'u';
      for (const flags of flagSets()) {
        for (const width of ['', '1', '6', '22']) {
          for (const prec of ['', '.0', '.3', '.25']) {
            const fmt = `[%${flags}${width}${prec}${len}${conv}]`;
            for (const v of values) {
              cases.push({ fmt, tag, cval: BigInt.asUintN(64, v).toString(), arg: i64(v) });
            }
          }
        }
      }
    }
  }
  return cases;
}

function otherCases(): OracleCase[] {
  const cases: OracleCase[] = [];
  for (const flags of flagSets()) {
    for (const width of ['', '1', '4', '24']) {
      for (const prec of ['', '.0', '.2', '.5', '.20']) {
        for (const v of [0x41n, 0x7an, 0x30n, 0x141n, 0x21n]) {
          if (prec === '') cases.push({ fmt: `[%${flags}${width}c]`, tag: 'i', cval: v.toString(), arg: i64(v) });
        }
        for (const v of [0n, 1n, 42n, 0xffffffffffffffd6n, 1n << 63n]) {
          cases.push({ fmt: `[%${flags}${width}${prec}p]`, tag: 'p', cval: v.toString(), arg: u64(v) });
        }
        for (const s of ['', 'a', 'abc', 'hello world', '-42']) {
          cases.push({ fmt: `[%${flags}${width}${prec}s]`, tag: 's', cval: s, arg: str(s) });
        }
        // %s of an int prints its decimal text
        cases.push({ fmt: `[%${flags}${width}${prec}s]`, tag: 's', cval: '-42', arg: i64(-42) });
      }
    }
  }
  return cases;
}

describe('renderPrintf against glibc printf (C oracle)', { skip: haveCc() ? false : 'no C compiler (cc)' }, () => {
  const check = (cases: OracleCase[]) => {
    const bin = compileC(ORACLE_C);
    const input = cases.map((c) => `${c.tag}\t${c.cval}\t${c.fmt}\n`).join('');
    const want = runOracle(bin, input);
    assert.equal(want.length, cases.length);
    const failures: string[] = [];
    for (let i = 0; i < cases.length; i++) {
      const c = cases[i]!;
      const got = renderPrintf(compilePrintf(c.fmt), [c.arg]);
      if (got !== want[i])
        failures.push(`${c.fmt} (${c.cval}): got ${JSON.stringify(got)}, C ${JSON.stringify(want[i])}`);
    }
    assert.deepEqual(failures.slice(0, 20), [], `${failures.length} of ${cases.length} differ`);
  };

  it('d i u o x X: all flag sets × widths × precisions × length modifiers × edge values', () => {
    const cases = integerCases();
    assert.ok(cases.length > 200000);
    check(cases);
  });

  it('c, p and s: all flag sets × widths × precisions', () => {
    check(otherCases());
  });
});

describe('compileIntPrintf (the integer-only fast path)', () => {
  const SIZES = [1, 2, 4, 8] as const;
  const CONVS = [
    '%d',
    '%i',
    '%u',
    '%x',
    '%X',
    '%o',
    '%ld',
    '%lu',
    '%lx',
    '%llx',
    '%lo',
    '%lld',
    '%hd',
    '%hu',
    '%hhd',
    '%hhx',
  ];

  it('renders exactly what renderPrintf renders, for every storage size, signedness and plain conversion', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...SIZES),
        fc.boolean(),
        fc.constantFrom(...CONVS),
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
        (size, signed, conv, raw) => {
          const t: SType = { kind: 'int', size, signed };
          const bits = BigInt(size * 8);
          const v = signed ? BigInt.asIntN(Number(bits), raw) : BigInt.asUintN(Number(bits), raw);
          const data = Buffer.alloc(8 + 16);
          data.writeBigUInt64LE(BigInt.asUintN(64, v), 8 + 8);
          const compiled = compilePrintf(`<${conv}|>\n`);
          const fast = compileIntPrintf(compiled, [t], [8]);
          assert.ok(fast, conv);
          const got = fast(data, 8);
          const want = renderPrintf(compiled, [{ kind: 'int', value: v, signed, size }]);
          // null: a 64-bit value beyond 2^53 left to the general path
          if (got !== null)
            assert.equal(got, want, `${conv} of ${v} (${size} bytes, ${signed ? 'signed' : 'unsigned'})`);
          // a 64-bit value, or a negative one printed by an unsigned 64-bit conversion (2^64 + v), may fall back
          else assert.ok(size === 8 || (v < 0n && /l[uxo]$/.test(conv)), `${conv} of ${v} fell back`);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('is not used for flags, widths, precision, strings or char conversions', () => {
    const i = [{ kind: 'int', size: 8, signed: true }] as SType[];
    for (const f of ['%5d', '%-d', '%.2d', '%+d', '%#x', '%c', '%p', '%s'])
      assert.equal(compileIntPrintf(compilePrintf(f), i, [0]), null, f);
    assert.equal(compileIntPrintf(compilePrintf('%d'), [STR16], [0]), null);
    assert.equal(compileIntPrintf(compilePrintf('no args\n'), [], []), null);
  });
});
