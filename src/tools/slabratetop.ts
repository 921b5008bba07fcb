/**
 * slabratetop: kernel SLAB/SLUB cache allocation rate, as a top-like screen every interval. Follows bcc's
 * `tools/slabratetop.py` (flags, help, "Tracing... Output every N secs." line, the `loadavg:` line, the `CACHE
 * ALLOCS BYTES` table sorted by bytes, at most `-r` rows, "Detaching..." at the end).
 *
 * bcc counts calls of `kmem_cache_alloc()` with a kprobe, reading the cache's `name` and `size` through partial
 * copies of the kernel's slab structs, and refuses to run on Linux 6.8 and later, whose structs it cannot follow.
 * Here the `kmem:kmem_cache_alloc` tracepoint gives both: `name` (the cache's name; in the tracepoint since
 * Linux 6.2) and `bytes_alloc` (the cache's object size with metadata, `s->size`). It fires in every
 * `kmem_cache_alloc*()` variant, which bcc's single kprobe does not all cover on newer kernels.
 */
import type { Tracer } from '../runtime/tracer.js';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { scalarValues } from './framework/histmaps.js';
import { tracepointHasField } from './framework/kstruct.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain, unsupported } from './framework/runner.js';
import { formatTopScreen, runTop, type TopOptions, type TopTick } from './framework/top.js';

export const SPEC = {
  prog: 'slabratetop',
  description: 'Kernel SLAB/SLUB memory cache allocation rate top',
  raw: true,
  epilog: `examples:
    ./slabratetop            # kmem_cache_alloc() top, 1 second refresh
    ./slabratetop -C         # don't clear the screen
    ./slabratetop 5          # 5 second summaries
    ./slabratetop 5 10       # 5 second summaries, 10 times only
`,
  options: [
    { flags: ['-C', '--noclear'], kind: 'flag', help: "don't clear the screen" },
    { flags: ['-r', '--maxrows'], kind: 'value', type: INT, default: 20, help: 'maximum rows to print, default 20' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
  positionals: [
    { name: 'interval', help: 'output interval, in seconds', type: INT, default: 1 },
    { name: 'count', help: 'number of outputs', type: INT, default: 99999999 },
  ],
} as const satisfies ParserSpec;

/** bcc's CACHE_NAME_SIZE: names are kept to 31 characters and a NUL. */
export const CACHE_NAME_SIZE = 32;

/**
 * The bpftrace program: `@allocs[name]` counts allocations, `@size[name]` holds the cache's object size
 * (`bytes_alloc`, the same for every object of a cache), so BYTES = allocs * size, bcc's sum of `cachep->size`,
 * and one map read gives a consistent count.
 */
export function buildProgram(): string {
  const name = `str(args.name, ${CACHE_NAME_SIZE})`;
  return (
    `${configBlock()}tracepoint:kmem:kmem_cache_alloc {\n  $name = ${name};\n` +
    '  @size[$name] = args.bytes_alloc;\n  @allocs[$name] = count();\n}\n'
  );
}

/** One cache's counts in an interval. */
export interface SlabRow {
  name: string;
  allocs: bigint;
  bytes: bigint;
}

/**
 * The rows of `@allocs` (sizes from `@size`), sorted as bcc sorts them: `reversed(sorted(..., key=size))`, so
 * the most bytes first; ties (bcc: the reverse of its hash table's order) by name, descending.
 */
export function collectRows(t: Pick<Tracer, 'readMap'>): SlabRow[] {
  const sizes = new Map(scalarValues(t.readMap('size')).map((r) => [String(r.key), r.value]));
  const rows = scalarValues(t.readMap('allocs')).map((r) => ({
    name: String(r.key),
    allocs: r.value,
    bytes: r.value * (sizes.get(String(r.key)) ?? 0n),
  }));
  return rows.sort((a, b) =>
    a.bytes !== b.bytes ? (a.bytes < b.bytes ? 1 : -1) : a.name < b.name ? 1 : a.name > b.name ? -1 : 0,
  );
}

/** bcc's table heading. */
export const TABLE_HEADER = `${pyFormat('%-32s %6s %10s', 'CACHE', 'ALLOCS', 'BYTES')}\n`;

/** One interval's screen (see {@link formatTopScreen}). */
export function formatScreen(rows: SlabRow[], o: TopOptions, now: Date = new Date(), loadavg?: string): string {
  return formatTopScreen(TABLE_HEADER, rows.map(formatRow), o, now, loadavg);
}

/** bcc's row: `%-32s %6d %10d`. */
export function formatRow(r: SlabRow): string {
  return `${pyFormat('%-32s %6d %10d', r.name, r.allocs, r.bytes)}\n`;
}

/** One interval of slabratetop (runTool's interval, `--json`'s object): the screen's rows, most bytes first. */
export type SlabratetopInterval = TopTick<SlabRow>;

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  return runTop<SlabRow>({
    tool: 'slabratetop',
    program: buildProgram(),
    writer,
    requires: () => {
      if (!tracepointHasField('kmem', 'kmem_cache_alloc', 'name')) {
        throw unsupported(
          'slabratetop: this kernel has no kmem:kmem_cache_alloc tracepoint with the cache name (Linux 6.2 and later have one)',
        );
      }
    },
    seconds: a.interval,
    count: a.count,
    screen: { noclear: a.noclear, maxrows: a.maxrows },
    heading: TABLE_HEADER,
    rows: collectRows,
    formatRow,
    clear: ['allocs'],
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope slabratetop [-C] [-r MAXROWS] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
