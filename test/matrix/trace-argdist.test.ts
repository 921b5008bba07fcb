/**
 * trace and argdist on kernel functions (kprobes/kretprobes, and a `__x64_sys_*` syscall wrapper whose arguments
 * are read from the wrapped pt_regs), which the development kernel lacks: run inside Debian's 6.1 kernel under qemu
 * (`../shared/tools/kernel-matrix/`, see kprobe.test.ts). A copy of the test workload blocks on a fifo, each tool
 * attaches with `-p` to it, then the workload makes two 100 ms nanosleeps and exits.
 * Skips (saying why) when the guest tooling is not installed.
 *
 * The CLI is the one of this tree: `dist/src/cli/main.js` when the test runs from dist/, else `src/cli/main.ts`
 * through tsx.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { cliCommand, guestSection, guestSkipReason, ROOT, runGuestScript } from './guest.js';
import { workloadPath } from '../helpers/workload.js';

const CASES: { name: string; args: string; ready: string }[] = [
  {
    name: 'trace',
    args:
      `trace 'do_nanosleep "mode=%d", arg2' 'r::do_nanosleep "ret=%d", retval' ` +
      `'__x64_sys_nanosleep "req=%d same=%d", arg1 != 0, arg1 == arg2'`,
    ready: 'FUNC',
  },
  {
    name: 'argdist',
    args: "argdist -c -C 'p::do_nanosleep(void *t, int mode):int:mode' -H 'r::do_nanosleep():u64:$latency'",
    ready: '^\\[',
  },
];

const skip = guestSkipReason({ cli: 'this-tree' });

describe('trace/argdist on kernel functions (Debian 6.1 guest)', { skip }, () => {
  it('trace prints each do_nanosleep call and return; argdist counts and times them', () => {
    const work = mkdtempSync('/tmp/kernel-matrix-trace-');
    copyFileSync(workloadPath(), join(work, 'bpfs_workload'));
    const cli = cliCommand();
    // No eval and no subshell: `$!` must be the tool itself. SIGTERM, not SIGINT: a non-interactive shell starts
    // background commands with SIGINT ignored. Both tools end on SIGTERM as on Ctrl-C.
    const lines = [
      'mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing',
      `cd ${ROOT}`,
      `W=${work}`,
      ...CASES.flatMap((c) => [
        // The fifo lives on the guest's own tmpfs: the 9p share of the work directory refuses special files.
        'rm -f /tmp/bpfs-go $W/out; mkfifo /tmp/bpfs-go',
        '$W/bpfs_workload wait-stdin nanosleep 2 100000 < /tmp/bpfs-go & P=$!',
        `${cli} ${c.args} -p $P > $W/out 2>&1 & T=$!`,
        `i=0; until grep -q '${c.ready}' $W/out || [ $i -gt 900 ]; do sleep 0.2; i=$((i+1)); done`,
        // argdist prints every second; with -c each print after the workload ended holds all of it.
        'echo x > /tmp/bpfs-go; wait $P; sleep 4',
        'kill -TERM $T; wait $T',
        `echo "=== ${c.name}"; cat $W/out; echo "=== done ${c.name}"`,
      ]),
      'echo "=== end"',
    ];
    const out = runGuestScript(lines, work);
    const of = (name: string): string => guestSection(out, name);

    const tr = of('trace');
    const rows = tr.split('\n').filter((l) => /^\d+ +\d+ +bpfs_workload /.test(l));
    const msgs = rows.map((l) => l.replace(/^\d+ +\d+ +bpfs_workload +/, ''));
    // HRTIMER_MODE_REL (1) for nanosleep(2); the wrapper's pt_regs hold the workload's req and rem pointers (it
    // passes the same timespec for both): read without the pt_regs indirection they would differ.
    assert.deepEqual(
      msgs,
      [
        '__x64_sys_nanosleep req=1 same=1',
        'do_nanosleep     mode=1',
        'do_nanosleep     ret=0',
        '__x64_sys_nanosleep req=1 same=1',
        'do_nanosleep     mode=1',
        'do_nanosleep     ret=0',
      ],
      tr,
    );
    assert.match(tr, /^PID {5}TID {5}COMM {12}FUNC {13}-\n/, tr);

    const ad = of('argdist');
    const blocks = ad.split(/^\[\d\d:\d\d:\d\d\]\n/m);
    const last = blocks[blocks.length - 1]!;
    assert.match(last, /^p::do_nanosleep\(void \*t, int mode\):int:mode\n\tCOUNT {6}EVENT\n\t2 {10}mode = 1\n/, ad);
    // 100 ms sleeps: 67108864 -> 134217727 ns (the next bucket if the emulated guest is late), twice.
    const hist = [...last.matchAll(/^\s+(\d+) -> \d+\s+: (\d+)\s+\|/gm)].map((m) => [Number(m[1]), Number(m[2])]);
    const slow = hist.filter(([low]) => low! >= 67108864).reduce((n, [, c]) => n + c!, 0);
    assert.equal(slow, 2, ad);
    assert.match(last, /^ {5}\$latency {12}: count {5}distribution$/m, ad);
  });
});
