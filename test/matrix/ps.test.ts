/**
 * `bpfscope ps` on Debian's 6.1 guest (`../shared/tools/kernel-matrix/`): a kprobe (which the development kernel
 * lacks) and a tracepoint. Linux 6.1's perf_event links do not describe their target (`bpf_link_info.perf_event`
 * came in 6.6), so the attach points come from BPF_TASK_FD_QUERY on the run's perf event fds only; they must agree
 * with `bpftool perf show` in the same guest, and the links take their perf event's attach point. Skips, saying why,
 * without the guest tooling.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { cliCommand, guestSection, guestSkipReason, runGuestScript, shQuote } from './guest.js';

const PROGRAM = 'kprobe:do_nanosleep { @ = count(); } tracepoint:syscalls:sys_enter_getppid { @g = count(); }';

interface Listing {
  programs: {
    id: number;
    type: string;
    attach: { kind: string; text: string; perfEvent?: { pid: number; fd: number } }[];
  }[];
  links: { id: number; type: string; progId: number; attach: { text: string } }[];
  processes: { pid: number; progIds: number[]; bpfscope?: { sessions: { source: string; program: string }[] } }[];
}

describe('bpfscope ps on Debian 6.1 (kernel matrix)', { skip: guestSkipReason({ cli: 'this-tree' }) }, () => {
  it('lists a kprobe and a tracepoint run with their attach points, as bpftool perf does', () => {
    const work = mkdtempSync('/tmp/kernel-matrix-ps-');
    try {
      const cli = cliCommand();
      const out = runGuestScript(
        [
          // the registry lives in /run, which the read-only shared root may not offer writable
          'mountpoint -q /run || mount -t tmpfs none /run',
          `${cli} -e ${shQuote(PROGRAM)} > ${work}/run.out 2>&1 &`,
          'BG=$!',
          `for i in $(seq 1 400); do grep -q Attached ${work}/run.out && break; sleep 0.3; done`,
          'echo "=== pid"; echo $BG; echo "=== done pid"',
          `echo "=== ps"; ${cli} ps --json -p $BG; echo "=== done ps"`,
          'echo "=== perf"; bpftool -j perf show; echo; echo "=== done perf"',
          'kill -INT $BG; wait $BG; echo "rc $?"',
          'echo "=== end"',
        ],
        work,
      );
      const pid = Number(guestSection(out, 'pid').trim());
      const r = JSON.parse(guestSection(out, 'ps')) as Listing;
      const perf = (JSON.parse(guestSection(out, 'perf')) as Record<string, unknown>[]).filter((e) => e.pid === pid);
      assert.deepEqual(
        r.processes.map((p) => p.pid),
        [pid],
        out,
      );
      const session = r.processes[0]!.bpfscope?.sessions[0];
      assert.equal(session?.source, 'stdin');
      assert.equal(session?.program, PROGRAM);
      const kp = r.programs.find((p) => p.type === 'kprobe')!;
      const tp = r.programs.find((p) => p.type === 'tracepoint')!;
      assert.deepEqual(
        kp.attach.map((a) => a.text),
        ['kprobe do_nanosleep+0x0'],
      );
      assert.deepEqual(
        tp.attach.map((a) => a.text),
        ['tracepoint sys_enter_getppid'],
      );
      const kpPerf = perf.find((e) => e.prog_id === kp.id)!;
      assert.equal(kpPerf.fd_type, 'kprobe');
      assert.equal(kpPerf.func, 'do_nanosleep');
      assert.equal(kpPerf.offset, 0);
      assert.deepEqual(kp.attach[0]!.perfEvent, { pid, fd: kpPerf.fd });
      const tpPerf = perf.find((e) => e.prog_id === tp.id)!;
      assert.equal(tpPerf.tracepoint, 'sys_enter_getppid');
      assert.deepEqual(tp.attach[0]!.perfEvent, { pid, fd: tpPerf.fd });
      // 6.1's perf_event links say nothing about their target: each takes its perf event's attach point
      assert.deepEqual(
        r.links.map((l) => [l.type, l.progId, l.attach.text]).sort(),
        [
          ['perf_event', kp.id, 'kprobe do_nanosleep+0x0'],
          ['perf_event', tp.id, 'tracepoint sys_enter_getppid'],
        ].sort(),
      );
      assert.match(out, /^rc 0$/m);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
