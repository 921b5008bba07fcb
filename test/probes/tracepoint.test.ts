import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Tracefs } from '../../src/kernel/tracefs.js';
import { CompileError } from '../../src/lang/diagnostics.js';
import { TracepointProvider } from '../../src/probes/tracepoint.js';
import { BPF_PROG_TYPE, type ExpandedProbe } from '../../src/probes/types.js';
import { attachPoint, fixtureTracefs } from './helpers.js';

const provider = new TracepointProvider(fixtureTracefs);
const names = (raw: string) => provider.expand(attachPoint(raw)).map((p) => p.name);

/** The single diagnostic of the CompileError `fn` throws. */
function diag(fn: () => unknown) {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof CompileError, `expected a CompileError, got ${e}`);
    assert.equal(e.diagnostics.length, 1);
    return e.diagnostics[0]!;
  }
  assert.fail('expected a CompileError');
}

describe('Tracefs over the fixture tree', () => {
  it('reads available_events sorted, ids and formats', () => {
    const fs = fixtureTracefs();
    assert.deepEqual(fs.categories(), ['block', 'irq', 'raw_syscalls', 'sched', 'syscalls']);
    assert.deepEqual(fs.eventsOf('sched'), [
      'sched_process_exec',
      'sched_process_exit',
      'sched_switch',
      'sched_wakeup',
    ]);
    assert.equal(fs.eventId('sched', 'sched_switch'), 372);
    assert.match(fs.eventFormat('sched', 'sched_switch'), /^name: sched_switch\nID: 372\n/);
    assert.equal(fs.hasEvent('sched', 'sched_switch'), true);
    assert.equal(fs.hasEvent('sched', 'nope'), false);
    assert.throws(() => fs.eventId('sched', 'nope'), /cannot read .*events\/sched\/nope\/id: ENOENT/);
  });

  it('falls back to the events/ directories (without ftrace) when available_events is missing', () => {
    const root = mkdtempSync(join(tmpdir(), 'bpfscope-tracefs-'));
    try {
      for (const d of ['sched/b_ev', 'sched/a_ev', 'ftrace/function', 'irq/x'])
        mkdirSync(join(root, 'events', d), { recursive: true });
      writeFileSync(join(root, 'events', 'enable'), '0\n');
      assert.deepEqual(new Tracefs(root).allTracepoints(), ['irq:x', 'sched:a_ev', 'sched:b_ev']);
      // before the full list: one event directory each, the same answers
      const fresh = new Tracefs(root);
      assert.deepEqual(
        ['sched:a_ev', 'irq:x', 'ftrace:function', 'sched:c_ev', 'enable:x', '..:events'].map((n) =>
          fresh.hasEvent(n.split(':')[0]!, n.split(':')[1]!),
        ),
        [true, true, false, false, false, false],
      );
    } finally {
      rmSync(root, { recursive: true });
    }
  });
});

describe('TracepointProvider.expand', () => {
  it('expands an exact name to one TRACEPOINT probe with its canonical name (alias t)', () => {
    const [p, ...rest] = provider.expand(attachPoint('t:sched:sched_switch'));
    assert.equal(rest.length, 0);
    assert.equal(p!.name, 'tracepoint:sched:sched_switch');
    assert.equal(p!.provider, 'tracepoint');
    assert.equal(p!.progType, BPF_PROG_TYPE.TRACEPOINT);
    assert.equal(p!.id, 372);
    assert.equal((p as ExpandedProbe).special, undefined);
    assert.ok(p!.args.kind === 'record' && p!.args.fields[0]!.name === 'prev_comm');
  });

  it('expands wildcards in the event, the category, or both, sorted', () => {
    assert.deepEqual(names('tracepoint:sched:sched_*'), [
      'tracepoint:sched:sched_process_exec',
      'tracepoint:sched:sched_process_exit',
      'tracepoint:sched:sched_switch',
      'tracepoint:sched:sched_wakeup',
    ]);
    assert.deepEqual(names('tracepoint:*:sys_enter'), ['tracepoint:raw_syscalls:sys_enter']);
    assert.deepEqual(names('tracepoint:*sys*:sys_e?it*'), [
      'tracepoint:raw_syscalls:sys_exit',
      'tracepoint:syscalls:sys_exit_openat',
    ]);
    assert.deepEqual(names('tracepoint:syscalls:sys_enter_openat[2]'), ['tracepoint:syscalls:sys_enter_openat2']);
  });

  it('reads a lone wildcard part as the event name in any category', () => {
    assert.deepEqual(names('t:*openat*'), [
      'tracepoint:syscalls:sys_enter_openat',
      'tracepoint:syscalls:sys_enter_openat2',
      'tracepoint:syscalls:sys_exit_openat',
    ]);
  });

  it('reports an unknown tracepoint at the attach point with the closest names', () => {
    const d = diag(() => provider.expand(attachPoint('tracepoint:syscalls:sys_enter_opnat')));
    assert.equal(d.message, 'No matches for tracepoint syscalls:sys_enter_opnat.');
    assert.equal(d.hint, 'Did you mean tracepoint:syscalls:sys_enter_openat?');
    assert.deepEqual(d.pos, { line: 1, col: 1, offset: 0, end: 35 });
    const d2 = diag(() => provider.expand(attachPoint('t:syscall:sys_enter_read')));
    assert.equal(d2.hint, 'Did you mean tracepoint:syscalls:sys_enter_read?');
    const d3 = diag(() => provider.expand(attachPoint('t:sched:sched_wakeup_nw')));
    assert.equal(d3.hint, 'Did you mean tracepoint:sched:sched_wakeup?');
  });

  it('gives no hint when nothing is close, and none for a wildcard matching nothing', () => {
    const d = diag(() => provider.expand(attachPoint('tracepoint:foo:bar')));
    assert.equal(d.message, 'No matches for tracepoint foo:bar.');
    assert.equal(d.hint, undefined);
    const w = diag(() => provider.expand(attachPoint('tracepoint:syscalls:sys_enter_zz*')));
    assert.equal(w.message, 'No matches for tracepoint syscalls:sys_enter_zz*.');
    assert.equal(w.hint, undefined);
  });

  it('rejects the wrong number of parts and empty parts', () => {
    assert.equal(
      diag(() => provider.expand(attachPoint('tracepoint:sched_switch'))).message,
      'tracepoint probe type requires 2 arguments, found 1',
    );
    assert.equal(
      diag(() => provider.expand(attachPoint('tracepoint:a:b:c'))).message,
      'tracepoint probe type requires 2 arguments, found 3',
    );
    assert.equal(
      diag(() => provider.expand(attachPoint('tracepoint:sched:'))).message,
      'tracepoint probe must have a target',
    );
  });
});

describe('TracepointProvider.list', () => {
  it('lists matches, with -v the argument lines', () => {
    assert.deepEqual(provider.list('sched:sched_s*', false), ['tracepoint:sched:sched_switch']);
    assert.deepEqual(provider.list('*exec*', true), [
      'tracepoint:sched:sched_process_exec',
      '    __data_loc char[] filename',
      '    pid_t pid',
      '    pid_t old_pid',
      'tracepoint:syscalls:sys_enter_execve',
      '    int __syscall_nr',
      '    const char * filename',
      '    const char *const * argv',
      '    const char *const * envp',
    ]);
    assert.equal(provider.list('*', false).length, 14);
    assert.deepEqual(provider.list('sched_switch', false), ['tracepoint:sched:sched_switch']);
  });
});
