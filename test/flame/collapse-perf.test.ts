import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { collapseText } from '../../src/flame/collapse/collapser.js';
import { type PerfCollapseOptions, PerfCollapser } from '../../src/flame/collapse/perf.js';
import { Interner, StackTable } from '../../src/flame/collapse/stack-table.js';
import { referenceData } from './helpers.js';

const ref = referenceData();

function collapse(input: string | Buffer, opts: PerfCollapseOptions = {}): string {
  return collapseText(new PerfCollapser(opts), input);
}

describe(
  'stackcollapse-perf against stackcollapse-perf.pl reference output',
  {
    skip: !ref && 'shared/testdata/flamegraph not found',
  },
  () => {
    const files = ref ? readdirSync(join(ref, 'expected')).filter((f) => f.includes('-collapsed')) : [];
    it('covers every expected file (63: 9 inputs x 7 option sets)', () => {
      assert.equal(files.length, 63);
    });
    for (const f of files) {
      const m = /^(.*)-collapsed(?:-(pid|tid|kernel|jit|all|addrs))?\.txt$/.exec(f);
      it(`${f} byte for byte`, () => {
        assert.ok(m, `unexpected file name ${f}`);
        const input = readFileSync(join(ref!, 'perf', `${m[1]}.txt`));
        const opts: PerfCollapseOptions = m[2] ? { [m[2]]: true } : {};
        const expected = readFileSync(join(ref!, 'expected', f), 'latin1');
        assert.equal(collapse(input, opts), expected);
      });
    }
    it('gives the same bytes whatever the chunk boundaries (every input, three option sets)', () => {
      let seed = 99;
      const rnd = (n: number): number => {
        seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
        return 1 + (seed % n);
      };
      for (const f of readdirSync(join(ref!, 'perf'))) {
        const input = readFileSync(join(ref!, 'perf', f));
        for (const opts of [{}, { all: true }, { tid: true, addrs: true }] as PerfCollapseOptions[]) {
          const expected = collapse(input, opts);
          for (const max of [3, 100, 5000]) {
            const c = new PerfCollapser(opts);
            for (let i = 0; i < input.length;) {
              const size = rnd(max);
              c.push(input.subarray(i, i + size));
              i += size;
            }
            c.endFile();
            const got = Buffer.concat(Array.from(c.finish(), (p) => Buffer.from(p))).toString('latin1');
            assert.equal(got, expected, `${f} ${JSON.stringify(opts)} chunks up to ${max}`);
          }
        }
      }
    });
  },
);

const SAMPLE = (head: string, ...frames: string[]): string => `${head}\n${frames.map((f) => `\t${f}`).join('\n')}\n\n`;

describe('stackcollapse-perf behaviours', () => {
  it('folds, strips offsets and argument lists, sums periods, sorts by bytes', () => {
    const input =
      SAMPLE(
        'java 100/101 [000] 1.000001: 5 cycles:',
        'ffff0001 leaf+0x10 (/usr/lib/libx.so)',
        '7f00 Lcom/Foo;.bar(I)V (/tmp/perf-100.map)',
      ) +
      SAMPLE(
        'java 100/101 [000] 1.000002: 7 cycles:',
        'ffff0001 leaf+0x20 (/usr/lib/libx.so)',
        '7f00 Lcom/Foo;.bar(I)V (/tmp/perf-100.map)',
      ) +
      SAMPLE('bash 200 [001] 1.000003: 3 cycles:', 'abc main (/bin/bash)');
    assert.equal(collapse(input), 'bash;main 3\njava;com/Foo:.bar;leaf 12\n');
  });
  it('keeps only the first event type and warns once', () => {
    const warnings: string[] = [];
    const input =
      SAMPLE('aa 1 [000] 1.0: 10 cycles:', '1 f (/x)') +
      SAMPLE('aa 1 [000] 1.0: 10 instructions:', '1 g (/x)') +
      SAMPLE('aa 1 [000] 1.0: 10 instructions:', '1 h (/x)');
    assert.equal(collapse(input, { warn: (w) => warnings.push(w) }), 'aa;f 10\n');
    assert.deepEqual(warnings, ['Filtering for events of type: instructions']);
    assert.equal(collapse(input, { eventFilter: 'instructions' }), 'aa;g 10\naa;h 10\n');
  });
  it('takes a one-character comm as Perl does (the regex needs two)', () => {
    assert.equal(collapse(SAMPLE('a 1 [000] 1.0: 4 c:', '1 f (/x)')), 'a_1_[000]_1.0:;f 4\n');
  });
  it('counts a missing or zero period as 1 and takes TID 0 as absent', () => {
    const input =
      SAMPLE('swapper 0/0 [000] 1.0: cpu-clock:', '1 idle (/k)') +
      SAMPLE('swapper 0/0 [000] 1.0: 0 cpu-clock:', '1 idle (/k)');
    assert.equal(collapse(input), 'swapper;idle 2\n');
    assert.equal(collapse(input, { pid: true }), 'swapper-?;idle 2\n');
    assert.equal(collapse(input, { tid: true }), 'swapper-?/0;idle 2\n');
  });
  it('replaces [unknown] by the DSO file name, with --addrs by name and address', () => {
    const input = SAMPLE('pp 5 [000] 1.0: 1 c:', '7f01 [unknown] (/lib/libc.so.6)', '7f02 [unknown] ([unknown])');
    assert.equal(collapse(input), 'pp;[unknown];[libc.so.6] 1\n');
    assert.equal(collapse(input, { addrs: true }), 'pp;[unknown <7f02>];[libc.so.6 <7f01>] 1\n');
  });
  it('annotates kernel, JIT and inlined frames', () => {
    const input = SAMPLE(
      'java 5 [000] 1.0: 1 c:',
      'ffffffff81 tcp_sendmsg ([kernel.kallsyms])',
      '8c3453 vfs_read (/lib/modules/6.1/build/vmlinux)',
      '7f01 Ljava/Foo;::run (/tmp/perf-5.map)',
      '4005 outer->inner (/bin/app)',
    );
    assert.equal(
      collapse(input, { all: true }),
      'java;outer;inner_[i];java/Foo:::run_[j];vfs_read_[k];tcp_sendmsg_[k] 1\n',
    );
    assert.equal(
      collapse(input, { kernel: true }),
      'java;outer;inner_[i];java/Foo:::run;vfs_read_[k];tcp_sendmsg_[k] 1\n',
    );
  });
  it('keeps Go method names and C++ anonymous namespaces, drops quotes and ;', () => {
    const input = SAMPLE(
      'app 9 [000] 1.0: 1 c:',
      '401 net/http.(*conn).serve+0x1 (/bin/app)',
      '402 ns::(anonymous namespace)::f(int) (/bin/app)',
      '403 RegExp:[&<>"\'];x (/tmp/perf-9.map)',
    );
    assert.equal(collapse(input), 'app;RegExp:[&<>]:x;ns::(anonymous namespace)::f;net/http.(*conn).serve 1\n');
  });
  it('drops a last sample without a blank line, and skips comments and process-name frames', () => {
    const input =
      '# cmdline : perf record\nxx 1 [000] 1.0: 1 c:\n\t1 f (/a)\n\t2 (x) (/a)\n\nxx 1 [000] 1.0: 1 c:\n\t1 g (/a)\n';
    assert.equal(collapse(input), 'xx;f 1\n');
  });
  it('does not join lines across input files', () => {
    const c = new PerfCollapser();
    c.push(Buffer.from('xx 1 [000] 1.0: 1 c:\n\t1 f (/a)'));
    c.endFile();
    c.push(Buffer.from('\t2 g (/a)\n\n'));
    c.endFile();
    assert.equal(Buffer.concat(Array.from(c.finish(), (p) => Buffer.from(p))).toString('latin1'), 'xx;g;f 1\n');
  });
  it('merges stacks whose texts coincide (a process name holding ";")', () => {
    const input =
      SAMPLE('ab;cd 1 [000] 1.0: 2 c:', '1 f (/x)') + SAMPLE('ab 1 [000] 1.0: 3 c:', '1 f (/x)', '2 cd (/x)');
    assert.equal(collapse(input), 'ab;cd;f 5\n');
  });
  it('sorts "foo" before "foo.bar" only where the bytes say so', () => {
    const input =
      SAMPLE('pp 1 [000] 1.0: 1 c:', '1 x (/a)', '2 foo (/a)') +
      SAMPLE('pp 1 [000] 1.0: 1 c:', '1 x (/a)', '2 foo.bar (/a)') +
      SAMPLE('pp 1 [000] 1.0: 1 c:', '2 foo (/a)');
    assert.equal(collapse(input), 'pp;foo 1\npp;foo.bar;x 1\npp;foo;x 1\n');
  });
  it('sums large periods exactly past 2^53', () => {
    const input =
      SAMPLE('pp 1 [000] 1.0: 9007199254740993 c:', '1 f (/a)') +
      SAMPLE('pp 1 [000] 1.0: 9007199254740993 c:', '1 f (/a)');
    assert.equal(collapse(input), 'pp;f 18014398509481986\n');
  });
  it('falls back to the regex where a fast split does not exist', () => {
    // "ab (x)": the regex backtracks into the address: pc "a", symbol "b".
    const input = 'pp 1 [000] 1.0: 1 c:\n  ab (x)\n\n';
    assert.equal(collapse(input), 'pp;b 1\n');
  });
  it('drops frames whose symbol is only an offset or an empty inline chain, as split() does', () => {
    const input = SAMPLE('pp 1 [000] 1.0: 1 c:', '1 +0x10 (/a)', '2 -> (/a)', '3 f (/a)');
    assert.equal(collapse(input), 'pp;f 1\n');
  });
  it('reads repeated event lines from its caches as it read them the first time', () => {
    // Each line twice or more: the second sighting comes from the caches of the process and period parts.
    const twice = (head: string, ...frames: string[]): string => SAMPLE(head, ...frames) + SAMPLE(head, ...frames);
    const input =
      twice('my app 10/11 [000] 1.000001:   250 cpu-clock: ', '1 f (/a)') +
      twice('java 12/13 [001] 1.000002:   250 cpu-clock: ', '1 Lcom/X;.y (/a)') +
      twice('swapper 0/0 [002] 1.000003: cpu-clock:', '1 idle (/k)') +
      twice('k[w] 7 [003] 1.000004: 3 cpu-clock:', '1 g (/k)') +
      twice('aa 1/1 2.5: 5 cpu-clock:', '1 h (/a)');
    assert.equal(collapse(input), 'aa;h 10\njava;com/X:.y 500\nk[w];g 6\nmy_app;f 500\nswapper;idle 2\n');
    assert.equal(
      collapse(input, { tid: true }),
      'aa-1/1;h 10\njava-12/13;com/X:.y 500\nk[w]-?/7;g 6\nmy_app-10/11;f 500\nswapper-?/0;idle 2\n',
    );
    // A comm holding " [": the process regex matches only across the "[", so the line is decoded whole.
    assert.equal(collapse(twice('a [b] 1/1 [000] 1.0: 2 c:', '1 f (/a)')), 'a_[b];f 4\n');
    // The filter, from the first event, applies to cached period parts too.
    const warnings: string[] = [];
    const mixed =
      twice('aa 1 [000] 1.0: 10 cycles:', '1 f (/x)') +
      twice('aa 1 [000] 1.0: 10 instructions:', '1 g (/x)') +
      twice('aa 1 [000] 1.0: 10 cycles:', '1 f (/x)');
    assert.equal(collapse(mixed, { warn: (w) => warnings.push(w) }), 'aa;f 40\n');
    assert.deepEqual(warnings, ['Filtering for events of type: instructions']);
  });
  it("reads event lines past the caches' size as before", () => {
    // 5,000 distinct processes and periods, more than the caches keep.
    let input = '';
    for (let i = 1; i <= 5000; i++) input += SAMPLE(`cc ${i} [000] 1.0: ${i} c:`, '1 f (/a)');
    assert.equal(collapse(input), 'cc;f 12502500\n');
    const lines = collapse(input, { tid: true }).split('\n');
    assert.equal(lines.length, 5001);
    assert.deepEqual(
      [lines[0], lines[1], lines[4998], lines[4999], lines[5000]],
      ['cc-?/1000;f 1000', 'cc-?/1001;f 1001', 'cc-?/99;f 99', 'cc-?/9;f 9', ''], // as stackcollapse-perf.pl --tid
    );
  });
  it('reports lines it cannot read', () => {
    const warnings: string[] = [];
    collapse('pp 1 [000] 1.0: 1 c:\n\t???\n\n', { warn: (w) => warnings.push(w) });
    assert.deepEqual(warnings, ['Unrecognized line: \t???']);
  });
});

const perlDir = process.env.FLAMEGRAPH_DIR;
const perlScript = perlDir ? join(perlDir, 'stackcollapse-perf.pl') : '';
describe(
  'stackcollapse-perf against the Perl script on the upstream corpus',
  {
    skip: !(perlDir && existsSync(perlScript)) && 'FLAMEGRAPH_DIR not set',
  },
  () => {
    it('matches on every test/*.txt of the FlameGraph checkout, all options', () => {
      const dir = join(perlDir!, 'test');
      for (const f of readdirSync(dir).filter((x) => x.endsWith('.txt'))) {
        const input = readFileSync(join(dir, f));
        for (const opt of ['', 'pid', 'tid', 'all', 'addrs']) {
          const r = spawnSync('perl', [perlScript, ...(opt ? [`--${opt}`] : []), join(dir, f)], { maxBuffer: 1 << 28 });
          assert.equal(collapse(input, opt ? { [opt]: true } : {}), r.stdout.toString('latin1'), `${f} --${opt}`);
        }
      }
    });
  },
);

describe('stack table output', () => {
  it('gives the same bytes in small reused pieces (prefixes copied across pieces)', () => {
    const interner = new Interner();
    // An arena of its own (not in the writer's memory), so that the stacks can be written more than once.
    const table = new StackTable(interner.names, true, { transferable: true });
    const ids = (...names: string[]): Int32Array => Int32Array.from(names, (n) => interner.id(n));
    const stacks = [
      ['proc', 'leaf', 'mid', 'root'],
      ['proc', 'leaf2', 'mid', 'root'],
      ['proc', 'x', 'mid.2', 'root'],
      ['proc', 'mid', 'root'],
      ['other', 'z'],
      ['proc', 'leaf', 'mid', 'root'],
    ];
    for (const [first, ...rest] of stacks) table.add(interner.id(first!), ids(...rest), rest.length, 3, null);
    const whole = Buffer.concat(Array.from(table.lines(), (p) => Buffer.from(p))).toString('latin1');
    assert.equal(
      whole,
      'other;z 3\nproc;root;mid 3\nproc;root;mid.2;x 3\nproc;root;mid;leaf 6\nproc;root;mid;leaf2 3\n',
    );
    for (const size of [1, 8, 20]) {
      const pieces = Array.from(table.lines(size), (p) => Buffer.from(p));
      assert.equal(Buffer.concat(pieces).toString('latin1'), whole, `pieces of ${size}`);
      assert.ok(pieces.length > 1);
    }
  });
});
