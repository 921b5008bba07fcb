/**
 * Symbolized stack frames and their text: the `Frame` shape that SymbolResolver (resolver.ts) produces, and how a
 * frame or a stack prints in bpftrace's stack modes, in folded stacks and in bcc's tools.
 */
import { basename } from 'node:path';

/** The unwind-failure address (u64 -1) a stack may end with. */
export const U64_MAX = 0xffffffffffffffffn;

/** bpftrace's stack modes (`stack_mode` config, `kstack(perf)`); `build_id` is not supported here. */
export type StackMode = 'bpftrace' | 'perf' | 'raw';

/** Where a frame's name came from. */
export type FrameSource = 'kallsyms' | 'elf' | 'vdso' | 'perf-map' | 'none';

/** One symbolized stack frame. Frames are cached and shared: treat them as read-only. */
export interface Frame {
  /** The instruction address as captured. */
  readonly addr: bigint;
  /** Symbol name (demangled when demangling is on), or `undefined` when nothing knows the address. */
  readonly name: string | undefined;
  /** Bytes from the symbol's start (0 when unknown). */
  readonly offset: number;
  /**
   * Kernel: module name (`ext4`, `bpf`), absent for the core kernel. User: the mapped file's path, `[vdso]`, or the
   * perf map's path; absent when the address is in no mapping.
   */
  readonly module?: string;
  readonly kernel: boolean;
  readonly source: FrameSource;
  /**
   * With {@link SymbolResolverOptions.debugInfo} and DWARF for the file: the source position of the address
   * (`file` as the line table names it) and the functions inlined at it, innermost first (DwarfInfo.inlineFrames).
   */
  readonly debug?: {
    readonly file: string;
    readonly line: number;
    readonly inlined: readonly { readonly name: string; readonly file: string; readonly line: number }[];
  };
}

export function hex(addr: bigint): string {
  return addr.toString(16);
}

/** {@link formatStack}'s `raw` text of `addrs` without symbolizing them (frames up to the first 0). */
export function rawStackText(addrs: ArrayLike<bigint>, indent: number): string {
  let s = '\n';
  for (let i = 0; i < addrs.length; i++) {
    const a = addrs[i]!;
    if (a === 0n) break;
    if (a === U64_MAX) {
      s += `${' '.repeat(indent)}<unwind failure>\n`;
      break;
    }
    s += `${hex(a)}\n`;
  }
  return s;
}

export function unwindFailure(): Frame {
  return { addr: U64_MAX, name: undefined, offset: 0, kernel: false, source: 'none' };
}

/**
 * One frame's symbol text in bpftrace's stack modes: `bpftrace` -> `name+OFFSET` or `0xADDR`; `perf` -> the same,
 * user frames with ` (FILE)` appended, unknown user frames `0xADDR ([unknown])`; `raw` -> `ADDR` (hex).
 */
export function frameText(f: Frame, mode: StackMode = 'bpftrace'): string {
  if (mode === 'raw') return hex(f.addr);
  if (f.name === undefined) {
    const s = `0x${hex(f.addr)}`;
    return mode === 'perf' && !f.kernel ? `${s} ([unknown])` : s;
  }
  const s = `${f.name}+${f.offset}`;
  if (mode === 'perf' && !f.kernel) return `${s} (${f.module ?? '[unknown]'})`;
  return s;
}

/**
 * A symbolized stack as bpftrace prints a stack value (`print(kstack)`, a map key, `%s` of `kstack()`): a leading
 * newline, then one line per frame: `bpftrace` mode indents `indent` spaces (8 in bpftrace v0.26, 4 for map keys in
 * bpftrace 0.17), `perf` mode starts with a tab and the hex address, `raw` mode prints the hex address only. An
 * unwind-failure frame (address u64 -1) prints `<indent><unwind failure>` and ends the stack.
 */
export function formatStack(frames: readonly Frame[], mode: StackMode = 'bpftrace', indent = 8): string {
  const pad = ' '.repeat(indent);
  let s = '\n';
  for (const f of frames) {
    if (f.addr === U64_MAX) {
      s += `${pad}<unwind failure>\n`;
      break;
    }
    if (mode === 'raw') s += `${hex(f.addr)}\n`;
    else if (mode === 'perf') {
      // current bpftrace (show_debug_info): inlined functions first, innermost first, marked `(inlined)`
      for (const i of f.debug?.inlined ?? []) s += `\t${hex(f.addr)} ${i.name} (inlined)\n`;
      s += `\t${hex(f.addr)} ${frameText(f, 'perf')}\n`;
    } else {
      // current bpftrace (show_debug_info): `[inlined] name@file:line` lines, then `name+off@file:line`
      for (const i of f.debug?.inlined ?? []) s += `${pad}[inlined] ${i.name}${at(i.file, i.line)}\n`;
      s += `${pad}${frameText(f, 'bpftrace')}${f.debug ? at(f.debug.file, f.debug.line) : ''}\n`;
    }
  }
  return s;
}

function at(file: string, line: number): string {
  return file === '' ? '' : `@${file}:${line}`;
}

/**
 * A frame's name in folded stacks (bcc `profile -f`, `offcputime -f`; input of flamegraph.pl): the bare symbol name,
 * `[unknown]` when unknown. With `annotate` (bcc's `-a`, stackcollapse-perf's `--kernel`/`--jit`), kernel frames get
 * `_[k]` and JIT (perf-map) frames `_[j]` appended, which flamegraph.pl colours differently.
 */
export function foldedName(f: Frame, annotate = false): string {
  const name = f.name ?? '[unknown]';
  if (!annotate) return name;
  if (f.kernel) return `${name}_[k]`;
  if (f.source === 'perf-map') return `${name}_[j]`;
  return name;
}

/**
 * A frame as bcc's `BPF.sym()` / `BPF.ksym()` print it (bcc `src/python/bcc/__init__.py`): `name`, with
 * `+0xOFFSET` when `showOffset` (known frames only), and ` [MODULE]` when `showModule` (the file's base name for user
 * frames, `kernel` for the core kernel). Unknown frames print `[unknown]` (plus the module of a user frame whose
 * mapping is known, as bcc does).
 */
export function bccName(f: Frame, opts: { showModule?: boolean; showOffset?: boolean } = {}): string {
  let s = f.name ?? '[unknown]';
  if (opts.showOffset && f.name !== undefined) s += `+0x${f.offset.toString(16)}`;
  if (opts.showModule) {
    let mod: string | undefined;
    if (f.kernel) mod = f.name !== undefined ? (f.module ?? 'kernel') : undefined;
    else mod = f.module !== undefined ? basename(f.module) : undefined;
    if (mod !== undefined) s += ` [${mod}]`;
  }
  return s;
}
