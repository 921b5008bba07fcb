/**
 * tcplife (src/tools/tcplife.ts): bcc's -h text and usage errors (fixture
 * test/tools/fixtures/tcp-tools-argparse.json, from bcc 0.26's tcplife.py), the generated program, the default,
 * wide and CSV formats, and live runs over a loopback session with known byte counts: both ends of each
 * connection are printed with their own PID and comm, the ports, and TX_KB/RX_KB equal to what each side sent and
 * received.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pyFormat } from '../../src/tools/framework/pyformat.js';
import {
  buildProgram,
  formatRow as formatSession,
  header,
  type RowOptions,
  SPEC,
  toRow,
} from '../../src/tools/tcplife.js';

/** The line of one record given as its fields in text (see the comment on `f` below). */
function formatRow(f: string[], o: RowOptions, state: { startTs: number | null }, time = '00:00:00'): string {
  const [ts, pid, ip, laddr, lport, raddr, rport, tx, rx, span, comm] = f as [string, ...string[]];
  const n = Number;
  const st = { startTs: state.startTs === null ? null : BigInt(state.startTs) };
  const rec = { kind: 'session' as const, tsUs: BigInt(ts), pid: n(pid), ip: n(ip), laddr: laddr!, lport: n(lport) };
  const row = toRow(
    { ...rec, raddr: raddr!, rport: n(rport), txBytes: n(tx), rxBytes: n(rx), spanUs: n(span), comm: comm! },
    st,
    time,
  );
  state.startTs = Number(st.startTs);
  return formatSession(row, o);
}
import { argparseFixtureTests } from './argparse-fixture.js';
import { liveSkipReason, startBpfscope, type ToolRun } from './helpers.js';
import { ipv6LoopbackSkipReason, sessionLines, type TcpSession, tcpSession } from './tcp.js';

describe('tcplife options (bcc tools/tcplife.py argparse)', () => {
  argparseFixtureTests(SPEC, 'tcp-tools-argparse');
});

describe('tcplife program (bcc tcplife.py tracepoint version)', () => {
  it('birth below FIN_WAIT1, who at SYN_SENT/LAST_ACK, print at CLOSE with tcp_sock byte counts', () => {
    const p = buildProgram({});
    assert.match(p, /^tracepoint:sock:inet_sock_set_state \/args\.protocol == 6\/ \{$/m);
    assert.match(p, /if \(args\.newstate < 4\) \{\n {4}@birth\[\$sk\] = nsecs;/);
    assert.match(p, /if \(args\.newstate == 2 \|\| args\.newstate == 9\) \{\n {4}@who\[\$sk\] = \(pid, comm\);/);
    assert.match(p, /if \(args\.newstate != 7\) \{\n {4}return;/);
    assert.match(
      p,
      /args.dport, \$tp->bytes_acked, \$tp->bytes_received, \$span_us, ntop\(args.saddr\), ntop\(args.daddr\), \$comm\);/,
    );
    assert.doesNotMatch(p, /\$pid == /);
  });

  it('-L/-D forget other ports, -p checks at SYN_SENT/LAST_ACK and CLOSE, -6 at CLOSE', () => {
    const p = buildProgram({ pid: 181, localPorts: [80, 81], remotePorts: [443], ipv6: true });
    assert.match(
      p,
      /if \(!\(args\.sport == 80 \|\| args\.sport == 81\)\) \{\n {4}delete\(@birth, \$sk\);\n {4}return;/,
    );
    assert.match(p, /if \(!\(args\.dport == 443\)\) \{\n {4}delete\(@birth, \$sk\);/);
    assert.match(p, /args\.newstate == 9\) \{\n {4}if \(!\(\$pid == 181\)\) \{\n {6}return;/);
    assert.match(p, /if \(!\(\$pid == 181 && args\.family == 10\)\) \{\n {4}return;/);
  });
});

describe('tcplife output format', () => {
  const o: RowOptions = { time: false, timestamp: false, wide: false, csv: false };
  // fields: ts_us pid ip laddr lport raddr rport tx_bytes rx_bytes span_us comm
  const f = ['1000000', '22421', '4', '10.1.1.5', '40000', '10.2.2.7', '80', '2047', '1048576', '1234', 'curl'];

  it('default columns fit 80 characters: "%-5d %-10.10s %s%-15s %-5d %-15s %-5d %5d %5d %.2f"', () => {
    assert.equal(header(o), 'PID   COMM       LADDR           LPORT RADDR           RPORT TX_KB RX_KB MS\n');
    assert.equal(
      formatRow(f, o, { startTs: null }),
      '22421 curl       10.1.1.5        40000 10.2.2.7        80        1  1024 1.23\n',
    );
  });

  it('-w: IP column and 26-wide addresses; -T -t columns', () => {
    const w = { ...o, wide: true, time: true, timestamp: true };
    assert.equal(
      header(w),
      `TIME     TIME(s)   ${pyFormat('%-5s %-16.16s %-2s %-26s %-5s %-26s %-5s %6s %6s %s', 'PID', 'COMM', 'IP', 'LADDR', 'LPORT', 'RADDR', 'RPORT', 'TX_KB', 'RX_KB', 'MS')}\n`,
    );
    const state = { startTs: null as number | null };
    const g = ['1000000', '7', '6', 'fe80::1', '22', '2001:db8::1', '5555', '0', '0', '15', 'sshd'];
    assert.equal(
      formatRow(g, w, state, '09:41:02'),
      '09:41:02 0.000000  7     sshd             6  fe80::1                    22    2001:db8::1                5555       0      0 0.01\n',
    );
    assert.equal(formatRow(['2500000', ...g.slice(1)], w, state, '09:41:03').slice(0, 19), '09:41:03 1.500000  ');
  });

  it('-s: CSV, with -T and -t as leading fields', () => {
    const c = { ...o, csv: true, time: true, timestamp: true };
    assert.equal(header(c), 'TIME,TIME(s),PID,COMM,IP,LADDR,LPORT,RADDR,RPORT,TX_KB,RX_KB,MS\n');
    assert.equal(
      formatRow(f, c, { startTs: 500000 }, '09:41:02'),
      '09:41:02,0.500000,22421,curl,4,10.1.1.5,40000,10.2.2.7,80,1,1024,1.23\n',
    );
  });
});

describe('tcplife on the live kernel', () => {
  const skip = liveSkipReason();
  const v6skip = ipv6LoopbackSkipReason();
  // Sizes away from KB boundaries: the kernel's counters include one byte each for the SYN and the FIN.
  const SEND = 300 * 1024 + 500;
  const REPLY = 200 * 1024 + 300;

  async function started(args: string[]): Promise<ToolRun> {
    const run = startBpfscope(['tcplife', ...args]);
    assert.ok(await run.waitFor(/MS\n/, 30_000), run.stderr());
    return run;
  }

  it('both ends of IPv4 and IPv6 sessions: PIDs, ports and KB sent/received (default, -s -6)', { skip }, async () => {
    const runs = await Promise.all([started([]), started(['-s', '-6'])]);
    const sessions: TcpSession[] = [await tcpSession(4, SEND, REPLY)];
    if (!v6skip) sessions.push(await tcpSession(6, SEND, REPLY));
    for (const s of sessions) {
      assert.equal(s.serverReceived, SEND);
      assert.equal(s.clientReceived, REPLY);
    }
    const last = sessions[sessions.length - 1]!;
    const twoLines = (s: TcpSession): RegExp => new RegExp(`(${s.serverPort}[^\\n]*\\n[^]*){2}`);
    assert.ok(await runs[0]!.waitFor(twoLines(last), 10_000), runs[0]!.stdout());
    if (!v6skip) assert.ok(await runs[1]!.waitFor(twoLines(last), 10_000), runs[1]!.stdout());
    for (const r of runs) r.child.kill('SIGINT');
    const [a, b] = await Promise.all(runs.map((r) => r.done));
    assert.equal(a!.code, 0, a!.stderr);
    assert.equal(b!.code, 0, b!.stderr);
    const row = (s: TcpSession, server: boolean): RegExp => {
      const text = pyFormat(
        '%-5d %-10.10s %s%-15s %-5d %-15s %-5d %5d %5d ',
        server ? s.serverPid : s.clientPid,
        server ? 'bpfs_tcpsrv' : 'bpfs_tcpcli',
        '',
        s.host,
        server ? s.serverPort : s.clientPort,
        s.host,
        server ? s.clientPort : s.serverPort,
        Math.floor((server ? REPLY : SEND) / 1024),
        Math.floor((server ? SEND : REPLY) / 1024),
      );
      return new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\d+\\.\\d\\d$`);
    };
    for (const s of sessions) {
      const lines = sessionLines(a!.stdout, s);
      assert.equal(lines.length, 2, a!.stdout);
      assert.equal(lines.filter((l) => row(s, false).test(l)).length, 1, `client row:\n${a!.stdout}`);
      assert.equal(lines.filter((l) => row(s, true).test(l)).length, 1, `server row:\n${a!.stdout}`);
    }
    // -s -6: CSV, IPv6 only.
    assert.equal(b!.stdout.split('\n')[0], 'PID,COMM,IP,LADDR,LPORT,RADDR,RPORT,TX_KB,RX_KB,MS');
    assert.deepEqual(sessionLines(b!.stdout, sessions[0]!), [], '-6 leaves out IPv4');
    if (sessions[1]) {
      const s = sessions[1];
      const csv = sessionLines(b!.stdout, s).sort();
      const prefix = (pid: number, comm: string, lport: number, rport: number, tx: number, rx: number): string =>
        `${pid},${comm},6,::1,${lport},::1,${rport},${tx},${rx},`;
      const want = [
        prefix(s.clientPid, 'bpfs_tcpcli', s.clientPort, s.serverPort, 300, 200),
        prefix(s.serverPid, 'bpfs_tcpsrv', s.serverPort, s.clientPort, 200, 300),
      ];
      assert.equal(csv.length, 2, b!.stdout);
      for (const w of want)
        assert.equal(csv.filter((l) => l.startsWith(w) && /,\d+\.\d\d$/.test(l)).length, 1, b!.stdout);
    }
  });
});
