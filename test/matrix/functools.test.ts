/**
 * funccount, funclatency and stackcount on kernel functions (kprobes/kretprobes), which the development kernel
 * lacks: run inside Debian's 6.1 kernel under qemu (`../shared/tools/kernel-matrix/`, see kprobe.test.ts) with the
 * built CLI. A copy of the test workload blocks reading its stdin, each tool attaches with `-p` to it, then the workload
 * makes two 100 ms nanosleeps and exits: do_nanosleep runs exactly twice in that process.
 * Skips (saying why) when the guest tooling is not installed or the CLI is not built.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { guestSection, guestSkipReason, ROOT, runGuestScript, shQuote } from './guest.js';
import { workloadPath } from '../helpers/workload.js';

const CASES: { name: string; args: string }[] = [
  { name: 'funccount', args: 'funccount do_nanosleep' },
  { name: 'funccount-glob', args: "funccount 'do_nanosleep*'" },
  { name: 'funclatency', args: 'funclatency -m do_nanosleep' },
  { name: 'stackcount', args: 'stackcount -K do_nanosleep' },
];

const skip = guestSkipReason({ cli: 'built' });

describe('funccount/funclatency/stackcount on kernel functions (Debian 6.1 guest)', { skip }, () => {
  it('count, time and stack do_nanosleep exactly twice', () => {
    const work = mkdtempSync('/tmp/kernel-matrix-func-');
    copyFileSync(workloadPath(), join(work, 'bpfs_workload'));
    const lines = [
      'mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing',
      `cd ${ROOT}`,
      `W=${work}`,
      'run() {',
      '  rm -f $W/out; : > $W/out',
      // the workload blocks reading its stdin until the tool says it is attached (no fifo: busybox may lack mkfifo)
      '  (i=0; until grep -q "Hit Ctrl-C" $W/out || [ $i -gt 900 ]; do sleep 0.2; i=$((i+1)); done; echo x) |',
      '    $W/bpfs_workload wait-stdin nanosleep 2 100000 & P=$!',
      '  eval "exec node dist/src/cli/main.js $2 -p $P" > $W/out 2>&1 & T=$!',
      // exec: $! is then node itself. SIGTERM: a background job of a non-interactive shell may have SIGINT ignored
      '  wait $P; kill -TERM $T; wait $T',
      '  cp $W/out $W/out.$1; echo "=== $1"; cat $W/out; echo "=== done $1"',
      '}',
      ...CASES.map((c) => `run ${c.name} ${shQuote(c.args)}`),
      'echo "=== end"',
    ];
    const out = runGuestScript(lines, work);
    const of = (name: string): string => guestSection(out, name);

    const fc = of('funccount');
    assert.match(fc, /^Tracing 1 functions for "do_nanosleep"\.\.\. Hit Ctrl-C to end\.\n/, fc);
    assert.match(fc, /\nFUNC {36}COUNT\ndo_nanosleep {32}2\nDetaching\.\.\.\n$/, fc);
    assert.match(of('funccount-glob'), /\ndo_nanosleep {32}2\n/, of('funccount-glob'));

    const fl = of('funclatency');
    const rows = new Map(
      [...fl.matchAll(/^\s+(\d+) -> \d+\s+: (\d+)\s+\|/gm)].map((m) => [Number(m[1]), Number(m[2])]),
    );
    // 100 ms sleeps: 64 -> 127 ms (128 -> 255 if the emulated guest is late), never less
    assert.equal((rows.get(64) ?? 0) + (rows.get(128) ?? 0), 2, fl);
    assert.match(fl, /\navg = \d+ msecs, total: \d+ msecs, count: 2\n/, fl);

    const sc = of('stackcount');
    const stacks = sc
      .slice(sc.indexOf('\n\n') + 2, sc.lastIndexOf('Detaching'))
      .split('\n\n')
      .filter((s) => s.trim());
    assert.equal(stacks.length, 1, sc);
    assert.match(stacks[0]!, /^ {2}do_nanosleep\n {2}hrtimer_nanosleep\n[\s\S]*\n {4}2$/, sc);
  });
});
