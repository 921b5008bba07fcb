/**
 * bpfscope's web page: the catalogue of tools (grouped like the bcc tool map) and the one-liner editor on the left;
 * a tool's option form, a running session's live view (table, histogram + heat map, flame graph, program output)
 * or the sessions list on the right. Talks to src/ui/server.ts (see there for the protocol).
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { conn, getJson, RequestFailed } from './conn';
import { CountsView } from './counts';
import { FlameView } from './flame';
import { HistView } from './hist';
import { ProgramEditor, ProgramOutput } from './program';
import { store, type SessionInfo, useStore } from './store';
import { TableView } from './table';
import './style.css';

export interface FormOption {
  flags: string[];
  name: string;
  kind: string;
  help: string;
  metavar?: string;
  default?: string;
  type?: string;
}

export interface CatalogTool {
  name: string;
  summary: string;
  group: string;
  available: boolean;
  view?: 'table' | 'histogram' | 'flame' | 'counts';
  options?: FormOption[];
}

interface CatalogGroup {
  name: string;
  tools: CatalogTool[];
}

type Route =
  { kind: 'tool'; tool: CatalogTool } | { kind: 'program' } | { kind: 'session'; id: string } | { kind: 'sessions' };

function App() {
  const [catalog, setCatalog] = useState<CatalogGroup[] | null>(null);
  const [loadError, setLoadError] = useState('');
  const [route, setRoute] = useState<Route>({ kind: 'sessions' });
  const st = useStore();
  useEffect(() => {
    getJson<CatalogGroup[]>('/api/catalog').then(setCatalog, (e: Error) => setLoadError(e.message));
  }, []);
  const open = (id: string) => setRoute({ kind: 'session', id });
  const running = st.sessions.filter((s) => s.state === 'running').length;
  return (
    <div class="layout">
      <header>
        <span class="brand">bpfscope</span>
        <span class={`conn conn-${st.connStatus}`}>
          {st.connStatus === 'open'
            ? 'connected'
            : st.connStatus === 'connecting'
              ? 'connecting…'
              : `disconnected (${conn.closeReason}), reconnecting…`}
        </span>
        {st.serverError && <span class="error server-error">{st.serverError}</span>}
        <button
          class={route.kind === 'sessions' ? 'nav active' : 'nav'}
          id="nav-sessions"
          onClick={() => setRoute({ kind: 'sessions' })}
        >
          Sessions ({running} running)
        </button>
      </header>
      <nav class="catalog">
        <div class="group">
          <h3>bpftrace</h3>
          <a
            href="#"
            id="nav-oneliner"
            class={route.kind === 'program' ? 'active' : ''}
            onClick={(e) => (e.preventDefault(), setRoute({ kind: 'program' }))}
          >
            one-liner editor
          </a>
        </div>
        {loadError && <p class="error">{loadError}</p>}
        {catalog?.map((g) => (
          <div class="group" key={g.name}>
            <h3>{g.name}</h3>
            {g.tools.map((t) => (
              <a
                href="#"
                key={t.name}
                data-tool={t.name}
                class={`${t.available ? '' : 'unavailable'} ${route.kind === 'tool' && route.tool.name === t.name ? 'active' : ''}`}
                title={t.available ? t.summary : `${t.summary} (not yet available in the UI)`}
                onClick={(e) => (e.preventDefault(), setRoute({ kind: 'tool', tool: t }))}
              >
                {t.name}
              </a>
            ))}
          </div>
        ))}
      </nav>
      <main>
        {route.kind === 'tool' && <ToolForm key={route.tool.name} tool={route.tool} onStarted={open} />}
        {route.kind === 'program' && <ProgramEditor onStarted={open} />}
        {route.kind === 'session' && <SessionView id={route.id} />}
        {route.kind === 'sessions' && <SessionsList onOpen={open} />}
      </main>
    </div>
  );
}

/** The option form generated from the tool's declarations. */
function ToolForm({ tool, onStarted }: { tool: CatalogTool; onStarted: (id: string) => void }) {
  const initial: Record<string, string | boolean> = {};
  for (const o of tool.options ?? []) {
    // live views: a tick every second unless the user clears it (bcc's default for some is "at the end")
    if (o.name === 'interval' && (tool.view === 'histogram' || tool.view === 'counts')) initial[o.name] = '1';
    else if (o.kind === 'positional' && o.name === 'duration' && tool.view === 'flame') initial[o.name] = '5';
  }
  const [values, setValues] = useState<Record<string, string | boolean>>(initial);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  if (!tool.available) {
    return (
      <section class="tool">
        <h2>{tool.name}</h2>
        <p>{tool.summary}</p>
        <p class="notice" id="unavailable">
          {tool.name} is not yet available in the UI: run it from the command line (<code>bpfscope {tool.name} -h</code>
          ).
        </p>
      </section>
    );
  }
  const args: string[] = [];
  const positionals: string[] = [];
  for (const o of tool.options ?? []) {
    const v = values[o.name];
    if (v === undefined || v === '' || v === false) continue;
    const flag = o.flags.find((f) => f.startsWith('--')) ?? o.flags[0]!;
    if (o.kind === 'flag') args.push(flag);
    else if (o.kind === 'positional') positionals.push(String(v));
    else if (o.kind === 'remainder') args.push(flag, ...String(v).split(/\s+/).filter(Boolean));
    else args.push(flag, String(v));
  }
  // argparse: positionals are taken in order, so a later one needs the earlier ones
  const all = [...args, ...positionals];
  const start = async () => {
    setBusy(true);
    setError('');
    try {
      const r = await conn.request({ type: 'start', tool: tool.name, args: all });
      const s = r.session as SessionInfo;
      store.noteStart(s.id, tool.view === 'flame' ? Number(values.duration ?? 0) : 0);
      onStarted(s.id);
    } catch (e) {
      setError(e instanceof RequestFailed ? e.error.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="tool">
      <h2>{tool.name}</h2>
      <p>{tool.summary}</p>
      <form
        id="tool-form"
        onSubmit={(e) => {
          e.preventDefault();
          void start();
        }}
      >
        <table class="options">
          <tbody>
            {(tool.options ?? []).map((o) => (
              <tr key={o.name}>
                <td>
                  <label for={`opt-${o.name}`}>{o.kind === 'positional' ? o.name : o.flags.join(', ')}</label>
                </td>
                <td>
                  {o.kind === 'flag' ? (
                    <input
                      type="checkbox"
                      id={`opt-${o.name}`}
                      name={o.name}
                      checked={values[o.name] === true}
                      onChange={(e) => setValues({ ...values, [o.name]: (e.target as HTMLInputElement).checked })}
                    />
                  ) : (
                    <input
                      type="text"
                      id={`opt-${o.name}`}
                      name={o.name}
                      placeholder={o.default ?? o.metavar ?? ''}
                      value={String(values[o.name] ?? '')}
                      onInput={(e) => setValues({ ...values, [o.name]: (e.target as HTMLInputElement).value })}
                    />
                  )}
                </td>
                <td class="help">
                  {o.help}
                  {o.type ? ` (${o.type})` : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <p class="cmdline">
          <code id="cmdline">bpfscope {[tool.name, ...all].join(' ')}</code>
        </p>
        <button type="submit" id="start" disabled={busy}>
          {tool.view === 'flame' ? `Capture ${values.duration || '?'} s` : 'Start'}
        </button>
        {busy && <span class="progress"> compiling and attaching…</span>}
        {error && (
          <pre class="error" id="start-error">
            {error}
          </pre>
        )}
      </form>
    </section>
  );
}

function SessionView({ id }: { id: string }) {
  const st = useStore();
  const info = st.sessions.find((s) => s.id === id);
  useEffect(() => {
    store.watch(id);
    return () => store.unwatch(id);
  }, [id]);
  const data = st.data.get(id);
  if (!info) return <p>Session {id} is gone (stopped and removed).</p>;
  return (
    <section class="session" data-session={id}>
      <h2>
        {info.name} {info.kind === 'tool' && info.args.length > 0 && <code>{info.args.join(' ')}</code>}
      </h2>
      <p class="session-state">
        <span id="session-state">{info.state === 'running' ? 'running' : `ended: ${info.ended ?? ''}`}</span> · since{' '}
        {new Date(info.startedAt).toLocaleTimeString()} · {Math.max(info.results, data?.produced ?? 0)} results · lost{' '}
        {info.lost}{' '}
        {info.state === 'running' && (
          <button id="stop" onClick={() => void conn.request({ type: 'stop', session: id })}>
            Stop
          </button>
        )}
      </p>
      {info.kind === 'program' && <pre class="source">{info.source}</pre>}
      {data && info.view === 'table' && <TableView data={data} />}
      {data && info.view === 'histogram' && <HistView data={data} />}
      {data && info.view === 'flame' && <FlameView data={data} info={info} />}
      {data && info.view === 'counts' && <CountsView data={data} running={info.state === 'running'} />}
      {data && info.view === 'program' && <ProgramOutput data={data} />}
    </section>
  );
}

function SessionsList({ onOpen }: { onOpen: (id: string) => void }) {
  const st = useStore();
  return (
    <section class="sessions">
      <h2>Sessions</h2>
      <p>
        Sessions nobody watches stop after {Math.round(st.idleMs / 1000)} s. One-liners may use unsafe builtins:{' '}
        {st.unsafe ? 'yes (--unsafe)' : 'no'}. CPU: the kernel run time of the session's BPF programs (BPF) plus the
        server's time handling its results (UI), in ms (see docs/ui.md).{' '}
        <button id="stop-all" onClick={() => void conn.request({ type: 'stopAll' })}>
          Stop all
        </button>
      </p>
      <table id="sessions-table">
        <thead>
          <tr>
            <th>session</th>
            <th>what</th>
            <th>since</th>
            <th>state</th>
            <th>results</th>
            <th>lost</th>
            <th>BPF ms</th>
            <th>UI ms</th>
            <th>CPU ms</th>
            <th>tabs</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {st.sessions.map((s) => (
            <tr key={s.id} data-session={s.id} data-state={s.state}>
              <td>
                <a href="#" onClick={(e) => (e.preventDefault(), onOpen(s.id))}>
                  {s.id}
                </a>
              </td>
              <td class="what">
                {s.name}{' '}
                <code title={s.kind === 'tool' ? s.args.join(' ') : s.source}>
                  {s.kind === 'tool' ? s.args.join(' ') : (s.source ?? '').slice(0, 200)}
                </code>
              </td>
              <td>{new Date(s.startedAt).toLocaleTimeString()}</td>
              <td>{s.state === 'running' ? 'running' : `ended: ${s.ended ?? ''}`}</td>
              <td>{s.results}</td>
              <td>{s.lost}</td>
              <td class="cpu-bpf">{s.bpfMs.toFixed(2)}</td>
              <td class="cpu-user">{s.userMs.toFixed(2)}</td>
              <td class="cpu" data-cpu={s.cpuMs} data-bpf={s.bpfMs} data-user={s.userMs}>
                {s.cpuMs.toFixed(2)}
              </td>
              <td>{s.watchers}</td>
              <td>
                {s.state === 'running' ? (
                  <button onClick={() => void conn.request({ type: 'stop', session: s.id })}>Stop</button>
                ) : (
                  <button onClick={() => void conn.request({ type: 'remove', session: s.id })}>Remove</button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

store.start();
render(<App />, document.getElementById('app')!);
