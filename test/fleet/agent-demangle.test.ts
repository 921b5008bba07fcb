/**
 * The agent demangles C++/Rust names in short-lived children (src/fleet/agent/demangle-child.ts), not in its own
 * process:
 * 1. FrameDemangler with a fake batch: one batch per call for the names not seen before, frames renamed once and
 *    shared, stacks without mangled names returned as they are, a failed batch leaves its names mangled.
 * 2. The child itself (dist/bundle/demangle-child.cjs, run with node as the agent runs it): NUL-separated names in,
 *    their demangled forms out, in order.
 * 3. Live: a C++ program spinning in `demo::spin(long)` (`_ZN4demo4spinEl`), profiled by the agent with `-p`: the
 *    pushed profile names it demangled, with no mangled name left in its stacks, and /metrics counts the batch.
 * 4. Live, the Profiler with a demangler that fails once: that period's stacks keep the mangled name, and the same
 *    stacks come out demangled in a later period (a failed batch's stacks are symbolized again).
 * Expected names are c++filt's (and bpftrace's) for these symbols.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe as suite, test } from 'node:test';
import { FrameDemangler } from '../../src/fleet/agent/demangle-child.js';
import { type PeriodData, Profiler } from '../../src/fleet/agent/profiler.js';
import type { Frame } from '../../src/symbols/resolver.js';
import { bpfscopeSkipReason, repoRoot, startTool } from '../helpers/cli.js';
import { haveCxx } from '../symbols/helpers.js';
import { FakePyroscope, metricsUrl, sampleFrames, sampleLabels, scrape } from './receivers.js';

const frame = (name: string | undefined, addr: bigint): Frame => ({
  addr,
  name,
  offset: 0,
  module: '/bin/x',
  kernel: false,
  source: name ? 'elf' : 'none',
});

suite('FrameDemangler', () => {
  test('one batch of the new names, frames renamed once and shared, other stacks untouched', async () => {
    const batches: string[][] = [];
    const known: Record<string, string> = { _ZN4demo4spinEl: 'demo::spin(long)', _Z3addii: 'add(int, int)' };
    const d = new FrameDemangler(async (names) => {
      batches.push([...names]);
      return names.map((n) => known[n] ?? n);
    });
    const spin = frame('_ZN4demo4spinEl', 1n);
    const main = frame('main', 2n);
    const add = frame('_Z3addii', 3n);
    const plain = [main, frame(undefined, 4n)];
    const [a, b, c] = await d.rename([[spin, main], [add, spin], plain]);
    assert.deepEqual(batches, [['_ZN4demo4spinEl', '_Z3addii']]);
    assert.deepEqual(
      a!.map((f) => f.name),
      ['demo::spin(long)', 'main'],
    );
    assert.deepEqual(
      b!.map((f) => f.name),
      ['add(int, int)', 'demo::spin(long)'],
    );
    assert.equal(c, plain, 'a stack without a mangled name is the same array');
    assert.equal(a![0], b![1], 'one renamed copy per frame');
    assert.equal(a![1], main, 'a frame whose name stays is the same frame');
    assert.equal(a![0]!.addr, 1n);
    assert.equal(spin.name, '_ZN4demo4spinEl', 'the resolver-owned frame is not changed');
    // known names: no batch; a new frame with a known name needs none either
    const [again] = await d.rename([[frame('_ZN4demo4spinEl', 9n), add]]);
    assert.deepEqual(
      again!.map((f) => f.name),
      ['demo::spin(long)', 'add(int, int)'],
    );
    assert.equal(batches.length, 1);
    assert.equal(d.batches, 1);
    assert.equal(d.names, 2);
  });

  test("the agent's own stacks and its children's keep their names (a child's start-up would ask for another)", async () => {
    let next = 70000;
    const d = new FrameDemangler(async (names, spawned) => {
      spawned(next++);
      return names.map(() => 'demo::spin(long)');
    });
    assert.ok(d.isOwn(process.pid));
    assert.ok(!d.isOwn(70000));
    for (let i = 0; i < 10; i++) await d.rename([[frame(`_Z${i}x`, 1n)]]);
    // the last 8 children (70002-70009) and this process; the first two children are forgotten
    assert.deepEqual(
      [69999, 70000, 70001, 70002, 70009, 70010, process.pid].map((p) => d.isOwn(p)),
      [false, false, false, true, true, false, true],
    );
  });

  test('a failed batch leaves its names mangled, counts the failure and is tried again when met again', async () => {
    const errors: string[] = [];
    let fail = true;
    const d = new FrameDemangler(
      async (names) => {
        if (fail) throw new Error('no child');
        return names.map(() => 'demo::spin(long)');
      },
      (e) => errors.push(e.message),
    );
    const s = [frame('_ZN4demo4spinEl', 1n)];
    const [r] = await d.rename([s]);
    assert.equal(r, s);
    assert.deepEqual(errors, ['no child']);
    assert.equal(d.failures, 1);
    fail = false;
    const [r2] = await d.rename([s]);
    assert.equal(r2![0]!.name, 'demo::spin(long)');
    assert.equal(d.batches, 2);
  });
});

suite('the demangling child', { skip: bpfscopeSkipReason() }, () => {
  test('NUL-separated names in, their demangled forms out in order', () => {
    const names = [
      '_ZN4demo4spinEl',
      'main',
      '_Z3addii',
      '_RNvCs1234_7mycrate3foo',
      '_ZN3std2io5stdio6_print17h0123456789abcdefE',
    ];
    const child = join(repoRoot(), 'dist', 'bundle', 'demangle-child.cjs');
    const r = spawnSync(process.execPath, [child], { input: names.join('\0') });
    assert.equal(r.status, 0, r.stderr.toString());
    assert.deepEqual(r.stdout.toString('utf8').split('\0'), [
      'demo::spin(long)',
      'main',
      'add(int, int)',
      'mycrate::foo',
      'std::io::stdio::_print',
    ]);
  });
});

const SPIN = `namespace demo { __attribute__((noinline)) long spin(long n) { volatile long s = 0; for (long i = 0; i < n; i++) s += i; return s; } }
int main() { for (;;) demo::spin(1000000); }
`;

const cxxSkip = haveCxx ? undefined : 'needs a C++ compiler (c++)';

/** SPIN compiled in a temporary directory and started; `stop()` kills it and removes the directory. */
function startCxxSpinner(): { bin: string; pid: number; stop: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'bpfscope-agent-cxx-'));
  const bin = join(dir, 'bpfs_cxxspin');
  writeFileSync(join(dir, 'spin.cpp'), SPIN);
  const cc = spawnSync('c++', ['-O1', '-o', bin, join(dir, 'spin.cpp')], { encoding: 'utf8' });
  assert.equal(cc.status, 0, cc.stderr);
  const child = spawn(bin, [], { stdio: 'ignore' });
  return {
    bin,
    pid: child.pid!,
    stop: () => {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

suite('bpfscope agent: C++ names', { skip: bpfscopeSkipReason() ?? cxxSkip }, () => {
  test('a C++ function comes out demangled in the pushed profile, demangled by a child', async () => {
    const spinner = startCxxSpinner();
    const bin = spinner.bin;
    const pyro = new FakePyroscope();
    await pyro.listen();
    const agent = startTool(
      'bpfscope',
      [
        'agent',
        `--pyroscope=http://127.0.0.1:${pyro.port}`,
        `--pid=${spinner.pid}`,
        '--period=2s',
        '--metrics-address=127.0.0.1:0',
      ],
      { timeoutMs: 120000 },
    );
    try {
      const url = await metricsUrl(agent);
      const pid = String(spinner.pid);
      const ours = () =>
        pyro.got.flatMap((g) =>
          g.profile.sample
            .filter((s) => sampleLabels(g.profile, s).get('pid') === pid)
            .map((s) => ({ n: Number(s.value[0]), frames: sampleFrames(g.profile, s) })),
        );
      await pyro.until(() => ours().reduce((a, s) => a + s.n, 0) >= 40);
      assert.deepEqual(pyro.errors, []);
      const leaf = new Map<string, number>();
      let total = 0;
      for (const s of ours()) {
        const user = s.frames.filter((f) => f.file === bin);
        for (const f of user) assert.ok(!f.name.startsWith('_Z'), `a mangled name was pushed: ${f.name}`);
        const top = user[0]?.name ?? '(none)';
        leaf.set(top, (leaf.get(top) ?? 0) + s.n);
        total += s.n;
      }
      assert.ok((leaf.get('demo::spin(long)') ?? 0) >= 0.9 * total, JSON.stringify([...leaf]));
      const m = await scrape(url);
      assert.ok(
        m.get('bpfscope_agent_demangle_batches_total')! >= 1,
        String(m.get('bpfscope_agent_demangle_batches_total')),
      );
      assert.equal(m.get('bpfscope_agent_demangle_failures_total'), 0);
    } finally {
      agent.signal('SIGTERM');
      const res = await agent.done;
      spinner.stop();
      await pyro.down();
      assert.equal(res.code, 0, res.stderr);
    }
  });
});

suite('Profiler: a failed demangling batch', { skip: bpfscopeSkipReason() ?? cxxSkip }, () => {
  test("that period's names stay mangled, and a later period's stacks are all demangled", async () => {
    const spinner = startCxxSpinner();
    const calls: number[] = [];
    const leaves: string[][] = [];
    let done: () => void = () => {};
    const enough = new Promise<void>((r) => (done = r));
    const profiler = await Profiler.start(
      {
        hz: 49,
        periodMs: 1000,
        pids: [spinner.pid],
        maxStacks: 1024,
        stackStorage: 1024,
        demangle: async (names) => {
          calls.push(names.length);
          if (calls.length === 1) throw new Error('the first batch fails');
          return names.map((n) => (n === '_ZN4demo4spinEl' ? 'demo::spin(long)' : n));
        },
      },
      (p: PeriodData) => {
        const names = p.samples.map((s) => s.user[0]?.name ?? '(none)');
        if (names.length > 0) leaves.push(names);
        // every stack of a later period demangled, those cached in the failed period included
        if (calls.length >= 2 && names.includes('demo::spin(long)') && !names.includes('_ZN4demo4spinEl')) done();
      },
    );
    try {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no demangled period in 30 s: ${JSON.stringify(leaves)}`)), 30_000);
      });
      await Promise.race([enough, late]).finally(() => clearTimeout(timer));
      assert.ok(leaves[0]!.includes('_ZN4demo4spinEl'), JSON.stringify(leaves[0]));
      assert.ok(!leaves[0]!.includes('demo::spin(long)'), JSON.stringify(leaves[0]));
      assert.equal(profiler.demangler?.failures, 1);
      assert.ok(profiler.demangler!.batches >= 2);
    } finally {
      await profiler.stop();
      spinner.stop();
    }
  });
});
