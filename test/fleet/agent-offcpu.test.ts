/**
 * `bpfscope agent --offcpu` against the fake Pyroscope (test/fleet/receivers.ts): a workload sleeps 12 x 100 ms in
 * `sleep_here` (test/fixtures/sleepy.c, which measures the time it spent inside those sleeps); across the pushed
 * `off_cpu` profiles, the off-CPU nanoseconds of its process in stacks through sleep_here are that measured time
 * within 10%, sleep_here is the innermost user frame of most of that time, and the kernel stacks are the
 * scheduler's (the sched_switch frames of the BPF program itself are dropped). The CPU profile keeps coming beside
 * it, and /metrics counts two profiles per period.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe as suite, test } from 'node:test';
import { bpfscopeSkipReason, type RunningTool, startTool } from '../helpers/cli.js';
import { FakePyroscope, fixtureBinary, metricsUrl, sampleFrames, sampleLabels, scrape } from './receivers.js';

const skip = bpfscopeSkipReason();
const SLEEPS = 12;
const MS = 100;

suite('bpfscope agent --offcpu', { skip }, () => {
  let sleepy = '';
  const running: RunningTool[] = [];

  before(() => {
    sleepy = fixtureBinary('sleepy');
  });

  after(async () => {
    for (const a of running) {
      a.signal('SIGKILL');
      await a.done;
    }
  });

  test('off-CPU time per stack: the sleeping function carries the time it slept, within 10%', async () => {
    const pyro = new FakePyroscope();
    await pyro.listen();
    const agent = startTool(
      'bpfscope',
      [
        'agent',
        `--pyroscope=http://127.0.0.1:${pyro.port}`,
        '--app=off-1',
        '--offcpu',
        '--period=2s',
        '--metrics-address=127.0.0.1:0',
      ],
      { timeoutMs: 120000 },
    );
    running.push(agent);
    try {
      const url = await metricsUrl(agent);
      // the first period symbolizes every process on the host: the workload starts after it (processes are
      // prepared for symbols while they run, and a busy agent could miss this short-lived one)
      while (((await scrape(url)).get('bpfscope_agent_periods_total') ?? 0) < 2) await pyro.until(() => true);
      const r = spawnSync(sleepy, [String(SLEEPS), String(MS)], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      const slept = Number(r.stdout.trim()) * 1e9;
      assert.ok(slept >= SLEEPS * MS * 1e6, `the workload slept ${slept} ns`);
      const pid = String(r.pid);
      const ended = Date.now() * 1e6;
      const offOnly = () => pyro.got.filter((g) => g.labels.get('__name__') === 'off_cpu');
      await pyro.until(() => offOnly().some((x) => Number(x.profile.timeNanos) > ended));
      assert.deepEqual(pyro.errors, []);
      assert.ok(
        pyro.got.some((g) => g.labels.get('__name__') === 'process_cpu'),
        'the CPU profile is still pushed',
      );
      let total = 0;
      const seen: string[] = [];
      const leaf = new Map<string, number>();
      let kernelTop = new Map<string, number>();
      for (const g of offOnly()) {
        assert.equal(g.labels.get('service_name'), 'off-1');
        const p = g.profile;
        const str = p.stringTable.strings;
        assert.deepEqual(
          p.sampleType.map((t) => `${str[Number(t.type)]}/${str[Number(t.unit)]}`),
          ['offcpu/nanoseconds'],
        );
        for (const s of p.sample) {
          const l = sampleLabels(p, s);
          if (l.get('pid') !== pid || l.get('comm') !== 'bpfs_sleepy') continue;
          const frames = sampleFrames(p, s);
          seen.push(`${Number(s.value[0])} ns: ${frames.map((f) => f.name).join(';')}`);
          if (!frames.some((f) => f.name === 'sleep_here')) continue;
          const ns = Number(s.value[0]);
          total += ns;
          const user = frames.find((f) => f.file.startsWith('/'))?.name ?? '(no user frame)';
          leaf.set(user, (leaf.get(user) ?? 0) + ns);
          const k = frames.find((f) => f.file === '[kernel.kallsyms]')?.name ?? '(no kernel frame)';
          kernelTop.set(k, (kernelTop.get(k) ?? 0) + ns);
        }
      }
      assert.ok(
        Math.abs(total - slept) <= 0.1 * slept,
        `off-CPU time through sleep_here: ${total} ns, the workload slept ${slept} ns; its stacks: ${seen.join(' | ')}`,
      );
      const top = [...leaf].sort((a, b) => b[1] - a[1])[0]!;
      assert.equal(top[0], 'sleep_here', JSON.stringify([...leaf]));
      assert.ok(top[1] >= 0.9 * total, JSON.stringify([...leaf]));
      // kernel stacks start in the scheduler, not in the BPF program's own frames
      kernelTop = new Map([...kernelTop].sort((a, b) => b[1] - a[1]));
      const k = [...kernelTop.keys()][0]!;
      assert.match(k, /^(__schedule|schedule)$/, JSON.stringify([...kernelTop]));
      const m = await scrape(url);
      assert.equal(m.get('bpfscope_agent_profiles_total'), 2 * m.get('bpfscope_agent_periods_total')!);
      assert.ok(m.get('bpfscope_agent_offcpu_seconds_total')! >= total / 1e9);
    } finally {
      agent.signal('SIGTERM');
      const res = await agent.done;
      assert.equal(res.code, 0, res.stderr);
      await pyro.down();
    }
  });
});
