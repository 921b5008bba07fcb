/**
 * Summary statistics and Markdown rendering for the benchmark results (bench/run.mjs).
 *
 * A "row" compares one metric between bpfscope and its peer:
 *   { name, unit, ours: number[], peer: number[] | null, target?: { op: '<=' | '>=', ratio: number }, note? }
 * `summarize` turns the samples into { median, min, max, n } per side and the ratio of the medians (bpfscope/peer).
 */

/** Median, min, max of finite numbers (null when there are none). The median of an even count is the mean of the
 * two middle values. */
export function stats(values) {
  const v = (values ?? []).filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return null;
  const mid = v.length >> 1;
  const median = v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  return { median, min: v[0], max: v[v.length - 1], n: v.length };
}

/** Adds `oursStats`, `peerStats`, `ratio` (median/median) and `met` (true/false/null) to a row. */
export function summarize(row) {
  const oursStats = stats(row.ours);
  const peerStats = row.peer ? stats(row.peer) : null;
  const ratio = oursStats && peerStats && peerStats.median !== 0 ? oursStats.median / peerStats.median : null;
  let met = null;
  if (row.target && ratio !== null)
    met = row.target.op === '<=' ? ratio <= row.target.ratio : ratio >= row.target.ratio;
  if (row.target?.absolute && oursStats) {
    const a = row.target.absolute;
    met = a.op === '<=' ? oursStats.median <= a.value : oursStats.median >= a.value;
  }
  return { ...row, oursStats, peerStats, ratio, met };
}

/** A number for a table cell: 3 significant digits, thousands kept whole. */
export function num(x) {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  const a = Math.abs(x);
  if (a >= 1000) return Math.round(x).toLocaleString('en-US');
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  if (a === 0) return '0';
  return x.toPrecision(2);
}

function targetText(row) {
  if (row.target?.absolute) return `${row.target.absolute.op} ${num(row.target.absolute.value)} ${row.unit}`;
  if (!row.target) return '';
  return `${row.target.op} ${row.target.ratio}x`;
}

function metText(row) {
  if (row.met === null || row.met === undefined) return '';
  return row.met ? 'met' : '**missed**';
}

/**
 * A Markdown table of summarized rows: one line per metric with bpfscope's and the peer's median, min and max, the
 * ratio of medians, the target and whether it is met.
 */
export function markdownTable(rows, peerName) {
  const head = `| benchmark | unit | bpfscope median | min | max | ${peerName} median | min | max | ratio | target | |`;
  const sep = '|---|---|--:|--:|--:|--:|--:|--:|--:|---|---|';
  const lines = [head, sep];
  for (const r of rows) {
    const o = r.oursStats;
    const p = r.peerStats;
    const name = r.note ? `${r.name} ${r.note}` : r.name;
    lines.push(
      `| ${name} | ${r.unit} | ${num(o?.median)} | ${num(o?.min)} | ${num(o?.max)} | ${num(p?.median)} | ` +
        `${num(p?.min)} | ${num(p?.max)} | ${r.ratio === null ? '–' : `${r.ratio.toFixed(2)}x`} | ${targetText(r)} | ` +
        `${metText(r)} |`,
    );
  }
  return lines.join('\n');
}

/** A plain Markdown table from a header array and row arrays (cells are converted with `num` when numeric). */
export function plainTable(header, rows) {
  const cell = (c) => (typeof c === 'number' ? (Number.isInteger(c) ? String(c) : num(c)) : String(c ?? '–'));
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  for (const r of rows) lines.push(`| ${r.map(cell).join(' | ')} |`);
  return lines.join('\n');
}

/** Least-squares slope of y over x (same units as y per x), or null with fewer than two points. */
export function slope(xs, ys) {
  const n = xs.length;
  if (n < 2) return null;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return den === 0 ? null : num / den;
}
