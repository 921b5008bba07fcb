/**
 * tcpaccept (src/tools/tcpaccept.ts): bcc's -h text and usage errors (fixture
 * test/tools/fixtures/tcp-tools-argparse.json, from bcc 0.26's tcpaccept.py), the generated program, the row
 * format, and live runs where a server process accepts a loopback connection over IPv4 and IPv6: the line carries
 * the server's PID and comm (not the client's, which is current when the handshake completes on loopback).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pyFormat } from '../../src/tools/framework/pyformat.js';
import { buildProgram, formatRow, header, SPEC } from '../../src/tools/tcpaccept.js';
import { argparseFixtureTests } from './argparse-fixture.js';
import { liveSkipReason, runBpfscope, startBpfscope, type ToolRun } from './helpers.js';
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
    assert.match(p, /\$a\.0, \$a\.1, \$a\.2, \$a\.3, \$a\.4, comm\);/);
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
    const f = ['2000000', '181', '4', '10.0.0.2', '50000', '10.0.0.1', '80', 'nginx-worker-proc'];
    assert.equal(
      formatRow(f, { time: true, timestamp: true }, state, '09:41:02'),
      '09:41:02 0.000    181     nginx-worker 4  10.0.0.2         50000 10.0.0.1         80   \n',
    );
    assert.equal(
      formatRow(['3500000', ...f.slice(1)], { time: false, timestamp: true }, state).slice(0, 9),
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
});
