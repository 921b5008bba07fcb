import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { listProbes } from '../../src/probes/list.js';
import { registerProvider } from '../../src/probes/registry.js';
import { TracepointProvider } from '../../src/probes/tracepoint.js';
import { fixturePath, fixtureTracefs } from './helpers.js';

// Tracepoints come from the fixture tracefs tree in this test process.
registerProvider(new TracepointProvider(fixtureTracefs));

describe('listProbes', () => {
  it("matches bpftrace 0.17's -lv output byte for byte (saved from this machine)", () => {
    const expected = readFileSync(fixturePath('bpftrace-0.17-lv.txt'), 'utf8');
    const ours = [
      'sched:sched_switch',
      'syscalls:sys_enter_openat',
      'sched:sched_process_exec',
      'raw_syscalls:sys_enter',
      'block:block_rq_issue',
    ]
      .map((p) => `${listProbes(`tracepoint:${p}`, true).join('\n')}\n`)
      .join('');
    assert.equal(ours, expected);
  });

  it('handles aliases, provider globs, bare providers and empty patterns', () => {
    const all = listProbes(null, false);
    assert.equal(all.length, 14);
    assert.equal(all[0], 'tracepoint:block:block_rq_issue');
    assert.deepEqual(listProbes('*', false), all);
    assert.deepEqual(listProbes('*:*', false), all);
    assert.deepEqual(listProbes('tracepoint', false), all);
    assert.deepEqual(listProbes('t:sched:sched_s*', false), ['tracepoint:sched:sched_switch']);
    assert.deepEqual(listProbes('tr*:*:sys_enter', false), ['tracepoint:raw_syscalls:sys_enter']);
    assert.deepEqual(listProbes('t:*openat2', false), ['tracepoint:syscalls:sys_enter_openat2']);
    assert.deepEqual(listProbes('nope:*', false), []);
    assert.deepEqual(listProbes('interval:*', false), []);
    assert.deepEqual(listProbes('kprobe:*', false), []);
  });
});
