/**
 * Arrays on the live kernel (bpftrace tests/runtime/array): `==`/`!=` on integer arrays, run-time indexes with
 * bpftrace's out-of-bounds warning, zero-length (flexible) array members, `unsigned char` arrays as integer arrays
 * and their casts to one integer. The workload's `urec` step passes two records whose values are written in
 * test/fixtures/workload.c.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runTool } from '../helpers/cli.js';
import { workloadCommand, workloadPath } from '../helpers/workload.js';

const DEFS =
  'struct bpfs_inner { short x; unsigned char tag[4]; int y; }; ' +
  'struct bpfs_rec { int a; int b; char name[8]; signed char i8; unsigned char u8; short i16; ' +
  'unsigned short u16; int i32; unsigned int u32; long i64; unsigned long u64; int arr[4]; ' +
  'struct bpfs_inner inner; unsigned char mac[6]; unsigned int lo : 3; unsigned int mid : 9; ' +
  'unsigned int hi : 20; struct bpfs_rec *next; }; struct flex { int a; int b; int rest[0]; };';

const OOB = 'WARNING: Array access out of bounds. This can lead to unexpected results.';

/** The `stdin:1:C-E: WARNING: ...` lines of a run's stderr. */
function warnings(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l.includes('WARNING:'));
}

/** bpftrace's position `1:START-END` of the first occurrence of `part` in `prog` (columns from 1, END exclusive). */
function at(prog: string, part: string): string {
  const i = prog.indexOf(part);
  assert.ok(i >= 0, part);
  return `stdin:1:${i + 1}-${i + 1 + part.length}`;
}

describe('arrays: comparison, run-time indexes, flexible members, byte arrays', () => {
  it('indexes arrays in user memory, variables and map values at run time; out of bounds warns as bpftrace', async () => {
    // r1.arr = {1,-2,3,-4}, r1.inner.tag = {0xde,0xad,0xbe,0xef}; r2.arr = {10,20,30,40}, r2.inner.tag = {1,2,3,4}.
    // r1.arr[4] is the int at offset 64: inner.x (-7: f9 ff) then tag[0..1] (de ad), 0xaddefff9 as int32; an index
    // past a copy in the program's memory ($v) gives 0; struct flex's rest[10] is the int at 8 + 40 = 48, r1.arr[0]
    const prog =
      `${DEFS} uprobe:${workloadPath()}:urec /pid == cpid/ { $r = (struct bpfs_rec *)arg0; ` +
      '$o = (struct bpfs_rec *)arg1; $i = 0; while ($i < 4) { printf("%d ", $r->arr[$i]); $i++; } ' +
      '$v = $o->arr; @m[1] = $r->inner.tag; $j = (uint8)0; ' +
      'while ($j < 4) { printf("%d/%d ", $v[$j], @m[1][$j]); $j++; } ' +
      'printf("\\n%x %x\\n", (uint32)$r->inner.tag, (int32)$o->inner.tag); ' +
      '$k = (uint64)4; printf("%d %d\\n", $r->arr[$k], $v[$k]); ' +
      '$f = (struct flex *)arg0; printf("%d %d\\n", $f->rest[10], $f->rest[$k + 6]); clear(@m); }';
    const r = await runTool('bpfscope', ['-e', prog, '-c', workloadCommand('urec')]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '1 -2 3 -4 10/222 20/173 30/190 40/239 \nefbeadde 4030201\n-1377894407 0\n1 1\n\n\n');
    assert.deepEqual(warnings(r.stderr), [`${at(prog, '$r->arr[$k]')}: ${OOB}`, `${at(prog, '$v[$k]')}: ${OOB}`]);
  });

  it('compares integer arrays with == and != as values and conditions', async () => {
    const prog =
      `${DEFS} uprobe:${workloadPath()}:urec /pid == cpid/ { $r = (struct bpfs_rec *)arg0; ` +
      '$o = (struct bpfs_rec *)arg1; $c = $r->arr; ' +
      'printf("%d %d %d %d %d\\n", $r->arr == $c, $r->arr != $c, $r->arr == $o->arr, $r->inner.tag != $o->inner.tag, ' +
      '$o->inner.tag == (uint8[4])(uint32)0x04030201); ' +
      'if ($c != $o->arr) { printf("differ\\n"); } }';
    const r = await runTool('bpfscope', ['-e', prog, '-c', workloadCommand('urec')]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '1 0 0 1 1\ndiffer\n\n\n');
    assert.deepEqual(warnings(r.stderr), []);
  });

  it('indexes and compares array casts in BEGIN; an index past the end warns once per access', async () => {
    const prog =
      'BEGIN { $a = (int8[8])0x0102030405060708; $b = (int8[8])0x0102030405060708; $i = (uint64)0; ' +
      'while ($i < 9) { printf("%d ", $a[$i]); $i++; } ' +
      'printf("| %d %d %d\\n", $a == $b, $a != $b, $a == (int8[8])2); exit(); }';
    const r = await runTool('bpfscope', ['-e', prog]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '8 7 6 5 4 3 2 1 0 | 1 0 0\n\n\n');
    assert.deepEqual(warnings(r.stderr), [`${at(prog, '$a[$i]')}: ${OOB}`]);
  });

  it('rejects a constant index past the end with bpftrace message and nothing after it', async () => {
    const prog = `${DEFS} uprobe:${workloadPath()}:urec { $r = (struct bpfs_rec *)arg0; $x = $r->arr[5]; @ = $x; }`;
    const r = await runTool('bpfscope', ['-e', prog]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    const errs = r.stderr.split('\n').filter((l) => l.includes('ERROR'));
    assert.deepEqual(errs, [`${at(prog, '$r->arr[5]')}: ERROR: the index 5 is out of bounds for array of size 4`]);
  });
});
