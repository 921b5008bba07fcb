/**
 * memleak: outstanding (not yet freed) memory allocations by stack trace. Follows bcc's `tools/memleak.py` (flags,
 * help, messages, the `[HH:MM:SS] Top N stacks with outstanding allocations:` report with `%d bytes in %d
 * allocations from stack` entries, `-a` address lines, `--combined-only`, `-o` age filter, `-s` sampling, `-z`/`-Z`
 * size filters, `-O`, `--symbols-prefix`, `--sort`):
 * - user mode (`-p PID` or `-c COMMAND`): uprobes on the allocator entry points of libc (or `-O OBJ`) keep each
 *   request's size by thread and function (`@__sizes[tid, fn]`); the uretprobes store every non-NULL result as
 *   `@__allocs[address] = (size, nsecs, ustack(raw))`; `free()`, `munmap()` and `realloc()` remove their address;
 * - kernel mode (neither): the same from the `kmem:` tracepoints (kmalloc, kmem_cache_alloc, their `_node`
 *   variants where the kernel has them, kfree, kmem_cache_free, mm_page_alloc/mm_page_free by page frame number)
 *   with `kstack(raw)`, or with `--percpu` the `percpu:` tracepoints;
 * - `--combined-only`: per-stack totals kept as they change (`@__csize`/`@__ccount`, per-CPU sums, with frees
 *   subtracting), as bcc's `combined_allocs`.
 * Stacks come back as addresses and are symbolized here as bcc's `BPF.sym(addr, pid, show_module=True,
 * show_offset=True)`.
 *
 * Differences from bcc (see docs/tools/memleak.md): `-t` prints one line per call (`comm-tid [cpu] seconds:
 * message`) instead of Python tuples of trace_pipe fields; with `-c` the command is started stopped and traced
 * from its first instruction, and the run ends (with a last report) when it exits, as with `-p` when the process
 * exits; stack frames bcc could not store (`stack_id < 0`) are the allocations whose stack is empty here.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { MapType, type MapSpec } from '../bpf/map.js';
import { BpfscopeError } from '../errors.js';
import { resolveBinary } from '../probes/uprobe.js';
import { createMapEarly, releaseEarlyMaps } from '../runtime/early-maps.js';
import type { MapDump, Value } from '../runtime/output/model.js';
import { ElfFile } from '../symbols/elf.js';
import { bccName, foldedName, type Frame, SymbolResolver } from '../symbols/resolver.js';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, runProgram, toolMain, withInterruptNote } from './framework/runner.js';
import { STACK_FORMAT_TYPE, StackOutput } from './framework/stackout.js';
import { clockTime, pageSizeKb, tracepointExists } from './framework/system.js';
import { ProcessPreparer, parseRawStack } from './stacktool.js';

export const SPEC = {
  prog: 'memleak',
  description: `Trace outstanding memory allocations that weren't freed.
Supports both user-mode allocations made with libc functions and kernel-mode
allocations made with kmalloc/kmem_cache_alloc/get_free_pages and corresponding
memory release functions.`,
  raw: true,
  epilog: `EXAMPLES:

./memleak -p $(pidof allocs)
        Trace allocations and display a summary of "leaked" (outstanding)
        allocations every 5 seconds
./memleak -p $(pidof allocs) -t
        Trace allocations and display each individual allocator function call
./memleak -ap $(pidof allocs) 10
        Trace allocations and display allocated addresses, sizes, and stacks
        every 10 seconds for outstanding allocations
./memleak -c "./allocs"
        Run the specified command and trace its allocations
./memleak
        Trace allocations in kernel mode and display a summary of outstanding
        allocations every 5 seconds
./memleak -o 60000
        Trace allocations in kernel mode and display a summary of outstanding
        allocations that are at least one minute (60 seconds) old
./memleak -s 5
        Trace roughly every 5th allocation, to reduce overhead
./memleak --sort count
        Trace allocations in kernel mode and display a summary of outstanding
        allocations that are sorted in count order
`,
  options: [
    {
      flags: ['-p', '--pid'],
      kind: 'value',
      type: INT,
      default: -1,
      help: 'the PID to trace; if not specified, trace kernel allocs',
    },
    { flags: ['-t', '--trace'], kind: 'flag', help: 'print trace messages for each alloc/free call' },
    {
      flags: ['-a', '--show-allocs'],
      kind: 'flag',
      help: 'show allocation addresses and sizes as well as call stacks',
    },
    {
      flags: ['-o', '--older'],
      kind: 'value',
      type: INT,
      default: 500,
      help: 'prune allocations younger than this age in milliseconds',
    },
    { flags: ['-c', '--command'], kind: 'value', help: 'execute and trace the specified command' },
    { flags: ['--combined-only'], kind: 'flag', help: 'show combined allocation statistics only' },
    {
      flags: ['--wa-missing-free'],
      kind: 'flag',
      help: 'Workaround to alleviate misjudgments when free is missing',
    },
    {
      flags: ['-s', '--sample-rate'],
      kind: 'value',
      type: INT,
      default: 1,
      help: 'sample every N-th allocation to decrease the overhead',
    },
    {
      flags: ['-T', '--top'],
      kind: 'value',
      type: INT,
      default: 10,
      help: 'display only this many top allocating stacks (by size)',
    },
    {
      flags: ['-z', '--min-size'],
      kind: 'value',
      type: INT,
      help: 'capture only allocations larger than or equal to this size',
    },
    {
      flags: ['-Z', '--max-size'],
      kind: 'value',
      type: INT,
      help: 'capture only allocations smaller than or equal to this size',
    },
    {
      flags: ['-O', '--obj'],
      kind: 'value',
      default: 'c',
      help: 'attach to allocator functions in the specified object',
    },
    { flags: ['--ebpf'], kind: 'flag', help: null },
    { flags: ['--percpu'], kind: 'flag', help: 'trace percpu allocations' },
    {
      flags: ['--sort'],
      kind: 'value',
      default: 'size',
      help: 'report sorted in given key; available key list: size, count',
    },
    { flags: ['--symbols-prefix'], kind: 'value', help: 'memory allocator symbols prefix' },
    {
      flags: ['--svg'],
      kind: 'value',
      metavar: 'FILE',
      help: 'write a flame graph (SVG) of the outstanding bytes by allocation stack to FILE when the run ends',
    },
    {
      flags: ['--format'],
      kind: 'value',
      metavar: 'FORMAT',
      type: STACK_FORMAT_TYPE,
      help: 'write the outstanding bytes by allocation stack when the run ends as folded, svg (a flame graph), pprof (profile.proto, space/bytes) or speedscope (JSON), to the --output file or, instead of the reports, to stdout',
    },
    { flags: ['--output'], kind: 'value', metavar: 'FILE', help: 'the file --format writes' },
  ],
  positionals: [
    { name: 'interval', help: 'interval in seconds to print outstanding allocations', type: INT, default: 5 },
    { name: 'count', help: 'number of times to print the report before exiting', type: INT },
  ],
} as const satisfies ParserSpec;

/** bcc's sort keys (`--sort`). */
export const SORT_KEYS = ['size', 'count'] as const;
export type SortKey = (typeof SORT_KEYS)[number];

/**
 * A user-mode allocator entry point, as bcc's `attach_probes()` calls list them: the size expression on entry
 * (`arg0`..), bcc's type index (part of the `@__sizes` key, so nested calls such as realloc(NULL, n) → malloc do not
 * mix), whether a missing symbol is tolerated (`can_fail`) and whether the return is traced.
 */
export interface AllocatorFunction {
  name: string;
  /** bcc's `#define` of the function (1 MALLOC ... 11 MUNMAP). */
  type: number;
  /** The requested size on entry; null for the free functions. */
  size: string | null;
  canFail: boolean;
  /** The pointer argument the function frees on entry (free, munmap, realloc). */
  frees?: string;
}

/** bcc's attach order (tools/memleak.py `attach_probes(...)` calls). */
export const USER_FUNCTIONS: readonly AllocatorFunction[] = [
  { name: 'malloc', type: 1, size: 'arg0', canFail: false },
  { name: 'calloc', type: 2, size: 'arg0 * arg1', canFail: false },
  { name: 'realloc', type: 3, size: 'arg1', canFail: false, frees: 'arg0' },
  { name: 'mmap', type: 4, size: 'arg1', canFail: true },
  { name: 'posix_memalign', type: 5, size: 'arg2', canFail: false },
  { name: 'valloc', type: 6, size: 'arg0', canFail: true },
  { name: 'memalign', type: 7, size: 'arg1', canFail: false },
  { name: 'pvalloc', type: 8, size: 'arg0', canFail: true },
  { name: 'aligned_alloc', type: 9, size: 'arg1', canFail: true },
  { name: 'free', type: 10, size: null, canFail: false, frees: 'arg0' },
  { name: 'munmap', type: 11, size: null, canFail: true, frees: 'arg0' },
];

export interface MemleakOptions {
  /** User mode: the traced object (a path) and the functions found in it; absent: kernel mode. */
  user?: { path: string; functions: readonly AllocatorFunction[]; prefix?: string; command: boolean };
  trace: boolean;
  combinedOnly: boolean;
  waMissingFree: boolean;
  sampleRate: number;
  minSize?: number | null;
  maxSize?: number | null;
  percpu: boolean;
  /** Kernel mode: whether kmem:kmalloc_node / kmem:kmem_cache_alloc_node exist. */
  nodeTracepoints?: boolean;
  /** Kernel mode: bytes per page (mm_page_alloc sizes are `PAGE_SIZE << order`). */
  pageSize?: number;
}

/** Event kinds of `-t` (the first field of each record). */
const TRACE_MSG = '%s\\x1f%d\\x1f%d\\x1f%lu\\x1f';

function sizeCondition(o: MemleakOptions, v: string): string | null {
  const c: string[] = [];
  if (o.minSize !== null && o.minSize !== undefined) c.push(`${v} >= ${o.minSize}`);
  if (o.maxSize !== null && o.maxSize !== undefined) c.push(`${v} <= ${o.maxSize}`);
  if (o.sampleRate > 1) c.push(`nsecs % ${o.sampleRate} == 0`);
  return c.length ? c.join(' && ') : null;
}

/** bcc's gen_alloc_exit2 body for a known `$size` and `$addr`, at `indent`. */
function recordAlloc(o: MemleakOptions, stack: string, indent: string): string {
  let p = `${indent}if ($addr != 0) {\n`;
  // User stacks: report the process (again after an exec) so that its symbols are read while it is alive.
  if (o.user) p += ProcessPreparer.statement(`${indent}  `);
  p += `${indent}  $stack = ${stack};\n`;
  p += `${indent}  @__allocs[$addr] = ($size, nsecs, $stack);\n`;
  if (o.combinedOnly) {
    p += `${indent}  @__csize[$stack] = sum($size);\n${indent}  @__ccount[$stack] = sum(1);\n`;
  }
  p += `${indent}}\n`;
  if (o.trace) {
    p += `${indent}printf("${TRACE_MSG}alloc exited, size = %lu, result = %lx\\n", comm, tid, cpu, nsecs, $size, $addr);\n`;
  }
  return p;
}

/** bcc's gen_free_enter for the address in `$free`, at `indent`. */
function recordFree(o: MemleakOptions, indent: string): string {
  let p = `${indent}if (has_key(@__allocs, $free)) {\n`;
  if (o.combinedOnly || o.trace) p += `${indent}  $info = @__allocs[$free];\n`;
  p += `${indent}  delete(@__allocs, $free);\n`;
  if (o.combinedOnly) {
    p += `${indent}  @__csize[$info.2] = sum(-$info.0);\n${indent}  @__ccount[$info.2] = sum(-1);\n`;
  }
  if (o.trace) {
    p += `${indent}  printf("${TRACE_MSG}free entered, address = %lx, size = %lu\\n", comm, tid, cpu, nsecs, $free, $info.0);\n`;
  }
  p += `${indent}}\n`;
  return p;
}

function userProbes(o: MemleakOptions, u: NonNullable<MemleakOptions['user']>): string {
  const filter = u.command ? ' /pid == cpid/' : '';
  // With -c, the command's process ID (for "Attaching to pid N" and symbolization) comes as BEGIN's event.
  let p = u.command ? 'BEGIN {\n  printf("%d\\n", cpid);\n}\n' : '';
  for (const f of u.functions) {
    const target = `${u.path}:${u.prefix ?? ''}${f.name}`;
    p += `uprobe:${target}${filter} {\n`;
    if (f.frees) p += `  $free = (uint64)${f.frees};\n${recordFree(o, '  ')}`;
    if (f.size !== null) {
      if (f.name === 'posix_memalign') p += '  @__memptrs[tid] = (uint64)arg0;\n';
      p += `  $size = (uint64)(${f.size});\n`;
      const cond = sizeCondition(o, '$size');
      const ind = cond ? '    ' : '  ';
      if (cond) p += `  if (${cond}) {\n`;
      p += `${ind}@__sizes[tid, ${f.type}] = $size;\n`;
      if (o.trace) {
        p += `${ind}printf("${TRACE_MSG}alloc entered, size = %u\\n", comm, tid, cpu, nsecs, $size);\n`;
      }
      if (cond) p += '  }\n';
    }
    p += '}\n';
    if (f.size === null) continue;
    p += `uretprobe:${target}${filter} {\n`;
    let ind = '  ';
    if (f.name === 'posix_memalign') {
      p += '  if (has_key(@__memptrs, tid)) {\n    $memptr = @__memptrs[tid];\n    delete(@__memptrs, tid);\n';
      ind = '    ';
    }
    p += `${ind}if (has_key(@__sizes, (tid, ${f.type}))) {\n`;
    p += `${ind}  $size = @__sizes[tid, ${f.type}];\n${ind}  delete(@__sizes, (tid, ${f.type}));\n`;
    p += `${ind}  $addr = ${f.name === 'posix_memalign' ? '*uptr((uint64 *)$memptr)' : '(uint64)retval'};\n`;
    p += recordAlloc(o, 'ustack(raw)', `${ind}  `);
    p += `${ind}}\n`;
    if (f.name === 'posix_memalign') p += '  }\n';
    p += '}\n';
  }
  return p;
}

function kernelAlloc(o: MemleakOptions, tp: string, size: string, addr: string, missingFree: boolean): string {
  let p = `tracepoint:${tp} {\n`;
  if (missingFree && o.waMissingFree) p += `  $free = (uint64)${addr};\n${recordFree(o, '  ')}`;
  p += `  $size = (uint64)(${size});\n`;
  const cond = sizeCondition(o, '$size');
  const ind = cond ? '    ' : '  ';
  if (cond) p += `  if (${cond}) {\n`;
  if (o.trace) p += `${ind}printf("${TRACE_MSG}alloc entered, size = %u\\n", comm, tid, cpu, nsecs, $size);\n`;
  p += `${ind}$addr = (uint64)${addr};\n`;
  p += recordAlloc(o, 'kstack(raw)', ind);
  if (cond) p += '  }\n';
  return `${p}}\n`;
}

function kernelFree(o: MemleakOptions, tp: string, addr: string): string {
  return `tracepoint:${tp} {\n  $free = (uint64)${addr};\n${recordFree(o, '  ')}}\n`;
}

/**
 * The kernel map of `@__allocs` as codegen plans it for every program {@link buildProgram} makes (key: the u64
 * address; value: size, nsecs and a raw stack, 32 bytes; bcc's 1,000,000 entries, preallocated as bcc's
 * `BPF_HASH`): created before compiling (runtime/early-maps.ts). test/tools/memleak.test.ts compiles the programs
 * and checks that their plan is this spec.
 */
export const ALLOCS_MAP: MapSpec = {
  type: MapType.HASH,
  keySize: 8,
  valueSize: 32,
  maxEntries: 1000000,
  name: 'AT___allocs',
};

/** The bpftrace program for `o` (see the module comment). */
export function buildProgram(o: MemleakOptions): string {
  let p = configBlock({ maxMapKeys: 1000000 });
  if (o.user) return p + userProbes(o, o.user);
  if (o.percpu) {
    p += kernelAlloc(o, 'percpu:percpu_alloc_percpu', 'args.size', 'args.ptr', false);
    p += kernelFree(o, 'percpu:percpu_free_percpu', 'args.ptr');
    return p;
  }
  p += kernelAlloc(o, 'kmem:kmalloc', 'args.bytes_alloc', 'args.ptr', true);
  p += kernelFree(o, 'kmem:kfree', 'args.ptr');
  p += kernelAlloc(o, 'kmem:kmem_cache_alloc', 'args.bytes_alloc', 'args.ptr', true);
  p += kernelFree(o, 'kmem:kmem_cache_free', 'args.ptr');
  p += kernelAlloc(o, 'kmem:mm_page_alloc', `${o.pageSize ?? 4096} << args.order`, 'args.pfn', false);
  p += kernelFree(o, 'kmem:mm_page_free', 'args.pfn');
  if (o.nodeTracepoints) {
    p += kernelAlloc(o, 'kmem:kmalloc_node', 'args.bytes_alloc', 'args.ptr', true);
    p += kernelAlloc(o, 'kmem:kmem_cache_alloc_node', 'args.bytes_alloc', 'args.ptr', true);
  }
  return p;
}

// ---- the traced object ----

/**
 * bcc's library lookup for `-O NAME` (`bcc_procutils_which_so`): a path is used as is; a name is first looked for
 * among the libraries process `pid` has mapped (`libNAME.so...` or `libNAME-...`), then in the linker cache.
 * Returns undefined when nothing is found.
 */
export function findObject(obj: string, pid: number | null, procRoot = '/proc'): string | undefined {
  if (obj.includes('/')) return existsSync(obj) ? obj : undefined;
  if (pid !== null && pid > 0) {
    try {
      for (const line of readFileSync(`${procRoot}/${pid}/maps`, 'utf8').split('\n')) {
        const path = line.split(/\s+/).slice(5).join(' ');
        const base = basename(path);
        if (path.startsWith('/') && (base.startsWith(`lib${obj}.so`) || base.startsWith(`lib${obj}-`))) {
          if (existsSync(path)) return path;
        }
      }
    } catch {
      /* the process is gone or unreadable: use the cache */
    }
  }
  return resolveBinary(obj.startsWith('lib') ? obj : `lib${obj}`);
}

/**
 * The allocator functions `path` defines (with `prefix`), in bcc's order. bcc's `can_fail` functions that are
 * missing are left out. @throws BpfscopeError naming the first required function that is missing
 */
export function availableFunctions(path: string, prefix = ''): AllocatorFunction[] {
  const elf = ElfFile.open(path);
  try {
    // by name in the raw tables (ElfFile.findFunction), without decoding all of libc's symbols
    const has = (n: string): boolean => elf.findFunction(n) !== undefined;
    const out: AllocatorFunction[] = [];
    for (const f of USER_FUNCTIONS) {
      if (has(prefix + f.name)) out.push(f);
      else if (!f.canFail)
        throw new BpfscopeError(`memleak: could not find the function ${prefix}${f.name} in ${path}`);
    }
    return out;
  } finally {
    elf.close();
  }
}

// ---- the report ----

/** One outstanding allocation as read from `@__allocs`. */
export interface Allocation {
  address: bigint;
  size: bigint;
  /** bpf_ktime_get_ns() at allocation, ns. */
  timestampNs: bigint;
  /** Raw addresses, innermost first. */
  stack: bigint[];
  /** The stack's map text (the grouping key). */
  stackKey: string;
}

/** One stack's outstanding total. */
export interface StackTotal {
  stackKey: string;
  stack: bigint[];
  size: bigint;
  count: bigint;
}

function intOf(v: Value | undefined): bigint {
  return v?.kind === 'int' ? v.value : 0n;
}

/** `@__allocs` entries as {@link Allocation}s. */
export function readAllocations(dump: MapDump): Allocation[] {
  return dump.entries.map((e) => {
    const v = e.value as Value;
    const t = v.kind === 'tuple' ? v.elems : [];
    const stackKey = t[2]?.kind === 'string' ? t[2].value : '';
    return {
      address: intOf(e.key[0]),
      size: intOf(t[0]),
      timestampNs: intOf(t[1]),
      stack: parseRawStack(stackKey),
      stackKey,
    };
  });
}

/**
 * bcc's `print_outstanding()` selection: allocations sorted by size (ties by address), without those younger than
 * `minAgeNs` at `nowNs` and those without a stack, grouped by stack; `-a` lines for each one kept (in that order);
 * then the `top` largest groups by `sort`, in ascending order.
 */
export function outstanding(
  allocs: Allocation[],
  opts: { nowNs: bigint; minAgeNs: bigint; top: number; sort: SortKey },
): { addrLines: string[]; stacks: StackTotal[] } {
  const sorted = [...allocs].sort((a, b) =>
    a.size !== b.size ? (a.size < b.size ? -1 : 1) : a.address < b.address ? -1 : a.address > b.address ? 1 : 0,
  );
  const groups = new Map<string, StackTotal>();
  const addrLines: string[] = [];
  for (const a of sorted) {
    if (opts.nowNs - opts.minAgeNs < a.timestampNs) continue;
    if (a.stack.length === 0) continue;
    const g = groups.get(a.stackKey);
    if (g) {
      g.size += a.size;
      g.count++;
    } else groups.set(a.stackKey, { stackKey: a.stackKey, stack: a.stack, size: a.size, count: 1n });
    addrLines.push(pyFormat('\taddr = %x size = %s', a.address, String(a.size)));
  }
  const key = (s: StackTotal): bigint => (opts.sort === 'count' ? s.count : s.size);
  const list = [...groups.values()].sort((a, b) =>
    key(a) !== key(b) ? (key(a) < key(b) ? -1 : 1) : a.stackKey < b.stackKey ? -1 : a.stackKey > b.stackKey ? 1 : 0,
  );
  return { addrLines, stacks: opts.top > 0 ? list.slice(-opts.top) : list.slice(list.length) };
}

/**
 * bcc's `print_outstanding_combined()` selection from the per-stack sums (`@__csize`, `@__ccount`): stacks with
 * allocations left, the `top` largest by `sort`, in ascending order.
 */
export function combined(sizes: MapDump, counts: MapDump, opts: { top: number; sort: SortKey }): StackTotal[] {
  const byKey = new Map<string, StackTotal>();
  const stackKey = (k: Value[]): string => (k[0]?.kind === 'string' ? k[0].value : '');
  const sumOf = (v: unknown): bigint => {
    const a = v as { value?: bigint };
    return typeof a.value === 'bigint' ? a.value : 0n;
  };
  for (const e of counts.entries) {
    const k = stackKey(e.key);
    byKey.set(k, { stackKey: k, stack: parseRawStack(k), size: 0n, count: sumOf(e.value) });
  }
  for (const e of sizes.entries) {
    const s = byKey.get(stackKey(e.key));
    if (s) s.size = sumOf(e.value);
  }
  const key = (s: StackTotal): bigint => (opts.sort === 'count' ? s.count : s.size);
  const list = [...byKey.values()]
    .filter((s) => s.count > 0n)
    .sort((a, b) =>
      key(a) !== key(b) ? (key(a) > key(b) ? -1 : 1) : a.stackKey < b.stackKey ? -1 : a.stackKey > b.stackKey ? 1 : 0,
    );
  // bcc appends an entry, then stops once it has `top` of them (at least one).
  return list.slice(0, Math.max(1, opts.top)).reverse();
}

/** bcc's report header. */
export function reportHeader(top: number, time: string = clockTime()): string {
  return pyFormat('[%s] Top %d stacks with outstanding allocations:', time, top);
}

/** bcc's entry: `\t%d bytes in %d allocations from stack\n\t\t<frames joined by \n\t\t>`. */
export function entryText(s: StackTotal, frames: string[]): string {
  return pyFormat('\t%d bytes in %d allocations from stack\n\t\t%s', s.size, s.count, frames.join('\n\t\t'));
}

/** A frame as bcc prints it in the default report: `0x%016x\t` and `BPF.sym(addr, pid, module, offset)`. */
export function frameLine(address: bigint, f: Frame, withAddress: boolean): string {
  const name = bccName(f, { showModule: true, showOffset: true });
  return withAddress ? `0x${address.toString(16).padStart(16, '0')}\t${name}` : name;
}

// ---- results ----

/** One stack of a report: its outstanding bytes and allocations and its frames (innermost first). */
export interface MemleakStack {
  /** Bytes allocated from this stack and not freed. */
  size: bigint;
  /** Allocations from this stack not freed. */
  count: bigint;
  /** The allocation's stack, innermost first: user frames (-p/-c) or kernel frames. */
  frames: Frame[];
}

/**
 * What memleak yields as data (`--json`, runTool): one object per report, what bcc's report prints: its time, the
 * top `-T` stacks ascending by `--sort` (bcc's order), and with `-a` each outstanding allocation counted (by size).
 */
export interface MemleakInterval {
  /** Wall-clock time of the report, HH:MM:SS (the report header's). */
  time: string;
  stacks: MemleakStack[];
  /** -a (not with --combined-only): the allocations of the report, ascending by size. */
  allocations?: { address: bigint; size: bigint }[];
}

/** flamegraph.pl's options for memleak's flame graphs: the memory palette, bytes. */
export const MEMLEAK_FLAMEGRAPH = {
  colors: 'mem',
  countname: 'bytes',
  title: 'Outstanding Allocations Flame Graph',
} as const;

/**
 * The folded lines of outstanding bytes by stack (`frame;...;frame bytes`, outermost frame first, bare symbol names;
 * the exports' input): equal lines summed, ascending by bytes (ties by text), stacks without bytes left out.
 */
export function memleakFolded(stacks: { size: bigint; frames: Frame[] }[]): string[] {
  const sums = new Map<string, bigint>();
  for (const s of stacks) {
    if (s.size <= 0n || s.frames.length === 0) continue;
    const key = s.frames
      .map((f) => foldedName(f))
      .reverse()
      .join(';');
    sums.set(key, (sums.get(key) ?? 0n) + s.size);
  }
  return [...sums]
    .sort((x, y) => (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0))
    .map(([k, n]) => `${k} ${n}`);
}

// ---- running ----

interface RunState {
  resolver: SymbolResolver;
  /** The traced process (user mode), or -1 (kernel). */
  pid: number;
}

function symbolize(st: RunState, stack: bigint[]): Frame[] {
  return st.pid > 0 ? st.resolver.userStack(st.pid, stack) : st.resolver.kernelStack(stack);
}

type MemleakArgs = OptionsOf<typeof SPEC>;

/**
 * One report from the maps (`read`): the result (bcc's selection: the top N stacks) and its text, and the
 * folded lines of every outstanding stack (the exports draw all of them, not only the top N).
 */
function report(
  a: MemleakArgs,
  st: RunState,
  read: (name: string) => MapDump,
): { result: MemleakInterval; text: string; folded: string[] } {
  const top = a.top;
  const sort = a.sort as SortKey;
  const time = clockTime();
  const frames = (s: StackTotal): Frame[] => symbolize(st, s.stack);
  if (a.combined_only) {
    const sizes = read('__csize');
    const counts = read('__ccount');
    const all = combined(sizes, counts, { top: Number.MAX_SAFE_INTEGER, sort });
    const list = all.slice(-Math.max(1, top));
    const stacks = list.map((s) => ({ size: s.size, count: s.count, frames: frames(s) }));
    const text = `${reportHeader(top, time)}\n${stacks
      .map((s, i) =>
        entryText(
          list[i]!,
          s.frames.map((f, j) => frameLine(list[i]!.stack[j]!, f, false)),
        ),
      )
      .join('\n')}\n`;
    const folded = memleakFolded(all.map((s) => ({ size: s.size, frames: frames(s) })));
    return { result: { time, stacks }, text, folded };
  }
  const allocs = readAllocations(read('__allocs'));
  const opts = { nowNs: process.hrtime.bigint(), minAgeNs: BigInt(a.older) * 1_000_000n, sort };
  const sel = outstanding(allocs, { ...opts, top });
  let text = `${reportHeader(top, time)}\n`;
  if (a.show_allocs) text += sel.addrLines.map((l) => `${l}\n`).join('');
  const stacks = sel.stacks.map((s) => ({ size: s.size, count: s.count, frames: frames(s) }));
  stacks.forEach((s, i) => {
    text += `${entryText(
      sel.stacks[i]!,
      s.frames.map((f, j) => frameLine(sel.stacks[i]!.stack[j]!, f, true)),
    )}\n`;
  });
  const result: MemleakInterval = { time, stacks };
  if (a.show_allocs) {
    const kept = allocs
      .filter((x) => opts.nowNs - opts.minAgeNs >= x.timestampNs && x.stack.length > 0)
      .sort((x, y) =>
        x.size !== y.size ? (x.size < y.size ? -1 : 1) : x.address < y.address ? -1 : x.address > y.address ? 1 : 0,
      );
    result.allocations = kept.map((x) => ({ address: x.address, size: x.size }));
  }
  const every = outstanding(allocs, { ...opts, top: Number.MAX_SAFE_INTEGER }).stacks;
  const folded = memleakFolded(every.map((s) => ({ size: s.size, frames: frames(s) })));
  return { result, text, folded };
}

async function run(a: MemleakArgs, writer: ToolWriter): Promise<number> {
  const sort = a.sort;
  if (!(SORT_KEYS as readonly string[]).includes(sort)) {
    writer.line(`Given sort_key: ${sort}`);
    writer.line(`Supporting sort key list: ['size', 'count']`);
    return 1;
  }
  const minSize = a.min_size;
  const maxSize = a.max_size;
  if (minSize !== null && maxSize !== null && minSize > maxSize) {
    writer.line("min_size (-z) can't be greater than max_size (-Z)");
    return 1;
  }
  if (a.trace && (writer.mode === 'json' || writer.mode === 'api')) {
    throw new BpfscopeError(
      'memleak: -t prints one text line per call; --json and runTool give the reports (leave out -t)',
    );
  }
  const out = StackOutput.from(
    { folded: false, svg: a.svg, format: a.format, output: a.output },
    'memleak',
    '--output',
  );
  // With the export on stdout (--format without --output), the reports (and every other line) are left out.
  const folded = out.text === 'folded';
  const printing = !folded && (out.file === null || out.file.path !== null);
  const say = (text: string): void => {
    if (printing) writer.line(text);
  };
  const command = a.command;
  const pidArg = a.pid;
  const kernel = pidArg === -1 && command === null;
  // The 1,000,000-entry map's preallocation (150-330 ms in the kernel) overlaps the compilation too.
  if (writer.mode !== 'ebpf') createMapEarly(ALLOCS_MAP);
  try {
    return await traceAllocations(a, writer, out, { command, pidArg, kernel, minSize, maxSize, say, folded, printing });
  } finally {
    await releaseEarlyMaps(); // still there when the run failed before its session took it
  }
}

interface RunContext {
  command: string | null;
  pidArg: number;
  kernel: boolean;
  minSize: number | null;
  maxSize: number | null;
  say: (text: string) => void;
  folded: boolean;
  printing: boolean;
}

async function traceAllocations(
  a: MemleakArgs,
  writer: ToolWriter,
  out: StackOutput,
  { command, pidArg, kernel, minSize, maxSize, say, folded, printing }: RunContext,
): Promise<number> {
  const o: MemleakOptions = {
    trace: a.trace,
    combinedOnly: a.combined_only,
    waMissingFree: a.wa_missing_free,
    sampleRate: a.sample_rate,
    minSize,
    maxSize,
    percpu: a.percpu,
  };
  if (kernel) {
    o.nodeTracepoints = tracepointExists('kmem', 'kmalloc_node');
    o.pageSize = pageSizeKb() * 1024;
  } else {
    const obj = a.obj;
    const path = findObject(obj, command === null ? pidArg : null);
    if (!path) throw new BpfscopeError(`memleak: could not find the object ${obj}`);
    const prefix = a.symbols_prefix ?? '';
    o.user = { path, functions: availableFunctions(path, prefix), prefix, command: command !== null };
  }
  const program = buildProgram(o);
  if (command !== null && writer.mode !== 'ebpf') {
    say(pyFormat("Executing '%s' and tracing the resulting process.", command));
    writer.flush();
  }
  if (writer.mode !== 'ebpf') out.prepare('memleak');
  const st: RunState = { resolver: await SymbolResolver.create(), pid: kernel ? -1 : pidArg };
  const preparer = new ProcessPreparer(st.resolver);
  let cpidKnown = false;
  return withInterruptNote((interrupted) =>
    runProgram({
      tool: 'memleak',
      program,
      writer,
      fieldCount: 5,
      ...(pidArg !== -1 && command === null ? { pid: pidArg } : {}),
      ...(command !== null ? { command } : {}),
      onStarted: () => {
        if (kernel) say('Attaching to kernel allocators, Ctrl+C to quit.');
        else if (command === null) say(pyFormat('Attaching to pid %d, Ctrl+C to quit.', pidArg));
      },
      onEvent: (f) => {
        if (f.length === 1) {
          if (command !== null && !cpidKnown) {
            // BEGIN's record (the first of all): the command's process ID.
            cpidKnown = true;
            st.pid = Number(f[0]);
            say(pyFormat('Attaching to pid %d, Ctrl+C to quit.', st.pid));
          } else preparer.onEvent(f);
          return;
        }
        const [comm, tid, cpu, ns, msg] = f;
        const secs = BigInt(ns!);
        writer.line(
          `${comm}-${tid} [${cpu!.padStart(3, '0')}] ${secs / 1_000_000_000n}.${String((secs / 1000n) % 1_000_000n).padStart(6, '0')}: ${msg}`,
        );
      },
      // -t: no reports (bcc), only the export at the end
      interval: o.trace ? { seconds: null } : { seconds: a.interval, count: a.count },
      onTick: (t, last) => {
        if (last) preparer.stop();
        if (o.trace && !last) return;
        const rep = o.trace && !out.file && !folded ? null : report(a, st, (name) => t.readMap(name));
        // bcc exits on Ctrl-C without a report; a last interval, the command's or the process's end print one.
        if (rep && !o.trace && printing && !(last && interrupted())) writer.emit(rep.result, () => rep.text);
        if (last && rep) {
          if (folded) writer.write(rep.folded.map((l) => `${l}\n`).join(''));
          writer.flush();
          out.finish(rep.folded, { tool: 'memleak', kind: 'space', flame: { ...MEMLEAK_FLAMEGRAPH } }, writer);
        }
      },
    }),
  );
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope memleak [flags] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
