import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { SType } from '../../src/lang/types.js';
import {
  parseTracepointFormat,
  tracepointArgLines,
  tracepointArgsType,
  tracepointFieldType,
} from '../../src/probes/tracepoint-format.js';
import { fixturePath } from './helpers.js';

function format(cat: string, ev: string) {
  return parseTracepointFormat(readFileSync(fixturePath('tracefs', 'events', cat, ev, 'format'), 'utf8'));
}

const int = (size: 1 | 2 | 4 | 8, signed: boolean): SType => ({ kind: 'int', size, signed });

describe('parseTracepointFormat', () => {
  it('parses sys_enter_openat: header, common fields, offsets, sizes, signedness', () => {
    const f = format('syscalls', 'sys_enter_openat');
    assert.equal(f.name, 'sys_enter_openat');
    assert.equal(f.id, 782);
    assert.deepEqual(
      f.fields.map((x) => [x.name, x.cType, x.offset, x.size, x.signed, x.common]),
      [
        ['common_type', 'unsigned short', 0, 2, false, true],
        ['common_flags', 'unsigned char', 2, 1, false, true],
        ['common_preempt_count', 'unsigned char', 3, 1, false, true],
        ['common_pid', 'int', 4, 4, true, true],
        ['__syscall_nr', 'int', 8, 4, true, false],
        ['dfd', 'int', 16, 8, false, false],
        ['filename', 'const char *', 24, 8, false, false],
        ['flags', 'int', 32, 8, false, false],
        ['mode', 'umode_t', 40, 8, false, false],
      ],
    );
    assert.equal(f.fields[6]!.decl, 'const char * filename');
    assert.equal(f.fields[6]!.arrayLength, undefined);
  });

  it('parses arrays and __data_loc fields', () => {
    const sw = format('sched', 'sched_switch');
    const comm = sw.fields.find((x) => x.name === 'prev_comm')!;
    assert.deepEqual([comm.cType, comm.arrayLength, comm.size, comm.dataLoc], ['char', 16, 16, false]);
    const exec = format('sched', 'sched_process_exec');
    const fn = exec.fields.find((x) => x.name === 'filename')!;
    assert.deepEqual(
      [fn.cType, fn.arrayLength, fn.offset, fn.size, fn.dataLoc, fn.relLoc, fn.decl],
      ['__data_loc char[]', undefined, 8, 4, true, false, '__data_loc char[] filename'],
    );
    const raw = format('raw_syscalls', 'sys_enter');
    const args = raw.fields.find((x) => x.name === 'args')!;
    assert.deepEqual([args.cType, args.arrayLength, args.offset, args.size], ['unsigned long', 6, 16, 48]);
  });

  it('parses __rel_loc, empty arrays, and rejects malformed field lines', () => {
    const text = [
      'name: x',
      'ID: 7',
      'format:',
      '\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;',
      '',
      '\tfield:__rel_loc char[] msg;\toffset:8;\tsize:4;\tsigned:0;',
      '\tfield:u8 buf[];\toffset:12;\tsize:0;\tsigned:0;',
      '',
      'print fmt: "%s"',
    ].join('\n');
    const f = parseTracepointFormat(text);
    assert.deepEqual(
      f.fields.map((x) => [x.name, x.dataLoc, x.relLoc, x.arrayLength, x.common]),
      [
        ['common_type', false, false, undefined, true],
        ['msg', true, true, undefined, false],
        ['buf', false, false, 0, false],
      ],
    );
    assert.throws(
      () => parseTracepointFormat('format:\n\tfield:int x;\toffset:8;\tsize:four;\tsigned:1;\n'),
      /cannot parse tracepoint format line: field:int x;/,
    );
  });
});

describe('tracepointArgsType', () => {
  it('sys_enter_openat: ints sized by the format, user-space char pointer, no common fields', () => {
    const t = tracepointArgsType('syscalls', 'sys_enter_openat', format('syscalls', 'sys_enter_openat'));
    assert.deepEqual(t, {
      kind: 'record',
      name: 'struct tracepoint:syscalls:sys_enter_openat_args',
      size: 48,
      fields: [
        { name: '__syscall_nr', type: int(4, true), offset: 8 },
        { name: 'dfd', type: int(8, false), offset: 16 },
        { name: 'filename', type: { kind: 'pointer', to: int(1, true), space: 'user' }, offset: 24 },
        { name: 'flags', type: int(8, false), offset: 32 },
        { name: 'mode', type: int(8, false), offset: 40 },
      ],
    });
  });

  it('sched_switch: char arrays become strings of their length', () => {
    const t = tracepointArgsType('sched', 'sched_switch', format('sched', 'sched_switch'));
    assert.deepEqual(t, {
      kind: 'record',
      name: 'struct tracepoint:sched:sched_switch_args',
      size: 64,
      fields: [
        { name: 'prev_comm', type: { kind: 'string', size: 16 }, offset: 8 },
        { name: 'prev_pid', type: int(4, true), offset: 24 },
        { name: 'prev_prio', type: int(4, true), offset: 28 },
        { name: 'prev_state', type: int(8, true), offset: 32 },
        { name: 'next_comm', type: { kind: 'string', size: 16 }, offset: 40 },
        { name: 'next_pid', type: int(4, true), offset: 56 },
        { name: 'next_prio', type: int(4, true), offset: 60 },
      ],
    });
  });

  it('sched_process_exec: __data_loc char[] is a dataLoc string', () => {
    const t = tracepointArgsType('sched', 'sched_process_exec', format('sched', 'sched_process_exec'));
    assert.deepEqual(t, {
      kind: 'record',
      name: 'struct tracepoint:sched:sched_process_exec_args',
      size: 20,
      fields: [
        { name: 'filename', type: { kind: 'string', size: 64 }, offset: 8, dataLoc: true },
        { name: 'pid', type: int(4, true), offset: 12 },
        { name: 'old_pid', type: int(4, true), offset: 16 },
      ],
    });
  });

  it('block_rq_issue: typedef ints, short, char arrays, __data_loc', () => {
    const t = tracepointArgsType('block', 'block_rq_issue', format('block', 'block_rq_issue'));
    assert.deepEqual(t, {
      kind: 'record',
      name: 'struct tracepoint:block:block_rq_issue_args',
      size: 64,
      fields: [
        { name: 'dev', type: int(4, false), offset: 8 },
        { name: 'sector', type: int(8, false), offset: 16 },
        { name: 'nr_sector', type: int(4, false), offset: 24 },
        { name: 'bytes', type: int(4, false), offset: 28 },
        { name: 'ioprio', type: int(2, false), offset: 32 },
        { name: 'rwbs', type: { kind: 'string', size: 10 }, offset: 34 },
        { name: 'comm', type: { kind: 'string', size: 16 }, offset: 44 },
        { name: 'cmd', type: { kind: 'string', size: 64 }, offset: 60, dataLoc: true },
      ],
    });
  });

  it('raw_syscalls:sys_enter: unsigned long args[6] is an array of 6 u64', () => {
    const t = tracepointArgsType('raw_syscalls', 'sys_enter', format('raw_syscalls', 'sys_enter'));
    assert.deepEqual(t, {
      kind: 'record',
      name: 'struct tracepoint:raw_syscalls:sys_enter_args',
      size: 64,
      fields: [
        { name: 'id', type: int(8, true), offset: 8 },
        { name: 'args', type: { kind: 'array', elem: int(8, false), count: 6 }, offset: 16 },
      ],
    });
  });

  it('sys_enter_execve: const char *const * is a user pointer to a user char pointer', () => {
    const t = tracepointArgsType('syscalls', 'sys_enter_execve', format('syscalls', 'sys_enter_execve'));
    assert.ok(t.kind === 'record');
    const charp: SType = { kind: 'pointer', to: int(1, true), space: 'user' };
    assert.deepEqual(t.fields[2], { name: 'argv', type: { kind: 'pointer', to: charp, space: 'user' }, offset: 24 });
  });
});

describe('tracepointFieldType', () => {
  const base = { decl: '', offset: 8, signed: false, dataLoc: false, relLoc: false, common: false };
  it('maps pointers outside syscalls to kernel space, void and structs to opaque pointees', () => {
    assert.deepEqual(tracepointFieldType({ ...base, cType: 'struct file *', name: 'f', size: 8 }, 'kernel'), {
      kind: 'pointer',
      to: { kind: 'record', name: 'struct file', size: 0, fields: [] },
      space: 'kernel',
    });
    assert.deepEqual(tracepointFieldType({ ...base, cType: 'const void *', name: 'p', size: 8 }, 'kernel'), {
      kind: 'pointer',
      to: { kind: 'none' },
      space: 'kernel',
    });
  });
  it('maps non-char arrays by element size, odd sizes to byte arrays, non-char __data_loc to arrays', () => {
    assert.deepEqual(tracepointFieldType({ ...base, cType: 'u8', name: 'a', size: 16, arrayLength: 16 }, 'kernel'), {
      kind: 'array',
      elem: int(1, false),
      count: 16,
    });
    // An unknown typedef element type takes its size from the format.
    assert.deepEqual(
      tracepointFieldType({ ...base, cType: 'xfs_ino_t', name: 'a', size: 32, arrayLength: 4, signed: true }, 'kernel'),
      { kind: 'array', elem: int(8, true), count: 4 },
    );
    assert.deepEqual(tracepointFieldType({ ...base, cType: 'struct x', name: 's', size: 12 }, 'kernel'), {
      kind: 'array',
      elem: int(1, false),
      count: 12,
    });
    assert.deepEqual(
      tracepointFieldType({ ...base, cType: '__data_loc u64[]', name: 'addrs', size: 4, dataLoc: true }, 'kernel'),
      { kind: 'array', elem: int(8, false), count: 0 },
    );
  });
  it('marks an `enum E` field as an unresolved enum E of the field size (skb:kfree_skb reason)', () => {
    assert.deepEqual(
      tracepointFieldType({ ...base, cType: 'enum skb_drop_reason', name: 'reason', size: 4, offset: 36 }, 'kernel'),
      { kind: 'int', size: 4, signed: false, enum: { name: 'skb_drop_reason', names: new Map(), unresolved: true } },
    );
  });
});

describe('tracepointArgLines', () => {
  it('prints the non-common declarations indented by four spaces', () => {
    assert.deepEqual(tracepointArgLines(format('sched', 'sched_process_exec')), [
      '    __data_loc char[] filename',
      '    pid_t pid',
      '    pid_t old_pid',
    ]);
  });
});
