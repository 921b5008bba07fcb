/**
 * tcpretrans -l and tcpdrop on a second kernel: Debian's 6.1 under qemu (`../shared/tools/kernel-matrix/`, see
 * kprobe.test.ts), with the built CLI. There, tcpretrans -l attaches its kprobe on tcp_send_loss_probe() (the
 * development kernel has no kprobes), and tcpdrop runs on a kfree_skb tracepoint without `rx_sk` (6.11+) and with
 * different drop reason numbers (NETFILTER_DROP is 7 on 6.1, 12 on 6.18). Both watch a transfer in a lossy
 * network namespace made with the same rules as test/tools/netns.ts.
 * Skips (saying why) when the guest tooling is not installed or the CLI is not built.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { guestSection, guestSkipReason, ROOT, runGuestScript } from './guest.js';
import { lossyRuleset, TRANSFER_SCRIPT } from '../tools/netns.js';

const PORT = 8080;

const skip = guestSkipReason({ cli: 'built', commands: { ip: 'iproute2', nft: 'nftables' } });

describe('tcpretrans -l and tcpdrop on Debian 6.1 (kernel matrix)', { skip }, () => {
  it('tcpretrans -l attaches its kprobe and sees the retransmits; tcpdrop sees each dropped packet', () => {
    const work = mkdtempSync('/tmp/kernel-matrix-tcp-');
    writeFileSync(join(work, 'rules.nft'), lossyRuleset(PORT, 4));
    writeFileSync(join(work, 'xfer.js'), TRANSFER_SCRIPT);
    const lines = [
      'mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing',
      'modprobe nf_tables; modprobe nft_numgen; modprobe nft_counter 2>/dev/null',
      `cd ${ROOT}`,
      `W=${work}`,
      'ip netns add t && ip -n t link set lo up && ip netns exec t nft -f $W/rules.nft || echo "=== no nft"',
      'node dist/src/cli/main.js tcpretrans -l > $W/tr.out 2>&1 & T1=$!',
      'node dist/src/cli/main.js tcpdrop > $W/td.out 2>&1 & T2=$!',
      'i=0; until { grep -q STATE $W/tr.out && grep -q REASON $W/td.out; } || [ $i -gt 900 ]; do sleep 0.2; i=$((i+1)); done',
      `echo "=== xfer $(ip netns exec t node -e "$(cat $W/xfer.js)" ${PORT} 1000000 127.0.0.1)"`,
      'sleep 1',
      'kill -INT $T1 $T2; wait $T1; echo "=== tr status $?"; wait $T2; echo "=== td status $?"',
      'echo "=== dropped $(ip netns exec t nft list ruleset | sed -n "s/.*counter packets \\([0-9]*\\).*/\\1/p")"',
      'echo "=== tr"; cat $W/tr.out; echo "=== done tr"',
      'echo "=== td"; cat $W/td.out; echo "=== done td"',
      'echo "=== end"',
    ];
    let out: string;
    try {
      out = runGuestScript(lines, work);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    assert.doesNotMatch(out, /=== no nft/, out.slice(-3000));
    const of = (name: string): string => guestSection(out, name);
    const xfer = /=== xfer (\d+) (\d+)/.exec(out);
    assert.ok(xfer, out.slice(-3000));
    assert.equal(Number(xfer[2]), 1_000_000);
    const cport = xfer[1]!;
    assert.match(out, /=== tr status 0\n/);
    assert.match(out, /=== td status 0\n/);
    const dropped = Number(/=== dropped (\d+)/.exec(out)?.[1]);
    assert.ok(dropped > 0, out.slice(-3000));

    const tr = of('tr');
    assert.match(
      tr,
      /^Tracing retransmits \.\.\. Hit Ctrl-C to end\nTIME {5}PID {5}IP LADDR:LPORT {10}T> RADDR:RPORT {10}STATE\n/,
    );
    const flow = new RegExp(
      `^\\d\\d:\\d\\d:\\d\\d \\d+ +4 {2}127\\.0\\.0\\.1:${cport} +([RL])> 127\\.0\\.0\\.1:${PORT} +[A-Z_0-9]+$`,
      'gm',
    );
    const types = [...tr.matchAll(flow)].map((m) => m[1]);
    // Tail loss probes (L) depend on timing; retransmits of the dropped data (R) do not.
    assert.ok(types.includes('R'), tr);

    const td = of('td');
    const events = td.split('\n\n').filter((e) => e.includes(`127.0.0.1:${cport} `));
    assert.equal(events.length, dropped, td);
    for (const e of events) {
      assert.match(
        e,
        new RegExp(
          `127\\.0\\.0\\.1:${cport} +> 127\\.0\\.0\\.1:${PORT} +- \\([A-Z|]*ACK[A-Z|]*\\) +NETFILTER_DROP \\(7\\)\\n`,
        ),
      );
      assert.match(e, /\n\tnf_hook_slow\+0x[0-9a-f]+\n/);
    }
  });
});
