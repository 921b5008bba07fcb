/**
 * Live tests of `-l` listing and tracefs mounting. The listing is compared with Debian's bpftrace 0.17 (its `-l`
 * tracepoint lines and `-lv` argument lines agree with current bpftrace) when it is installed.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { listProbes } from '../../src/probes/list.js';

const hasBpftrace = spawnSync('bpftrace', ['--version']).status === 0;

/** bpftrace's `-l` output for `args` (stderr, with its warnings, dropped). */
function bpftraceList(...args: string[]): string {
  return execFileSync('bpftrace', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
}

const ours = (pattern: string | null, verbose: boolean) =>
  listProbes(pattern, verbose)
    .map((l) => `${l}\n`)
    .join('');

describe('-l listing (live)', () => {
  it('-lv tracepoint:sched:sched_switch prints the record fields', () => {
    assert.equal(
      ours('tracepoint:sched:sched_switch', true),
      [
        'tracepoint:sched:sched_switch',
        '    char prev_comm[16]',
        '    pid_t prev_pid',
        '    int prev_prio',
        '    long prev_state',
        '    char next_comm[16]',
        '    pid_t next_pid',
        '    int next_prio',
        '',
      ].join('\n'),
    );
  });

  it('rawtracepoints are listed as rawtracepoint:vmlinux:EVENT, their arguments without the context pointer', () => {
    // (consume_skb gained its `void * location` argument in 6.3)
    assert.match(
      ours('rawtracepoint:consume_skb', true),
      /^rawtracepoint:vmlinux:consume_skb\n {4}struct sk_buff \* skb\n/,
    );
    assert.equal(ours('rt:vmlinux:sched_switch', false), 'rawtracepoint:vmlinux:sched_switch\n');
    assert.equal(ours('rt:nomodule:sched_switch', false), '');
    assert.ok(ours(null, false).includes('\nrawtracepoint:vmlinux:sched_switch\n'));
  });

  it('-lv equals bpftrace -lv byte for byte', { skip: !hasBpftrace && 'bpftrace is not installed' }, () => {
    for (const p of [
      'tracepoint:sched:sched_switch',
      'tracepoint:syscalls:sys_enter_openat',
      't:sched:sched_process_*',
      'tracepoint:block:*',
    ]) {
      assert.equal(ours(p, true), bpftraceList('-lv', p), p);
    }
  });

  it('-l of every tracepoint equals bpftrace -l', { skip: !hasBpftrace && 'bpftrace is not installed' }, () => {
    const theirs = bpftraceList('-l', 'tracepoint:*');
    assert.ok(theirs.split('\n').length > 1000);
    assert.equal(ours('tracepoint:*', false), theirs);
    assert.equal(ours('t:*sched_sw*', false), bpftraceList('-l', 't:*sched_sw*'));
  });
});

describe('tracefs mounting (live)', () => {
  it('mounts tracefs when it is not mounted (in a private mount namespace)', () => {
    // Compiled tests (dist/) import the compiled module; under tsx, the TypeScript source.
    const js = fileURLToPath(new URL('../../src/kernel/tracefs.js', import.meta.url));
    const [loader, mod] = existsSync(js) ? ['', js] : ['--import tsx', js.replace(/\.js$/, '.ts')];
    const script = [
      'umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug 2>/dev/null;',
      'test -e /sys/kernel/tracing/events && echo still-mounted;',
      `node ${loader} -e "import('${mod}').then(m => { console.log(m.locateTracefs()); console.log(m.ensureTracefs()); console.log(m.locateTracefs()); })"`,
    ].join(' ');
    const r = spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script], {
      encoding: 'utf8',
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
    });
    assert.equal(r.stderr, '');
    assert.equal(r.stdout, 'null\n/sys/kernel/tracing\n/sys/kernel/tracing\n');
    // The host's mount is untouched.
    assert.ok(readFileSync('/proc/mounts', 'utf8').includes(' /sys/kernel/tracing tracefs '));
  });
});
