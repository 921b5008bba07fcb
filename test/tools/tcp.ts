/**
 * A controlled loopback TCP session for the TCP tool tests: a server process (comm `bpfs_tcpsrv`) listens on an
 * ephemeral port of 127.0.0.1 or ::1 and accepts one connection; a client process (comm `bpfs_tcpcli`) connects,
 * sends `send` bytes, reads the server's `reply` bytes and closes first; the server then closes too. So the
 * client's socket goes SYN_SENT → ESTABLISHED → FIN_WAIT1 → FIN_WAIT2 → CLOSE and the server's child socket
 * SYN_RECV → ESTABLISHED → CLOSE_WAIT → LAST_ACK → CLOSE.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

const SERVER = `
process.title = 'bpfs_tcpsrv';
const net = require('net');
const [host, reply] = [process.argv[1], Number(process.argv[2])];
const srv = net.createServer((s) => {
  srv.close();
  let got = 0;
  s.on('data', (d) => {
    got += d.length;
    if (got === Number(process.argv[3])) s.write(Buffer.alloc(reply, 0x61));
  });
  s.on('end', () => s.end());
  s.on('close', () => process.stdout.write('received ' + got + '\\n'));
});
srv.listen(0, host, () => process.stdout.write('port ' + srv.address().port + '\\n'));
`;

const CLIENT = `
process.title = 'bpfs_tcpcli';
const net = require('net');
const [host, port, send, reply] = process.argv.slice(1);
const c = net.connect(Number(port), host, () => {
  process.stdout.write('lport ' + c.localPort + '\\n');
  c.write(Buffer.alloc(Number(send), 0x62));
});
let got = 0;
c.on('data', (d) => {
  got += d.length;
  if (got === Number(reply)) c.end();
});
c.on('close', () => process.stdout.write('received ' + got + '\\n'));
`;

export interface TcpSession {
  host: string;
  serverPid: number;
  clientPid: number;
  serverPort: number;
  clientPort: number;
  /** Bytes each side received, as the processes counted them. */
  serverReceived: number;
  clientReceived: number;
}

function startNode(script: string, args: (string | number)[]) {
  const child = spawn(process.execPath, ['-e', script, ...args.map(String)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const done = new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (code) => {
      clearTimeout(t);
      if (code === 0) resolve();
      else reject(new Error(`tcp peer exited ${code}: ${err}`));
    });
  });
  const field = async (name: string): Promise<number> => {
    for (let i = 0; i < 400; i++) {
      const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(out);
      if (m) return Number(m[1]);
      if (child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`tcp peer printed no "${name}": ${out}${err}`);
  };
  return { child, done, field };
}

/** Run one session over IPv4 (127.0.0.1) or IPv6 (::1) loopback; resolves once both processes have exited. */
export async function tcpSession(family: 4 | 6, send: number, reply: number): Promise<TcpSession> {
  const host = family === 6 ? '::1' : '127.0.0.1';
  const server = startNode(SERVER, [host, reply, send]);
  const serverPort = await server.field('port');
  const client = startNode(CLIENT, [host, serverPort, send, reply]);
  await Promise.all([server.done, client.done]);
  return {
    host,
    serverPid: server.child.pid!,
    clientPid: client.child.pid!,
    serverPort,
    clientPort: await client.field('lport'),
    serverReceived: await server.field('received'),
    clientReceived: await client.field('received'),
  };
}

/** Why IPv6 loopback (::1 on lo) cannot be used here, or undefined. */
export function ipv6LoopbackSkipReason(): string | undefined {
  try {
    if (/^0{31}1 /m.test(readFileSync('/proc/net/if_inet6', 'utf8'))) return undefined;
  } catch {
    /* no IPv6 */
  }
  return 'this kernel has no IPv6 loopback address (::1)';
}

/** The lines of `text` that mention both ports of `s` as whole words. */
export function sessionLines(text: string, s: TcpSession): string[] {
  const has = (l: string, p: number): boolean => new RegExp(`(^|[ ,])${p}([ ,]|$)`).test(l);
  return text.split('\n').filter((l) => has(l, s.serverPort) && has(l, s.clientPort));
}
