/**
 * kprobe/kretprobe on a second kernel: the development kernel has no kprobes, so these one-liners run inside
 * Debian's 6.1 kernel booted under qemu (`../shared/tools/kernel-matrix/`, installed by `.ci/run`), with this
 * checkout shared in, and are compared with bpftrace 0.17 run in the same guest.
 * Skips (saying why) when the guest tooling is not installed.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../helpers/cli.js';

const root = repoRoot();
const runGuest = resolve(root, '..', 'shared', 'tools', 'kernel-matrix', 'run-guest.sh');

function skipReason(): string | undefined {
  if (!existsSync(runGuest)) return `no ${runGuest}`;
  if (spawnSync('which', ['qemu-system-x86_64']).status !== 0)
    return 'qemu-system-x86 is not installed (kernel-matrix/setup.sh)';
  if (!existsSync('/lib/modules') || !readdirSync('/lib/modules').some((d) => d.endsWith('amd64'))) {
    return 'no Debian amd64 kernel under /lib/modules (kernel-matrix/setup.sh)';
  }
  return undefined;
}

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
    name: 'kprobe wildcard',
    program: 'kprobe:do_nanosleep* /pid == cpid/ { @[probe] = count(); }',
    command: '/bin/sleep 0.1',
  },
];

describe('kprobes and fentry on Debian 6.1 (kernel matrix)', { skip: skipReason() }, () => {
  it('match bpftrace 0.17 in the same guest', () => {
    const work = mkdtempSync('/tmp/kernel-matrix-test-');
    const lines = ['mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing', `cd ${root}`];
    CASES.forEach((c, i) => {
      const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
      lines.push(`echo "=== ours ${i}"`, `node dist/src/cli/main.js -q -e ${q(c.program)} -c ${q(c.command)} 2>&1`);
      lines.push(
        `echo "=== oracle ${i}"`,
        `bpftrace -e ${q(c.program)} -c ${q(c.command)} 2>/dev/null | grep -v '^Attaching'`,
      );
    });
    lines.push('echo "=== end"');
    const script = join(work, 'run.sh');
    writeFileSync(script, `${lines.join('\n')}\n`);
    const env = { ...process.env, TIMEOUT: '300', ...(root.startsWith('/tmp/') ? { SHARE: root } : {}) };
    const r = spawnSync('sh', [runGuest, script, work], { encoding: 'utf8', env, timeout: 400_000 });
    const out = r.stdout + r.stderr;
    assert.match(out, /=== end/, `the guest did not finish:\n${out.slice(-3000)}`);
    CASES.forEach((c, i) => {
      const ours = new RegExp(`=== ours ${i}\\r?\\n([\\s\\S]*?)=== oracle ${i}`).exec(out)?.[1] ?? '';
      const oracle = new RegExp(`=== oracle ${i}\\r?\\n([\\s\\S]*?)=== (ours|end)`).exec(out)?.[1] ?? '';
      assert.ok(ours.includes('@'), `${c.name}: no map output:\n${ours}`);
      assert.equal(ours.replace(/\r/g, ''), oracle.replace(/\r/g, ''), `${c.name}: differs from bpftrace 0.17`);
    });
  });
});
