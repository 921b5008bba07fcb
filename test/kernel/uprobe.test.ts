/**
 * uprobe/uretprobe on the live kernel: a function of the test workload (`num`, which parses each numeric argument)
 * and libc functions, with arg0..N, retval, func and wildcards.
 */
import assert from 'node:assert/strict';
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
    assert.match(a.stderr, new RegExp(`ERROR: Could not resolve address: ${bin}:0xa$`, 'm'));
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
    // one program per attach point, not one per matched function
    assert.match(r.stderr, /^Attached 2 probes$/m);
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
    assert.match(r.stderr, /ERROR: Could not resolve symbol: \/\S+libc\.so\.6:mallocc\n/);
    assert.match(r.stderr, /HINT: Did you mean .*uprobe:\/\S+libc\.so\.6:malloc\b/);
  });

  it('rejects retval outside return probes', async () => {
    const r = await runTool('bpfscope', ['-e', 'uprobe:libc:malloc { @ = retval; }']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /The retval builtin can only be used with return probes/);
  });
});
