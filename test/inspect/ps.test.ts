/** The `bpfscope ps` table and JSON writer (src/inspect/ps.ts) on a hand-written listing: no kernel needed. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BpfObjects } from '../../src/inspect/objects.js';
import { formatNs, formatTable, toJson } from '../../src/inspect/ps.js';

const listing: BpfObjects = {
  programs: [
    {
      id: 12,
      type: 'tracepoint',
      name: 'sys_enter_g_0',
      tag: '44e7ddf7e6830e7c',
      gplCompatible: true,
      loadedAtMs: 0,
      uid: 0,
      btfId: 0,
      mapIds: [3],
      xlatedBytes: 536,
      jitedBytes: 332,
      verifiedInsns: 49,
      runCnt: 9007199254740993n,
      runTimeNs: 1500n,
      recursionMisses: 0n,
      delta: { runCnt: 40n, runTimeNs: 12345n },
      owners: [{ pid: 100, comm: 'node', fds: [7, 9] }],
      attach: [{ kind: 'tracepoint', text: 'tracepoint sys_enter_getppid', name: 'sys_enter_getppid', linkId: 4 }],
      session: { pid: 100, source: 'stdin' },
    },
    {
      id: 13,
      type: 'kprobe',
      name: 'args6_1',
      tag: '96f9993773562fa9',
      gplCompatible: true,
      loadedAtMs: 0,
      uid: 0,
      btfId: 0,
      mapIds: [3],
      xlatedBytes: 536,
      jitedBytes: 332,
      verifiedInsns: 49,
      runCnt: 7n,
      runTimeNs: 2_500_000n,
      recursionMisses: 0n,
      delta: { runCnt: 7n, runTimeNs: 2_500_000n },
      owners: [],
      attach: [
        { kind: 'uprobe', text: 'uprobe /tmp/w+0x1139', path: '/tmp/w', offset: 0x1139 },
        { kind: 'uprobe', text: 'uprobe /tmp/w+0x1200', path: '/tmp/w', offset: 0x1200 },
        { kind: 'uprobe', text: 'uprobe /tmp/w+0x1200', path: '/tmp/w', offset: 0x1200 },
      ],
    },
  ],
  maps: [
    {
      id: 3,
      type: 'ringbuf',
      name: 'ringbuf',
      keySize: 0,
      valueSize: 0,
      maxEntries: 4096,
      flags: 0,
      btfId: 0,
      progIds: [12, 13],
      owners: [{ pid: 100, comm: 'node', fds: [5] }],
    },
  ],
  links: [],
  processes: [
    {
      pid: 100,
      comm: 'node',
      cmdline: ['node', 'bpfscope', '-e', 'x'],
      progIds: [12],
      mapIds: [3],
      linkIds: [],
      perfEvents: [],
      bpfscope: {
        argv: ['node', 'bpfscope', '-e', 'x'],
        sessions: [{ source: 'stdin', program: 'tracepoint:a:b {\n  @ = count();\n}\n', progIds: [12], startedMs: 0 }],
      },
    },
  ],
  stats: { enabled: true, how: 'enable_stats', intervalNs: 1_000_000_000n },
};

test('the table: one block per process, program text under a bpfscope run, unheld programs last', () => {
  assert.equal(
    formatTable(listing),
    [
      'PID  COMM    TYPE        ID  NAME           ATTACH                        RUN_CNT  RUN_TIME',
      '100  node    tracepoint  12  sys_enter_g_0  tracepoint sys_enter_getppid       40    12.3us',
      '     bpfscope program (stdin), prog ids 12:',
      '       tracepoint:a:b {',
      '         @ = count();',
      '       }',
      '-    (none)  kprobe      13  args6_1        uprobe /tmp/w+0x1139                7    2.50ms',
      '                                            uprobe /tmp/w+0x1200 (x2)',
      '',
    ].join('\n'),
  );
  assert.equal(formatTable(listing, { all: true }).split('\n')[2], '             map ringbuf  3   ringbuf        -');
});

test('run time units and exact integer counters in JSON', () => {
  assert.deepEqual([0n, 999n, 1000n, 12345n, 2_500_000n, 1_234_567_890n].map(formatNs), [
    '0ns',
    '999ns',
    '1.0us',
    '12.3us',
    '2.50ms',
    '1.23s',
  ]);
  const j = toJson({ a: 9007199254740993n, b: 'x', c: [1n, -2n], d: '\u0001big1:5' });
  assert.equal(j, '{"a":9007199254740993,"b":"x","c":[1,-2],"d":"\\u0001big1:5"}');
});
