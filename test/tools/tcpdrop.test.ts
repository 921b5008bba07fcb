/**
 * tcpdrop (src/tools/tcpdrop.ts): bcc's -h text, header and event format (with the stack), the generated program,
 * option errors, and a live run that sees every packet an nftables rule drops in a private network namespace
 * (test/tools/netns.ts), with the drop reason and the kernel stack.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { formatHelp } from '../../src/tools/framework/argparse.js';
import { dropReasonNames } from '../../src/tools/framework/skb.js';
import { runTool } from '../../src/index.js';
import {
  buildProgram,
  type DropRecord,
  type DropRow,
  formatEvent,
  header,
  SPEC,
  toRow,
} from '../../src/tools/tcpdrop.js';
import { jsonLines, startJson } from './jsonrun.js';
import { runBpfscope, startBpfscope } from './helpers.js';
import { createLossyNetns, type LossyNetns, lossyNetnsSkipReason } from './netns.js';
import { ipv6LoopbackSkipReason } from './tcp.js';

describe('tcpdrop interface (bcc tools/tcpdrop.py)', () => {
  it("-h is argparse's help for bcc's parser", () => {
    assert.equal(
      formatHelp(SPEC, 78),
      `usage: tcpdrop [-h] [-4 | -6] [--netns-id NETNS_ID] [--pid-netns PID_NETNS]

Trace TCP drops by the kernel

options:
  -h, --help            show this help message and exit
  -4, --ipv4            trace IPv4 family only
  -6, --ipv6            trace IPv6 family only
  --netns-id NETNS_ID   the netns id to filter by
  --pid-netns PID_NETNS
                        the pid whose netns to filter by

examples:
    ./tcpdrop           # trace kernel TCP drops
    ./tcpdrop -4        # trace IPv4 family only
    ./tcpdrop -6        # trace IPv6 family only
`,
    );
  });

  it('header and events: "%-8s %-7d %-2d %-20s > %-20s %-20s %s (%d)", tab-indented frames, a blank line', () => {
    assert.equal(
      header(),
      'TIME     PID     IP SADDR:SPORT          > DADDR:DPORT          STATE (FLAGS)        REASON (CODE)\n',
    );
    const reasons = new Map([[12, 'NETFILTER_DROP']]);
    const f: DropRecord = {
      kind: 'drop',
      pid: 18659,
      ip: 4,
      saddr: '127.0.0.1',
      sport: 39012,
      daddr: '127.0.0.1',
      dport: 9123,
      state: -1,
      flags: 24,
      reason: 12,
      stack: '',
    };
    assert.equal(
      formatEvent(toRow(f, reasons, ['sk_skb_reason_drop+0x90', 'nft_do_chain+0x3e8'], '04:15:08')),
      '04:15:08 18659   4  127.0.0.1:39012      > 127.0.0.1:9123       - (PSH|ACK)          NETFILTER_DROP (12)\n' +
        '\tsk_skb_reason_drop+0x90\n\tnft_do_chain+0x3e8\n\n',
    );
    const g: DropRecord = { ...f, pid: 0, ip: 6, saddr: '::1', sport: 22, daddr: '::1', dport: 50514, state: 1 };
    assert.equal(
      formatEvent(toRow({ ...g, flags: 16, reason: 99 }, reasons, [], '10:00:00')),
      '10:00:00 0       6  ::1:22               > ::1:50514            ESTABLISHED (ACK)    UNKNOWN (99)\n\n',
    );
  });

  it("reason names come from the kernel's enum skb_drop_reason without the SKB_DROP_REASON_ prefix", () => {
    const names = dropReasonNames();
    if (names.size === 0) return; // no BTF here: nothing to compare
    assert.equal(names.get(0), 'SKB_NOT_DROPPED_YET');
    assert.equal(names.get(1), 'SKB_CONSUMED');
    assert.equal(names.get(2), 'NOT_SPECIFIED');
    assert.ok([...names.values()].includes('NETFILTER_DROP'));
  });

  it('program: kfree_skb drops above NOT_SPECIFIED, IPv4/IPv6 TCP packets, rx_sk when the kernel has it', () => {
    const p = buildProgram({ rxSk: true });
    assert.match(
      p,
      /^tracepoint:skb:kfree_skb \/\(args\.reason > 2\) && \(args\.protocol == 0x800 \|\| args\.protocol == 0x86dd\)\/ \{$/m,
    );
    assert.match(p, /\$sk = \(struct sock \*\)args\.rx_sk;\n {2}if \(\$sk == 0\) \{ \$sk = \$skb->sk; \}/);
    assert.match(p, /if \(\$ip->protocol == 6\)/);
    assert.match(p, /if \(\$ip6->nexthdr == 6 /);
    assert.match(p, /kstack\(raw\)/);
    assert.doesNotMatch(p, /inum/);
    const v4 = buildProgram({ ipv4: true, rxSk: false });
    assert.match(v4, /\/\(args\.reason > 2\) && \(args\.protocol == 0x800\)\//);
    assert.doesNotMatch(v4, /ipv6hdr|rx_sk/);
    assert.doesNotMatch(buildProgram({ ipv6: true }), /struct iphdr/);
    assert.match(buildProgram({ netnsId: 4026531840 }), /if \(\$ns != 4026531840\) \{ return; \}/);
  });

  it("--pid-netns with --netns-id is bcc's error (stdout, exit 1); -4 with -6 a usage error", async () => {
    const r = await runBpfscope(['tcpdrop', '--pid-netns', '1', '--netns-id', '5']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, 'ERROR: --pid_netns and --netns-id not allowed together\n');
    const n = await runBpfscope(['tcpdrop', '--pid-netns', '999999999']);
    assert.equal(n.code, 1);
    assert.match(n.stderr, /^ERROR: tcpdrop: cannot read the network namespace of PID 999999999: /);
    const u = await runBpfscope(['tcpdrop', '-6', '-4']);
    assert.equal(u.code, 2);
    assert.match(u.stderr, /tcpdrop: error: argument -4\/--ipv4: not allowed with argument -6\/--ipv6\n$/);
  });
});

describe('tcpdrop on the live kernel', () => {
  const skip = lossyNetnsSkipReason();
  let ns: LossyNetns | undefined;
  after(() => ns?.remove());

  it('sees each packet the input rule drops, with NETFILTER_DROP and the netfilter stack', { skip }, async () => {
    ns = createLossyNetns(4);
    const run = startBpfscope(['tcpdrop', '--netns-id', String(ns.inode)], { timeoutMs: 60_000 });
    let dropped: number;
    let clientPort = 0;
    try {
      assert.ok(await run.waitFor(/REASON \(CODE\)\n/, 30_000), run.stderr());
      const t = ns.transfer(300_000);
      assert.equal(t.received, 300_000);
      clientPort = t.clientPort;
      dropped = ns.dropped();
      assert.ok(dropped > 0, 'the rule dropped packets');
      const row = new RegExp(`127\\.0\\.0\\.1:${clientPort} +> 127\\.0\\.0\\.1:${ns.port} `, 'g');
      const deadline = Date.now() + 10_000;
      while ((run.stdout().match(row) ?? []).length < dropped && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      run.child.kill('SIGINT');
    }
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout.split('\n')[0],
      'TIME     PID     IP SADDR:SPORT          > DADDR:DPORT          STATE (FLAGS)        REASON (CODE)',
    );
    const code = [...dropReasonNames()].find(([, n]) => n === 'NETFILTER_DROP')?.[0] ?? 12;
    // Events are a line and its stack frames, ended by a blank line.
    const events = r.stdout
      .split('\n')
      .slice(1)
      .join('\n')
      .split('\n\n')
      .filter((e) => e.includes(`127.0.0.1:${clientPort} `) && e.includes(`127.0.0.1:${ns!.port} `));
    assert.equal(events.length, dropped, r.stdout);
    for (const e of events) {
      const [line, ...frames] = e.split('\n');
      const m = new RegExp(
        `^\\d\\d:\\d\\d:\\d\\d \\d+ +4  127\\.0\\.0\\.1:${clientPort} +> 127\\.0\\.0\\.1:${ns.port} +` +
          `(-|[A-Z_0-9]+) \\(([A-Z|]*)\\) +NETFILTER_DROP \\(${code}\\)$`,
      ).exec(line!);
      assert.ok(m, line);
      assert.match(m[2]!, /ACK/, 'every packet after the SYN carries ACK');
      assert.ok(frames.length > 0 && frames.every((f) => /^\t\S+$/.test(f)), e);
      // Dropped by the nftables input hook.
      assert.ok(
        frames.some((f) => f.startsWith('\tnf_hook_slow+0x')),
        e,
      );
    }
  });
  it(
    '-6 sees the drops of an IPv6 transfer (addresses from the IPv6 header) and none of an IPv4 one',
    { skip: skip ?? ipv6LoopbackSkipReason() },
    async () => {
      ns ??= createLossyNetns(4);
      const run = startBpfscope(['tcpdrop', '-6', '--netns-id', String(ns.inode)], { timeoutMs: 60_000 });
      let v6Drops: number;
      let clientPort: number;
      try {
        assert.ok(await run.waitFor(/REASON \(CODE\)\n/, 30_000), run.stderr());
        const before = ns.dropped();
        const t6 = ns.transfer(300_000, '::1');
        v6Drops = ns.dropped() - before;
        clientPort = t6.clientPort;
        assert.ok(v6Drops > 0, 'the rule dropped IPv6 packets');
        ns.transfer(300_000, '127.0.0.1');
        const row = new RegExp(`::1:${clientPort} +> ::1:${ns.port} `, 'g');
        const deadline = Date.now() + 10_000;
        while ((run.stdout().match(row) ?? []).length < v6Drops && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 100));
        }
      } finally {
        run.child.kill('SIGINT');
      }
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.split('\n').filter((l) => /^\d\d:/.test(l) && l.includes(`:${ns!.port} `));
      assert.equal(lines.length, v6Drops, r.stdout);
      for (const l of lines) {
        assert.match(
          l,
          new RegExp(
            `^\\d\\d:\\d\\d:\\d\\d \\d+ +6 {2}::1:${clientPort} +> ::1:${ns.port} +\\S+ \\([A-Z|]*ACK[A-Z|]*\\) +NETFILTER_DROP \\(\\d+\\)$`,
          ),
        );
      }
    },
  );
});

describe('tcpdrop --json and runTool', () => {
  const skip = lossyNetnsSkipReason();
  let ns: LossyNetns | undefined;
  after(() => ns?.remove());

  /**
   * The facts the text test checks, on rows: one row per packet the rule dropped, from the client to the server,
   * ACK set, NETFILTER_DROP with the kernel's number, a stack through the nftables input hook.
   */
  function assertDrops(rows: DropRow[], clientPort: number, dropped: number): void {
    const code = [...dropReasonNames()].find(([, n]) => n === 'NETFILTER_DROP')?.[0] ?? 12;
    const mine = rows.filter((r) => r.sport === clientPort && r.dport === ns!.port);
    assert.equal(mine.length, dropped, JSON.stringify(rows));
    for (const r of mine) {
      assert.deepEqual(
        [r.ip, r.saddr, r.daddr, r.reason, r.reasonCode],
        [4, '127.0.0.1', '127.0.0.1', 'NETFILTER_DROP', code],
      );
      assert.match(r.flags, /ACK/);
      assert.match(r.time, /^\d\d:\d\d:\d\d$/);
      assert.ok(r.state === null || /^[A-Z_0-9]+$/.test(r.state), String(r.state));
      assert.ok(r.stack.length > 0 && r.stack.every((f) => /^\S+$/.test(f)), r.stack.join(' '));
      assert.ok(
        r.stack.some((f) => f.startsWith('nf_hook_slow+0x')),
        r.stack.join(' '),
      );
    }
  }

  it('--json: one object per dropped packet', { skip }, async () => {
    ns ??= createLossyNetns(4);
    const before = ns.dropped();
    const run = await startJson(['tcpdrop', '--netns-id', String(ns.inode), '--json'], 1, { timeoutMs: 60_000 });
    let t;
    try {
      t = ns.transfer(300_000);
      assert.equal(t.received, 300_000);
    } finally {
      run.child.kill('SIGINT');
    }
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assertDrops(jsonLines<DropRow>(r.stdout), t.clientPort, ns.dropped() - before);
  });

  it('runTool: the same packets as rows', { skip }, async () => {
    ns ??= createLossyNetns(4);
    const before = ns.dropped();
    const run = await runTool('tcpdrop', ['--netns-id', String(ns.inode)]);
    let t;
    try {
      t = ns.transfer(300_000);
      assert.equal(t.received, 300_000);
    } finally {
      // The transfer is over: close() reads what is left in the buffer, then ends.
      assert.equal(await run.close(), 0);
    }
    const rows: DropRow[] = [];
    for await (const row of run.rows()) rows.push(row);
    assertDrops(rows, t.clientPort, ns.dropped() - before);
  });
});
