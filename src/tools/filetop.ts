/**
 * filetop: file reads and writes by thread and file, top-style. Follows bcc's `tools/filetop.py` (flags, help,
 * `Tracing... Output every N secs.`, the `HH:MM:SS loadavg: ...` line, `%-7s %-16s %-6s %-6s %-7s %-7s %1s %s`
 * header and rows keyed by thread, comm, inode, device and name, `-s` sorting, `-r` rows, `-a` all file types,
 * `-d` parent directory inode filter, `--read-only`/`--write-only`, `Detaching...`).
 *
 * Probes: kprobes on vfs_read/vfs_write, as bcc, when the kernel has kprobes (the file is `(struct file *)arg0`,
 * the bytes `arg2`). Without kprobes (the development VM), the `syscalls:sys_enter_{read,write,pread64,pwrite64}`
 * tracepoints with the file looked up from the fd in `curtask->files->fdt->fd[]`: this counts the same requested
 * bytes for those four system calls, but misses what reaches vfs_read/vfs_write otherwise (readv/writev,
 * sendfile/splice, exec, io_uring, kernel threads), and counts calls on a bad fd as nothing.
 * The screen is cleared with `ESC [H ESC [2J` (bcc runs `clear`).
 */
import { existsSync, lstatSync } from 'node:fs';
import { INT, type OptionsOf, type ParserSpec, type ValueType } from './framework/argparse.js';
import { keyPart } from './framework/histmaps.js';
import { hasFeature } from '../kernel/features.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain } from './framework/runner.js';
import { clockTime, loadAvg } from './framework/system.js';
import { formatTopTick, runTop, type TopTick } from './framework/top.js';
import type { MapDump } from '../runtime/output/model.js';
import type { Tracer } from '../runtime/tracer.js';

/** bcc's `-s` choices. */
const SORTS = ['all', 'reads', 'writes', 'rbytes', 'wbytes'] as const;

/** A `-s` value. */
export type FiletopSort = (typeof SORTS)[number];

const SORT_TYPE: ValueType<FiletopSort> = {
  name: 'choice',
  convert: (t) => {
    const c = SORTS.find((x) => x === t);
    if (c) return c;
    throw new Error(`argparse: invalid choice: '${t}' (choose from ${SORTS.map((x) => `'${x}'`).join(', ')})`);
  },
};

export const SPEC = {
  prog: 'filetop',
  description: 'File reads and writes by process',
  raw: true,
  epilog: `examples:
    ./filetop                 # file I/O top, 1 second refresh
    ./filetop -C              # don't clear the screen
    ./filetop -p 181          # PID 181 only
    ./filetop -d /home/user   # trace files in /home/user directory only
    ./filetop 5               # 5 second summaries
    ./filetop 5 10            # 5 second summaries, 10 times only
    ./filetop 5 --read-only   # 5 second summaries, only read operations traced
    ./filetop 5 --write-only  # 5 second summaries, only write operations traced
`,
  options: [
    { flags: ['-a', '--all-files'], kind: 'flag', help: 'include non-regular file types (sockets, FIFOs, etc)' },
    { flags: ['-C', '--noclear'], kind: 'flag', help: "don't clear the screen" },
    { flags: ['-r', '--maxrows'], kind: 'value', type: INT, default: 20, help: 'maximum rows to print, default 20' },
    {
      flags: ['-s', '--sort'],
      kind: 'value',
      default: 'all',
      metavar: `{${SORTS.join(',')}}`,
      type: SORT_TYPE,
      help: 'sort column, default all',
    },
    { flags: ['-p', '--pid'], kind: 'value', type: INT, metavar: 'PID', dest: 'tgid', help: 'trace this PID only' },
    { flags: ['--read-only'], kind: 'flag', help: 'trace only reads' },
    { flags: ['--write-only'], kind: 'flag', help: 'trace only writes' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
    { flags: ['-d', '--directory'], kind: 'value', help: 'trace this directory only' },
  ],
  positionals: [
    { name: 'interval', help: 'output interval, in seconds', type: INT, default: 1 },
    { name: 'count', help: 'number of outputs', type: INT, default: 99999999 },
  ],
} as const satisfies ParserSpec;

export interface FiletopOptions {
  /** `kprobe`: vfs_read/vfs_write; `tracepoint`: the read/write system call tracepoints. */
  probe: 'kprobe' | 'tracepoint';
  tgid?: number | null;
  allFiles?: boolean;
  /** Inode number of the `-d` directory. */
  dirInode?: number | null;
  reads?: boolean;
  writes?: boolean;
}

/** DNAME_INLINE_LEN of include/linux/dcache.h as bcc uses it (bytes of the name kept). */
export const DNAME_INLINE_LEN = 32;

const S_IFMT = 0xf000;
const S_IFREG = 0x8000;
const S_IFSOCK = 0xc000;

function probeBody(o: FiletopOptions, file: string, bytes: string, read: boolean): string {
  let p = `  $f = ${file};\n  $de = $f->f_path.dentry;\n  $mode = $f->f_inode->i_mode & ${S_IFMT};\n`;
  p += `  if ($de->d_name.len == 0${o.allFiles ? '' : ` || $mode != ${S_IFREG}`}) { return; }\n`;
  if (o.dirInode !== null && o.dirInode !== undefined) {
    p += `  if ($de->d_parent->d_inode->i_ino != ${o.dirInode}) { return; }\n`;
  }
  p += `  $type = $mode == ${S_IFREG} ? 1 : ($mode == ${S_IFSOCK} ? 2 : 0);\n`;
  const key =
    'tid, comm, $f->f_inode->i_ino, $f->f_inode->i_sb->s_dev, $f->f_inode->i_rdev, $de->d_name.len, ' +
    `str($de->d_name.name, ${DNAME_INLINE_LEN + 1}), $type`;
  p += `  @${read ? 'reads' : 'writes'}[${key}] = count();\n`;
  p += `  @${read ? 'rbytes' : 'wbytes'}[${key}] = sum(${bytes});\n`;
  return p;
}

/** The bpftrace program: count/sum maps `@reads @rbytes @writes @wbytes` keyed by thread and file. */
export function buildProgram(o: FiletopOptions): string {
  const filter = predicate([o.tgid ? `pid == ${o.tgid}` : null]);
  let p = configBlock();
  const dirs: [boolean, string[]][] = [
    [o.reads !== false, ['read', 'pread64']],
    [o.writes !== false, ['write', 'pwrite64']],
  ];
  for (const [on, calls] of dirs) {
    if (!on) continue;
    const read = calls[0] === 'read';
    if (o.probe === 'kprobe') {
      p += `kprobe:vfs_${calls[0]}${filter} {\n${probeBody(o, '(struct file *)arg0', 'arg2', read)}}\n`;
    } else {
      const fdt = 'curtask->files->fdt';
      p += `${calls.map((c) => `tracepoint:syscalls:sys_enter_${c}`).join(',\n')}${filter} {\n`;
      p += `  if (args.fd >= ${fdt}->max_fds) { return; }\n`;
      p += probeBody(o, `(struct file *)*(uint64 *)((uint64)${fdt}->fd + args.fd * 8)`, 'args.count', read);
      p += '}\n';
    }
  }
  return p;
}

/** One row: a (thread, file) key and its counts (bytes). */
export interface FileRow {
  tid: number;
  comm: string;
  nameLen: number;
  name: string;
  /** `R` regular, `S` socket, `O` other (bcc's type letter). */
  type: string;
  reads: bigint;
  writes: bigint;
  rbytes: bigint;
  wbytes: bigint;
}

/** Join the four maps into rows (a key missing from a map counts 0). */
export function rowsFromMaps(maps: {
  reads?: MapDump;
  writes?: MapDump;
  rbytes?: MapDump;
  wbytes?: MapDump;
}): FileRow[] {
  const rows = new Map<string, FileRow>();
  for (const field of ['reads', 'writes', 'rbytes', 'wbytes'] as const) {
    for (const e of maps[field]?.entries ?? []) {
      const parts = e.key.map(keyPart);
      const id = parts.map(String).join('\0');
      let row = rows.get(id);
      if (!row) {
        const [tid, comm, , , , len, name, type] = parts;
        row = {
          tid: Number(tid),
          comm: String(comm),
          nameLen: Number(len),
          name: String(name),
          type: type === 1n ? 'R' : type === 2n ? 'S' : 'O',
          reads: 0n,
          writes: 0n,
          rbytes: 0n,
          wbytes: 0n,
        };
        rows.set(id, row);
      }
      const v = e.value;
      row[field] = 'value' in v && typeof v.value === 'bigint' ? v.value : 0n;
    }
  }
  return [...rows.values()];
}

/** Rows sorted by `sort` (bcc's `-s`), largest first; ties by thread ID. */
export function sortRows(rows: FileRow[], sort: string): FileRow[] {
  const key = (r: FileRow): bigint =>
    sort === 'all' ? r.rbytes + r.wbytes + r.reads + r.writes : r[sort as 'reads' | 'writes' | 'rbytes' | 'wbytes'];
  return [...rows].sort((a, b) => {
    const x = key(a);
    const y = key(b);
    return x < y ? 1 : x > y ? -1 : a.tid - b.tid;
  });
}

/** bcc's table heading. */
export const TABLE_HEADER = `${pyFormat('%-7s %-16s %-6s %-6s %-7s %-7s %1s %s', 'TID', 'COMM', 'READS', 'WRITES', 'R_Kb', 'W_Kb', 'T', 'FILE')}\n`;

/** bcc's row: Kb truncated, a name longer than DNAME_INLINE_LEN cut to its first 29 characters and `...`. */
export function formatRow(r: FileRow): string {
  const name = r.nameLen > DNAME_INLINE_LEN ? `${r.name.slice(0, -3)}...` : r.name;
  const kb = (b: bigint): number => Math.trunc(Number(b) / 1024);
  return `${pyFormat('%-7d %-16s %-6d %-6d %-7d %-7d %1s %s', r.tid, r.comm, r.reads, r.writes, kb(r.rbytes), kb(r.wbytes), r.type, name)}\n`;
}

/** One interval of filetop (runTool's interval, `--json`'s object): the screen's rows in `-s` order. */
export type FiletopInterval = TopTick<FileRow>;

/** The screen: clear (unless `noclear`: a blank line), `TIME loadavg: ...`, header, top `maxrows` rows by `sort`. */
export function formatScreen(
  rows: FileRow[],
  o: { sort: string; maxrows: number; noclear: boolean },
  time: string = clockTime(),
  load: string = loadAvg(),
): string {
  const tick = { time, loadavg: load, rows: sortRows(rows, o.sort).slice(0, Math.max(1, o.maxrows)) };
  return formatTopTick(tick, TABLE_HEADER, formatRow, o.noclear);
}

function readRows(t: Tracer): FileRow[] {
  const names = t.mapNames();
  const maps: Record<string, MapDump> = {};
  // Read all four, then clear them: events between the reads may show in one map only (bcc reads them one
  // after another too).
  for (const n of ['reads', 'writes', 'rbytes', 'wbytes']) if (names.includes(n)) maps[n] = t.readMap(n);
  return rowsFromMaps(maps);
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  if (a.read_only && a.write_only) {
    writer.err.write('filetop: Both read-only and write-only flags passed\n');
    return 1;
  }
  let dirInode: number | null = null;
  const dir = a.directory;
  if (dir !== null) {
    if (!existsSync(dir)) {
      writer.line(`Error accessing directory ${dir}: [Errno 2] No such file or directory: '${dir}'`);
      return 1;
    }
    dirInode = lstatSync(dir).ino;
    writer.line(`Tracing directory: ${dir} (Inode: ${dirInode})`);
  }
  const program = buildProgram({
    probe: hasFeature('kprobe') ? 'kprobe' : 'tracepoint',
    tgid: a.tgid,
    allFiles: a.all_files,
    dirInode,
    reads: !a.write_only,
    writes: !a.read_only,
  });
  return runTop<FileRow>({
    tool: 'filetop',
    program,
    writer,
    seconds: a.interval,
    count: a.count,
    screen: { noclear: a.noclear, maxrows: a.maxrows },
    heading: TABLE_HEADER,
    rows: (t) => sortRows(readRows(t), a.sort),
    formatRow,
    clear: ['reads', 'writes', 'rbytes', 'wbytes'],
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope filetop [flags] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
