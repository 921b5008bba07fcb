/**
 * bpftrace's messages and builtins of its runtime tests (revision e1b7c393) that branch guest11a matched, checked on
 * the host where it can be: stdlib "is_err", probe "some_missing_probes_warn" (probe_prune.cpp's warning),
 * "bpf_programs_limit" (ap_probe_expansion.cpp's max_bpf_progs check), "traceable_functions_empty" (an unreadable
 * file), call "path_in_unsupported_fentry" (the verifier log turned into bpfbytecode.cpp's message) and probe
 * "kprobe_addr_invalid" (the decimal name of `kprobe:0xADDR`). The kprobe/fentry/fexit order and the kprobe attach
 * errors need a kernel with kprobes and trampolines: the guest runs of the runtime suite check them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttachPoint } from '../../src/lang/ast.js';
import { KprobeProbe } from '../../src/probes/kprobe.js';
import { refusedHelperMessage } from '../../src/runtime/loader.js';
import { runTool } from '../helpers/cli.js';

describe('is_err() (tests/runtime/stdlib "is_err")', () => {
  it('is true for -4095..-1 as a 64-bit value, integers and pointers alike', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'BEGIN { $e = -4095; $p = (int8 *)$e; $o = -4096; $q = (int8 *)$o; printf("%d %d %d %d %d %d\\n", is_err(-1), is_err(-2), is_err(0), is_err(-4096), is_err($p), is_err($q)); exit(); }',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '1 1 0 0 1 0\n\n\n');
  });

  it('reads an error return of a tracepoint', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'tracepoint:syscalls:sys_exit_openat /pid == cpid/ { if (is_err(args.ret)) { printf("is_err: %ld\\n", args.ret); exit(); } }',
      '-c',
      'cat /nonexistent-guest11a',
    ]);
    assert.equal(r.stdout, 'is_err: -2\n\n\n');
  });
});

describe('missing_probes = warn (tests/runtime/probe "some_missing_probes_warn")', () => {
  it('warns that a probe left without attach points is removed, and runs the others', async () => {
    const prog =
      'config = { missing_probes=warn } tracepoint:syscalls:sys_enter_read { exit(); } t:syscalls:nonsense { exit(); }';
    const r = await runTool('bpfscope', ['-e', prog]);
    assert.equal(r.code, 0, r.stderr);
    const marker = `${' '.repeat(80)}${'~'.repeat(19)}`;
    assert.equal(
      r.stderr.split('\nAttached')[0],
      [
        'stdin:1:81-100: WARNING: No matches for tracepoint syscalls:nonsense. Skipping.',
        prog,
        marker,
        'stdin:1:81-100: WARNING: Probe has no valid attach points. It is being removed which may cause issues with program behavior.',
        prog,
        marker,
      ].join('\n'),
    );
  });
});

describe('max_bpf_progs (tests/runtime/probe "bpf_programs_limit")', () => {
  it('refuses a wildcard expanding to more programs than BPFTRACE_MAX_BPF_PROGS, at the attach point', async () => {
    const prog = 'BEGIN { exit(); } tracepoint:sched:* { @[probe] = count(); }';
    const r = await runTool('bpfscope', ['-e', prog], { env: { BPFTRACE_MAX_BPF_PROGS: '5' } });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^stdin:1:19-37: ERROR: Your program is trying to generate more than \d+ BPF programs, which exceeds the current limit of 5\nBEGIN \{ exit\(\); \} tracepoint:sched:\* \{ @\[probe\] = count\(\); \}\n {18}~{18}\nHINT: You can increase the limit through the BPFTRACE_MAX_BPF_PROGS environment variable\.\n$/,
    );
  });

  it('counts one program for a probe that names one event', async () => {
    const r = await runTool('bpfscope', ['-e', 'tracepoint:sched:sched_switch { @ = 1; exit(); }'], {
      env: { BPFTRACE_MAX_BPF_PROGS: '1' },
    });
    assert.equal(r.code, 0, r.stderr);
  });
});

describe('--traceable-functions FILE (tests/runtime/probe "traceable_functions_empty")', () => {
  it('an unreadable FILE is an error before anything is compiled', async () => {
    const r = await runTool('bpfscope', ['--traceable-functions', '/nonexistent-guest11a', '-e', 'BEGIN { exit(); }']);
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      "ERROR: Failed to open kernel function info: /nonexistent-guest11a: no such file or directory, open '/nonexistent-guest11a'\n",
    );
  });
});

describe('helpers the verifier refuses (tests/runtime/call "path_in_unsupported_fentry")', () => {
  it('names the helper of the refused call, as bpftrace does', () => {
    const log = [
      '45: (b7) r3 = 64                      ; R3_w=64',
      '46: (85) call bpf_d_path#147',
      'helper call is not allowed in probe',
      'processed 44 insns (limit 1000000) max_states_per_insn 0 total_states 2 peak_states 2 mark_read 2',
    ];
    assert.equal(refusedHelperMessage(log), 'helper bpf_d_path not allowed in probe');
    assert.equal(
      refusedHelperMessage([
        '12: (85) call bpf_get_stack#67',
        'program of this type cannot use helper bpf_get_stack#67',
      ]),
      'helper bpf_get_stack not allowed in probe',
    );
    assert.equal(refusedHelperMessage(['46: (85) call bpf_d_path#147', 'R1 type=scalar expected=ptr_']), undefined);
  });
});

describe('kprobe:0xADDR (tests/runtime/probe "kprobe_addr_invalid")', () => {
  it('is named by its address in decimal, as bpftrace names it', () => {
    const ap = { kind: 'AttachPoint', raw: 'kprobe:0x12345678', provider: 'kprobe', parts: ['0x12345678'] };
    const p = new KprobeProbe(ap as unknown as AttachPoint, 'kprobe', '0x12345678', 0, undefined);
    assert.equal(p.name, 'kprobe:305419896');
    assert.equal(p.addr, 0x12345678n);
    assert.equal(
      new KprobeProbe(ap as unknown as AttachPoint, 'kprobe', 'vfs_read', 0, 'vmlinux').name,
      'kprobe:vmlinux:vfs_read',
    );
  });
});
