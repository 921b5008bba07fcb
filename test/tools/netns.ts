/**
 * A private network namespace that loses packets, for the TCP tools' live tests (tcpretrans, tcpdrop).
 *
 * The namespace has only `lo`, and an nftables rule on the *input* hook drops every `every`-th TCP packet carrying
 * data (longer than 100 bytes) sent to one port (`numgen inc`, so the drops are deterministic; an output-hook drop
 * does not cause retransmits, since TCP sees the local send fail). Handshake, ACK and bare FIN packets pass, so
 * once the server has read everything no dropped packet is still waiting to be resent: the drop counter and what
 * the tools saw are final when {@link LossyNetns.transfer} returns. A loopback transfer to that port inside the namespace then has packets dropped
 * (`skb:kfree_skb` with reason NETFILTER_DROP) and retransmitted (`tcp:tcp_retransmit_skb`). The rule counts the
 * packets it dropped. Names and ports are unique per test process, so concurrent runs do not see each other.
 */
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { liveSkipReason } from './helpers.js';

/** Why a lossy namespace cannot be made here, or undefined. */
export function lossyNetnsSkipReason(): string | undefined {
  const live = liveSkipReason();
  if (live) return live;
  if (spawnSync('ip', ['-V']).status !== 0) return 'ip (iproute2) is not installed';
  if (spawnSync('nft', ['--version']).status !== 0) return 'nft (nftables) is not installed';
  return undefined;
}

export interface TransferResult {
  /** The client's (sender's) local port. */
  clientPort: number;
  /** Bytes the server received (the whole transfer when it succeeded). */
  received: number;
}

export interface LossyNetns {
  name: string;
  /** The TCP port whose incoming packets are dropped. */
  port: number;
  /** The namespace's inode number (`--netns-id`). */
  inode: number;
  /**
   * Send `bytes` from a client to a server on `host`:`port` inside the namespace (a Node child process); `host` is
   * `127.0.0.1` (default) or `::1`.
   */
  transfer(bytes: number, host?: string): TransferResult;
  /** Packets the nftables rule has dropped so far. */
  dropped(): number;
  /** Delete the namespace (and with it the rule); safe to call twice. */
  remove(): void;
}

/**
 * One client and one server in one Node process, run as `node -e TRANSFER_SCRIPT PORT BYTES HOST`: prints
 * "<client port> <bytes received>" when the server saw the end of the data.
 */
export const TRANSFER_SCRIPT = `
const net = require('net');
const port = Number(process.argv[1]);
let left = Number(process.argv[2]);
const host = process.argv[3];
const srv = net.createServer((s) => {
  let n = 0;
  s.on('data', (d) => { n += d.length; });
  s.on('end', () => { process.stdout.write(client.localPort + ' ' + n + '\\n'); s.end(); srv.close(); });
});
let client;
srv.listen(port, host, () => {
  client = net.connect(port, host, () => {
    const buf = Buffer.alloc(16384, 120);
    const pump = () => {
      while (left > 0) {
        const k = Math.min(left, buf.length);
        left -= k;
        if (!client.write(buf.subarray(0, k))) { client.once('drain', pump); return; }
      }
      client.end();
    };
    pump();
  });
  client.on('data', () => {});
});
`;

function run(cmd: string, args: string[], input?: string): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, timeout: 60_000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr || r.error?.message}`);
  return r;
}

/**
 * The nftables ruleset (for `nft -f -`) of a lossy namespace: table `inet bpfscope_test`, whose input chain drops
 * every `every`-th data packet (longer than 100 bytes) sent to TCP port `port`, counting them.
 */
export function lossyRuleset(port: number, every: number): string {
  return `table inet bpfscope_test {
  chain input {
    type filter hook input priority 0; policy accept;
    tcp dport ${port} meta length > 100 numgen inc mod ${every} == ${every - 1} counter drop
  }
}
`;
}

/** Create the namespace, bring up `lo` and add the rule that drops every `every`-th data packet to the port. */
export function createLossyNetns(every = 4): LossyNetns {
  const name = `bpfscope-t${process.pid}-${Math.floor(Math.random() * 1e6)}`;
  const port = 20000 + Math.floor(Math.random() * 20000);
  run('ip', ['netns', 'add', name]);
  let removed = false;
  const remove = (): void => {
    if (removed) return;
    removed = true;
    spawnSync('ip', ['netns', 'del', name]);
  };
  try {
    run('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
    const rules = lossyRuleset(port, every);
    run('ip', ['netns', 'exec', name, 'nft', '-f', '-'], rules);
    const nsPath = `/var/run/netns/${name}`;
    const inode = existsSync(nsPath) ? statSync(nsPath).ino : 0;
    return {
      name,
      port,
      inode,
      transfer(bytes, host = '127.0.0.1') {
        const script = [process.execPath, '-e', TRANSFER_SCRIPT, String(port), String(bytes), host];
        const r = run('ip', ['netns', 'exec', name, ...script]);
        const [clientPort, received] = r.stdout.trim().split(' ').map(Number);
        return { clientPort: clientPort!, received: received! };
      },
      dropped() {
        const r = run('ip', ['netns', 'exec', name, 'nft', 'list', 'table', 'inet', 'bpfscope_test']);
        const m = /counter packets (\d+)/.exec(r.stdout);
        if (!m) throw new Error(`no counter in: ${r.stdout}`);
        return Number(m[1]);
      },
      remove,
    };
  } catch (e) {
    remove();
    throw e;
  }
}
