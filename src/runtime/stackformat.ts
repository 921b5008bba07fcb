/**
 * Text of a kstack/ustack as bpftrace prints it (checked against bpftrace 0.17 here; modes per bpftrace
 * `docs/language.md`):
 * - `bpftrace` mode: a newline, then one line per frame, `name+offset` (or `0x<addr>` when unknown) indented by
 *   `indent` spaces (8 in printf, 4 as a map key);
 * - `perf` mode: `\t<hex address> name+offset (module)` per frame (`0x<addr> ([unknown])` when unknown; no module
 *   for kernel frames);
 * - `raw` mode: the hex addresses.
 */
export interface FrameSymbol {
  name: string;
  offset: bigint;
  /** Shared object / module path, for perf mode. */
  module?: string;
}

/** What stack formatting needs from the symbolizers (see `src/symbols/`). */
export interface StackFrameSymbolizer {
  kernel(ip: bigint): FrameSymbol | undefined;
  user(pid: number, ip: bigint): FrameSymbol | undefined;
}

export interface StackFormat {
  user: boolean;
  pid: number;
  mode: 'bpftrace' | 'perf' | 'raw';
  limit: number;
  /** Spaces before each frame in bpftrace and raw modes (8 in printf, 4 as a map key). */
  indent?: number;
}

export function formatStack(ips: bigint[], f: StackFormat, sym: StackFrameSymbolizer): string {
  const pad = ' '.repeat(f.indent ?? 8);
  let out = '\n';
  for (const ip of ips.slice(0, f.limit)) {
    const hex = ip.toString(16);
    if (f.mode === 'raw') {
      out += `${pad}${hex}\n`;
      continue;
    }
    const s = f.user ? sym.user(f.pid, ip) : sym.kernel(ip);
    const name = s ? `${s.name}+${s.offset}` : `0x${hex}`;
    if (f.mode === 'perf') {
      const mod = s ? (f.user && s.module ? ` (${s.module})` : '') : ' ([unknown])';
      out += `\t${hex} ${name}${mod}\n`;
    } else {
      out += `${pad}${name}\n`;
    }
  }
  return out;
}
