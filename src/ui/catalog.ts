/**
 * The UI's catalogue: every bcc tool of bpfscope (src/tools/catalog.ts) grouped like Brendan Gregg's bcc tool map
 * (CPU, memory, file systems, disks, network, scheduler, languages; plus the multi-purpose tracers), with, for the
 * tools `runTool()` runs, the option declarations (`SPEC`) the page turns into a form, and which view shows their
 * results: a table (rows), a histogram with a heat map (log2 histograms per interval), a flame graph (stacks), or
 * a per-interval table of counts (the counting and top tools: the latest tick's rows). Every tool runTool runs has
 * a view; the others are listed as "not yet available in the UI".
 */
import { apiTools, toolOptions } from '../tools/api.js';
import { TOOLS } from '../tools/catalog.js';
import type { ParserSpec } from '../tools/framework/argparse.js';

export type ToolView = 'table' | 'histogram' | 'flame' | 'counts';

/** One option of a tool's form: what argparse declares, reduced to what a form needs (JSON). */
export interface FormOption {
  /** Option strings, e.g. `['-p', '--pid']`; positionals have none and a `name`. */
  flags: string[];
  name: string;
  kind: 'flag' | 'value' | 'append' | 'remainder' | 'optional' | 'positional';
  help: string;
  metavar?: string;
  /** The default as text (absent when none). */
  default?: string;
  /** The value type's name (`int`, ...) when the tool converts the text. */
  type?: string;
}

export interface CatalogTool {
  name: string;
  summary: string;
  group: string;
  /** false: listed but not yet runnable from the UI (runTool does not run it yet). */
  available: boolean;
  view?: ToolView;
  options?: FormOption[];
}

export interface CatalogGroup {
  name: string;
  tools: CatalogTool[];
}

/** Groups in the tool map's order; a tool not listed here goes to "tracing (any layer)". */
const GROUPS: readonly (readonly [string, readonly string[]])[] = [
  [
    'CPU',
    [
      'profile',
      'cpudist',
      'llcstat',
      'hardirqs',
      'softirqs',
      'execsnoop',
      'exitsnoop',
      'threadsnoop',
      'pidpersec',
      'syscount',
    ],
  ],
  ['memory', ['memleak', 'oomkill', 'slabratetop']],
  ['file systems', ['opensnoop', 'statsnoop', 'syncsnoop', 'filetop', 'vfsstat', 'cachestat', 'ext4slower']],
  ['disks', ['biolatency', 'biosnoop', 'biotop', 'bitesize', 'biopattern']],
  ['network', ['tcplife', 'tcpconnect', 'tcpaccept', 'tcpretrans', 'tcpdrop', 'gethostlatency']],
  ['scheduler', ['runqlat', 'runqlen', 'runqslower', 'offcputime']],
  ['languages', ['bashreadline']],
  ['tracing (any layer)', ['trace', 'argdist', 'funccount', 'funclatency', 'stackcount', 'capable', 'killsnoop']],
];

/**
 * Tools whose interval result is a set of stacks (`{stacks: [...]}`: profile's and offcputime's StackResult,
 * offwaketime's target + wakers, wakeuptime's waker stacks): shown as a flame graph. stackcount is listed for when
 * runTool runs it.
 */
export const STACK_TOOLS: ReadonlySet<string> = new Set([
  'profile',
  'offcputime',
  'offwaketime',
  'wakeuptime',
  'stackcount',
]);
/** Interval tools whose tick is a log2 histogram (`histograms[].buckets`): the histogram + heat map view. */
export const HISTOGRAM_TOOLS: ReadonlySet<string> = new Set([
  'biolatency',
  'bitesize',
  'cpudist',
  'funclatency',
  'hardirqs',
  'runqlat',
  'softirqs',
]);

/**
 * Options whose value is a file the tool writes (the stack tools' `--svg FILE`, `-o FILE`): the server runs as root,
 * so the UI leaves them out of the forms and refuses them (see server.ts) unless started with `--unsafe`.
 */
export const FILE_OPTIONS: readonly string[] = ['svg', 'output'];

/** argparse's dest of option `o`: its `dest`, else its first long flag (else first flag) without dashes, `-` → `_`. */
export function destOf(o: ParserSpec['options'][number]): string {
  const long = o.flags.find((f) => f.startsWith('--'));
  return o.dest ?? (long ?? o.flags[0]!).replace(/^-+/, '').replace(/-/g, '_');
}

function formOptions(spec: ParserSpec): FormOption[] {
  const out: FormOption[] = [];
  for (const o of spec.options) {
    if (o.help === null) continue; // hidden (argparse.SUPPRESS), e.g. --ebpf
    if (FILE_OPTIONS.includes(destOf(o))) continue;
    const opt: FormOption = {
      flags: [...o.flags],
      name: destOf(o),
      kind: o.kind,
      help: o.help,
    };
    if (o.metavar) opt.metavar = o.metavar;
    if (o.default !== undefined && o.default !== null && o.kind !== 'flag') opt.default = String(o.default);
    if (o.type) opt.type = o.type.name;
    out.push(opt);
  }
  for (const p of spec.positionals ?? []) {
    const opt: FormOption = { flags: [], name: p.metavar ?? p.name, kind: 'positional', help: p.help };
    if (p.default !== undefined && p.default !== null) opt.default = String(p.default);
    if (p.type) opt.type = p.type.name;
    out.push(opt);
  }
  return out;
}

/** The catalogue (loads the SPEC of each tool runTool runs). */
export async function loadCatalog(): Promise<CatalogGroup[]> {
  const runnable = new Set(apiTools());
  const summaries = new Map(TOOLS.map((t) => [t.name, t.summary]));
  const placed = new Set(GROUPS.flatMap(([, names]) => names));
  const groups = GROUPS.map(([name, names]) => ({ name, names: [...names] }));
  for (const t of TOOLS) if (!placed.has(t.name)) groups[groups.length - 1]!.names.push(t.name);
  const out: CatalogGroup[] = [];
  for (const g of groups) {
    const tools: CatalogTool[] = [];
    for (const name of g.names) {
      const summary = summaries.get(name);
      if (summary === undefined) continue;
      const def = runnable.has(name) ? await toolOptions(name) : undefined;
      const view: ToolView | undefined = !def
        ? undefined
        : STACK_TOOLS.has(name)
          ? 'flame'
          : def.results === 'rows'
            ? 'table'
            : HISTOGRAM_TOOLS.has(name)
              ? 'histogram'
              : 'counts';
      const tool: CatalogTool = { name, summary, group: g.name, available: view !== undefined };
      if (def && view) {
        tool.options = formOptions(def.spec);
        tool.view = view;
      }
      tools.push(tool);
    }
    out.push({ name: g.name, tools });
  }
  return out;
}
