import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BpftraceCollapser } from '../../src/flame/collapse/bpftrace.js';
import { collapseText } from '../../src/flame/collapse/collapser.js';

const collapse = (text: string): string => collapseText(new BpftraceCollapser(), text);

describe('stackcollapse-bpftrace', () => {
  it('@[kstack]: frames reversed, root first (stackcollapse-bpftrace.pl example)', () => {
    const input = [
      'Attaching 1 probe...',
      '',
      '@[',
      '    _raw_spin_lock_bh+0',
      '    tcp_recvmsg+808',
      '    inet_recvmsg+81',
      ']: 3',
      '@[',
      '    schedule+5',
      ']: 12',
      '',
    ].join('\n');
    assert.equal(collapse(input), 'inet_recvmsg+81;tcp_recvmsg+808;_raw_spin_lock_bh+0 3\nschedule+5 12\n');
  });
  it('@[kstack, comm] and @[, comm] (empty stack), as the Perl script prints them', () => {
    const input = '@[\n    vfs_read+5\n    ksys_read+9\n, cat]: 7\n@[, swapper/0]: 40\n';
    assert.equal(collapse(input), 'cat;ksys_read+9;vfs_read+5 7\nswapper/0 40\n');
  });
  it('@[kstack, ustack, comm]: comm, user frames, kernel frames', () => {
    const input = [
      '@[',
      '    _raw_spin_unlock_irqrestore+25',
      '    kernel_clone+229',
      ', ',
      '    0x7f22f3371353',
      '    __libc_fork+35',
      ', bash]: 1',
      '@[, ',
      '    Builtins_InterpreterEntryTrampoline+220',
      '    0x1a0ed0c',
      ', node]: 4',
      '@[',
      '    do_exit+647',
      ', , python3]: 2',
    ].join('\n');
    assert.equal(
      collapse(input),
      'bash;__libc_fork+35;0x7f22f3371353;kernel_clone+229;_raw_spin_unlock_irqrestore+25 1\n' +
        'node;0x1a0ed0c;Builtins_InterpreterEntryTrampoline+220 4\n' +
        'python3;do_exit+647 2\n',
    );
  });
  it('accepts named maps and leading scalar keys; ignores maps without stacks', () => {
    const input = '@stacks[\n\tf1\n\tf2\n]: 5\n@[bash, \n    g1\n]: 2\n@count[bash]: 9\n@: 4\n';
    assert.equal(collapse(input), 'f2;f1 5\nbash;g1 2\n');
  });
  it('is independent of chunk boundaries', () => {
    const input = Buffer.from('@[\n    a+1\n    b+2\n, comm]: 3\n@[, x]: 1\n');
    const c = new BpftraceCollapser();
    for (let i = 0; i < input.length; i += 3) c.push(input.subarray(i, i + 3));
    c.endFile();
    assert.equal(
      Buffer.concat(Array.from(c.finish(), (p) => Buffer.from(p))).toString('latin1'),
      'comm;b+2;a+1 3\nx 1\n',
    );
  });
});
