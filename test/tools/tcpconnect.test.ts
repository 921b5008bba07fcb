/**
 * tcpconnect (src/tools/tcpconnect.ts): bcc's -h text and usage errors (fixture
 * test/tools/fixtures/tcp-tools-argparse.json, from bcc 0.26's tcpconnect.py), the generated program, the row and
 * count formats, and live runs that see loopback connections made by a client process over IPv4 and IPv6.
 */
import assert from 'node:assert/strict';
import { type AddressInfo, connect, createServer } from 'node:net';
import { describe, it } from 'node:test';
import { pyFormat } from '../../src/tools/framework/pyformat.js';
import { runTool } from '../../src/index.js';
import {
  buildProgram,
  type ConnectCountRow,
  ConnectCounts,
  type ConnectRow,
  formatRow,
  header,
  SPEC,
  toRow,
} from '../../src/tools/tcpconnect.js';
import { argparseFixtureTests } from './argparse-fixture.js';
import { liveSkipReason, runBpfscope, startBpfscope, type ToolRun } from './helpers.js';
import { apiRows, jsonRows } from './jsonrun.js';
import { ipv6LoopbackSkipReason, type TcpSession, tcpSession } from './tcp.js';

describe('tcpconnect options (bcc tools/tcpconnect.py argparse)', () => {
  argparseFixtureTests(SPEC, 'tcp-tools-argparse');
});

describe('tcpconnect program', () => {
  it('SYN_SENT of TCP sockets, with -p, -u, -P and -4 as predicates', () => {
    const p = buildProgram({ pid: 181, uid: 1000, ports: [80, 81], ipv4: true });
    assert.match(
      p,
      /^tracepoint:sock:inet_sock_set_state \/\(args\.protocol == 6\) && \(args\.newstate == 2\) && \(pid == 181\) && \(uid == 1000\) && \(args\.dport == 80 \|\| args\.dport == 81\) && \(args\.family == 2\)\/ \{$/m,
    );
    assert.match(p, /4, 0, args\.dport, ntop\(args\.saddr\), ntop\(args\.daddr\), comm\);/);
    assert.match(p, /6, 0, args\.dport, ntop\(args\.saddr_v6\), ntop\(args\.daddr_v6\), comm\);/);
    assert.doesNotMatch(p, /@conn/);
  });

  it('-L keeps the connect per socket and prints when the socket leaves SYN_SENT', () => {
    const p = buildProgram({ lport: true, ipv6: true });
    assert.match(p, /args\.newstate == 2\) && \(args\.family == 10\)\/ \{\n {2}@conn\[\(uint64\)args\.skaddr\] = /);
    assert.match(p, /\/args\.protocol == 6 && args\.oldstate == 2\/ \{/);
    assert.match(p, /if \(has_key\(@conn, \$sk\) && args\.sport != 0\)/);
    assert.match(
      p,
      /\$c\.0, \$c\.1, \$c\.2, 6, args\.sport, args\.dport, ntop\(args\.saddr_v6\), ntop\(args\.daddr_v6\), \$c\.3\)/,
    );
    assert.match(p, /delete\(@conn, \$sk\);/);
  });
});

describe('tcpconnect output format', () => {
  const plain = { timestamp: false, printUid: false, lport: false };
  it('headers: "%-7s %-12s %-2s %-16s %-16s %-6s", -t, -U and -L columns', () => {
    assert.equal(header(plain), 'PID     COMM         IP SADDR            DADDR            DPORT \n');
    assert.equal(
      header({ timestamp: true, printUid: true, lport: true }),
      'TIME(s)  UID   PID     COMM         IP SADDR            LPORT  DADDR            DPORT \n',
    );
  });

  it('rows end with the empty QUERY column; comm cut to 12; -t from the first event', () => {
    const state = { startTs: null as number | null };
    const rec = (
      ip: number,
      saddr: string,
      daddr: string,
      lport: number,
      dport: number,
      comm: string,
      tsUs = 5000000,
    ) => ({ kind: 'connect', tsUs, pid: 181, uid: 1000, ip, saddr, daddr, lport, dport, comm }) as const;
    const row = toRow(rec(4, '10.0.0.1', '10.0.0.2', 0, 80, 'curl-with-long-name'), state, false);
    assert.deepEqual(row, {
      elapsedUs: 0,
      pid: 181,
      uid: 1000,
      comm: 'curl-with-long-name',
      ip: 4,
      saddr: '10.0.0.1',
      lport: null,
      daddr: '10.0.0.2',
      dport: 80,
    });
    assert.equal(formatRow(row, plain), '181     curl-with-lo 4  10.0.0.1         10.0.0.2         80     \n');
    const o = { timestamp: true, printUid: true, lport: true };
    assert.equal(
      formatRow(toRow(rec(6, '::1', 'fe80::1', 40000, 443, 'curl'), state, true), o),
      '0.000    1000  181     curl         6  ::1              40000  fe80::1          443    \n',
    );
    assert.equal(
      formatRow(toRow(rec(6, '::1', 'fe80::1', 40000, 443, 'curl', 6250000), state, true), o).slice(0, 9),
      '1.250    ',
    );
  });

  it('-c: counts per address pair and port, IPv4 first, largest first', () => {
    const c = new ConnectCounts();
    const ev = (ip: number, saddr: string, daddr: string, dport: number) => ({ ip, saddr, daddr, dport });
    c.add(ev(6, '::1', '::1', 22));
    c.add(ev(4, '10.0.0.1', '10.0.0.2', 80));
    c.add(ev(4, '10.0.0.1', '10.0.0.3', 443));
    c.add(ev(4, '10.0.0.1', '10.0.0.3', 443));
    assert.deepEqual(c.rows(), [
      { ip: 4, laddr: '10.0.0.1', raddr: '10.0.0.3', rport: 443, connects: 2 },
      { ip: 4, laddr: '10.0.0.1', raddr: '10.0.0.2', rport: 80, connects: 1 },
      { ip: 6, laddr: '::1', raddr: '::1', rport: 22, connects: 1 },
    ]);
    assert.equal(
      c.format(),
      `\n${pyFormat('%-25s %-25s %-20s %-10s', 'LADDR', 'RADDR', 'RPORT', 'CONNECTS')}\n` +
        `${pyFormat('%-25s %-25s %-20s %-10d', '10.0.0.1', '10.0.0.3', '443', 2)}\n` +
        `${pyFormat('%-25s %-25s %-20s %-10d', '10.0.0.1', '10.0.0.2', '80', 1)}\n` +
        `${pyFormat('%-25s %-25s %-20s %-10d', '::1', '::1', '22', 1)}\n`,
    );
  });
});

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('tcpconnect on the live kernel', () => {
  const skip = liveSkipReason();
  const v6skip = ipv6LoopbackSkipReason();

  async function started(args: string[]): Promise<ToolRun> {
    const run = startBpfscope(['tcpconnect', ...args]);
    assert.ok(await run.waitFor(/DPORT|CONNECTS|Ctrl-C to end\n/, 30_000), run.stderr());
    return run;
  }

  it('sees the client connect to 127.0.0.1 and ::1 (default, -L -U -t, -c -4)', { skip }, async () => {
    const runs = await Promise.all([started([]), started(['-L', '-U', '-t']), started(['-c', '-4'])]);
    const sessions: TcpSession[] = [await tcpSession(4, 1000, 1000)];
    if (!v6skip) sessions.push(await tcpSession(6, 1000, 1000));
    const [plain, wide] = runs;
    const want = (s: TcpSession): string =>
      pyFormat(
        '%-7d %-12.12s %-2d %-16s %-16s %-6d ',
        s.clientPid,
        'bpfs_tcpcli',
        s.host === '::1' ? 6 : 4,
        s.host,
        s.host,
        s.serverPort,
      );
    const wantL = (s: TcpSession): string =>
      pyFormat(
        '%-6d%-7d %-12.12s %-2d %-16s %-6d %-16s %-6d ',
        0,
        s.clientPid,
        'bpfs_tcpcli',
        s.host === '::1' ? 6 : 4,
        s.host,
        s.clientPort,
        s.host,
        s.serverPort,
      );
    for (const s of sessions) {
      assert.ok(await plain!.waitFor(new RegExp(`^${escapeRe(want(s))}$`, 'm'), 10_000), plain!.stdout());
      assert.ok(await wide!.waitFor(new RegExp(`^[\\d.]+ +${escapeRe(wantL(s))}$`, 'm'), 10_000), wide!.stdout());
    }
    for (const r of runs) r.child.kill('SIGINT');
    const [a, b, c] = await Promise.all(runs.map((r) => r.done));
    for (const r of [a!, b!, c!]) {
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^Tracing connect \.\.\. Hit Ctrl-C to end\n/);
    }
    for (const s of sessions) {
      // One line per connect, none for the accepted side (the server's socket never enters SYN_SENT).
      assert.equal(a!.stdout.split('\n').filter((l) => l.includes(` ${s.serverPort} `)).length, 1, a!.stdout);
    }
    assert.equal(
      b!.stdout.split('\n')[1],
      'TIME(s)  UID   PID     COMM         IP SADDR            LPORT  DADDR            DPORT ',
    );
    // -c -4: the IPv4 connect is counted once; the IPv6 one is filtered out.
    const counts = c!.stdout.split('\n');
    assert.ok(counts.includes('LADDR                     RADDR                     RPORT                CONNECTS  '));
    assert.ok(
      counts.includes(
        pyFormat('%-25s %-25s %-20s %-10d', '127.0.0.1', '127.0.0.1', String(sessions[0]!.serverPort), 1),
      ),
      c!.stdout,
    );
    if (sessions[1]) assert.doesNotMatch(c!.stdout, new RegExp(` ${sessions[1].serverPort} `));
  });

  it('-p PID: only the connects of that process', { skip }, async () => {
    const run = await started(['-p', String(process.pid)]);
    // One connect from this process (in-process server and client), one from the session's client process.
    const srv = createServer((c) => c.destroy());
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const port = (srv.address() as AddressInfo).port;
    await new Promise<void>((r, j) => connect(port, '127.0.0.1', r).on('error', j));
    const other = await tcpSession(4, 10, 10);
    srv.close();
    assert.ok(await run.waitFor(new RegExp(` ${port} +\n`), 10_000), run.stdout());
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout.split('\n').slice(2, -1);
    assert.equal(rows.length, 1, r.stdout);
    assert.match(rows[0]!, new RegExp(`^${process.pid} +\\S+ +4  127\\.0\\.0\\.1 +127\\.0\\.0\\.1 +${port} +$`));
    assert.doesNotMatch(r.stdout, new RegExp(` ${other.serverPort} `));
  });

  it('-P with a bad port fails as bcc does (ValueError, exit 1); -d is not supported', { skip }, async () => {
    const bad = await runBpfscope(['tcpconnect', '-P', '80,http']);
    assert.equal(bad.code, 1);
    assert.equal(bad.stderr, "ValueError: invalid literal for int() with base 10: 'http'\n");
    const dns = await runBpfscope(['tcpconnect', '-d']);
    assert.equal(dns.code, 1);
    assert.match(dns.stderr, /^ERROR: tcpconnect: -d\/--dns reads DNS replies with kprobes .*\n$/);
  });

  /** The facts the text test checks for an IPv4 session with -L -U: the client's one connect, its ports and UID 0. */
  function assertConnect(rows: ConnectRow[], s: TcpSession): void {
    const mine = rows.filter((r) => r.dport === s.serverPort);
    assert.equal(mine.length, 1, JSON.stringify(rows));
    const r = mine[0]!;
    assert.deepEqual(
      [r.uid, r.pid, r.comm, r.ip, r.saddr, r.lport, r.daddr, r.dport],
      [0, s.clientPid, 'bpfs_tcpcli', 4, '127.0.0.1', s.clientPort, '127.0.0.1', s.serverPort],
    );
  }

  it('--json -L -U -4: the same connect as an object; -c -4 --json: its count', { skip }, async () => {
    let s: TcpSession | undefined;
    const rows = await jsonRows<ConnectRow>(
      ['tcpconnect', '-L', '-U', '-4'],
      2, // -L: two inet_sock_set_state probes
      async () => {
        s = await tcpSession(4, 1000, 1000);
      },
      (r) => r.some((x) => x.dport === s?.serverPort),
    );
    assertConnect(rows, s!);
    let c: TcpSession | undefined;
    const counts = await jsonRows<ConnectCountRow>(
      ['tcpconnect', '-c', '-4'],
      1,
      async () => {
        c = await tcpSession(4, 1000, 1000);
      },
      () => true,
    );
    assert.deepEqual(
      counts.filter((x) => x.rport === c!.serverPort),
      [{ ip: 4, laddr: '127.0.0.1', raddr: '127.0.0.1', rport: c!.serverPort, connects: 1 }],
    );
  });

  it('runTool -L -U -4: the same connect as a row', { skip }, async () => {
    const run = await runTool('tcpconnect', ['-L', '-U', '-4']);
    const s = await tcpSession(4, 1000, 1000);
    const rows = await apiRows(run, (r) => r.some((x) => 'dport' in x && x.dport === s.serverPort));
    assertConnect(rows as ConnectRow[], s);
  });
});
