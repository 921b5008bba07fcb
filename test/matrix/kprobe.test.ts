/**
 * kprobe/kretprobe on a second kernel: the development kernel has no kprobes, so these one-liners run inside
 * Debian's 6.1 kernel booted under qemu (`../shared/tools/kernel-matrix/`, installed by `.ci/run`), with this
 * checkout shared in, and are compared with bpftrace 0.17 run in the same guest. kprobe_multi needs a kernel with
 * CONFIG_FPROBE, which Debian's 6.1 lacks: those cases (and the others again) run in Debian's 6.12 kernel
 * (test/matrix/guest-kernel.sh, fetched by `.ci/run`).
 * Skips (saying why) when the guest tooling is not installed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { describe, it } from 'node:test';
import { guestSection, guestSkipReason, ROOT, runGuestScript, shQuote } from './guest.js';

interface Case {
  name: string;
  program: string;
  command: string;
  /**
   * Also check the number of attached probes (ours then runs without -q): `true`, equal to bpftrace 0.17's;
   * `'functions'`, a kprobe_multi link that current bpftrace counts as its functions (probe_count()) where 0.17 says
   * `Attaching 1 probe...`: more than one.
   */
  attachCount?: boolean | 'functions';
  /** What bpftrace 0.17 runs instead, where it lacks the syntax (default: `program`). */
  oracleProgram?: string;
}

const CASES: Case[] = [
  {
    name: 'kprobe + kretprobe count and retval',
    program: 'kprobe:do_nanosleep { @k = count(); } kretprobe:do_nanosleep { @r[retval] = count(); }',
    command: '/bin/sleep 0.1',
  },
  {
    name: 'kprobe arguments (do_sys_openat2 filename)',
    program: 'kprobe:do_sys_openat2 /pid == cpid/ { @[str(arg1)] = count(); }',
    command: '/bin/cat /etc/hostname',
  },
  {
    name: 'fentry (kfunc) with BTF args',
    // (uint64): current bpftrace and bpfscope print an enum-typed key as its enumerator (HRTIMER_MODE_REL), 0.17 the number
    program: 'kfunc:do_nanosleep /pid == cpid/ { @[(uint64)args->mode] = count(); }',
    command: '/bin/sleep 0.1',
  },
  {
    name: 'fexit (kretfunc) with retval',
    program: 'kretfunc:do_nanosleep /pid == cpid/ { @ret[retval] = count(); }',
    command: '/bin/sleep 0.1',
  },
  {
    name: 'fentry path() (bpf_d_path) of an opened file',
    program: 'kfunc:security_file_open /pid == cpid/ { @[path(args->file->f_path)] = count(); }',
    command: '/bin/cat /etc/hostname',
  },
  {
    name: 'kprobe wildcard',
    program: 'kprobe:do_nanosleep* /pid == cpid/ { @[probe] = count(); }',
    command: '/bin/sleep 0.1',
  },
];

/**
 * Wildcards on kernels with kprobe_multi (Debian's 6.12; its 6.1 is built without CONFIG_FPROBE): one program on
 * one kprobe_multi link, `func` (and `probe`) from the attach cookie. "Attached N probes" counts the link's functions,
 * as current bpftrace: more than 1 where 0.17 says 1; equal to 0.17's count when the body reads `probe` (0.17 then
 * attaches one probe per function).
 */
const MULTI_CASES: Case[] = [
  {
    name: 'kprobe_multi wildcard with func',
    program: 'kprobe:vfs_* /pid == cpid/ { @[func] = count(); }',
    command: '/bin/cat /etc/hostname',
    attachCount: 'functions',
  },
  {
    name: 'kretprobe_multi wildcard with retval',
    program: 'kretprobe:vfs_read* /pid == cpid/ { @[retval] = count(); }',
    command: '/bin/cat /etc/hostname',
    attachCount: 'functions',
  },
  {
    // (0.17's func is a ksym here: it cannot compare it with a string, as bpfscope and current bpftrace can)
    name: 'kprobe_multi func in printf',
    program: 'kprobe:vfs_open* /pid == cpid/ { printf("%s\\n", func); }',
    command: '/bin/cat /etc/hostname',
    // one function matches: 1 either way
    attachCount: true,
  },
  {
    name: 'wildcard whose body reads probe: one link, counted per function as 0.17 counts its probes',
    program: 'kprobe:vfs_read* /pid == cpid/ { @[probe] = count(); }',
    command: '/bin/cat /etc/hostname',
    attachCount: true,
  },
];

/**
 * `kprobe:MODULE:FUNCTION` on the guest's own 9p modules (they serve its root file system): one perf event per
 * function. bpftrace 0.17 has no `MODULE:` form ("kprobe probe type requires 1 argument"; current bpftrace has it),
 * so its oracle is the same function named without the module.
 */
const MODULE_CASES: Case[] = [
  {
    name: 'kprobe:MODULE:FUNCTION',
    program: 'kprobe:9p:v9fs_file_open /pid == cpid/ { @ = count(); }',
    oracleProgram: 'kprobe:v9fs_file_open /pid == cpid/ { @ = count(); }',
    command: '/bin/cat /etc/hostname',
  },
  {
    name: 'kprobe:MODULE:wildcard with func',
    program: 'kprobe:9p:v9fs_file_open* /pid == cpid/ { @[func] = count(); }',
    oracleProgram: 'kprobe:v9fs_file_open* /pid == cpid/ { @[func] = count(); }',
    command: '/bin/cat /etc/hostname',
  },
];

/**
 * Run `cases` with bpfscope and bpftrace 0.17 in one boot of the `kernel` guest and compare their map output (lines
 * sorted: entries with equal values print in hash order in 0.17, by key in current bpftrace and bpfscope). `extra`:
 * more script lines, whose output the caller reads from the returned console.
 */
function compareInGuest(cases: readonly Case[], kernel?: string, extra: readonly string[] = []): string {
  const work = mkdtempSync('/tmp/kernel-matrix-test-');
  const lines = ['mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing', `cd ${ROOT}`];
  cases.forEach((c, i) => {
    lines.push(
      `echo "=== ours ${i}"`,
      `node dist/src/cli/main.js ${c.attachCount ? '' : '-q '}-e ${shQuote(c.program)} -c ${shQuote(c.command)} 2>&1`,
      `echo "=== oracle ${i}"`,
      `bpftrace -e ${shQuote(c.oracleProgram ?? c.program)} -c ${shQuote(c.command)} 2>/dev/null`,
    );
  });
  lines.push(...extra, 'echo "=== end"');
  const out = runGuestScript(lines, work, 300, kernel ? { kernel } : {});
  cases.forEach((c, i) => {
    const ours = new RegExp(`=== ours ${i}\\n([\\s\\S]*?)=== oracle ${i}`).exec(out)?.[1] ?? '';
    const oracle = new RegExp(`=== oracle ${i}\\n([\\s\\S]*?)=== `).exec(out)?.[1] ?? '';
    if (c.attachCount) {
      const n = /^Attached (\d+) probes?$/m.exec(ours)?.[1];
      assert.ok(n, `${c.name}: no "Attached N probes" line:\n${ours}`);
      if (c.attachCount === 'functions')
        assert.ok(Number(n) > 1, `${c.name}: a multi link counts its functions:\n${ours}`);
      else
        assert.equal(
          n,
          /^Attaching (\d+) probes?\.\.\.$/m.exec(oracle)?.[1],
          `${c.name}: probe count differs:\n${oracle}`,
        );
    }
    const body = (t: string) =>
      t
        .split('\n')
        .filter((l) => !/^Attach(ed|ing) \d+ probes?/.test(l))
        .sort()
        .join('\n');
    assert.ok(/[@a-z]/.test(body(ours)), `${c.name}: no output:\n${ours}`);
    assert.equal(body(ours), body(oracle), `${c.name}: differs from bpftrace 0.17`);
  });
  return out;
}

describe('kprobes and fentry on Debian 6.1 (kernel matrix)', { skip: guestSkipReason() }, () => {
  it('match bpftrace 0.17 in the same guest (incl. kprobe:MODULE:FUNCTION)', () => {
    compareInGuest([...CASES, ...MODULE_CASES]);
  });
});

describe('kprobe_multi on Debian 6.12 (kernel matrix)', { skip: guestSkipReason({ kernel: '6.12' }) }, () => {
  it('wildcards attach one kprobe_multi link and match bpftrace 0.17 in the same guest', () => {
    // path(): bpftrace 0.17 misdetects bpf_d_path on 6.12 ("BPF_FUNC_d_path not available for your kernel version")
    const cases = [...MULTI_CASES, ...CASES.filter((c) => !c.program.includes('path(')), ...MODULE_CASES];
    const out = compareInGuest(cases, '6.12', [
      'echo "=== links"',
      `node dist/src/cli/main.js -q -e ${shQuote('kprobe:vfs_* { @ = count(); }')} -c 'bpftool link show' 2>&1`,
      'echo "=== done links"',
    ]);
    const links = guestSection(out, 'links');
    assert.match(links, /kprobe_multi/, `no kprobe_multi link while attached:\n${links}`);
    assert.doesNotMatch(links, /perf_event/, `perf event links besides the kprobe_multi one:\n${links}`);
  });
});
