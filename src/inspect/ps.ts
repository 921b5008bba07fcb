/**
 * `bpfscope ps`: the system's BPF programs grouped by the processes holding them (bcc's bpflist, `bpftool prog
 * show` / `bpftool perf`), with where each program is attached, its run count and run time, and the program text
 * of bpfscope's own runs. `--json` prints {@link listBpfObjects}'s result. See docs/tools/ps.md.
 */
import { BpfscopeError } from '../errors.js';
import { type BpfObjects, type BpfProgram, listBpfObjects, type ListOptions } from './objects.js';

export const PS_USAGE = `usage: bpfscope ps [-h] [-p PID] [--stats [SECONDS]] [-a] [--json]

List the BPF programs on the system by the processes that hold them, with where
they are attached and their run statistics; bpfscope runs show their program.

options:
  -h, --help         show this help message and exit
  -p PID, --pid PID  only the objects this process holds
  --stats [SECONDS]  turn on BPF run statistics for SECONDS (default 1) and show
                     the runs and run time of each program during that time
  -a, --all          also list the maps and links each process holds
  --json             print everything as JSON (ids, owners, attach points,
                     counters in ns); see docs/tools/ps.md
`;

interface PsOptions {
  pid?: number;
  stats?: number;
  all: boolean;
  json: boolean;
}

function usageError(msg: string): BpfscopeError {
  return new BpfscopeError(msg, { hint: 'see bpfscope ps -h', exitCode: 2 });
}

function parsePs(argv: string[]): PsOptions | 'help' {
  const o: PsOptions = { all: false, json: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    const flag = eq > 0 ? a.slice(0, eq) : a;
    const inline = eq > 0 ? a.slice(eq + 1) : undefined;
    switch (flag) {
      case '-h':
      case '--help':
        return 'help';
      case '-p':
      case '--pid': {
        const v = inline ?? argv[++i];
        if (v === undefined || !/^[1-9]\d*$/.test(v)) throw usageError(`${flag} needs a process id, got '${v ?? ''}'`);
        o.pid = Number(v);
        break;
      }
      case '--stats': {
        const next = inline ?? (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('-') ? argv[++i] : undefined);
        if (next === undefined) o.stats = 1;
        else {
          const s = Number(next);
          if (!/^\d+(\.\d+)?$/.test(next) || !(s > 0) || s > 3600) {
            throw usageError(`--stats needs a number of seconds between 0 and 3600, got '${next}'`);
          }
          o.stats = s;
        }
        break;
      }
      case '-a':
      case '--all':
        o.all = true;
        break;
      case '--json':
        o.json = true;
        break;
      default:
        if (/^-p\d+$/.test(a)) {
          o.pid = Number(a.slice(2));
          break;
        }
        throw usageError(`unknown argument '${a}'`);
    }
  }
  return o;
}

/** Run time for people: `850ns`, `12.3us`, `4.56ms`, `1.23s`. */
export function formatNs(ns: bigint): string {
  const n = Number(ns);
  if (n < 1000) return `${n}ns`;
  if (n < 1e6) return `${(n / 1e3).toFixed(1)}us`;
  if (n < 1e9) return `${(n / 1e6).toFixed(2)}ms`;
  return `${(n / 1e9).toFixed(2)}s`;
}

/**
 * JSON with bigint counters written as exact integers (JSON.stringify cannot write bigints; a Number would lose
 * precision past 2^53).
 */
export function toJson(value: unknown, indent?: number): string {
  const marker = `\u0001big${process.hrtime.bigint()}:`;
  const text = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${marker}${v}` : v), indent);
  const quoted = JSON.stringify(marker).slice(0, -1); // the marker as it appears inside a JSON string, no end quote
  return text.replace(new RegExp(`${quoted.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}(-?\\d+)"`, 'g'), '$1');
}

interface Row {
  pid: string;
  comm: string;
  type: string;
  id: string;
  name: string;
  attach: string;
  runCnt: string;
  runTime: string;
}

const HEADER: Row = {
  pid: 'PID',
  comm: 'COMM',
  type: 'TYPE',
  id: 'ID',
  name: 'NAME',
  attach: 'ATTACH',
  runCnt: 'RUN_CNT',
  runTime: 'RUN_TIME',
};

function counters(p: BpfProgram, r: BpfObjects): { runCnt: string; runTime: string } {
  if (p.delta) return { runCnt: String(p.delta.runCnt), runTime: formatNs(p.delta.runTimeNs) };
  if (r.stats.enabled) return { runCnt: String(p.runCnt), runTime: formatNs(p.runTimeNs) };
  return { runCnt: '-', runTime: '-' };
}

/** The table: one block per process (programs, then with `all` its maps and links), bpfscope runs' programs. */
export function formatTable(r: BpfObjects, opts: { all?: boolean } = {}): string {
  const progs = new Map(r.programs.map((p) => [p.id, p]));
  const blocks: { rows: Row[]; notes: string[] }[] = [];
  const progRows = (pid: string, comm: string, p: BpfProgram): Row[] => {
    const c = counters(p, r);
    // the same point attached several times (a profile probe: one perf event per CPU) is one line, with a count
    const counts = new Map<string, number>();
    for (const a of p.attach) counts.set(a.text, (counts.get(a.text) ?? 0) + 1);
    const attach = counts.size ? [...counts].map(([t, n]) => (n > 1 ? `${t} (x${n})` : t)) : ['-'];
    return attach.map((a, i) =>
      i === 0
        ? { pid, comm, type: p.type, id: String(p.id), name: p.name || '-', attach: a, ...c }
        : { pid: '', comm: '', type: '', id: '', name: '', attach: a, runCnt: '', runTime: '' },
    );
  };
  const held = new Set<number>();
  for (const proc of r.processes) {
    const rows: Row[] = [];
    const notes: string[] = [];
    let first = true;
    const who = () => {
      const w = first ? { pid: String(proc.pid), comm: proc.comm } : { pid: '', comm: '' };
      first = false;
      return w;
    };
    for (const id of proc.progIds) {
      const p = progs.get(id);
      if (!p) continue;
      held.add(id);
      const w = who();
      rows.push(...progRows(w.pid, w.comm, p));
    }
    if (opts.all) {
      for (const id of proc.mapIds) {
        const m = r.maps.find((x) => x.id === id);
        if (!m) continue;
        const w = who();
        rows.push({
          ...w,
          type: `map ${m.type}`,
          id: String(id),
          name: m.name || '-',
          attach: '-',
          runCnt: '',
          runTime: '',
        });
      }
      for (const id of proc.linkIds) {
        const l = r.links.find((x) => x.id === id);
        if (!l) continue;
        const w = who();
        rows.push({
          ...w,
          type: `link ${l.type}`,
          id: String(id),
          name: `prog ${l.progId}`,
          attach: l.attach.text,
          runCnt: '',
          runTime: '',
        });
      }
    } else if (rows.length === 0) {
      const w = who();
      rows.push({
        ...w,
        type: '-',
        id: '-',
        name: `${proc.mapIds.length} maps, ${proc.linkIds.length} links`,
        attach: '-',
        runCnt: '',
        runTime: '',
      });
    }
    for (const s of proc.bpfscope?.sessions ?? []) {
      notes.push(`bpfscope program (${s.source}), prog ids ${s.progIds.join(' ') || '-'}:`);
      for (const line of s.program.replace(/\n+$/, '').split('\n')) notes.push(`  ${line}`);
    }
    blocks.push({ rows, notes });
  }
  const orphans = r.programs.filter((p) => !held.has(p.id));
  if (orphans.length) {
    const rows: Row[] = [];
    orphans.forEach((p, i) => rows.push(...progRows(i === 0 ? '-' : '', i === 0 ? '(none)' : '', p)));
    blocks.push({ rows, notes: [] });
  }
  const all = [HEADER, ...blocks.flatMap((b) => b.rows)];
  const keys = Object.keys(HEADER) as (keyof Row)[];
  const width = Object.fromEntries(keys.map((k) => [k, Math.max(...all.map((row) => row[k].length))])) as Record<
    keyof Row,
    number
  >;
  const right = new Set<keyof Row>(['runCnt', 'runTime']);
  const line = (row: Row) =>
    keys
      .map((k) => (right.has(k) ? row[k].padStart(width[k]) : row[k].padEnd(width[k])))
      .join('  ')
      .trimEnd();
  const indent = ' '.repeat(width.pid + 2);
  const out = [line(HEADER)];
  for (const b of blocks) {
    out.push(...b.rows.map(line));
    out.push(...b.notes.map((n) => `${indent}${n}`));
  }
  return `${out.join('\n')}\n`;
}

/** Entry point of `bpfscope ps`. */
export async function main(argv: string[]): Promise<number> {
  const o = parsePs(argv);
  if (o === 'help') {
    process.stdout.write(PS_USAGE);
    return 0;
  }
  const opts: ListOptions = {};
  if (o.pid !== undefined) opts.pid = o.pid;
  if (o.stats !== undefined) opts.stats = o.stats;
  const r = await listBpfObjects(opts);
  const text = o.json ? `${toJson(r)}\n` : formatTable(r, { all: o.all });
  await new Promise<void>((resolve) => process.stdout.write(text, () => resolve()));
  return 0;
}
