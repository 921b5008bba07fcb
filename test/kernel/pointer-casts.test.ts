/**
 * Casts to types written in C (issue 18): pointers to pointers (`struct Foo **`, `int32 **`, their arithmetic and
 * dereference), one-word C types (`char *`, `long *`, `uint64_t`, `size_t`), and bpftrace's integer-to-pointer
 * conversion (zero-extended from the integer's width: `(uint8 *)-1` is 0xff). Expected values are the workload's
 * (test/fixtures/workload.c `urec`: r1.next == &r2 at byte 88) and bpftrace's tests/runtime files (revision
 * e1b7c393, named in each title).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compile } from '../../src/compiler.js';
import { CompileError } from '../../src/lang/diagnostics.js';
import { runTool } from '../helpers/cli.js';
import { workloadCommand, workloadPath } from '../helpers/workload.js';

async function ok(prog: string, ...extra: string[]): Promise<string> {
  const r = await runTool('bpfscope', ['-e', prog, ...extra]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

const REC =
  'struct bpfs_rec { int a; int b; char name[8]; signed char i8; unsigned char u8; short i16; ' +
  'unsigned short u16; int i32; unsigned int u32; long i64; unsigned long u64; int arr[4]; ' +
  'char inner[12]; unsigned char mac[6]; unsigned int lo : 3; unsigned int mid : 9; ' +
  'unsigned int hi : 20; struct bpfs_rec *next; };';

describe('casts to pointers to pointers and to C type names', () => {
  it('reads through struct and integer pointers to pointers, with pointer arithmetic on them (complex_types "pointer_to_pointer", pointers "Pointer to pointer arithmetic and dereference")', async () => {
    const bin = workloadPath();
    const out = await ok(
      `${REC} uprobe:${bin}:urec /pid == cpid/ { ` +
        '$pp = (struct bpfs_rec **)(arg0 + 88); printf("%d %d %s\\n", (*$pp).i16, (**$pp).b, (*$pp)->name); ' +
        '$p = (int32 **)(arg0 + 80); printf("%d %d %d\\n", **($p + 1), *(*($p + 1) + 1), $p[1][1]); ' +
        '$c = (char *)(arg0 + 8); $l = (long *)(arg0 + 32); $u = (unsigned *)(arg0 + 28); ' +
        'printf("%d %c %ld %u\\n", *$c, $c[1], *$l, *$u); }',
      '-c',
      workloadCommand('urec'),
    );
    // r2: a 33, b 44, name "world", i16 32767; r1: name "hello", i64 -6400000000, u32 4000000000
    assert.equal(out, '32767 44 world\n33 44 44\n104 e -6400000000 4000000000\n\n\n');
  });

  it('casts to the kernel fixed-width names and C words, and to char * (btf "vmlinux integer types")', async () => {
    const out = await ok(
      'begin { let $a: typeof(size_t) = 1; let $b: typeof(size_t*) = &$a; $c = (uint64_t)1; $d = (char)1; ' +
        '$e = (char *)&$d; printf("%d %d %d %d\\n", *$b, $c, *$e, sizeof($c)); ' +
        'printf("%lu %d %d %d %d\\n", (uint64_t)-1, (char)300, (short)70000, (int)4294967295, (size_t)-1 == (uint64)-1); exit(); }',
    );
    assert.equal(out, '1 1 1 8\n18446744073709551615 44 4464 -1 1\n\n\n');
  });

  it('converts integers to pointers zero-extended from their width, a negative literal its smallest type (macro "it accepts typeof expressions for nested casts")', async () => {
    const out = await ok(
      'macro cst(a) { (a*)-1 } begin { print(cst(typeof(uint8))); print((int32 *)-200); ' +
        'print((int8 *)(int16)-1); print((uint64 *)-5000000000); print((void *)0x1234); exit(); }',
    );
    assert.equal(out, '0xff\n0xff38\n0xffff\n0xfffffffed5fa0e00\n0x1234\n\n\n');
  });

  it('names an unknown type, and a cast still unsupported, at its position', () => {
    const text = 'begin { $x = (struct Nope **)0; $y = (nosuch_t)1; $z = (string*)0; }';
    let messages: string[] = [];
    try {
      compile({ name: 'stdin', text }, {});
    } catch (e) {
      assert.ok(e instanceof CompileError, String(e));
      messages = e.diagnostics.map((d) => `${d.pos?.line}:${d.pos?.col}: ${d.message}`);
    }
    assert.deepEqual(messages, [
      "1:15: Unknown type: 'struct Nope' (not defined in the program nor in the kernel's BTF)",
      "1:39: Unknown type: 'nosuch_t' (not defined in the program nor in the kernel's BTF)",
      "1:57: Cast to 'string*' is not supported yet",
    ]);
  });
});
