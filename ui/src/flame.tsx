/**
 * A stack tool's view (profile, offcputime, offwaketime, wakeuptime): the captured stacks as a d3-flame-graph
 * (click to zoom, search; offwaketime's waker frames, after the `--` frame, in blues as the chain palette), a
 * differential view against the previous capture of the session's tab, downloads (SVG, folded, pprof, speedscope)
 * and "open in speedscope" (speedscope's own page, served by this server). A countdown while the capture runs.
 */
import { select } from 'd3-selection';
import flamegraph, { colorMapper } from 'd3-flame-graph';
// the package's exports map hides its stylesheet: imported by path
import '../../node_modules/d3-flame-graph/dist/d3-flamegraph.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import { TOKEN, withToken } from './conn';
import type { SessionData, SessionInfo } from './store';

interface Node {
  name: string;
  value: number;
  self: number;
  delta?: number;
  /** A frame of a waker (offwaketime: after the `--` separator frame of its folded line), or the separator. */
  waker?: boolean;
  children: Node[];
  byName?: Map<string, Node>;
}

/** The folded lines (`a;b;c count`) as a tree with inclusive values and self counts. */
export function foldedTree(lines: readonly string[]): Node {
  const root: Node = { name: 'all', value: 0, self: 0, children: [] };
  for (const line of lines) {
    const sp = line.lastIndexOf(' ');
    const count = Number(line.slice(sp + 1));
    if (sp < 0 || !Number.isFinite(count)) continue;
    let n = root;
    n.value += count;
    let waker = false;
    for (const name of line.slice(0, sp).split(';')) {
      if (name === '--') waker = true;
      n.byName ??= new Map();
      let c = n.byName.get(name);
      if (!c) {
        c = { name, value: 0, self: 0, children: [] };
        if (waker) c.waker = true;
        n.byName.set(name, c);
        n.children.push(c);
      }
      c.value += count;
      n = c;
    }
    n.self += count;
  }
  return root;
}

/** Set each node's `delta` to its self count minus the same path's self count in `before`. */
function addDelta(now: Node, before: Node | undefined): void {
  now.delta = now.self - (before?.self ?? 0);
  for (const c of now.children) addDelta(c, before?.byName?.get(c.name));
}

function strip(n: Node): unknown {
  return { name: n.name, value: n.value, delta: n.delta, waker: n.waker, children: n.children.map(strip) };
}

function hasWaker(n: Node): boolean {
  return n.waker === true || n.children.some(hasWaker);
}

/**
 * Waker frames in blues (flamegraph.pl's chain palette: `blue` with a variation from the name), the `--` separator
 * grey; other frames keep d3-flame-graph's colours, and search matches its highlight.
 */
export function wakerColor(d: { highlight?: boolean; data: { name: string; waker?: boolean } }, original: string) {
  if (d.highlight || !d.data.waker) return original;
  if (d.data.name === '--') return 'rgb(160,160,160)';
  let h = 0;
  for (const ch of d.data.name) h = (h * 31 + ch.charCodeAt(0)) % 1000;
  const v = h / 1000;
  return `rgb(${Math.round(80 + 60 * v)},${Math.round(80 + 60 * v)},${Math.round(190 + 55 * v)})`;
}

export function FlameView({ data, info }: { data: SessionData; info: SessionInfo }) {
  const ref = useRef<HTMLDivElement>(null);
  const [term, setTerm] = useState('');
  const [match, setMatch] = useState<{ n: number; sum: number; total: number } | null>(null);
  const [diff, setDiff] = useState(false);
  const [, tick] = useState(0);
  const chartRef = useRef<ReturnType<typeof flamegraph> | null>(null);
  const folded = data.folded;
  useEffect(() => {
    const t = setInterval(() => tick((x) => x + 1), 500);
    return () => clearInterval(t);
  }, []);
  useEffect(() => {
    if (!ref.current || !folded) return;
    ref.current.textContent = '';
    const tree = foldedTree(folded);
    const differential = diff && data.previous !== null;
    if (differential) addDelta(tree, foldedTree(data.previous!));
    const chart = flamegraph()
      .width(Math.max(600, ref.current.clientWidth - 10))
      .cellHeight(18)
      .transitionDuration(0)
      .minFrameSize(1)
      .sort(true)
      .title('')
      .setSearchHandler((results: unknown[], sum: number, total: number) =>
        setMatch({ n: results.length, sum, total }),
      );
    if (differential) chart.computeDelta(true).setColorMapper(colorMapper.differentialColorMapper);
    else if (hasWaker(tree)) chart.setColorMapper(wakerColor);
    chart.label((d: { data: { name: string }; value: number }) => `${d.data.name} (${d.value} ${data.unit})`);
    select(ref.current).datum(strip(tree)).call(chart);
    chartRef.current = chart;
    setMatch(null);
    return () => chart.destroy?.();
  }, [folded, diff]);
  const remaining = Math.max(0, Math.ceil(data.captureStart / 1000 + data.captureSeconds - Date.now() / 1000));
  const base = `/api/sessions/${info.id}`;
  const speedscope = `/t/${encodeURIComponent(TOKEN)}/speedscope/index.html#profileURL=${encodeURIComponent(
    withToken(`${base}/speedscope.json?inline=1`),
  )}&title=${encodeURIComponent(`${info.name} ${info.args.join(' ')}`)}`;
  return (
    <div class="flame-view">
      {!folded && info.state === 'running' && (
        <p class="progress" id="countdown">
          capturing stacks… {data.captureSeconds ? `${remaining} s left` : 'until the tool ends'}
          {data.captureSeconds > 0 && remaining === 0 ? ' (reading and symbolizing stacks)' : ''}
        </p>
      )}
      {!folded && info.state === 'ended' && <p>No stacks were captured.</p>}
      {folded && (
        <div class="flame-tools">
          <form
            onSubmit={(e) => {
              e.preventDefault();
              chartRef.current?.search(term);
            }}
          >
            <input
              type="search"
              id="flame-search"
              placeholder="search (function name)"
              value={term}
              onInput={(e) => setTerm((e.target as HTMLInputElement).value)}
            />
            <button type="submit" id="flame-search-go">
              Search
            </button>
            <button
              type="button"
              onClick={() => {
                chartRef.current?.clear();
                chartRef.current?.resetZoom();
                setMatch(null);
                setTerm('');
              }}
            >
              Reset zoom and search
            </button>
          </form>
          <span id="flame-match" data-matches={match?.n ?? 0} data-sum={match?.sum ?? 0}>
            {match
              ? `${match.n} frames match: ${match.sum} of ${match.total} ${data.unit} (${((100 * match.sum) / Math.max(1, match.total)).toFixed(1)}%)`
              : ''}
          </span>
          <label>
            <input
              type="checkbox"
              id="flame-diff"
              disabled={!data.previous}
              checked={diff}
              onChange={(e) => setDiff((e.target as HTMLInputElement).checked)}
            />{' '}
            differential against the previous capture of {info.name}
            {data.previous ? '' : ' (capture twice in this tab)'}
          </label>
          <span class="downloads">
            download: <a href={withToken(`${base}/flame.svg`)}>SVG</a> ·{' '}
            <a href={withToken(`${base}/stacks.folded`)}>folded</a> ·{' '}
            <a href={withToken(`${base}/profile.pb`)}>pprof</a> ·{' '}
            <a href={withToken(`${base}/speedscope.json`)}>speedscope</a> ·{' '}
            <a href={speedscope} target="_blank" rel="noopener noreferrer" id="open-speedscope">
              open in speedscope
            </a>
          </span>
        </div>
      )}
      <div class="flame" id="flame" ref={ref} data-stacks={folded?.length ?? 0} />
    </div>
  );
}
