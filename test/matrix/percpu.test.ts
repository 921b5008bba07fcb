/**
 * percpu_kaddr() in Debian's 6.1 guest (`../shared/tools/kernel-matrix/`): the development kernel is built without
 * CONFIG_KALLSYMS_ALL, so the verifier cannot resolve the address of a kernel variable there (bpftrace's own
 * percpu_kaddr fails the same way) and bpfscope gives a positioned error instead; Debian's kernel has it. The
 * programs follow bpftrace's tests/runtime/call "percpu_kaddr", "percpu_kaddr this cpu" and "percpu_kaddr field
 * access". Skips, saying why, without the guest tooling.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { cliCommand, guestSkipReason, runGuestScript } from './guest.js';

const PROGRAMS: Record<string, string> = {
  count: 'begin { printf("processes: %d\\n", *percpu_kaddr("process_counts", 0)); }',
  thiscpu:
    'begin { if (*percpu_kaddr("process_counts") == *percpu_kaddr("process_counts", cpu)) { printf("SUCCESS\\n") } }',
  field:
    'begin { $runq = ((struct rq *)percpu_kaddr("runqueues", 0)); if ($runq != 0) { printf("nr_running: %d\\n", $runq.nr_running) } exit() }',
  nocpu: 'begin { $p = percpu_kaddr("process_counts", 4096); printf("null: %d\\n", $p == 0); }',
};

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

describe('percpu_kaddr on Debian 6.1 (kernel matrix)', { skip: guestSkipReason({ cli: 'this-tree' }) }, () => {
  it('reads per-CPU kernel variables on a given and the current CPU', () => {
    const work = mkdtempSync('/tmp/kernel-matrix-percpu-');
    try {
      const cli = cliCommand();
      const lines = Object.entries(PROGRAMS).flatMap(([name, prog]) => [
        `echo "=== ${name}"`,
        `${cli} -e ${q(prog)} 2>&1; echo "rc $?"`,
      ]);
      const out = runGuestScript([...lines, 'echo "=== end"'], work);
      const section = (name: string) => new RegExp(`=== ${name}\\n([\\s\\S]*?)=== `).exec(out)?.[1] ?? '';
      assert.match(section('count'), /^processes: \d+$/m, out);
      assert.match(section('count'), /rc 0/, out);
      assert.match(section('thiscpu'), /^SUCCESS$/m, out);
      assert.match(section('field'), /^nr_running: \d+$/m, out);
      assert.match(section('nocpu'), /^null: 1$/m, out);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
