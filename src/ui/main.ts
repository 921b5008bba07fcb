/**
 * `bpfscope ui`: serve the web UI (tools, one-liners, live histograms, heat maps, flame graphs) on this host.
 *
 * ```
 * bpfscope ui [--listen HOST:PORT] [--token-file FILE] [--idle-timeout SECONDS] [--unsafe]
 * ```
 * Binds 127.0.0.1 on a free port by default and prints the page's URL with a random token (32 bytes from
 * crypto.randomBytes, hex); it opens no browser. `--listen` to an address other than a loopback one refuses to
 * start without `--token-file` (the token is then the file's first line, at least 16 characters). Runs until
 * SIGINT/SIGTERM, then closes every session (every BPF program, link, map and perf event) before exiting.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { BpfscopeError } from '../errors.js';
import { startUiServer } from './server.js';

const USAGE = `usage: bpfscope ui [-h] [--listen HOST:PORT] [--token-file FILE] [--idle-timeout SECONDS] [--unsafe]

Serve bpfscope's web UI: the tools by area, one-liners, live tables, histograms, heat maps and flame graphs.
Prints the page's URL (with its access token) and runs until Ctrl-C, which stops every session.

options:
  -h, --help            show this help message and exit
  --listen HOST:PORT    address to serve on (default 127.0.0.1:0, a free port on loopback); another address
                        than loopback needs --token-file
  --token-file FILE     read the access token from FILE's first line (at least 16 characters) instead of
                        making a random one
  --idle-timeout SECONDS
                        stop a session nobody has watched for this long (default 300)
  --unsafe              allow the unsafe builtins (system, signal, ...) in one-liners
`;

export interface UiArgs {
  host: string;
  port: number;
  tokenFile: string | null;
  idleSeconds: number;
  unsafe: boolean;
  help: boolean;
}

function usageError(msg: string): never {
  throw new BpfscopeError(`ui: ${msg}`, {
    hint: 'usage: bpfscope ui [-h] [--listen HOST:PORT] [--token-file FILE] [--idle-timeout SECONDS] [--unsafe]',
    exitCode: 2,
  });
}

/** Parse `bpfscope ui`'s arguments. @throws BpfscopeError (exit code 2) for a usage error */
export function parseUiArgs(argv: readonly string[]): UiArgs {
  const a: UiArgs = { host: '127.0.0.1', port: 0, tokenFile: null, idleSeconds: 300, unsafe: false, help: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const value = (): string => {
      if (arg.startsWith('--') && eq > 0) return arg.slice(eq + 1);
      const v = argv[++i];
      if (v === undefined) usageError(`${name} needs a value`);
      return v;
    };
    switch (name) {
      case '-h':
      case '--help':
        a.help = true;
        break;
      case '--listen': {
        const v = value();
        const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:]+)):(\d{1,5})$/.exec(v);
        if (!m || Number(m[3]) > 65535)
          usageError(`--listen wants HOST:PORT (e.g. 127.0.0.1:9000, [::1]:9000), got '${v}'`);
        a.host = (m[1] ?? m[2])!;
        a.port = Number(m[3]);
        break;
      }
      case '--token-file':
        a.tokenFile = value();
        break;
      case '--idle-timeout': {
        const v = value();
        const n = Number(v);
        if (!/^\d+(\.\d+)?$/.test(v) || n <= 0 || n > 86400 * 7)
          usageError(`--idle-timeout wants seconds (0 < N <= 604800), got '${v}'`);
        a.idleSeconds = n;
        break;
      }
      case '--unsafe':
        a.unsafe = true;
        break;
      default:
        usageError(`unrecognized argument '${arg}'`);
    }
  }
  return a;
}

/** Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost). */
export function isLoopback(host: string): boolean {
  return /^127\.\d+\.\d+\.\d+$/.test(host) || host === '::1' || host === 'localhost';
}

function readToken(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new BpfscopeError(
      `ui: cannot read the token file ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`,
    );
  }
  const token = text.split('\n')[0]!.trim();
  if (token.length < 16 || !/^[\x21-\x7e]+$/.test(token)) {
    throw new BpfscopeError(`ui: the token in ${file} must be one line of at least 16 printable characters, no spaces`);
  }
  return token;
}

export async function main(argv: string[]): Promise<number> {
  const a = parseUiArgs(argv);
  if (a.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (!isLoopback(a.host) && a.tokenFile === null) {
    throw new BpfscopeError(`ui: refusing to listen on ${a.host} without --token-file`, {
      hint: 'another address than loopback is reachable by others: give a token with --token-file FILE',
    });
  }
  const token = a.tokenFile !== null ? readToken(a.tokenFile) : randomBytes(32).toString('hex');
  const server = await startUiServer({
    host: a.host,
    port: a.port,
    token,
    unsafe: a.unsafe,
    idleMs: a.idleSeconds * 1000,
  });
  process.stdout.write(`bpfscope ui: serving ${server.url}\n`);
  process.stdout.write(
    'Open that URL in a browser (it holds the access token). Ctrl-C stops every session and exits.\n',
  );
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  process.stdout.write('bpfscope ui: stopping every session...\n');
  await server.close();
  return 0;
}
