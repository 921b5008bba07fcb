/** A streaming table of an event tool's rows: column filters, pause, a row limit, and "showing N of M". */
import { useState } from 'preact/hooks';
import { store, type SessionData } from './store';

function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(cell).join(' ');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export function TableView({ data }: { data: SessionData }) {
  const [filters, setFilters] = useState<Record<string, string>>({});
  const cols: string[] = [];
  for (const r of data.rows.slice(0, 50)) {
    if (r && typeof r === 'object') for (const k of Object.keys(r)) if (!cols.includes(k)) cols.push(k);
  }
  const active = Object.entries(filters).filter(([, v]) => v);
  const rows = data.rows.filter((r) => active.every(([k, v]) => cell((r as Record<string, unknown>)[k]).includes(v)));
  return (
    <div class="table-view">
      <p class="status">
        <label>
          <input
            type="checkbox"
            id="pause"
            checked={data.paused}
            onChange={(e) => {
              data.paused = (e.target as HTMLInputElement).checked;
              store.changed();
            }}
          />{' '}
          pause
        </label>{' '}
        <label>
          row limit{' '}
          <input
            type="number"
            id="row-limit"
            min={10}
            max={100000}
            value={data.rowLimit}
            onChange={(e) => {
              const n = Number((e.target as HTMLInputElement).value);
              data.rowLimit = Math.max(10, Math.min(100000, Number.isFinite(n) ? n : 1000));
              if (data.rows.length > data.rowLimit) data.rows.splice(0, data.rows.length - data.rowLimit);
              store.changed();
            }}
          />
        </label>{' '}
        <span id="showing" data-shown={data.rows.length} data-total={data.produced}>
          {data.rows.length === data.produced
            ? `${data.produced} rows`
            : `showing ${data.rows.length} of ${data.produced} rows`}
        </span>
        <span id="sampling" data-received={data.received} data-produced={data.produced}>
          {data.received === data.produced
            ? ''
            : ` · ${data.received} received (sampled: the server sends the newest rows when they come faster than the page can show)`}
        </span>
        {data.received > data.rows.length + data.skippedWhilePaused && ` · the oldest dropped at the row limit`}
        <span id="paused-count" data-skipped={data.skippedWhilePaused}>
          {data.skippedWhilePaused > 0 && ` · ${data.skippedWhilePaused} arrived while paused (not shown)`}
        </span>{' '}
        · {rows.length} in the table{active.length > 0 ? ' (filtered)' : ''} · frames dropped: {store.framesDropped}
      </p>
      <table class="rows" id="rows">
        <thead>
          <tr>
            {cols.map((c) => (
              <th key={c}>{c}</th>
            ))}
          </tr>
          <tr class="filters">
            {cols.map((c) => (
              <th key={c}>
                <input
                  type="text"
                  class="filter"
                  data-col={c}
                  placeholder="filter"
                  value={filters[c] ?? ''}
                  onInput={(e) => setFilters({ ...filters, [c]: (e.target as HTMLInputElement).value })}
                />
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows
            .slice(-500)
            .reverse()
            .map((r, i) => (
              <tr key={data.received - i}>
                {cols.map((c) => (
                  <td key={c}>{cell((r as Record<string, unknown>)[c])}</td>
                ))}
              </tr>
            ))}
        </tbody>
      </table>
    </div>
  );
}
