import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { filenameLikeWarning, listProbes } from '../../src/probes/list.js';
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
    const tracepoints = all.filter((l) => l.startsWith('tracepoint:'));
    assert.equal(tracepoints.length, 14);
    assert.equal(tracepoints[0], 'tracepoint:block:block_rq_issue');
    assert.deepEqual(listProbes('*', false), all);
    assert.deepEqual(listProbes('*:*', false), all);
    assert.deepEqual(listProbes('tracepoint', false), tracepoints);
    assert.deepEqual(listProbes('t:sched:sched_s*', false), ['tracepoint:sched:sched_switch']);
    assert.deepEqual(listProbes('tr*:*:sys_enter', false), ['tracepoint:raw_syscalls:sys_enter']);
    assert.deepEqual(listProbes('t:*openat2', false), ['tracepoint:syscalls:sys_enter_openat2']);
    assert.deepEqual(listProbes('nope:*', false), []);
    assert.deepEqual(listProbes('kprobe:*', false), []);
  });

  it("a full listing shows bpftrace's kernel providers (software, rawtracepoint, ...), sorted by provider", () => {
    const providers = [...new Set(listProbes(null, false).map((l) => l.slice(0, l.indexOf(':'))))];
    assert.ok(providers.includes('software') && providers.includes('tracepoint'), providers.join());
    assert.deepEqual(providers, [...providers].sort());
    for (const hidden of ['interval', 'profile', 'kretprobe', 'fexit', 'uprobe', 'begin']) {
      assert.ok(!providers.includes(hidden), hidden);
    }
  });

  it('software events are listed with their aliases, sorted as bpftrace sorts them', () => {
    const sw = listProbes('software:*', false);
    assert.equal(sw.length, 14);
    assert.ok(sw.includes('software:cpu:') && sw.includes('software:faults:') && sw.includes('software:cs:'));
    assert.deepEqual(listProbes('s:cpu*', false), ['software:cpu-clock:', 'software:cpu-migrations:', 'software:cpu:']);
  });

  it('interval and profile list their time units', () => {
    assert.deepEqual(listProbes('interval:*', false), ['interval:hz:', 'interval:ms:', 'interval:s:', 'interval:us:']);
    assert.deepEqual(listProbes('profile:*', false), ['profile:hz:', 'profile:ms:', 'profile:s:', 'profile:us:']);
  });

  it('a search without a colon looks in every provider; commas separate searches', () => {
    assert.deepEqual(
      listProbes('*sched_switch*', false).filter((l) => l.startsWith('tracepoint:')),
      ['tracepoint:sched:sched_switch'],
    );
    assert.deepEqual(listProbes('t:sched:sched_switch, interval:s*', false), [
      'tracepoint:sched:sched_switch',
      'interval:s:',
    ]);
  });

  it('warns about a search that looks like a missing file name', () => {
    assert.equal(
      filenameLikeWarning('non_existent_file.bt'),
      "It appears that 'non_existent_file.bt' is a filename but the file does not exist. Treating 'non_existent_file.bt' as a search pattern.",
    );
    assert.equal(filenameLikeWarning('t:*.x'), null);
    assert.equal(filenameLikeWarning('sched_switch'), null);
  });
});
