/**
 * kprobe/kretprobe on a second kernel: the development kernel has no kprobes, so these one-liners run inside
 * Debian's 6.1 kernel booted under qemu (`../shared/tools/kernel-matrix/`, installed by `.ci/run`), with this
 * checkout shared in, and are compared with bpftrace 0.17 run in the same guest.
 * Skips (saying why) when the guest tooling is not installed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { describe, it } from 'node:test';
import { guestSkipReason, ROOT, runGuestScript, shQuote } from './guest.js';

const CASES: { name: string; program: string; command: string }[] = [
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
    program: 'kfunc:do_nanosleep /pid == cpid/ { @[args->mode] = count(); }',
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

describe('kprobes and fentry on Debian 6.1 (kernel matrix)', { skip: guestSkipReason() }, () => {
  it('match bpftrace 0.17 in the same guest', () => {
    const work = mkdtempSync('/tmp/kernel-matrix-test-');
    const lines = ['mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing', `cd ${ROOT}`];
    CASES.forEach((c, i) => {
      lines.push(
        `echo "=== ours ${i}"`,
        `node dist/src/cli/main.js -q -e ${shQuote(c.program)} -c ${shQuote(c.command)} 2>&1`,
      );
      lines.push(
        `echo "=== oracle ${i}"`,
        `bpftrace -e ${shQuote(c.program)} -c ${shQuote(c.command)} 2>/dev/null | grep -v '^Attaching'`,
      );
    });
    lines.push('echo "=== end"');
    const out = runGuestScript(lines, work, 300);
    CASES.forEach((c, i) => {
      const ours = new RegExp(`=== ours ${i}\\n([\\s\\S]*?)=== oracle ${i}`).exec(out)?.[1] ?? '';
      const oracle = new RegExp(`=== oracle ${i}\\n([\\s\\S]*?)=== (ours|end)`).exec(out)?.[1] ?? '';
      assert.ok(ours.includes('@'), `${c.name}: no map output:\n${ours}`);
      // entries with equal values: bpftrace 0.17 prints them in hash order, current bpftrace (and bpfscope) by key
      const sorted = (t: string) => t.split('\n').sort().join('\n');
      assert.equal(sorted(ours), sorted(oracle), `${c.name}: differs from bpftrace 0.17`);
    });
  });
});
