import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CompileError } from '../../src/lang/diagnostics.js';
import {
  expandAttachPoint,
  findProvider,
  providerFor,
  providers,
  registerProvider,
} from '../../src/probes/registry.js';
import { BPF_PROG_TYPE, type ProbeProvider } from '../../src/probes/types.js';
import { attachPoint } from './helpers.js';

function diag(fn: () => unknown) {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof CompileError);
    return e.diagnostics[0]!;
  }
  assert.fail('expected a CompileError');
}

describe('provider registry', () => {
  it("maps bpftrace's names and aliases to canonical providers", () => {
    const cases: [string, string][] = [
      ['tracepoint', 'tracepoint'],
      ['t', 'tracepoint'],
      ['T', 'tracepoint'],
      ['Tracepoint', 'tracepoint'],
      ['i', 'interval'],
      ['p', 'profile'],
      ['BEGIN', 'begin'],
      ['begin', 'begin'],
      ['END', 'end'],
      ['k', 'kprobe'],
      ['kr', 'kretprobe'],
      ['u', 'uprobe'],
      ['ur', 'uretprobe'],
      ['U', 'usdt'],
      ['rt', 'rawtracepoint'],
      ['f', 'fentry'],
      ['kfunc', 'fentry'],
      ['fr', 'fexit'],
      ['kretfunc', 'fexit'],
      ['s', 'software'],
      ['h', 'hardware'],
      ['it', 'iter'],
      ['w', 'watchpoint'],
    ];
    for (const [name, canonical] of cases) assert.equal(findProvider(name)?.names[0], canonical, name);
    assert.equal(findProvider('nope'), undefined);
  });

  it('expands BEGIN/END to special RAW_TRACEPOINT probes named begin/end', () => {
    const [b] = expandAttachPoint(attachPoint('BEGIN'));
    assert.deepEqual(
      [b!.name, b!.provider, b!.special, b!.progType, b!.args],
      ['begin', 'begin', 'begin', BPF_PROG_TYPE.RAW_TRACEPOINT, null],
    );
    const [e] = expandAttachPoint(attachPoint('END'));
    assert.deepEqual([e!.name, e!.special], ['end', 'end']);
    assert.equal(
      diag(() => expandAttachPoint(attachPoint('BEGIN:x'))).message,
      'begin probe type requires 0 arguments, found 1',
    );
    b!.attach(-1).close(); // nothing to attach: a no-op handle
  });

  it('reports unknown providers at the attach point, with a suggestion', () => {
    const d = diag(() => providerFor(attachPoint('tracepiont:sched:sched_switch')));
    assert.equal(d.message, 'Invalid probe type: tracepiont');
    assert.equal(d.hint, 'Did you mean tracepoint?');
    assert.deepEqual(d.pos, { line: 1, col: 1, offset: 0, end: 29 });
    assert.equal(diag(() => providerFor(attachPoint('zzzzzz:a'))).hint, undefined);
  });

  it('reports known-but-unimplemented providers as not supported yet', () => {
    assert.equal(
      diag(() => expandAttachPoint(attachPoint('w:0x1000:8:w'))).message,
      'watchpoint probes are not supported by bpfscope yet',
    );
  });

  it('lets a real provider replace a stub', () => {
    const fake: ProbeProvider = {
      names: ['watchpoint', 'w'],
      supported: true,
      listed: true,
      expand: () => [],
      list: () => ['watchpoint:x'],
    };
    const before = providers().length;
    registerProvider(fake);
    assert.equal(providers().length, before);
    assert.equal(findProvider('w'), fake);
  });
});
