/**
 * Live tests of the interval and profile providers: hand-written PERF_EVENT programs counting runs per CPU,
 * attached through `ExpandedProbe.attach` for about a second of idle time.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { onlineCpus } from '../../src/kernel/cpus.js';
import { expandAttachPoint } from '../../src/probes/registry.js';
import { BPF_PROG_TYPE } from '../../src/probes/types.js';
import { attachPoint } from '../probes/helpers.js';
import { PerCpuCounter } from './probes-helpers.js';
import { workloadPath } from '../helpers/workload.js';
import { spawn } from 'node:child_process';

/** Attach a counting program to the one probe `raw` expands to, sleep `ms`, detach; returns per-CPU counts. */
function countFor(raw: string, ms: number, busy = false): number[] {
  // cpu-clock samples need the CPU running something: an idle CPU of a quiet VM may not sample at all, so the
  // profile tests keep every online CPU busy with a pinned spinning child
  const spinners = busy
    ? onlineCpus().map((cpu) =>
        spawn(workloadPath(), ['cpu', String(cpu), 'spin', String(ms + 300)], { stdio: 'ignore' }),
      )
    : [];
  try {
    return countForInner(raw, ms);
  } finally {
    for (const c of spinners) c.kill('SIGKILL');
  }
}

/** How long the last countFor() kept its probe attached, ms (attach to the end of close: a loaded VM stretches it). */
let attachedMs = 0;

function countForInner(raw: string, ms: number): number[] {
  const [probe, ...more] = expandAttachPoint(attachPoint(raw));
  assert.equal(more.length, 0);
  assert.equal(probe!.progType, BPF_PROG_TYPE.PERF_EVENT);
  const counter = new PerCpuCounter(BPF_PROG_TYPE.PERF_EVENT);
  try {
    const t0 = performance.now();
    const attached = probe!.attach(counter.prog.fd);
    try {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
    } finally {
      attached.close();
      attachedMs = performance.now() - t0;
    }
    const counts = counter.counts();
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 150);
    assert.deepEqual(counter.counts(), counts, 'the program still ran after close()');
    return counts;
  } finally {
    counter.close();
  }
}

describe('interval provider (live)', () => {
  it('interval:ms:100 fires about 10 times in a second, on one CPU only', () => {
    const counts = countFor('interval:ms:100', 1050);
    const busy = counts.filter((c) => c > 0);
    assert.equal(busy.length, 1, `fired on several CPUs: ${counts}`);
    // a loaded 2-CPU VM can delay a timer tick past the window: allow one tick either way beyond exact
    assert.ok(busy[0]! >= 8 && busy[0]! <= 12, `fired ${busy[0]} times`);
    assert.equal(counts[onlineCpus()[0]!]! > 0, true, 'not on the first online CPU');
  });

  it('interval:hz:20 fires about 20 times in a second', () => {
    const total = countFor('i:hz:20', 1050).reduce((a, b) => a + b, 0);
    assert.ok(total >= 16 && total <= 24, `fired ${total} times`);
  });

  it('interval:200ms (nanoseconds with a suffix) fires about 5 times in a second', () => {
    const total = countFor('interval:200ms', 1050).reduce((a, b) => a + b, 0);
    assert.ok(total >= 4 && total <= 6, `fired ${total} times`);
  });
});

describe('profile provider (live)', () => {
  it('profile:ms:10 fires on every online CPU', () => {
    const counts = countFor('profile:ms:10', 500, true);
    for (const cpu of onlineCpus()) assert.ok(counts[cpu]! > 0, `no samples on CPU ${cpu}: ${counts}`);
    // At most one sample per 10 ms per CPU while attached (plus one for the edges)
    const most = Math.ceil(attachedMs / 10) + 1;
    for (const c of counts) assert.ok(c <= most, `too many samples: ${counts} in ${attachedMs.toFixed(1)} ms`);
  });

  it('profile:hz:99 fires on every online CPU', () => {
    const counts = countFor('profile:hz:99', 500, true);
    for (const cpu of onlineCpus()) assert.ok(counts[cpu]! > 0, `no samples on CPU ${cpu}: ${counts}`);
  });
});
