/**
 * `bpfscope agent --queue-dir`: the on-disk queue survives a restart. With the fake Pyroscope down, an agent with
 * `--queue-size 3` makes profiles: /metrics counts those that did not fit as dropped (`queue_full`), the directory
 * holds 3 profile files (the bound); the agent is stopped (SIGTERM: what is queued stays on disk) and a second
 * agent started on the same directory with the receiver up delivers the 3 profiles made by the first one (their
 * start times before the restart), reports them as loaded, and empties the directory.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe as suite, test } from 'node:test';
import { bpfscopeSkipReason, type RunningTool, startTool } from '../helpers/cli.js';
import { FakePyroscope, metricsUrl, scrape } from './receivers.js';

const skip = bpfscopeSkipReason();
const QUEUE = 3;

/** The profile files of the (single) backend directory under `dir`. */
function files(dir: string): string[] {
  const subs = readdirSync(dir);
  assert.equal(subs.length, 1, `one backend directory: ${subs.join(', ')}`);
  assert.match(subs[0]!, /^pyroscope-[0-9a-f]{12}$/);
  return readdirSync(join(dir, subs[0]!)).filter((f) => f.endsWith('.profile'));
}

suite('bpfscope agent --queue-dir', { skip }, () => {
  const running: RunningTool[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'bpfscope-agent-queue-'));

  after(async () => {
    for (const a of running) {
      a.signal('SIGKILL');
      await a.done;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test('receiver down, agent restarted, receiver back: the queued profiles arrive, the bound holds, drops are counted', async () => {
    const pyro = new FakePyroscope();
    await pyro.listen();
    const port = pyro.port;
    await pyro.down(); // the port is known and nothing listens on it
    const args = [
      'agent',
      `--pyroscope=http://127.0.0.1:${port}`,
      '--app=queue-test',
      '--period=1s',
      `--queue-size=${QUEUE}`,
      `--queue-dir=${dir}`,
      '--retry-max=1s',
      '--timeout=2s',
      '--metrics-address=127.0.0.1:0',
    ];
    const first = startTool('bpfscope', args, { timeoutMs: 120000 });
    running.push(first);
    const url = await metricsUrl(first);
    let m = await scrape(url);
    // wait for QUEUE + 2 profiles: two of them did not fit
    while ((m.get('bpfscope_agent_profiles_total') ?? 0) < QUEUE + 2) {
      await new Promise((r) => setTimeout(r, 200));
      m = await scrape(url);
    }
    const made = m.get('bpfscope_agent_profiles_total')!;
    const dropped = m.get('bpfscope_agent_profiles_dropped_total{backend="pyroscope",reason="queue_full"}')!;
    assert.equal(m.get('bpfscope_agent_profiles_sent_total{backend="pyroscope"}'), 0);
    assert.equal(m.get('bpfscope_agent_queue_profiles{backend="pyroscope"}'), QUEUE);
    assert.equal(dropped, made - QUEUE, JSON.stringify([...m]));
    first.signal('SIGTERM');
    const r1 = await first.done;
    assert.equal(r1.code, 0, r1.stderr);
    const stoppedAt = Date.now() * 1e6;
    const left = files(dir);
    assert.equal(left.length, QUEUE, `the directory holds the bound: ${left.join(', ')}`);

    const back = new FakePyroscope();
    await back.listen(port);
    // the second agent's queue has room for more than what it loads: with a 1 s period on a loaded machine, its
    // new profiles could otherwise fill a queue of 3 and drop the loaded (oldest) ones this test waits for
    const args2 = args.map((a) => (a.startsWith('--queue-size=') ? '--queue-size=100' : a));
    const second = startTool('bpfscope', args2, { timeoutMs: 120000 });
    running.push(second);
    try {
      const url2 = await metricsUrl(second);
      assert.match(second.stderr(), /3 profiles queued on disk by an earlier run/);
      await back.until(() => back.got.filter((g) => Number(g.profile.timeNanos) < stoppedAt).length >= QUEUE);
      const old = back.got.filter((g) => Number(g.profile.timeNanos) < stoppedAt);
      assert.equal(old.length, QUEUE);
      for (const g of old) assert.equal(g.labels.get('service_name'), 'queue-test');
      assert.deepEqual(back.errors, []);
      const m2 = await scrape(url2);
      assert.equal(m2.get('bpfscope_agent_queue_loaded_profiles{backend="pyroscope"}'), QUEUE);
      // sent files are removed: what is left is at most what is queued now
      assert.ok(files(dir).length <= (m2.get('bpfscope_agent_queue_profiles{backend="pyroscope"}') ?? 0) + 1);
    } finally {
      second.signal('SIGTERM');
      const r2 = await second.done;
      assert.equal(r2.code, 0, r2.stderr);
      await back.down();
    }
  });
});
