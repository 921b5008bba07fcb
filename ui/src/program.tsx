/**
 * The one-liner editor (a textarea over a highlighted copy of its text; compile errors marked at their span and
 * listed with line:column) and a program session's output: printf/print lines and its maps, live.
 */
import { useState } from 'preact/hooks';
import { conn, type Diag, RequestFailed } from './conn';
import { highlight } from './highlight';
import { store, type SessionData } from './store';

/** Starting points (bpftrace's one-liners tutorial topics). */
const EXAMPLES: [string, string][] = [
  [
    'new processes with arguments',
    'tracepoint:syscalls:sys_enter_execve { printf("%-6d %s\\n", pid, str(args.filename)); }',
  ],
  ['files opened by process', 'tracepoint:syscalls:sys_enter_openat { printf("%s %s\\n", comm, str(args.filename)); }'],
  ['syscall count by program', 'tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }'],
  ['read size distribution', 'tracepoint:syscalls:sys_exit_read /args.ret > 0/ { @bytes = hist(args.ret); }'],
  ['CPU profile of user stacks (99 Hz)', 'profile:hz:99 /pid > 0/ { @[comm, ustack] = count(); }'],
  ['block I/O size by process', 'tracepoint:block:block_rq_issue { @[comm] = hist(args.bytes); }'],
];

export function ProgramEditor({ onStarted }: { onStarted: (id: string) => void }) {
  const [source, setSource] = useState(EXAMPLES[0]![1]);
  const [diags, setDiags] = useState<Diag[]>([]);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const run = async () => {
    setBusy(true);
    setError('');
    setDiags([]);
    try {
      const r = await conn.request({ type: 'program', source });
      onStarted((r.session as { id: string }).id);
    } catch (e) {
      if (e instanceof RequestFailed) {
        setError(e.error.message);
        setDiags(e.error.diagnostics ?? []);
      } else setError(String(e));
    } finally {
      setBusy(false);
    }
  };
  const marks = diags
    .filter((d) => d.severity === 'error' && d.offset !== undefined)
    .map((d) => ({ offset: d.offset!, end: d.end! }));
  return (
    <section class="program">
      <h2>bpftrace one-liner</h2>
      <p>
        examples:{' '}
        <select
          id="examples"
          onChange={(e) => {
            const i = Number((e.target as HTMLSelectElement).value);
            if (EXAMPLES[i]) setSource(EXAMPLES[i][1]);
            setDiags([]);
            setError('');
          }}
        >
          {EXAMPLES.map(([name], i) => (
            <option value={i} key={name}>
              {name}
            </option>
          ))}
        </select>
      </p>
      <div class="editor">
        <pre class="highlight" aria-hidden="true" id="highlight">
          {highlight(source, marks).map((r, i) => (
            <span key={i} class={`hl-${r.cls}${r.error ? ' hl-error' : ''}`}>
              {r.text}
            </span>
          ))}
          {'\n'}
        </pre>
        <textarea
          id="source"
          spellcheck={false}
          value={source}
          onInput={(e) => {
            setSource((e.target as HTMLTextAreaElement).value);
            setDiags([]);
          }}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void run();
          }}
        />
      </div>
      <p>
        <button id="run" disabled={busy} onClick={() => void run()}>
          Run (Ctrl-Enter)
        </button>
        {busy && <span class="progress"> compiling, loading and attaching…</span>}
        {!store.unsafe && (
          <span class="note"> unsafe builtins (system, signal) are off: start the server with --unsafe</span>
        )}
      </p>
      {error && (
        <div class="error" id="program-error">
          {diags.length ? (
            <ul>
              {diags.map((d, i) => (
                <li key={i} class={`diag diag-${d.severity}`} data-line={d.line} data-col={d.col}>
                  {d.line !== undefined ? `${d.line}:${d.col}: ` : ''}
                  {d.severity === 'error' ? 'ERROR' : 'WARNING'}: {d.message}
                  {d.hint ? ` (${d.hint})` : ''}
                </li>
              ))}
            </ul>
          ) : (
            <pre>{error}</pre>
          )}
        </div>
      )}
    </section>
  );
}

function show(v: unknown): string {
  if (v === null) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export function ProgramOutput({ data }: { data: SessionData }) {
  const lines = data.rows as string[];
  return (
    <div class="program-output">
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
        <span id="sampling" data-received={data.received} data-produced={data.produced}>
          {data.received === data.produced
            ? `${data.produced} lines`
            : `showing ${data.received} of ${data.produced} lines (sampled)`}
        </span>{' '}
        · frames dropped: {store.framesDropped}
      </p>
      {data.maps.map((m) => (
        <div class="map" key={m.name}>
          <h4>
            {m.name} ({m.total} entries{m.total > m.entries.length ? `, first ${m.entries.length} shown` : ''})
          </h4>
          <table>
            <tbody>
              {m.entries.map(([k, v], i) => (
                <tr key={i}>
                  <td>{show(k)}</td>
                  <td>{show(v)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
      <pre class="output" id="output">
        {lines.slice(-300).join('')}
      </pre>
    </div>
  );
}
