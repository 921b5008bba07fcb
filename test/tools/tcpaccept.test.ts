/**
 * tcpaccept (src/tools/tcpaccept.ts): bcc's -h text and usage errors (fixture
 * test/tools/fixtures/tcp-tools-argparse.json, from bcc 0.26's tcpaccept.py), the generated program, the row
 * format, and live runs where a server process accepts a loopback connection over IPv4 and IPv6: the line carries
 * the server's PID and comm (not the client's, which is current when the handshake completes on loopback).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pyFormat } from '../../src/tools/framework/pyformat.js';
import { runTool } from '../../src/index.js';
import { type AcceptRow, buildProgram, formatRow, header, SPEC, toRow } from '../../src/tools/tcpaccept.js';
import { argparseFixtureTests } from './argparse-fixture.js';
import { liveSkipReason, runBpfscope, startBpfscope, type ToolRun } from './helpers.js';
import { apiRows, jsonRows } from './jsonrun.js';
import { ipv6LoopbackSkipReason, sessionLines, type TcpSession, tcpSession } from './tcp.js';

describe('tcpaccept options (bcc tools/tcpaccept.py argparse)', () => {
  argparseFixtureTests(SPEC, 'tcp-tools-argparse');
});

describe('tcpaccept program', () => {
  it('marks SYN_RECV → ESTABLISHED sockets and prints them at accept()/accept4() exit', () => {
    const p = buildProgram({ pid: 181, ports: [80, 81], ipv6: true, syscalls: ['accept', 'accept4'] });
    assert.match(
      p,
      /^tracepoint:sock:inet_sock_set_state \/\(args\.protocol == 6\) && \(args\.oldstate == 3\) && \(args\.newstate == 1\) && \(args\.sport == 80 \|\| args\.sport == 81\) && \(args\.family == 10\)\/ \{$/m,
    );
    assert.match(
      p,
      /@acc\[\(uint64\)args\.skaddr\] = \(6, ntop\(args\.daddr_v6\), args\.dport, ntop\(args\.saddr_v6\), args\.sport\);/,
    );
    assert.match(p, /args\.newstate == 7\/ \{\n {2}delete\(@acc, \(uint64\)args\.skaddr\);/);
    assert.match(
      p,
      /^tracepoint:syscalls:sys_exit_accept,\ntracepoint:syscalls:sys_exit_accept4 \/\(args\.ret >= 0\) && \(pid == 181\)\/ \{$/m,
    );
    assert.match(p, /curtask->files->fdt->fd \+ args\.ret \* 8\)/);
    assert.match(p, /\$a\.0, \$a\.2, \$a\.4, \$a\.1, \$a\.3, comm\);/);
  });
});

describe('tcpaccept output format', () => {
  it('header and rows: "%-7d %-12.12s %-2d %-16s %-5d %-16s %-5d", -T and -t columns', () => {
    assert.equal(
      header({ time: false, timestamp: false }),
      'PID     COMM         IP RADDR            RPORT LADDR            LPORT\n',
    );
    assert.equal(
      header({ time: true, timestamp: true }),
      'TIME     TIME(s)  PID     COMM         IP RADDR            RPORT LADDR            LPORT\n',
    );
    const state = { startTs: null as number | null };
    const rec = {
      kind: 'accept',
      tsUs: 2000000,
      pid: 181,
      ip: 4,
      raddr: '10.0.0.2',
      rport: 50000,
      laddr: '10.0.0.1',
      lport: 80,
      comm: 'nginx-worker-proc',
    } as const;
    const row = toRow(rec, state, '09:41:02');
    assert.deepEqual(row, {
      time: '09:41:02',
      elapsedUs: 0,
      pid: 181,
      comm: 'nginx-worker-proc',
      ip: 4,
      raddr: '10.0.0.2',
      rport: 50000,
      laddr: '10.0.0.1',
      lport: 80,
    });
    assert.equal(
      formatRow(row, { time: true, timestamp: true }),
      '09:41:02 0.000    181     nginx-worker 4  10.0.0.2         50000 10.0.0.1         80   \n',
    );
    assert.equal(
      formatRow(toRow({ ...rec, tsUs: 3500000 }, state), { time: false, timestamp: true }).slice(0, 9),
      '1.500    ',
    );
  });
});

describe('tcpaccept on the live kernel', () => {
  const skip = liveSkipReason();
  const v6skip = ipv6LoopbackSkipReason();

  async function started(args: string[]): Promise<ToolRun> {
    const run = startBpfscope(['tcpaccept', ...args]);
    assert.ok(await run.waitFor(/LPORT\n/, 30_000), run.stderr());
    return run;
  }

  it('sees the server accept from 127.0.0.1 and ::1 with its own PID (default, -T -4)', { skip }, async () => {
    const runs = await Promise.all([started([]), started(['-T', '-4'])]);
    const sessions: TcpSession[] = [await tcpSession(4, 1000, 1000)];
    if (!v6skip) sessions.push(await tcpSession(6, 1000, 1000));
    const want = (s: TcpSession): string =>
      pyFormat(
        '%-7d %-12.12s %-2d %-16s %-5d %-16s %-5d',
        s.serverPid,
        'bpfs_tcpsrv',
        s.host === '::1' ? 6 : 4,
        s.host,
        s.clientPort,
        s.host,
        s.serverPort,
      );
    const last = sessions[sessions.length - 1]!;
    assert.ok(await runs[0]!.waitFor(new RegExp(` ${last.serverPort}\\s*\\n`), 10_000), runs[0]!.stdout());
    assert.ok(await runs[1]!.waitFor(new RegExp(` ${sessions[0]!.serverPort}\\s*\\n`), 10_000), runs[1]!.stdout());
    for (const r of runs) r.child.kill('SIGINT');
    const [a, b] = await Promise.all(runs.map((r) => r.done));
    assert.equal(a!.code, 0, a!.stderr);
    assert.equal(b!.code, 0, b!.stderr);
    for (const s of sessions) assert.deepEqual(sessionLines(a!.stdout, s), [want(s)], a!.stdout);
    assert.equal(
      b!.stdout.split('\n')[0],
      'TIME     PID     COMM         IP RADDR            RPORT LADDR            LPORT',
    );
    const v4 = sessionLines(b!.stdout, sessions[0]!);
    assert.equal(v4.length, 1, b!.stdout);
    assert.match(v4[0]!, /^\d\d:\d\d:\d\d /);
    assert.equal(v4[0]!.slice(9), want(sessions[0]!));
    if (sessions[1]) assert.deepEqual(sessionLines(b!.stdout, sessions[1]), [], '-4 leaves out IPv6');
  });

  it('-P with a bad port fails as bcc does (ValueError, exit 1)', { skip }, async () => {
    const bad = await runBpfscope(['tcpaccept', '-P', '8o']);
    assert.equal(bad.code, 1);
    assert.equal(bad.stderr, "ValueError: invalid literal for int() with base 10: '8o'\n");
  });

  /** The facts the text test checks for an IPv4 session: the server's accept, with its PID, both ends and ports. */
  function assertAccept(rows: AcceptRow[], s: TcpSession): void {
    const mine = rows.filter((r) => r.lport === s.serverPort);
    assert.equal(mine.length, 1, JSON.stringify(rows));
    const r = mine[0]!;
    assert.deepEqual(
      [r.pid, r.comm, r.ip, r.raddr, r.rport, r.laddr, r.lport],
      [s.serverPid, 'bpfs_tcpsrv', 4, '127.0.0.1', s.clientPort, '127.0.0.1', s.serverPort],
    );
  }

  it('--json -4: the same accept as an object', { skip }, async () => {
    let s: TcpSession | undefined;
    const rows = await jsonRows<AcceptRow>(
      ['tcpaccept', '-4'],
      4, // two inet_sock_set_state probes, sys_exit_accept and sys_exit_accept4
      async () => {
        s = await tcpSession(4, 1000, 1000);
      },
      (r) => r.some((x) => x.lport === s?.serverPort),
    );
    assertAccept(rows, s!);
  });

  it('runTool -4: the same accept as a row', { skip }, async () => {
    const run = await runTool('tcpaccept', ['-4']);
    const s = await tcpSession(4, 1000, 1000);
    assertAccept(await apiRows(run, (r) => r.some((x) => x.lport === s.serverPort)), s);
  });
});
