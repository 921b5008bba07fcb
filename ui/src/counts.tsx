/**
 * The counting and top tools' view (syscount, vfsstat, biotop, filetop, funccount, argdist, runqlen, ...): the
 * latest tick (interval) as tables, sortable by any column, with the tick's time and how many ticks came.
 *
 * A tick (the tool's runTool/--json object, documented in docs/tools/TOOL.md) becomes tables generically:
 * - a list of objects (`rows`, `histograms`, argdist's `probes`, ...) is one table named after its field; an
 *   object in it that holds a list of objects (argdist's `rows`, a histogram's `buckets`) gives one row per item
 *   of that list, prefixed with the object's other fields; a `counts` list of numbers (runqlen's linear histogram)
 *   gives one row per index (`index`, `count`);
 * - a plain object (vfsstat's `counts`) is one table of one row;
 * - the tick's other numbers and strings (cachestat's hits, pidpersec's count, ...) are one table `values`.
 * Lists of numbers or strings elsewhere (argdist's key `values`) are shown in one cell.
 */
import { useState } from 'preact/hooks';
import type { SessionData } from './store';

type Row = Record<string, unknown>;

export interface CountTable {
  name: string;
  cols: string[];
  rows: Row[];
}

const isObject = (v: unknown): v is Row => v !== null && typeof v === 'object' && !Array.isArray(v);
const isScalar = (v: unknown): boolean => v === null || typeof v !== 'object';

/** The rows one object of a list gives (see the module comment). */
function flatten(item: Row, prefix: Row, out: Row[]): void {
  const own: Row = { ...prefix };
  const lists: [string, unknown[]][] = [];
  for (const [k, v] of Object.entries(item)) {
    if (Array.isArray(v) && (v.some(isObject) || (k === 'counts' && v.every((x) => typeof x === 'number'))))
      lists.push([k, v]);
    else own[k] = v;
  }
  if (lists.length === 0) {
    out.push(own);
    return;
  }
  for (const [k, list] of lists) {
    list.forEach((x, i) => {
      if (isObject(x)) flatten(x, own, out);
      else out.push({ ...own, index: i, [k === 'counts' ? 'count' : k]: x });
    });
  }
}

/** A tick as tables. */
export function tickTables(tick: unknown): CountTable[] {
  if (!isObject(tick)) return [];
  const tables: CountTable[] = [];
  const values: Row = {};
  for (const [k, v] of Object.entries(tick)) {
    if (k === 'time') continue;
    let rows: Row[] | undefined;
    if (Array.isArray(v) && v.every(isObject)) {
      rows = [];
      for (const item of v) flatten(item, {}, rows);
    } else if (isObject(v) && Object.values(v).every(isScalar)) rows = [v];
    else if (isScalar(v) && v !== null) values[k] = v;
    else if (Array.isArray(v) && v.every(isScalar)) values[k] = v;
    if (rows) {
      const cols: string[] = [];
      for (const r of rows) for (const c of Object.keys(r)) if (!cols.includes(c)) cols.push(c);
      tables.push({ name: k, cols, rows });
    }
  }
  if (Object.keys(values).length) tables.unshift({ name: 'values', cols: Object.keys(values), rows: [values] });
  return tables;
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(cell).join(' ');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** Numbers (and bigints sent as decimal strings) compare as numbers, the rest as text. */
function compare(a: unknown, b: unknown): number {
  const x = typeof a === 'number' ? a : typeof a === 'string' && /^-?\d+$/.test(a) ? Number(a) : NaN;
  const y = typeof b === 'number' ? b : typeof b === 'string' && /^-?\d+$/.test(b) ? Number(b) : NaN;
  if (!Number.isNaN(x) && !Number.isNaN(y)) return x - y;
  return cell(a).localeCompare(cell(b));
}

function SortableTable({ table }: { table: CountTable }) {
  const [sort, setSort] = useState<{ col: string; desc: boolean } | null>(null);
  const rows = sort
    ? [...table.rows].sort((a, b) => (sort.desc ? -1 : 1) * compare(a[sort.col], b[sort.col]))
    : table.rows;
  return (
    <table class="rows counts" data-table={table.name}>
      <caption>
        {table.name} ({table.rows.length} rows)
      </caption>
      <thead>
        <tr>
          {table.cols.map((c) => (
            <th
              key={c}
              data-col={c}
              class="sortable"
              title="sort by this column (click again: the other way)"
              onClick={() => setSort({ col: c, desc: sort?.col === c ? !sort.desc : true })}
            >
              {c}
              {sort?.col === c ? (sort.desc ? ' ▼' : ' ▲') : ''}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r, i) => (
          <tr key={i}>
            {table.cols.map((c) => (
              <td key={c} data-col={c}>
                {cell(r[c])}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function CountsView({ data, running }: { data: SessionData; running: boolean }) {
  const last = data.intervals.at(-1) as Row | undefined;
  const tables = tickTables(last);
  return (
    <div class="counts-view">
      <p class="status">
        <span id="tick" data-ticks={data.intervals.length} data-time={String(last?.time ?? '')}>
          {last
            ? `tick at ${String(last.time ?? '?')} (${data.intervals.length} ticks so far)`
            : running
              ? 'waiting for the first tick (the tool reports every interval, or when it ends)'
              : 'the tool reported nothing'}
        </span>
      </p>
      {tables.map((t) => (
        <SortableTable key={t.name} table={t} />
      ))}
    </div>
  );
}
