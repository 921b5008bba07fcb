/**
 * runqlen (src/tools/runqlen.ts): bcc's help and usage errors, the generated program, the histogram and
 * occupancy formats, and live runs with three spinning processes pinned to one CPU (the run queue there holds
 * them all, so every sample of that CPU sees a queue of at least two).
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { onlineCpus } from '../../src/kernel/cpus.js';
import type { MapDump } from '../../src/runtime/output/model.js';
import {
  buildProgram,
  cpuSlots,
  formatInterval,
  formatOccupancy,
  lengthSlots,
  queueLengthExpr,
  RQ_NR_RUNNING,
  SPEC,
} from '../../src/tools/runqlen.js';
import { startPinnedSpinners } from '../helpers/workload.js';
import { argparseFixtureTests } from './argparse-fixture.js';
import { liveSkipReason, runBpfscope } from './helpers.js';

/** A MapDump of `count()` values keyed by integer tuples. */
function countDump(rows: [number[], bigint][]): MapDump {
  return {
    name: '@dist',
    keyTypes: [],
    valueType: { kind: 'int', size: 8, signed: false } as never,
    entries: rows.map(([key, value]) => ({
      key: key.map((k) => ({ kind: 'int' as const, value: BigInt(k), signed: false, size: 8 as const })),
      value: { kind: 'count' as const, value, signed: false },
    })),
  };
}

describe('runqlen options (bcc tools/runqlen.py argparse)', () => {
  argparseFixtureTests(SPEC, 'biotop-runqlen-argparse');
});

describe('runqlen program', () => {
  it('samples the run queue at 99 Hz, minus the running task; -C keys by CPU', () => {
    assert.equal(
      buildProgram({ cpus: false, expr: RQ_NR_RUNNING }),
      'config = { max_map_keys = 10240 }\nprofile:hz:99 {\n  $len = curtask->se.cfs_rq->rq->nr_running;\n' +
        '  if ($len > 0) {\n    $len = $len - 1;\n  }\n  @dist[$len] = count();\n}\n',
    );
    assert.match(
      buildProgram({ cpus: true, expr: 'curtask->se.cfs_rq->nr_running' }),
      /cfs_rq->nr_running;[^]*@dist\[cpu, \$len\] = count\(\);/,
    );
  });
});

describe('runqlen on this kernel', () => {
  it(
    'reads the CPU run queue (struct cfs_rq has rq with CONFIG_FAIR_GROUP_SCHED)',
    { skip: !existsSync('/sys/kernel/btf/vmlinux') && 'no kernel BTF' },
    () => {
      assert.equal(queueLengthExpr(), RQ_NR_RUNNING);
    },
  );
});

describe('runqlen output (bcc format)', () => {
  const total = countDump([
    [[0], 1068n],
    [[1], 642n],
    [[3], 183n],
  ]);
  const perCpu = countDump([
    [[1, 0], 10n],
    [[1, 2], 30n],
    [[0, 0], 257n],
    [[0, 1], 64n],
  ]);

  it('linear histogram "runqlen" from 0 to the longest queue seen, zero rows included', () => {
    assert.deepEqual(lengthSlots(total), [1068n, 642n, 0n, 183n]);
    assert.equal(
      formatInterval({ readMap: () => total }, { cpus: false, runqocc: false, timestamp: false }),
      '\n     runqlen       : count     distribution\n' +
        '        0          : 1068     |****************************************|\n' +
        '        1          : 642      |************************                |\n' +
        '        2          : 0        |                                        |\n' +
        '        3          : 183      |******                                  |\n',
    );
    // An empty interval prints only the leading empty line (bcc prints no header without counts).
    assert.equal(
      formatInterval({ readMap: () => countDump([]) }, { cpus: false, runqocc: false, timestamp: false }),
      '\n',
    );
  });

  it('-C: "cpu = N" sections by CPU; -T puts the time first', () => {
    assert.deepEqual(cpuSlots(perCpu), [
      { cpu: 0, vals: [257n, 64n] },
      { cpu: 1, vals: [10n, 0n, 30n] },
    ]);
    const out = formatInterval(
      { readMap: () => perCpu },
      { cpus: true, runqocc: false, timestamp: true },
      new Date(2024, 0, 1, 19, 51, 34),
    );
    assert.equal(
      out,
      '\n19:51:34\n\ncpu = 0\n     runqlen       : count     distribution\n' +
        '        0          : 257      |****************************************|\n' +
        '        1          : 64       |*********                               |\n' +
        '\ncpu = 1\n     runqlen       : count     distribution\n' +
        '        0          : 10       |*************                           |\n' +
        '        1          : 0        |                                        |\n' +
        '        2          : 30       |****************************************|\n',
    );
  });

  it('-O: share of samples with a queue, system-wide or per CPU 0..highest', () => {
    assert.equal(formatOccupancy({ cpus: false }, { total: [3n, 1n] }), 'runqocc: 25.00%\n');
    assert.equal(formatOccupancy({ cpus: false }, { total: [] }), 'runqocc: 0.00%\n');
    assert.equal(
      formatOccupancy({ cpus: true }, { perCpu: [{ cpu: 2, vals: [1n, 0n, 2n] }] }),
      'runqocc, CPU 0     0.00%\nrunqocc, CPU 1     0.00%\nrunqocc, CPU 2    66.67%\n',
    );
    assert.equal(
      formatInterval({ readMap: () => perCpu }, { cpus: true, runqocc: true, timestamp: false }),
      '\nrunqocc, CPU 0    19.94%\nrunqocc, CPU 1    75.00%\n',
    );
  });
});

describe('runqlen on the live kernel', () => {
  const skip = liveSkipReason();
  const N = 3;
  const spinners: ChildProcess[] = [];
  after(() => {
    for (const c of spinners) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });

  /** Start N spinners pinned to `cpu`; resolves once each one's affinity is that CPU alone. */
  async function startSpinners(cpu: number): Promise<void> {
    await startPinnedSpinners('bpfs_rql', cpu, N, spinners);
  }

  it(`-C and -OC with ${N} spinners pinned to one CPU: queue length >= ${N - 1} there`, { skip }, async () => {
    const cpus = onlineCpus();
    const cpu = cpus[cpus.length - 1]!;
    await startSpinners(cpu);

    const r = await runBpfscope(['runqlen', '-C', '1', '1'], { timeoutMs: 40_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^Sampling run queue length\.\.\. Hit Ctrl-C to end\.\n\n\ncpu = \d+\n {5}runqlen {7}: count {5}distribution\n/,
    );
    const section = r.stdout.split(`\ncpu = ${cpu}\n`)[1]?.split('\ncpu = ')[0] ?? '';
    const rows = [...section.matchAll(/^ {8}(\d+) +: (\d+) +\|/gm)].map((m) => [Number(m[1]), Number(m[2])] as const);
    const samples = rows.reduce((a, [, n]) => a + n, 0);
    const queued = rows.filter(([len]) => len >= N - 1).reduce((a, [, n]) => a + n, 0);
    // 99 Hz for one second; the kernel skips a sample that would nest in another BPF program on that CPU.
    assert.ok(samples >= 30, `only ${samples} samples on CPU ${cpu}\n${r.stdout}`);
    assert.ok(queued >= samples * 0.9, `${queued} of ${samples} samples with a queue >= ${N - 1}\n${r.stdout}`);

    const o = await runBpfscope(['runqlen', '-OC', '1', '1'], { timeoutMs: 40_000 });
    assert.equal(o.code, 0, o.stderr);
    const m = new RegExp(`^runqocc, CPU ${String(cpu).padEnd(3)} +(\\d+\\.\\d\\d)%$`, 'm').exec(o.stdout);
    assert.ok(m, o.stdout);
    assert.ok(Number(m[1]) >= 90, o.stdout);
  });

  it('-T "1 2": two intervals with the time, then exits by itself', { skip }, async () => {
    const r = await runBpfscope(['runqlen', '-T', '1', '2']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.signal, null);
    assert.equal((r.stdout.match(/^\d\d:\d\d:\d\d$/gm) ?? []).length, 2, r.stdout);
    assert.equal((r.stdout.match(/^ {5}runqlen {7}: count {5}distribution$/gm) ?? []).length, 2, r.stdout);
  });
});
