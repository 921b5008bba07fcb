/**
 * uprobe/uretprobe on the live kernel: a function of the test workload (`num`, which parses each numeric argument)
 * and libc functions, with arg0..N, retval, func and wildcards.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ElfFile } from '../../src/symbols/elf.js';
import { runTool } from '../helpers/cli.js';
import { workloadCommand, workloadPath } from '../helpers/workload.js';

describe('uprobe and uretprobe', () => {
  it('counts calls, reads arguments and return values of a function in the workload', async () => {
    const bin = workloadPath();
    const r = await runTool('bpfscope', [
      '-e',
      `uprobe:${bin}:num /pid == cpid/ { @calls[func] = count(); } uretprobe:${bin}:num /pid == cpid/ { @ret[retval] = count(); }`,
      '-c',
      workloadCommand('getppid', 7, 'getuid', 3),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '\n\n@calls[num]: 2\n@ret[3]: 1\n@ret[7]: 1\n');
  });

  it('reads user memory through integer addresses: casts of arg0/retval, struct fields, pointers inside user structs, str/buf/macaddr (issue 12 item 2)', async () => {
    // urec(&r1, &r2) returns r1.next == &r2; the values and byte offsets are in test/fixtures/workload.c
    const bin = workloadPath();
    const defs =
      'struct bpfs_inner { short x; unsigned char tag[4]; int y; }; ' +
      'struct bpfs_rec { int a; int b; char name[8]; signed char i8; unsigned char u8; short i16; ' +
      'unsigned short u16; int i32; unsigned int u32; long i64; unsigned long u64; int arr[4]; ' +
      'struct bpfs_inner inner; unsigned char mac[6]; unsigned int lo : 3; unsigned int mid : 9; ' +
      'unsigned int hi : 20; struct bpfs_rec *next; };';
    const r = await runTool('bpfscope', [
      '-e',
      `${defs} uprobe:${bin}:urec /pid == cpid/ { ` +
        'printf("%d %d %d %d %d %u %ld %lu\\n", *(int8*)(arg0 + 16), *(uint8*)(arg0 + 17), *(int16*)(arg0 + 18), ' +
        '*(uint16*)(arg0 + 20), *(int32*)(arg0 + 24), *(uint32*)(arg0 + 28), *(int64*)(arg0 + 32), ' +
        '*(uint64*)(arg0 + 40)); ' +
        '$r = (struct bpfs_rec *)arg0; $a = arg1 + 4; ' +
        'printf("%d %d %s %d %d %d %d %d %d %d\\n", *(int32*)arg0, *(int32*)$a, $r->name, $r->arr[3], ' +
        '$r->inner.x, $r->lo, $r->mid, $r->hi, $r->next->i16, ((int32*)arg1)[12]); ' +
        'printf("%s %s %r %s\\n", str(arg0 + 8), macaddr($r->mac), buf(arg1 + 66, 4), str($r->next->name)); ' +
        '@s = *$r; @t = (1, $r->inner); } ' +
        `uretprobe:${bin}:urec /pid == cpid/ { printf("%d %s %ld\\n", ((struct bpfs_rec *)retval)->b, ` +
        'str(retval + 8), *(int64*)(retval + 32)); printf("%d %d %d %s\\n", @s.b, @s.i16, @s.arr[1], @s.name); ' +
        'printf("%d %d\\n", @t.1.x, @t.1.y); clear(@s); clear(@t); }',
      '-c',
      workloadCommand('urec'),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      '-8 200 -1616 60000 -320000 4000000000 -6400000000 18000000000000000000\n' +
        '11 44 hello -4 -7 5 300 999999 32767 10\n' +
        'hello 02:42:AC:11:00:09 \\x01\\x02\\x03\\x04 world\n' +
        '44 world 9000000000000000000\n' +
        '22 -1616 -2 hello\n' +
        '-7 77\n\n\n',
    );
  });

  it('runs probes on the same function in program order (tests/runtime/probe "uprobe_order", "uretprobe_order")', async () => {
    const bin = workloadPath();
    for (const kind of ['uprobe', 'uretprobe']) {
      const r = await runTool('bpfscope', [
        '-e',
        `${kind}:${bin}:num /pid == cpid/ { printf("first"); } ${kind}:${bin}:num /pid == cpid/ { printf(" second\\n"); }`,
        '-c',
        workloadCommand('getppid', 7, 'getuid', 3),
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'first second\nfirst second\n\n\n', kind);
    }
  });

  it('probes an address inside a function; an address outside any, or an offset past its end, is an error (tests/runtime/probe "uprobe_address_fail_resolve", "uprobe_offset_fail_size")', async () => {
    const bin = workloadPath();
    const elf = ElfFile.open(bin);
    const num = elf.symbols().list((n) => n === 'num')[0]!;
    elf.close();
    const r = await runTool('bpfscope', [
      '-e',
      `uprobe:${bin}:0x${num.value.toString(16)} /pid == cpid/ { @ = count(); }`,
      '-c',
      workloadCommand('getppid', 7, 'getuid', 3),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '\n\n@: 2\n');
    const a = await runTool('bpfscope', ['-e', `uprobe:${bin}:10 { exit(); }`]);
    assert.equal(a.code, 1);
    // bpftrace's SymbolError at attach time (util/symbols.cpp): the whole line, without a source position
    assert.match(a.stderr, new RegExp(`^ERROR: Could not resolve address: ${bin}:0xa$`, 'm'));
    const o = await runTool('bpfscope', ['-e', `uprobe:${bin}:num+1000000 { exit(); }`]);
    assert.equal(o.code, 1);
    assert.match(
      o.stderr,
      new RegExp(`ERROR: Offset outside the function bounds \\('num' size is ${num.size}\\)$`, 'm'),
    );
  });

  it('resolves a library by name and expands wildcards over its symbols', async () => {
    const r = await runTool('bpfscope', ['-e', 'uprobe:libc:getppi* { @[probe] = count(); } BEGIN { exit(); }']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^Attached 2 probes$/m);
  });

  it('attaches a wildcard as one uprobe_multi link, func from the attach cookie', async () => {
    const bin = workloadPath();
    const r = await runTool('bpfscope', [
      '-e',
      `uprobe:${bin}:* /pid == cpid/ { @[func] = count(); } uretprobe:${bin}:nu* /pid == cpid/ { @ret[func, retval] = count(); }`,
      '-c',
      workloadCommand('getppid', 7, 'getuid', 3),
    ]);
    assert.equal(r.code, 0, r.stderr);
    // one link per attach point, counted as its functions (current bpftrace's probe_count()): nm's function
    // symbols of the binary (`*`) plus those starting with `nu` (the uretprobe)
    const funcs = execFileSync('nm', ['--defined-only', bin], { encoding: 'utf8' })
      .split('\n')
      .map((l) => l.split(' '))
      .filter((f) => f.length === 3 && /^[Tt]$/.test(f[1]!))
      .map((f) => f[2]!);
    const want = new Set(funcs).size + new Set(funcs.filter((f) => f.startsWith('nu'))).size;
    assert.match(r.stderr, new RegExp(`^Attached ${want} probes$`, 'm'));
    for (const line of ['@[main]: 1', '@[num]: 2', '@[step]: 2', '@ret[num, 3]: 1', '@ret[num, 7]: 1'])
      assert.ok(r.stdout.split('\n').includes(line), `no "${line}" in:\n${r.stdout}`);
  });

  it('the kernel holds a uprobe_multi link while a wildcard uprobe is attached', async () => {
    // the -c child reads its parent's (bpfscope's) fd table: one BPF link of type uprobe_multi, no perf events
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-uprobe-multi-'));
    const script = join(dir, 'links.sh');
    writeFileSync(
      script,
      'grep -h "^link_type:" /proc/$PPID/fdinfo/* 2>/dev/null; ls -l /proc/$PPID/fd | grep -c perf_event\n',
    );
    const r = await runTool('bpfscope', [
      '-q',
      '-e',
      `uprobe:${workloadPath()}:* { @ = count(); }`,
      '-c',
      `/bin/sh ${script}`,
    ]);
    rmSync(dir, { recursive: true, force: true });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^link_type:\s+uprobe_multi$/m);
    assert.match(r.stdout, /^0$/m, `perf events are open:\n${r.stdout}`);
  });

  it('reports an unknown symbol at the attach point with a suggestion', async () => {
    const r = await runTool('bpfscope', ['-e', 'uprobe:libc:mallocc { }']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /ERROR: No matches for uprobe \/\S+libc\.so\.6:mallocc\.\n/);
    assert.match(r.stderr, /HINT: Did you mean .*uprobe:\/\S+libc\.so\.6:malloc\b/);
  });

  it('rejects retval outside return probes', async () => {
    const r = await runTool('bpfscope', ['-e', 'uprobe:libc:malloc { @ = retval; }']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /The retval builtin can only be used with return probes/);
  });
});
