/**
 * tcpretrans (src/tools/tcpretrans.ts): bcc's -h text, header, row and -c report formats, the generated program,
 * and live runs that see the retransmits of a loopback transfer losing packets in a private network namespace
 * (test/tools/netns.ts), in both the event mode (-s) and the count mode (-c).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { formatHelp } from '../../src/tools/framework/argparse.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kprobesAvailable } from '../../src/tools/framework/probespec.js';
import { configBlock } from '../../src/tools/framework/program.js';
import {
  buildProgram,
  formatCounts,
  formatRow,
  header,
  lossProbeBlock,
  RECORDS,
  type RetransCountRow,
  type RetransRecord,
  type RetransRow,
  SPEC,
  toRow,
} from '../../src/tools/tcpretrans.js';
import { removeScratch, runBpfscope, startBpfscope, tempDir, waitForLinks } from './helpers.js';
import { runTool } from '../../src/index.js';
import { jsonLines, startJson } from './jsonrun.js';
import { createLossyNetns, type LossyNetns, lossyNetnsSkipReason } from './netns.js';
import { ipv6LoopbackSkipReason } from './tcp.js';

describe('tcpretrans interface (bcc tools/tcpretrans.py)', () => {
  it("-h is argparse's help for bcc's parser, with the -4/-6 exclusive group", () => {
    assert.equal(
      formatHelp(SPEC, 78),
      `usage: tcpretrans [-h] [-s] [-l] [-c] [-4 | -6]

Trace TCP retransmits

options:
  -h, --help       show this help message and exit
  -s, --sequence   display TCP sequence numbers
  -l, --lossprobe  include tail loss probe attempts
  -c, --count      count occurred retransmits per flow
  -4, --ipv4       trace IPv4 family only
  -6, --ipv6       trace IPv6 family only

examples:
    ./tcpretrans           # trace TCP retransmits
    ./tcpretrans -l        # include TLP attempts
    ./tcpretrans -4        # trace IPv4 family only
    ./tcpretrans -6        # trace IPv6 family only
`,
    );
  });

  it('header and rows: "%-8s %-7d %-2d %-20s %1s> %-20s" then the state (and sequence with -s)', () => {
    assert.equal(header(false), 'TIME     PID     IP LADDR:LPORT          T> RADDR:RPORT          STATE\n');
    assert.equal(
      header(true),
      'TIME     PID     IP LADDR:LPORT          T> RADDR:RPORT          STATE        SEQ       \n',
    );
    const r: RetransRecord = {
      kind: 'retransmit',
      pid: 18659,
      ip: 4,
      saddr: '127.0.0.1',
      lport: 39012,
      type: 'R',
      daddr: '127.0.0.1',
      dport: 9123,
      state: 4,
      seq: 906602072,
    };
    assert.equal(
      formatRow(toRow(r, false, '04:15:08')),
      '04:15:08 18659   4  127.0.0.1:39012      R> 127.0.0.1:9123       FIN_WAIT1\n',
    );
    assert.equal(
      formatRow(toRow(r, true, '04:15:08')),
      '04:15:08 18659   4  127.0.0.1:39012      R> 127.0.0.1:9123       FIN_WAIT1    906602072\n',
    );
    const v6: RetransRecord = {
      ...r,
      pid: 0,
      ip: 6,
      saddr: '2001:db8::1',
      lport: 22,
      type: 'L',
      daddr: '2001:db8::2',
      dport: 50514,
      state: 1,
      seq: 0,
    };
    assert.equal(
      formatRow(toRow(v6, false, '10:00:00')),
      '10:00:00 0       6  2001:db8::1:22       L> 2001:db8::2:50514    ESTABLISHED\n',
    );
  });

  it('-c report: blank line, header, IPv4 then IPv6 flows by ascending count', () => {
    const v4 = [
      { saddr: '10.0.0.1', lport: 22, daddr: '10.0.0.2', dport: 5000, count: 7n },
      { saddr: '10.0.0.1', lport: 80, daddr: '10.0.0.3', dport: 6000, count: 2n },
    ];
    const v6 = [{ saddr: '::1', lport: 9000, daddr: '::1', dport: 41000, count: 1n }];
    assert.equal(
      formatCounts(v4, v6),
      '\nLADDR:LPORT               RADDR:RPORT               RETRANSMITS\n' +
        '[10.0.0.1]#80        <-> [10.0.0.3]#6000               2\n' +
        '[10.0.0.1]#22        <-> [10.0.0.2]#5000               7\n' +
        '[::1]#9000           <-> [::1]#41000                   1\n',
    );
  });

  it('program: the retransmit tracepoint; -4/-6 filter the family; -s reads TCP_SKB_CB(skb)->seq; -c counts', () => {
    const p = buildProgram({});
    assert.match(p, /^tracepoint:tcp:tcp_retransmit_skb \{$/m);
    assert.match(p, /ntop\(args\.saddr\)/);
    assert.match(p, /ntop\(args\.saddr_v6\)/);
    assert.doesNotMatch(p, /kprobe|offsetof/);
    assert.match(buildProgram({ ipv4: true }), /tcp_retransmit_skb \/args\.family == 2\//);
    assert.match(buildProgram({ ipv6: true }), /tcp_retransmit_skb \/args\.family == 10\//);
    assert.match(
      buildProgram({ sequence: true }),
      /\*\(uint32 \*\)\(args\.skbaddr \+ offsetof\(struct sk_buff, cb\)\)/,
    );
    const c = buildProgram({ count: true });
    assert.match(c, /@ipv4\[ntop\(args\.saddr\), args\.sport, ntop\(args\.daddr\), args\.dport\] = count\(\);/);
    assert.match(c, /@ipv6\[ntop\(args\.saddr_v6\), args\.sport, ntop\(args\.daddr_v6\), args\.dport\] = count\(\);/);
    assert.doesNotMatch(c, /printf/);
    const l = buildProgram({ lossprobe: true, ipv6: true });
    assert.match(l, /^kprobe:tcp_send_loss_probe \{$/m);
    assert.match(l, /if \(!\(\$sk->__sk_common\.skc_family == 10\)\) \{ return; \}/);
    assert.match(l, /"L"/);
  });

  it(
    '-l without kprobes: one sentence naming what the kernel lacks, exit 1',
    { skip: kprobesAvailable() ? 'this kernel has kprobes' : undefined },
    async () => {
      const r = await runBpfscope(['tcpretrans', '-l']);
      assert.equal(r.code, 1);
      assert.equal(
        r.stderr,
        'ERROR: tcpretrans: -l traces tail loss probes with a kprobe on tcp_send_loss_probe(), and this kernel has no kprobes (CONFIG_KPROBES)\n',
      );
    },
  );

  it('-4 and -6 together are a usage error (exit 2)', async () => {
    const r = await runBpfscope(['tcpretrans', '-4', '-6']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /tcpretrans: error: argument -6\/--ipv6: not allowed with argument -4\/--ipv4\n$/);
  });
});

describe('tcpretrans on the live kernel', () => {
  const skip = lossyNetnsSkipReason();
  let ns: LossyNetns | undefined;
  after(() => ns?.remove());

  it(
    'sees the retransmits of a transfer losing every 4th packet, as events (-s) and per-flow counts (-c)',
    { skip },
    async () => {
      ns = createLossyNetns(4);
      const events = startBpfscope(['tcpretrans', '-s'], { timeoutMs: 60_000 });
      const counts = startBpfscope(['tcpretrans', '-c'], { timeoutMs: 60_000 });
      try {
        assert.ok(await events.waitFor(/SEQ *\n/, 30_000), events.stderr());
        assert.ok(await counts.waitFor(/Hit Ctrl-C to end\n/, 30_000), counts.stderr());
        const t = ns.transfer(300_000);
        assert.equal(t.received, 300_000);
        assert.ok(ns.dropped() > 0, 'the rule dropped packets');
        const flow = new RegExp(`127\\.0\\.0\\.1:${t.clientPort} +R> 127\\.0\\.0\\.1:${ns.port} `);
        assert.ok(await events.waitFor(flow, 10_000), events.stdout());
      } finally {
        events.child.kill('SIGINT');
        counts.child.kill('SIGINT');
      }
      const e = await events.done;
      const c = await counts.done;
      assert.equal(e.code, 0, e.stderr);
      assert.equal(c.code, 0, c.stderr);
      const lines = e.stdout.split('\n');
      assert.equal(lines[0], 'Tracing retransmits ... Hit Ctrl-C to end');
      assert.equal(`${lines[1]}\n`, header(true));
      const port = String(ns.port);
      const rows = lines
        .slice(2)
        .map((l) =>
          /^(\d\d:\d\d:\d\d) (\d+) +4 {2}127\.0\.0\.1:(\d+) +R> 127\.0\.0\.1:(\d+) +([A-Z_0-9]+) +(\d+)$/.exec(l),
        )
        .filter((m): m is RegExpExecArray => m !== null && m[4] === port);
      assert.ok(rows.length >= 1, e.stdout);
      const cport = rows[0]![3]!;
      for (const m of rows) {
        assert.equal(m[3], cport, 'one flow');
        // The sender is the client: it retransmits while established or, after its last write, closing.
        assert.match(m[5]!, /^(ESTABLISHED|FIN_WAIT1|CLOSING|LAST_ACK|CLOSE_WAIT)$/);
        const f: RetransRecord = {
          kind: 'retransmit',
          pid: Number(m[2]),
          ip: 4,
          saddr: '127.0.0.1',
          lport: Number(cport),
          type: 'R',
          daddr: '127.0.0.1',
          dport: Number(port),
          state: 0,
          seq: Number(m[6]),
        };
        assert.equal(
          formatRow(toRow(f, true, m[1]!)).replace(/ \S+ +(\d+)\n$/, ' $1'),
          m[0].replace(/ \S+ +(\d+)$/, ' $1'),
        );
      }
      // Both runs saw the same retransmits: the count of the flow is the number of event rows.
      assert.match(c.stdout, /\nLADDR:LPORT {15}RADDR:RPORT {15}RETRANSMITS\n/);
      const counted = new RegExp(
        `^\\[127\\.0\\.0\\.1\\]#${cport} +<-> \\[127\\.0\\.0\\.1\\]#${port} +(\\d+)$`,
        'm',
      ).exec(c.stdout);
      assert.ok(counted, c.stdout);
      assert.equal(Number(counted[1]), rows.length, `${e.stdout}\n${c.stdout}`);
    },
  );
  it(
    '-6 sees the retransmits of an IPv6 transfer and none of an IPv4 one',
    { skip: skip ?? ipv6LoopbackSkipReason() },
    async () => {
      ns ??= createLossyNetns(4);
      const run = startBpfscope(['tcpretrans', '-6'], { timeoutMs: 60_000 });
      let v6: number;
      try {
        assert.ok(await run.waitFor(/STATE\n/, 30_000), run.stderr());
        const t4 = ns.transfer(300_000, '127.0.0.1');
        const t6 = ns.transfer(300_000, '::1');
        assert.equal(t4.received + t6.received, 600_000);
        v6 = t6.clientPort;
        assert.ok(await run.waitFor(new RegExp(`::1:${v6} +R> ::1:${ns.port} `), 10_000), run.stdout());
      } finally {
        run.child.kill('SIGINT');
      }
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      const ours = r.stdout.split('\n').filter((l) => l.includes(`:${ns!.port} `));
      assert.ok(ours.length >= 1, r.stdout);
      for (const l of ours) {
        assert.match(l, new RegExp(`^\\d\\d:\\d\\d:\\d\\d \\d+ +6 {2}::1:${v6} +R> ::1:${ns.port} +[A-Z_0-9]+$`));
      }
    },
  );
  it(
    "the -l report reads a struct sock right (run on tcp_retransmit_skb's socket here, where kprobes are absent)",
    { skip },
    async () => {
      ns ??= createLossyNetns(4);
      const dir = tempDir();
      const file = join(dir, 'tlp.bt');
      const sock = { attach: 'rawtracepoint:tcp_retransmit_skb', sock: 'args.sk' };
      writeFileSync(file, configBlock() + lossProbeBlock({}, sock));
      const run = startBpfscope([file], { timeoutMs: 60_000 });
      const flows: RegExp[] = [];
      // The program's printf records, formatted as tcpretrans prints them.
      const rowsOf = (text: string): string[] =>
        text
          .split('\n')
          .map((l) => RECORDS.decode(l))
          .filter((r) => r !== null)
          .map((r) => formatRow(toRow(r, false, '00:00:00')));
      try {
        assert.ok(await waitForLinks(run.pid, 1, 30_000), run.stderr());
        for (const host of ipv6LoopbackSkipReason() ? ['127.0.0.1'] : ['127.0.0.1', '::1']) {
          const t = ns.transfer(300_000, host);
          const h = host.replace(/\./g, '\\.');
          flows.push(new RegExp(` ${h}:${t.clientPort} +L> ${h}:${ns.port} +[A-Z_0-9]+\\n$`));
        }
        const deadline = Date.now() + 10_000;
        while (!flows.every((f) => rowsOf(run.stdout()).some((l) => f.test(l))) && Date.now() < deadline) {
          await new Promise((res) => setTimeout(res, 100));
        }
      } finally {
        run.child.kill('SIGINT');
        removeScratch(dir);
      }
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      const rows = rowsOf(r.stdout);
      for (const flow of flows) {
        const ours = rows.filter((l) => flow.test(l));
        assert.ok(ours.length >= 1, `${flow}\n${rows.join('')}`);
        for (const l of ours) assert.match(l, / L> .* (ESTABLISHED|SYN_SENT|FIN_WAIT1|CLOSING|LAST_ACK|CLOSE_WAIT)\n$/);
      }
    },
  );
});

describe('tcpretrans --json and runTool', () => {
  const skip = lossyNetnsSkipReason();
  let ns: LossyNetns | undefined;
  after(() => ns?.remove());

  /**
   * The facts the text test checks, on rows: the flow's retransmits (one client port, type R, a sending state, a
   * sequence number with -s) and, from the -c run, the flow's count equal to the number of rows.
   */
  function assertFlow(rows: RetransRow[], counts: RetransCountRow[], port: number): void {
    const mine = rows.filter((r) => r.dport === port);
    assert.ok(mine.length >= 1, JSON.stringify(rows));
    const cport = mine[0]!.lport;
    for (const r of mine) {
      assert.deepEqual(
        [r.ip, r.saddr, r.lport, r.type, r.daddr, r.dport],
        [4, '127.0.0.1', cport, 'R', '127.0.0.1', port],
      );
      assert.match(r.state, /^(ESTABLISHED|FIN_WAIT1|CLOSING|LAST_ACK|CLOSE_WAIT)$/);
      assert.match(r.time, /^\d\d:\d\d:\d\d$/);
      assert.equal(typeof r.seq, 'number');
    }
    const flow = counts.filter((c) => c.dport === port);
    assert.equal(
      flow.length,
      1,
      JSON.stringify(counts, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v)),
    );
    assert.deepEqual(
      { ...flow[0]!, retransmits: Number(flow[0]!.retransmits) },
      { ip: 4, saddr: '127.0.0.1', lport: cport, daddr: '127.0.0.1', dport: port, retransmits: mine.length },
    );
  }

  it('--json -s and -c --json: the same retransmits and their count as objects', { skip }, async () => {
    ns ??= createLossyNetns(4);
    const events = await startJson(['tcpretrans', '-s', '--json'], 1, { timeoutMs: 60_000 });
    const counts = await startJson(['tcpretrans', '-c', '--json'], 1, { timeoutMs: 60_000 }).catch((e: unknown) => {
      events.child.kill('SIGINT');
      throw e;
    });
    try {
      const t = ns.transfer(300_000);
      assert.equal(t.received, 300_000);
      assert.ok(await events.waitFor(new RegExp(`"dport":${ns.port},`), 10_000), events.stdout());
    } finally {
      events.child.kill('SIGINT');
      counts.child.kill('SIGINT');
    }
    const e = await events.done;
    const c = await counts.done;
    assert.equal(e.code, 0, e.stderr);
    assert.equal(c.code, 0, c.stderr);
    assertFlow(jsonLines<RetransRow>(e.stdout), jsonLines<RetransCountRow>(c.stdout), ns.port);
  });

  it('runTool -s and -c: the same retransmits as rows, and their count', { skip }, async () => {
    ns ??= createLossyNetns(4);
    const events = await runTool('tcpretrans', ['-s']);
    const counts = await runTool('tcpretrans', ['-c']).catch(async (e: unknown) => {
      await events.close();
      throw e;
    });
    const t = ns.transfer(300_000);
    assert.equal(t.received, 300_000);
    // The transfer is over: every retransmit happened; close() reads what is left in the buffer, then ends.
    assert.deepEqual(await Promise.all([events.close(), counts.close()]), [0, 0]);
    const rows: (RetransRow | RetransCountRow)[] = [];
    for await (const r of events.rows()) rows.push(r);
    const flows: (RetransRow | RetransCountRow)[] = [];
    for await (const f of counts.rows()) flows.push(f);
    assertFlow(rows as RetransRow[], flows as RetransCountRow[], ns.port);
  });
});
