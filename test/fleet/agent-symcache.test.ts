/**
 * The agent's per-period costs without the kernel (issue 15): the resolver options the agent runs with (a known
 * process's maps are not re-read by age, and a sampled address outside every mapping re-reads them at most once per
 * period), the program's new-process report (an exec or a reused pid, not a thread's name), and the pprof built
 * from shared stacks and frames (one location per (mapping, name), build-ids per process, labels per sample).
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe as suite, test } from 'node:test';
import { Profile } from 'pprof-format';
import { type AgentSample, buildAgentProfile } from '../../src/fleet/agent/pprof.js';
import { buildAgentProgram } from '../../src/fleet/agent/profiler.js';
import { type Frame, SymbolResolver } from '../../src/symbols/resolver.js';
import { sampleFrames, sampleLabels } from './receivers.js';

/** A fake /proc under `root` with process 4242: proc(5) stat field 22 (starttime) 777, one executable mapping. */
function fakeProcess(root: string): void {
  mkdirSync(join(root, '4242'));
  const rest = Array.from({ length: 30 }, (_, i) => (i === 19 ? '777' : '0')).join(' ');
  writeFileSync(join(root, '4242', 'stat'), `4242 (fake) S ${rest}\n`);
  writeFileSync(join(root, '4242', 'maps'), '00400000-00401000 r-xp 00000000 00:00 0 \n');
}

suite('agent symbol caches', () => {
  test('a known process: maps read once, a miss outside every mapping re-reads at most once per period', () => {
    const root = mkdtempSync(join(tmpdir(), 'bpfscope-agent-proc-'));
    try {
      fakeProcess(root);
      const agentLike = new SymbolResolver({
        procRoot: root,
        demangle: false,
        perfMaps: false,
        mapsTtlMs: Infinity,
        missRereadMs: 3_600_000,
      });
      agentLike.track(4242);
      assert.equal(agentLike.stats.mapsReads, 1);
      // inside the (anonymous) mapping: unknown, nothing re-read
      assert.equal(agentLike.user(4242, 0x400010).name, undefined);
      assert.equal(agentLike.stats.mapsReads, 1);
      // outside every mapping: re-read once (new code may have been mapped), then not again within the period
      agentLike.user(4242, 0x10);
      assert.equal(agentLike.stats.mapsReads, 2);
      agentLike.user(4242, 0x20);
      agentLike.user(4242, 0x30);
      assert.equal(agentLike.stats.mapsReads, 2);
      // new addresses of the known process later: its maps are not re-read by age
      appendFileSync(join(root, '4242', 'maps'), '00500000-00501000 r-xp 00000000 00:00 0 \n');
      agentLike.user(4242, 0x400020);
      assert.equal(agentLike.stats.mapsReads, 2);
      // the same lookups with a re-read allowed on every miss: what the option saves
      const eager = new SymbolResolver({ procRoot: root, demangle: false, perfMaps: false, missRereadMs: 0 });
      eager.track(4242);
      for (const a of [0x10, 0x20, 0x30]) eager.user(4242, a);
      assert.equal(eager.stats.mapsReads, 4);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a process's address caches start small (at most 32 slots each) and grow with its addresses", () => {
    const root = mkdtempSync(join(tmpdir(), 'bpfscope-agent-proc-'));
    try {
      fakeProcess(root);
      const r = new SymbolResolver({ procRoot: root, demangle: false, perfMaps: false, mapsTtlMs: Infinity });
      r.track(4242);
      // the agent on a machine starting ~100 processes a second holds hundreds of them: at most 64 slots each (two
      // caches), not 4,096 as before
      assert.ok(r.retained.cacheSlots <= 64, `${r.retained.cacheSlots} slots`);
      for (let a = 0x400000; a < 0x400000 + 300; a++) assert.equal(r.user(4242, a).addr, BigInt(a));
      assert.ok(r.retained.cacheSlots > 64 + 300, `${r.retained.cacheSlots} slots after 300 addresses`);
      const hits = r.stats.hits;
      for (let a = 0x400000; a < 0x400000 + 300; a++) assert.equal(r.user(4242, a).addr, BigInt(a));
      assert.equal(r.stats.hits - hits, 300);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("the program reports a process once per period by pid, start time and exec count (not a thread's name)", () => {
    const p = buildAgentProgram({ hz: 49, periodMs: 10000, maxStacks: 1024, stackStorage: 1024 });
    const key = 'pid, curtask->group_leader->start_time, curtask->group_leader->self_exec_id';
    assert.ok(
      p.includes(
        `  if (@__seen[${key}] == 0) {\n    @__seen[${key}] = 1;\n    printf("%d\\x1f%llu\\x1f%llu\\n", ${key});\n  }\n`,
      ),
      p,
    );
    assert.ok(!p.includes('@__seen[pid, comm]'), p);
  });
});

suite('agent pprof from shared stacks', () => {
  const k = (name: string, module?: string): Frame => ({
    addr: 1n,
    name,
    offset: 0,
    kernel: true,
    source: 'kallsyms',
    ...(module ? { module } : {}),
  });
  const u = (name: string | undefined, module: string): Frame => ({
    addr: 2n,
    name,
    offset: 0,
    module,
    kernel: false,
    source: name ? 'elf' : 'none',
  });
  const labels = (comm: string, pid: string) => ({ comm, pid, container_id: '', cgroup: '/x', build_id: '' });

  test('one location per (mapping, name), mappings per (file, build-id of the process), labels per sample', async () => {
    const kernel = [k('do_sys'), k('ext4_x', 'ext4')];
    const main10 = u('main', '/bin/a');
    const user10 = [main10, u('helper', '/lib/libc.so')];
    const l10 = labels('a', '10');
    const samples: AgentSample[] = [
      { kernel, user: user10, labels: l10, count: 3 },
      { kernel: [], user: user10, labels: labels('a2', '10'), count: 2 },
      { kernel, user: [u('main', '/bin/a')], labels: labels('b', '20'), count: 1 },
      { kernel: [], user: [main10, u(undefined, '/bin/a')], labels: l10, count: 4 },
      // the same frame objects under another process: that process's build-ids
      { kernel, user: user10, labels: labels('b', '20'), count: 5 },
    ];
    const ids: Record<string, string> = { '/bin/a 10': 'b10', '/bin/a 20': 'b20', '/lib/libc.so 10': 'c' };
    const calls: string[] = [];
    const gz = await buildAgentProfile(samples, {
      periodNs: 1000,
      timeNanos: 5,
      durationNanos: 7,
      buildIdOf: (file, s) => {
        calls.push(`${file} ${s.labels.pid}`);
        return ids[`${file} ${s.labels.pid}`] ?? 'c';
      },
    });
    const p = Profile.decode(gunzipSync(gz));
    const str = p.stringTable.strings;
    const mapping = new Map(
      p.mapping.map((m) => [Number(m.id), `${str[Number(m.filename)]}@${str[Number(m.buildId)]}`]),
    );
    const got = p.sample.map((s) => ({
      frames: sampleFrames(p, s).map((f, i) => {
        const loc = p.location.find((l) => Number(l.id) === Number(s.locationId[i]))!;
        return `${f.name} ${mapping.get(Number(loc.mappingId))}`;
      }),
      labels: Object.fromEntries(sampleLabels(p, s)),
      value: s.value.map(Number),
    }));
    assert.deepEqual(got, [
      {
        frames: ['do_sys [kernel.kallsyms]@', 'ext4_x [ext4]@', 'main /bin/a@b10', 'helper /lib/libc.so@c'],
        labels: { comm: 'a', pid: '10', cgroup: '/x' },
        value: [3, 3000],
      },
      {
        frames: ['main /bin/a@b10', 'helper /lib/libc.so@c'],
        labels: { comm: 'a2', pid: '10', cgroup: '/x' },
        value: [2, 2000],
      },
      {
        frames: ['do_sys [kernel.kallsyms]@', 'ext4_x [ext4]@', 'main /bin/a@b20'],
        labels: { comm: 'b', pid: '20', cgroup: '/x' },
        value: [1, 1000],
      },
      {
        frames: ['main /bin/a@b10', '[unknown] /bin/a@b10'],
        labels: { comm: 'a', pid: '10', cgroup: '/x' },
        value: [4, 4000],
      },
      {
        frames: ['do_sys [kernel.kallsyms]@', 'ext4_x [ext4]@', 'main /bin/a@b20', 'helper /lib/libc.so@c'],
        labels: { comm: 'b', pid: '20', cgroup: '/x' },
        value: [5, 5000],
      },
    ]);
    // 5 mappings ([kernel.kallsyms], [ext4], /bin/a twice, libc once: same build-id), 6 locations, 5 functions
    assert.equal(p.mapping.length, 5);
    assert.equal(p.location.length, 6);
    assert.equal(p.function.length, 5);
    // build-ids asked once per stack and file, not per sample: the shared user stack of pid 10 once
    assert.deepEqual(calls, ['/bin/a 10', '/lib/libc.so 10', '/bin/a 20', '/bin/a 10', '/bin/a 20', '/lib/libc.so 20']);
    assert.equal(Number(p.timeNanos), 5);
    assert.equal(Number(p.durationNanos), 7);
  });
});
