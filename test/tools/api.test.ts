/**
 * runTool (src/tools/api.ts) and `--json`: the same facts the text tests of execsnoop, opensnoop, biolatency,
 * tcplife and profile check, read as typed objects from the API on the live kernel; usage errors as rejections;
 * close() idempotent with nothing left attached; `bpfscope execsnoop --json` prints the API's objects.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BpfscopeError } from '../../src/errors.js';
import { runTool } from '../../src/index.js';
import { toJson } from '../../src/tools/framework/output.js';
import { bpfState, fdHeldIds, findLeaks, tracefsProbeEvents, withReferences } from '../helpers/bpf-objects.js';
import { workloadPath } from '../helpers/workload.js';
import { liveLoopDevice, liveSkipReason, startBpfscope, waitForLinks } from './helpers.js';
import { STACKPROG_COMM, stackprogPath, stackprogSkipReason } from './stackprog.js';
import { tcpSession } from './tcp.js';

describe('runTool: arguments and JSON values', () => {
  it('unknown tools, usage errors and refused options reject with one sentence', async () => {
    await assert.rejects(
      runTool('nosuchtool'),
      (e: unknown) => e instanceof BpfscopeError && /unknown tool/.test(String(e)),
    );
    await assert.rejects(
      runTool('execsnoop', ['--bogus']),
      (e: unknown) =>
        e instanceof BpfscopeError && (e as Error).message === 'execsnoop: unrecognized arguments: --bogus',
    );
    await assert.rejects(
      runTool('biolatency', ['-F']),
      (e: unknown) => (e as Error).message === "ERROR: blk_account_io_start/done probes not available. Can't use -F.",
    );
  });

  it('toJson: safe bigints as numbers, larger ones as decimal strings', () => {
    assert.deepEqual(toJson({ a: 5n, b: 2n ** 64n - 1n, c: [1n, 'x'], d: undefined }), {
      a: 5,
      b: '18446744073709551615',
      c: [1, 'x'],
    });
  });
});

describe('runTool on the live kernel', () => {
  const skip = liveSkipReason();
  const loop = liveLoopDevice();
  const tag = `bpfs${process.pid}api`;

  it(
    'execsnoop -x: rows for /bin/true with its arguments and a failed exec; close() twice, nothing left',
    { skip },
    async () => {
      const before = { state: bpfState(), tracefs: tracefsProbeEvents() };
      const run = await runTool('execsnoop', ['-x']);
      const ours = withReferences(fdHeldIds(process.pid), bpfState());
      const ok = spawnSync('/bin/true', [tag, 'b']);
      const bad = spawnSync(`/nonexistent/${tag}`, ['x']);
      assert.equal(ok.status, 0);
      const rows = [];
      for await (const row of run.rows()) {
        if (row.args.some((a) => a.includes(tag))) rows.push(row);
        if (rows.length === 2) break;
      }
      assert.equal(await run.close(), 0);
      assert.equal(await run.close(), 0);
      assert.equal(bad.error !== undefined, true);
      assert.deepEqual(
        rows.map((r) => ({ comm: r.comm, pid: r.pid, ppid: r.ppid, ret: r.ret, args: r.args })),
        [
          { comm: 'true', pid: ok.pid, ppid: process.pid, ret: 0, args: ['/bin/true', tag, 'b'] },
          { comm: rows[1]!.comm, pid: rows[1]!.pid, ppid: process.pid, ret: -2, args: [`/nonexistent/${tag}`, 'x'] },
        ],
      );
      const leaks = await findLeaks(before, ours);
      assert.equal(leaks.leaked.progs.size + leaks.leaked.maps.size + leaks.leaked.links.size, 0, 'BPF objects left');
    },
  );

  it('opensnoop --exec: the known path with its FD and the missing one with errno 2', { skip }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfs-api-'));
    try {
      const file = join(dir, 'present.txt');
      writeFileSync(file, 'x');
      const missing = `/nonexistent/${tag}`;
      const run = await runTool('opensnoop', ['--exec', workloadPath(), 'openat', file, '2', 'openat', missing, '1']);
      const rows = [];
      for await (const row of run.rows()) if (row.path === file || row.path === missing) rows.push(row);
      assert.equal(await run.done, 0);
      assert.deepEqual(
        rows.map((r) => [r.comm, r.fd, r.err, r.path]),
        [
          ['bpfs_workload', 3, 0, file],
          ['bpfs_workload', 3, 0, file],
          ['bpfs_workload', -1, 2, missing],
        ],
      );
      assert.equal(new Set(rows.map((r) => r.pid)).size, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('biolatency -d loopN -e 5 1: one interval counting the 10 O_DIRECT reads', { skip: loop.skip }, async () => {
    const run = await runTool('biolatency', ['-d', loop.device().name, '-e', '5', '1']);
    const w = spawnSync(workloadPath(), ['odirect-read', loop.device().path, '10', '65536'], { encoding: 'utf8' });
    assert.equal(w.status, 0, w.stderr);
    const ticks = [];
    for await (const t of run.intervals()) ticks.push(t);
    assert.equal(await run.done, 0);
    assert.equal(ticks.length, 1);
    const t = ticks[0]!;
    assert.equal(t.unit, 'usecs');
    assert.equal(t.histograms.length, 1);
    assert.equal(
      t.histograms[0]!.buckets.reduce((a, b) => a + b.count, 0n),
      10n,
    );
    assert.equal(t.extension?.count, 10n);
  });

  it('tcplife: both ends of an IPv4 session with PIDs, ports and bytes', { skip }, async () => {
    const SEND = 300 * 1024 + 500;
    const REPLY = 200 * 1024 + 300;
    const run = await runTool('tcplife', ['-4']);
    const s = await tcpSession(4, SEND, REPLY);
    const rows = [];
    for await (const row of run.rows()) {
      if (row.lport === s.serverPort || row.rport === s.serverPort) rows.push(row);
      if (rows.length === 2) break;
    }
    await run.close();
    const client = rows.find((r) => r.pid === s.clientPid);
    const server = rows.find((r) => r.pid === s.serverPid);
    assert.ok(client && server, JSON.stringify(toJson(rows)));
    assert.deepEqual(
      [client.comm, client.ip, client.laddr, client.lport, client.raddr, client.rport],
      ['bpfs_tcpcli', 4, '127.0.0.1', s.clientPort, '127.0.0.1', s.serverPort],
    );
    assert.deepEqual([server.comm, server.lport, server.rport], ['bpfs_tcpsrv', s.serverPort, s.clientPort]);
    // KB columns of the text test: bytes / 1024 truncated (the counters include the SYN and FIN bytes).
    assert.deepEqual(
      [Math.floor(client.txBytes / 1024), Math.floor(client.rxBytes / 1024)],
      [Math.floor(SEND / 1024), Math.floor(REPLY / 1024)],
    );
    assert.deepEqual(
      [Math.floor(server.txBytes / 1024), Math.floor(server.rxBytes / 1024)],
      [Math.floor(REPLY / 1024), Math.floor(SEND / 1024)],
    );
  });

  it(
    'profile -U -F 99 -p PID 2: one result whose stacks hold the burning function',
    { skip: skip ?? stackprogSkipReason() },
    async () => {
      const child = spawn(stackprogPath(), ['cpu', '30000'], { stdio: 'ignore' });
      try {
        const run = await runTool('profile', ['-U', '-F', '99', '-p', String(child.pid), '2']);
        const results = [];
        for await (const r of run.intervals()) results.push(r);
        assert.equal(await run.done, 0);
        assert.equal(results.length, 1);
        const stacks = results[0]!.stacks;
        assert.ok(stacks.length > 0);
        for (const e of stacks) {
          assert.equal(e.comm, STACKPROG_COMM);
          assert.equal(e.id, child.pid);
          assert.equal(e.kernel, undefined);
        }
        assert.ok(
          stacks.some((e) => e.user?.[0]?.name === 'bpfs_user_burn'),
          JSON.stringify(toJson(stacks[0])),
        );
      } finally {
        child.kill('SIGKILL');
      }
    },
  );

  it('bpfscope execsnoop --json: one JSON object per exec, no header', { skip }, async () => {
    const run = startBpfscope(['execsnoop', '--json']);
    // JSON mode prints no header: wait until the run holds its two probes' links.
    assert.ok(await waitForLinks(run.pid, 2, 20_000), run.stderr());
    spawnSync('/bin/true', [tag, 'json']);
    const seen = await run.waitFor(new RegExp(`"${tag}","json"`), 10_000);
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.ok(seen, r.stdout + r.stderr);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n').filter((l) => l.length > 0);
    for (const l of lines) assert.equal(l[0], '{', l);
    const row = lines
      .map((l) => JSON.parse(l) as { comm: string; args: string[]; ret: number })
      .find((x) => x.args[1] === tag);
    assert.deepEqual(row && [row.comm, row.args, row.ret], ['true', ['/bin/true', tag, 'json'], 0]);
  });
});
