/**
 * DWARF integration beyond integer `args` (src/probes/uprobe-args.ts, issue 18 scope 2): struct and pointer-to-struct
 * arguments, the binary's `struct Foo` in casts and `sizeof`, `-lv` argument listings, separate debug files found
 * through `--debuginfo DIR`, and `uprobe:BIN@FILE:LINE` probes. The program is built by the test with `gcc -g -O1`
 * and calls each function three times with known values; every expected value is written out below from SRC.
 * Where bpftrace 0.17 has the feature (struct args through `args->`, `-lv`), its output is compared too.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  bpfscopeSkipReason,
  bpftraceSkipReason,
  describe as describeRun,
  runTool,
  stripOracleAttach,
} from '../helpers/cli.js';

// Line numbers matter: LINE_ENTRY is the line of fbar's opening brace, LINE_BODY the `return` line of fnode.
const SRC = `struct Foo {
  int a;
  char b[10];
  int c[3];
  long long d;
  double r;
};
struct Bar {
  int x;
  struct Foo *foos[2];
  struct Foo nested;
};
struct Node {
  int v;
  struct Node *next;
};
__attribute__((noipa)) int f2(struct Foo *foo1, struct Foo *foo2) {
  return foo1->a + foo2->a;
}
__attribute__((noipa)) int fbar(struct Bar *bar)
{
  return bar->x;
}
__attribute__((noipa)) int fnode(struct Node *n, char tag) {
  return n->v + tag;
}
int main(void) {
  struct Foo foo1 = { .a = 123, .b = "hello", .c = { 1, 2, 3 }, .d = -5000000000LL, .r = 0.5 };
  struct Foo foo2 = { .a = 456, .b = "world", .c = { 4, 5, 6 }, .d = 7, .r = 1.5 };
  struct Node n3 = { .v = 30, .next = 0 };
  struct Node n2 = { .v = 20, .next = &n3 };
  struct Node n1 = { .v = 10, .next = &n2 };
  long t = 0;
  for (int i = 0; i < 3; i++) {
    foo1.a = 123 + i;
    struct Bar bar = { .x = 42 + i, .foos = { &foo1, &foo2 }, .nested = foo2 };
    t += f2(&foo1, &foo2);
    t += fbar(&bar);
    t += fnode(&n1, 'x');
  }
  return (int)(t & 1);
}
`;
// leaf calls nothing; inl is always inlined into outer, so the return address of leaf's caller is in inl's code.
// It runs until bpfscope exits: a stack is symbolized when printed, and the process must still be there.
const INLINE_SRC = `#include <unistd.h>
__attribute__((noipa)) int leaf(int x) {
  return x * 3;
}
static inline __attribute__((always_inline)) int inl(int x) {
  return leaf(x + 1) + 2;
}
__attribute__((noipa)) int outer(int x) {
  return inl(x) * 5;
}
int main(void) {
  int t = 0;
  for (int i = 0;; i++) {
    t += outer(i);
    usleep(1000);
  }
  return t & 1;
}
`;
const LINE_ENTRY = 21;
const LINE_BODY = 25;

const skip = process.arch !== 'x64' ? 'x86-64 only' : (bpfscopeSkipReason() ?? undefined);

describe('uprobe DWARF structs, listings, debug files and source lines', { skip }, () => {
  let dir = '';
  let bin = '';
  let stripped = '';
  let debugDir = '';
  let nolink = '';
  let inl = '';
  let split = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'bpfscope-udwarf-'));
    writeFileSync(join(dir, 'w.c'), SRC);
    bin = join(dir, 'w');
    execFileSync('gcc', ['-g', '-O1', '-o', bin, join(dir, 'w.c')]);
    // a stripped copy whose debug information is in another directory, named by .gnu_debuglink
    debugDir = join(dir, 'debug');
    mkdirSync(debugDir);
    mkdirSync(join(dir, 'bin'));
    stripped = join(dir, 'bin', 'w-stripped');
    execFileSync('objcopy', ['--only-keep-debug', bin, join(debugDir, 'w-stripped.debug')]);
    execFileSync('objcopy', ['--strip-debug', bin, stripped]);
    execFileSync('objcopy', [`--add-gnu-debuglink=${join(debugDir, 'w-stripped.debug')}`, stripped], { cwd: dir });
    // -O0 with frame pointers: at leaf+4 (after `push %rbp; mov %rsp,%rbp`) the frame chain reaches outer and main
    writeFileSync(join(dir, 'i.c'), INLINE_SRC);
    inl = join(dir, 'i');
    execFileSync('gcc', ['-g', '-O0', '-fno-omit-frame-pointer', '-o', inl, join(dir, 'i.c')]);
    // split DWARF (-gsplit-dwarf): gcc writes split/ws-w.dwo; the directory is then renamed, so the .dwo is found
    // only next to the binary, not at the skeleton's DW_AT_comp_dir/DW_AT_dwo_name
    mkdirSync(join(dir, 'split'));
    execFileSync('gcc', ['-g', '-gsplit-dwarf', '-O1', '-o', join(dir, 'split', 'ws'), join(dir, 'w.c')], { cwd: dir });
    renameSync(join(dir, 'split'), join(dir, 'moved'));
    split = join(dir, 'moved', 'ws');
    // and one without a debuglink: its debug file is found by name (`w-nolink.debug`) and build-id
    nolink = join(dir, 'bin', 'w-nolink');
    execFileSync('objcopy', ['--only-keep-debug', bin, join(debugDir, 'w-nolink.debug')]);
    execFileSync('objcopy', ['--strip-debug', bin, nolink]);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Output without the empty lines printed at exit. */
  const out = (r: { stdout: string }) => r.stdout.replace(/\n+$/, '\n');
  const run = (prog: string, extra: string[] = [], target = bin) =>
    runTool('bpfscope', [...extra, '-e', prog, '-c', target]);

  it('reads fields through pointer-to-struct arguments (bpftrace 0.17 agrees)', async () => {
    const prog = (a: string) =>
      `uprobe:${bin}:f2 /pid == cpid/ { printf("%d %s %d %d %lld\\n", ${a}foo1->a, ${a}foo1->b, ${a}foo2->c[2], ${a}foo2->a, ${a}foo1->d); }`;
    const ours = await run(prog('args.'));
    assert.equal(ours.code, 0, describeRun(ours));
    assert.equal(
      out(ours),
      '123 hello 6 456 -5000000000\n124 hello 6 456 -5000000000\n125 hello 6 456 -5000000000\n',
      describeRun(ours),
    );
    if (bpftraceSkipReason()) return;
    const oracle = await runTool('bpftrace', ['-e', prog('args->'), '-c', bin]);
    assert.equal(oracle.code, 0, describeRun(oracle));
    assert.equal(out(stripOracleAttach(oracle.stdout)), out(ours));
  });

  it('follows pointers inside structs, arrays of pointers, nested structs and self-referential structs', async () => {
    const r = await run(
      `uprobe:${bin}:fbar /pid == cpid/ { printf("%d %d %s %d\\n", args.bar->x, args.bar->foos[1]->a, args.bar->nested.b, args.bar.foos[0]->c[0]); }
       uprobe:${bin}:fnode /pid == cpid/ { printf("%d %d %d %c\\n", args.n->v, args.n->next->v, args.n->next->next->v, args.tag); }`,
    );
    assert.equal(r.code, 0, describeRun(r));
    const lines = r.stdout.trim().split('\n');
    assert.deepEqual(
      lines.filter((l) => l.split(' ').length === 4 && !l.endsWith('x')),
      ['42 456 world 1', '43 456 world 1', '44 456 world 1'],
      describeRun(r),
    );
    assert.deepEqual(
      lines.filter((l) => l.endsWith(' x')),
      ['10 20 30 x', '10 20 30 x', '10 20 30 x'],
      describeRun(r),
    );
  });

  it('prints an int array field and the args record', async () => {
    const r = await run(`uprobe:${bin}:f2 /pid == cpid/ { print(args.foo1->c); print(args.foo2.c); }`);
    assert.equal(r.code, 0, describeRun(r));
    assert.equal(out(r), '[1,2,3]\n[4,5,6]\n'.repeat(3), describeRun(r));
    const a = await run(`uprobe:${bin}:fnode /pid == cpid/ { print(args); }`);
    assert.equal(a.code, 0, describeRun(a));
    assert.match(out(a), /^(\{ \.n = 0x[0-9a-f]+, \.tag = 120 \}\n){3}$/, describeRun(a));
  });

  it("uses the binary's struct types in casts and sizeof, after the program's own definitions", async () => {
    const r = await run(
      `uprobe:${bin}:f2 /pid == cpid/ { printf("%d %s %d %d\\n", ((struct Foo *)arg0)->a, ((struct Foo *)arg1)->b, sizeof(struct Foo), sizeof(struct Bar)); }`,
    );
    assert.equal(r.code, 0, describeRun(r));
    // struct Foo: a@0, b@4 (10), c@16 (12), d@32, r@40: 48 bytes; struct Bar: x@0, foos@8 (16), nested@24 (48): 72
    assert.equal(out(r), '123 world 48 72\n124 world 48 72\n125 world 48 72\n', describeRun(r));
    const own = await run(
      `struct Foo { int b; } uprobe:${bin}:f2 /pid == cpid/ { printf("%d\\n", ((struct Foo *)arg0)->b); }`,
    );
    assert.equal(own.code, 0, describeRun(own));
    assert.equal(out(own), '123\n124\n125\n', describeRun(own));
  });

  it('refuses a floating-point field with an error, not a value', async () => {
    const r = await runTool('bpfscope', ['-e', `uprobe:${bin}:f2 { print(args.foo1->r); }`]);
    assert.notEqual(r.code, 0, describeRun(r));
    assert.match(r.stderr, /Field 'r' of struct Foo has a type bpfscope cannot read yet/, describeRun(r));
  });

  it('lists the arguments with -lv as bpftrace does', async () => {
    const r = await runTool('bpfscope', ['-lv', `uprobe:${bin}:f*`]);
    assert.equal(r.code, 0, describeRun(r));
    const expected = [
      `uprobe:${bin}:f2`,
      '    struct Foo* foo1',
      '    struct Foo* foo2',
      `uprobe:${bin}:fbar`,
      '    struct Bar* bar',
      `uprobe:${bin}:fnode`,
      '    struct Node* n',
      '    char tag',
    ];
    assert.deepEqual(
      r.stdout.split('\n').filter((l) => l.startsWith(' ') || /:f(2|bar|node)$/.test(l)),
      expected,
      describeRun(r),
    );
    if (bpftraceSkipReason()) return;
    const oracle = await runTool('bpftrace', ['-lv', `uprobe:${bin}:fnode`]);
    assert.equal(oracle.code, 0, describeRun(oracle));
    assert.equal(oracle.stdout, `${expected.slice(5).join('\n')}\n`);
  });

  it('finds a separate debug file through --debuginfo DIR', async () => {
    const prog = `uprobe:${stripped}:f2 /pid == cpid/ { printf("%d\\n", args.foo1->a); }`;
    const without = await run(prog, [], stripped);
    assert.notEqual(without.code, 0, describeRun(without));
    assert.match(without.stderr, /The args builtin can not be used with 'uprobe' probes/, describeRun(without));
    const r = await run(prog, [`--debuginfo=/nonexistent:${debugDir}`], stripped);
    assert.equal(r.code, 0, describeRun(r));
    assert.equal(out(r), '123\n124\n125\n', describeRun(r));
    // a relative directory is also tried against the binary's directory (elfutils' rule, used by bpftrace)
    const byName = await run(
      `uprobe:${nolink}:f2 /pid == cpid/ { printf("%d\\n", args.foo2->a); }`,
      ['--debuginfo', '../debug'],
      nolink,
    );
    assert.equal(byName.code, 0, describeRun(byName));
    assert.equal(out(byName), '456\n456\n456\n', describeRun(byName));
    const list = await runTool('bpfscope', ['-lv', `uprobe:${stripped}:fnode`, '--debuginfo', debugDir]);
    assert.equal(list.stdout, `uprobe:${stripped}:fnode\n    struct Node* n\n    char tag\n`, describeRun(list));
  });

  it('reads split DWARF (.dwo next to the binary) for args and -lv', async () => {
    const r = await run(
      `uprobe:${split}:f2 /pid == cpid/ { printf("%d %s\\n", args.foo1->a, args.foo2->b); }`,
      [],
      split,
    );
    assert.equal(r.code, 0, describeRun(r));
    assert.equal(out(r), '123 world\n124 world\n125 world\n', describeRun(r));
    const list = await runTool('bpfscope', ['-lv', `uprobe:${split}:fnode`]);
    assert.equal(list.stdout, `uprobe:${split}:fnode\n    struct Node* n\n    char tag\n`, describeRun(list));
  });

  it('shows source lines and inlined functions in ustack with show_debug_info, as current bpftrace', async () => {
    const prog = (cfg: string) =>
      `${cfg} uprobe:${inl}:leaf+4 /pid == cpid/ { @n = count(); print(ustack(3)); if (@n == 3) { exit(); } }`;
    const r = await run(prog('config = { show_debug_info = 1 }'), [], inl);
    assert.equal(r.code, 0, describeRun(r));
    // leaf+4 is on line 2; the call in inl on line 6, inl's call site in outer on line 9, outer's in main on line 14
    const frame = [
      '        leaf\\+4@\\S*/i\\.c:2\n',
      '        \\[inlined\\] inl@\\S*/i\\.c:6\n',
      '        outer\\+\\d+@\\S*/i\\.c:9\n',
      '        main\\+\\d+@\\S*/i\\.c:14\n',
    ].join('');
    assert.match(r.stdout, new RegExp(`^(\\n${frame}\\n){3}\\n+@n: \\d+\\n`), describeRun(r));
    // without it, bpftrace 0.17's output: names and offsets only
    const plain = await run(prog(''), [], inl);
    assert.equal(plain.code, 0, describeRun(plain));
    assert.match(
      plain.stdout,
      /^(\n {8}leaf\+4\n {8}outer\+\d+\n {8}main\+\d+\n\n){3}\n+@n: \d+\n/,
      describeRun(plain),
    );
  });

  it('attaches uprobe:BIN@FILE:LINE at the line table address', async () => {
    const r = await run(
      `uprobe:${bin}@w.c:${LINE_ENTRY} /pid == cpid/ { @entry = reg("ip"); @hits = count(); }
       uprobe:${bin}:fbar /pid == cpid/ { @fn = reg("ip"); }
       uprobe:${bin}@w.c:${LINE_BODY} /pid == cpid/ { @body = count(); @func[func] = count(); }
       END { printf("same=%d\\n", @entry == @fn && @fn != 0); clear(@entry); clear(@fn); }`,
    );
    assert.equal(r.code, 0, describeRun(r));
    assert.match(r.stdout, /^same=1$/m, describeRun(r));
    assert.match(r.stdout, /^@hits: 3$/m, describeRun(r));
    assert.match(r.stdout, /^@body: 3$/m, describeRun(r));
    assert.match(r.stdout, /^@func\[fnode\]: 3$/m, describeRun(r));
    const missing = await runTool('bpfscope', ['-e', `uprobe:${bin}@w.c:9999 { }`]);
    assert.notEqual(missing.code, 0, describeRun(missing));
    assert.match(missing.stderr, /Unable to map 'w.c:9999' to address/, describeRun(missing));
  });
});
