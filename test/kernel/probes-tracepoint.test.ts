/**
 * Live tests of the tracepoint provider on this kernel: tracefs, expansion against the real event list, format
 * offsets, suggestions, and a hand-written program attached through `ExpandedProbe.attach` that must run for our
 * getppid calls on every CPU (one perf event on CPU 0 serves all CPUs) and stop running once closed.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { onlineCpus } from '../../src/kernel/cpus.js';
import { systemTracefs } from '../../src/kernel/tracefs.js';
import { CompileError } from '../../src/lang/diagnostics.js';
import { expandAttachPoint } from '../../src/probes/registry.js';
import type { TracepointProbe } from '../../src/probes/tracepoint.js';
import { BPF_PROG_TYPE } from '../../src/probes/types.js';
import { attachPoint } from '../probes/helpers.js';
import { PerCpuCounter } from './probes-helpers.js';

describe('tracepoint provider (live)', () => {
  it('finds (or mounts) tracefs', () => {
    const fs = systemTracefs();
    assert.equal(fs.root, '/sys/kernel/tracing');
    const mounts = readFileSync('/proc/mounts', 'utf8').split('\n');
    assert.ok(mounts.some((l) => l.split(' ')[1] === '/sys/kernel/tracing' && l.split(' ')[2] === 'tracefs'));
  });

  it('expands tracepoint:sched:sched_* to exactly the events/sched/sched_* directories', () => {
    const dirs = readdirSync('/sys/kernel/tracing/events/sched', { withFileTypes: true })
      .filter((d) => d.isDirectory() && d.name.startsWith('sched_'))
      .map((d) => `tracepoint:sched:${d.name}`)
      .sort();
    assert.ok(dirs.length > 10);
    assert.deepEqual(
      expandAttachPoint(attachPoint('tracepoint:sched:sched_*')).map((p) => p.name),
      dirs,
    );
  });

  it('parses the live sys_enter_openat format (filename at offset 24, 8 bytes, a user pointer)', () => {
    const [p] = expandAttachPoint(attachPoint('t:syscalls:sys_enter_openat')) as TracepointProbe[];
    const f = p!.format.fields.find((x) => x.name === 'filename')!;
    assert.deepEqual([f.offset, f.size, f.cType], [24, 8, 'const char *']);
    const args = p!.args;
    assert.ok(args.kind === 'record');
    assert.deepEqual(
      args.fields.find((x) => x.name === 'filename'),
      {
        name: 'filename',
        type: { kind: 'pointer', to: { kind: 'int', size: 1, signed: true }, space: 'user' },
        offset: 24,
      },
    );
    assert.equal(p!.id, Number(readFileSync('/sys/kernel/tracing/events/syscalls/sys_enter_openat/id', 'utf8')));
  });

  it('suggests the closest real tracepoint for a typo', () => {
    try {
      expandAttachPoint(attachPoint('tracepoint:syscalls:sys_enter_opnat'));
      assert.fail('expected a CompileError');
    } catch (e) {
      assert.ok(e instanceof CompileError);
      assert.equal(e.diagnostics[0]!.message, 'No matches for tracepoint syscalls:sys_enter_opnat.');
      assert.equal(e.diagnostics[0]!.hint, 'Did you mean tracepoint:syscalls:sys_enter_openat?');
    }
  });
});

describe('tracepoint attach (live)', () => {
  const originalMask = execFileSync('taskset', ['-p', String(process.pid)], { encoding: 'utf8' })
    .trim()
    .split(' ')
    .pop()!;
  after(() => {
    execFileSync('taskset', ['-p', originalMask, String(process.pid)]);
  });

  /** Move this process's main thread to `cpu` and make `n` getppid(2) calls there. */
  function getppidOn(cpu: number, n: number): void {
    execFileSync('taskset', ['-p', '-c', String(cpu), String(process.pid)], { stdio: 'ignore' });
    for (let i = 0; i < n; i++) void process.ppid;
  }

  it('runs the program for getppid on every CPU through one perf event, and not after close()', () => {
    const cpus = onlineCpus();
    const counter = new PerCpuCounter(BPF_PROG_TYPE.TRACEPOINT, process.pid);
    try {
      const [probe] = expandAttachPoint(attachPoint('tracepoint:syscalls:sys_enter_getppid'));
      assert.equal(probe!.progType, BPF_PROG_TYPE.TRACEPOINT);
      const attached = probe!.attach(counter.prog.fd);
      try {
        for (const [i, cpu] of cpus.entries()) getppidOn(cpu, 100 + i);
      } finally {
        attached.close();
        attached.close(); // idempotent
      }
      const expected = counter.counts().map((_, cpu) => (cpus.includes(cpu) ? 100 + cpus.indexOf(cpu) : 0));
      assert.deepEqual(counter.counts(), expected);
      getppidOn(cpus[0]!, 50);
      assert.deepEqual(counter.counts(), expected, 'the program still ran after close()');
    } finally {
      counter.close();
    }
  });
});
