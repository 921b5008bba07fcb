/**
 * bcc's probe specifiers, as the multi-probe tools take them (iovisor/bcc `tools/funccount.py`, `stackcount.py`,
 * `funclatency.py` `Probe.__init__`, and the probe part of `trace.py`/`argdist.py` specifiers):
 *
 * | text | meaning |
 * |---|---|
 * | `func`, `p::func` | kernel function (kprobe) |
 * | `r::func` | kernel function return (kretprobe; only with `allowReturn`) |
 * | `lib:func`, `p:lib:func`, `/path:func` | user function in a library (`c` → libc) or binary (uprobe) |
 * | `r:lib:func` | user function return (uretprobe; only with `allowReturn`) |
 * | `t:cat:event` | kernel tracepoint |
 * | `u:lib:probe`, `u:lib:provider:probe` | USDT probe |
 *
 * The function/event part is a pattern: `*` wildcards (bcc turns `*` into `.*` and anchors the result: `^...$`),
 * or with `regexp` a Python regular expression matched at the start of the name (`re.match`; kernel functions use
 * `re.fullmatch`, as bcc's `BPF.get_kprobe_functions`). {@link matchTargets} expands a spec into the concrete names
 * bcc would attach (tracepoints as `cat:event`; user functions de-duplicated by address as bcc does), and
 * {@link toAttachPoint} turns a spec (or one of its names) into bpftrace attach-point syntax.
 */
import { BpfscopeError } from '../../errors.js';
import { probePmu } from '../../kernel/perf.js';
import { systemTracefs } from '../../kernel/tracefs.js';
import { listProbes } from '../../probes/list.js';
import { resolveBinary } from '../../probes/uprobe.js';
import { readUsdtNotes } from '../../probes/usdt.js';
import { ElfFile, STT_FUNC, STT_GNU_IFUNC } from '../../symbols/elf.js';

/** What a specifier attaches to. */
export type ProbeKind = 'kprobe' | 'kretprobe' | 'uprobe' | 'uretprobe' | 'tracepoint' | 'usdt';

/** A parsed probe specifier. */
export interface ProbeSpec {
  /** The text as given. */
  text: string;
  kind: ProbeKind;
  /** Library or binary as written (`c`, `/bin/bash`) for uprobe/uretprobe/usdt. */
  library?: string;
  /** Its resolved absolute path (bcc's `BPF.find_library`, else `BPF.find_exe`). */
  path?: string;
  /** The name part as written: a function, `cat:event` for tracepoints, `[provider:]name` for USDT. */
  pattern: string;
  /** bcc's regular expression for the name part (`vfs_*` → `^vfs_.*$`; the `-r` text as given). */
  regex: string;
}

/** Options of {@link parseProbeSpec}. */
export interface ParseProbeOptions {
  /** Accept `r:` (return probes), as trace/argdist do; funccount/stackcount do not. */
  allowReturn?: boolean;
  /** The pattern is a regular expression (bcc's `-r`), not a `*` glob. */
  regexp?: boolean;
  /** Library resolution (default {@link findLibrary}); returns an absolute path or undefined. */
  findLibrary?: (name: string) => string | undefined;
}

/** A specifier bcc rejects; `message` is bcc's own text. */
export class ProbeSpecError extends BpfscopeError {
  constructor(message: string) {
    super(message);
    this.name = 'ProbeSpecError';
  }
}

/**
 * bcc's `BPF.find_library(name)` then `BPF.find_exe(name)`: a name with `/` is a path (it must exist); `c`,
 * `libc`, `libc.so.6` resolve through the dynamic linker's cache (`ldconfig -p`) to the library whose soname starts
 * with `lib<name>`; anything else is looked up in `$PATH`. Returns the absolute path, or undefined.
 */
export function findLibrary(name: string): string | undefined {
  if (name === '') return undefined;
  return resolveBinary(name);
}

/** bcc's default probe limit (`_default_probe_limit`), overridden by a numeric `BCC_PROBE_LIMIT`. */
export function probeLimit(env: NodeJS.ProcessEnv = process.env): number {
  const v = env.BCC_PROBE_LIMIT;
  return v && /^\d+$/.test(v) ? Number(v) : 1000;
}

/** The glob `pattern` as bcc's regular expression: `*` → `.*`, anchored with `^` and `$`. */
export function globToBccRegex(pattern: string): string {
  return `^${pattern.replace(/\*/g, '.*')}$`;
}

/**
 * Parse bcc probe specifier `text` (table in the module comment).
 * @throws ProbeSpecError with bcc's message: a wrong type letter ("Type must be 'p', 't', or 'u', but got X"),
 *   too many `:` parts, an unknown library ("unable to find library X").
 */
export function parseProbeSpec(text: string, opts: ParseProbeOptions = {}): ProbeSpec {
  let parts = text.split(':');
  const types = opts.allowReturn ? ['p', 'r', 't', 'u'] : ['p', 't', 'u'];
  if (parts.length === 1) parts = ['p', '', parts[0]!];
  else if (parts.length === 2) parts = ['p', parts[0]!, parts[1]!];
  else if (parts.length === 3 || (parts.length === 4 && (parts[0] === 'u' || parts[0] === 't'))) {
    if (parts[0] === 't') parts = ['t', '', parts.slice(1).join(':')];
    else if (parts[0] === 'u') parts = ['u', parts[1]!, parts.slice(2).join(':')];
    if (opts.allowReturn && parts[0] === '') parts[0] = 'p';
    if (!types.includes(parts[0]!)) {
      const list = types.map((t) => `'${t}'`);
      throw new ProbeSpecError(
        `Type must be ${list.slice(0, -1).join(', ')}, or ${list[list.length - 1]}, but got ${parts[0]}`,
      );
    }
  } else {
    throw new ProbeSpecError(`Too many ':'-separated components in pattern ${text}`);
  }
  const [type, library, pattern] = parts as [string, string, string];
  const regex = opts.regexp ? pattern : globToBccRegex(pattern);
  const user = type === 'u' || ((type === 'p' || type === 'r') && library !== '');
  let kind: ProbeKind;
  if (type === 't') kind = 'tracepoint';
  else if (type === 'u') kind = 'usdt';
  else if (type === 'r') kind = user ? 'uretprobe' : 'kretprobe';
  else kind = user ? 'uprobe' : 'kprobe';
  const spec: ProbeSpec = { text, kind, pattern, regex };
  if (user) {
    const path = (opts.findLibrary ?? findLibrary)(library);
    if (!path) throw new ProbeSpecError(`unable to find library ${library}`);
    spec.library = library;
    spec.path = path;
  }
  return spec;
}

/** Python `re.match` (anchored at the start) or `re.fullmatch` for a bcc regex source. */
export function bccRegExp(source: string, full = false): RegExp {
  try {
    return new RegExp(`^(?:${source})${full ? '$' : ''}`);
  } catch (e) {
    throw new ProbeSpecError(`invalid regular expression ${source}: ${(e as Error).message}`);
  }
}

/** Whether this kernel can attach kprobes (the kprobe PMU exists). */
export function kprobesAvailable(): boolean {
  return probePmu('kprobe') !== null;
}

/**
 * The names a spec matches, in attach order: kernel functions (sorted), tracepoints as `cat:event` (sorted), user
 * functions (ELF function symbols, one name per address as bcc), USDT probes as `provider:name` (bcc matches the
 * probe name only). `source` overrides where candidate names come from (for tests).
 * @throws ProbeSpecError (unsupported: kprobes absent) or BpfscopeError (unreadable tracefs/ELF file).
 */
export function matchTargets(spec: ProbeSpec, source: Partial<TargetSource> = {}): string[] {
  const src = { ...DEFAULT_SOURCE, ...source };
  switch (spec.kind) {
    case 'kprobe':
    case 'kretprobe': {
      const re = bccRegExp(spec.regex, true);
      return [...new Set(src.kernelFunctions().filter((n) => re.test(n)))];
    }
    case 'tracepoint': {
      const re = bccRegExp(spec.regex);
      return src.tracepoints().filter((n) => re.test(n));
    }
    case 'uprobe':
    case 'uretprobe': {
      if (source.userFunctions === undefined && isLiteralName(spec)) {
        // one plain name (funclatency c:getpid): found by name, without decoding the whole symbol table
        return hasUserFunction(spec.path!, spec.pattern) ? [spec.pattern] : [];
      }
      const re = bccRegExp(spec.regex);
      const seenAddr = new Set<number>();
      const seenName = new Set<string>();
      const out: string[] = [];
      for (const f of src.userFunctions(spec.path!)) {
        if (!re.test(f.name) || seenAddr.has(f.address) || seenName.has(f.name)) continue;
        seenAddr.add(f.address);
        seenName.add(f.name);
        out.push(f.name);
      }
      return out;
    }
    case 'usdt': {
      const re = bccRegExp(spec.regex);
      const out: string[] = [];
      for (const p of src.usdtProbes(spec.path!)) {
        const full = `${p.provider}:${p.name}`;
        if ((re.test(p.name) || (spec.pattern.includes(':') && re.test(full))) && !out.includes(full)) out.push(full);
      }
      return out;
    }
  }
}

/**
 * Whether `spec`'s regex can only match its pattern itself: a glob of identifier characters (`^getpid$`), where
 * bcc's regex and an equality test agree.
 */
function isLiteralName(spec: ProbeSpec): boolean {
  return /^[A-Za-z0-9_]+$/.test(spec.pattern) && spec.regex === globToBccRegex(spec.pattern);
}

/** Whether the ELF file at `path` defines a code symbol `name` with a non-zero address (as userFunctions lists). */
function hasUserFunction(path: string, name: string): boolean {
  const elf = ElfFile.open(path);
  try {
    return elf.findFunction(name) !== undefined;
  } finally {
    elf.close();
  }
}

/** Where {@link matchTargets} finds candidate names. */
export interface TargetSource {
  /** Traceable kernel functions. @throws ProbeSpecError when the kernel has no kprobes. */
  kernelFunctions: () => string[];
  /** All tracepoints as `cat:event`. */
  tracepoints: () => string[];
  /** Function symbols of an ELF file with their addresses, in symbol-table order. */
  userFunctions: (path: string) => { name: string; address: number }[];
  /** USDT probes of an ELF file. */
  usdtProbes: (path: string) => { provider: string; name: string }[];
}

const DEFAULT_SOURCE: TargetSource = {
  kernelFunctions: () => {
    if (!kprobesAvailable()) {
      throw new ProbeSpecError(
        'kernel functions cannot be traced: this kernel was built without kprobes (CONFIG_KPROBES); use a tracepoint (t:cat:event) or a user function (lib:func)',
      );
    }
    return listProbes('kprobe:*', false).map((l) => l.slice('kprobe:'.length));
  },
  tracepoints: () => systemTracefs().allTracepoints(),
  userFunctions: (path) => {
    const elf = ElfFile.open(path);
    try {
      return elf
        .symbols()
        .list()
        .filter((s) => (s.type === STT_FUNC || s.type === STT_GNU_IFUNC) && s.value !== 0 && s.name !== '')
        .map((s) => ({ name: s.name, address: s.value }));
    } finally {
      elf.close();
    }
  },
  usdtProbes: (path) => {
    const elf = ElfFile.open(path);
    try {
      return readUsdtNotes(elf);
    } finally {
      elf.close();
    }
  },
};

/**
 * bpftrace attach point for `spec`, or for one `name` it matched (see {@link matchTargets}): `kprobe:vfs_read`,
 * `kretprobe:vfs_read`, `uprobe:/lib/x86_64-linux-gnu/libc.so.6:malloc`, `uretprobe:PATH:malloc`,
 * `tracepoint:sched:sched_switch`, `usdt:PATH:provider:name`. Without `name` the pattern is used as a bpftrace
 * glob, which is only faithful for `*`-only patterns (not `-r` regexps).
 */
export function toAttachPoint(spec: ProbeSpec, name: string = spec.pattern): string {
  switch (spec.kind) {
    case 'kprobe':
    case 'kretprobe':
    case 'tracepoint':
      return `${spec.kind}:${name}`;
    case 'uprobe':
    case 'uretprobe':
    case 'usdt':
      return `${spec.kind}:${spec.path}:${name}`;
  }
}

/** The return-probe counterpart of an entry probe spec (kprobe → kretprobe, uprobe → uretprobe). */
export function returnSpec(spec: ProbeSpec): ProbeSpec {
  if (spec.kind === 'kprobe') return { ...spec, kind: 'kretprobe' };
  if (spec.kind === 'uprobe') return { ...spec, kind: 'uretprobe' };
  throw new ProbeSpecError(`${spec.text}: only functions have return probes`);
}

/**
 * bcc's probe-count check (`verify_limit`): more than {@link probeLimit} targets is refused.
 * @throws ProbeSpecError "maximum of N probes allowed, attempted M"
 */
export function verifyLimit(count: number, limit: number = probeLimit()): void {
  if (count > limit) throw new ProbeSpecError(`maximum of ${limit} probes allowed, attempted ${count}`);
}
