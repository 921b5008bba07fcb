/**
 * How a tool's BPF program talks to its TypeScript half, and where the tool's text goes.
 *
 * Event records: the tool's program emits one `printf` per event whose text is the event's fields separated by
 * the unit separator `\x1f` and ended by `\n` (e.g. `printf("%u\x1f%d\x1f%s\n", uid, pid, comm)`). The tool's
 * handler receives the fields as strings and formats bcc's columns (timestamps relative to the first event,
 * errno splitting, disk names, user-space filters such as opensnoop's `-n`). A free-form string (a path) must be
 * the last field, so a `\x1f` inside it cannot shift the others: {@link ToolOutput} splits at most
 * `fieldCount - 1` times.
 *
 * {@link ToolOutput} implements the runtime's `Output` for tools: printf text goes to the event handler instead
 * of the terminal, there is no `Attached N probes` notice and nothing is printed at the end of the run (a tool
 * reads its maps itself); lost events are reported on stderr as bcc does for perf buffers.
 */
import type { Output } from '../../runtime/output/index.js';
import type { AggValue, MapDump, Value } from '../../runtime/output/model.js';
import { OutputSink } from '../../runtime/output/sink.js';

/** The field separator of event records (ASCII unit separator). */
export const FIELD_SEP = '\x1f';

/** Receives one event's fields (see the module comment). */
export type EventHandler = (fields: string[]) => void;

/**
 * Where a tool's results go:
 * - `text`: bcc's text on stdout (the tool's own formatting);
 * - `json`: one JSON object per result on stdout (the objects `runTool` yields, see {@link toJson}); the tool's
 *   other text (headers) is left out;
 * - `ebpf`: only the generated program (bcc's hidden `--ebpf`): nothing is run;
 * - `api`: results go to a consumer (`runTool`), text is kept aside (for error messages), nothing is printed.
 */
export type ToolMode = 'text' | 'json' | 'ebpf' | 'api';

/** The hooks of an `api` run (see tools/api.ts). */
export interface ApiSink {
  /** One result object (a row, an interval). */
  result(value: unknown): void;
  /** The probes are attached. */
  started(): void;
  /** Called by the runner with the function that ends the run early (close()). */
  onStop(stop: () => void): void;
}

/** Text output of a tool: buffered stdout with explicit flushes, and unbuffered stderr. */
export class ToolWriter {
  readonly out: OutputSink;
  readonly err: OutputSink;
  mode: ToolMode = 'text';
  api: ApiSink | null = null;
  /** `--heatmap FILE` (framework/heatmap.ts): sees every result and the run's interval; null without the option. */
  heatmap: { add(value: unknown): void; setInterval(seconds: number | null): void } | null = null;
  /** `api` mode: the text the tool wrote (its error messages), at most 64 KiB. */
  kept = '';
  private brokenPipe: (() => void) | null = null;

  /** Writes to fd 1 and fd 2 unless other sinks are given (tests). */
  constructor(out?: OutputSink, err?: OutputSink) {
    this.out = out ?? new OutputSink(1, { onBrokenPipe: () => this.brokenPipe?.() });
    this.err = err ?? new OutputSink(2, { bufferSize: 0 });
  }

  /**
   * One result of the tool: in text mode `format(value)` is printed, in JSON mode the JSON object, in API mode
   * the value goes to the consumer; with `--heatmap` it is also collected for the heat map.
   */
  emit<T>(value: T, format: (value: T) => string): void {
    this.heatmap?.add(value);
    if (this.mode === 'text') this.out.write(format(value));
    else if (this.mode === 'json') this.out.write(`${JSON.stringify(toJson(value))}\n`);
    else if (this.mode === 'api') this.api?.result(value);
  }

  /** Call `cb` once stdout's reader has gone away (EPIPE); later writes are dropped. */
  onBrokenPipe(cb: () => void): void {
    this.brokenPipe = cb;
    if (this.out.broken) cb();
  }

  /** Write `text` as is (text and `--ebpf` modes; kept aside in API mode, left out in JSON mode). */
  write(text: string): void {
    if (this.mode === 'text' || this.mode === 'ebpf') this.out.write(text);
    else if (this.mode === 'api' && this.kept.length < 65536) this.kept += text;
  }

  /** Write `text` and a newline (Python's `print(text)`). */
  line(text = ''): void {
    this.write(`${text}\n`);
  }

  flush(): void {
    this.out.flush();
  }
}

/**
 * A result object as JSON data: bigints become numbers when they are safe integers (|n| <= 2^53 - 1) and decimal
 * strings otherwise; Maps become objects; Dates ISO strings; everything else as JSON.stringify does.
 */
export function toJson(v: unknown): unknown {
  if (typeof v === 'bigint') return v >= -9007199254740991n && v <= 9007199254740991n ? Number(v) : v.toString();
  if (Array.isArray(v)) return v.map(toJson);
  if (v instanceof Date) return v.toISOString();
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), toJson(x)]));
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = toJson(x);
    return out;
  }
  return v;
}

export class ToolOutput implements Output {
  private handler: EventHandler | null = null;
  private lineHandler: ((text: string) => void) | null = null;
  private fieldCount = 0;

  /** Route every printf text to `handler` as is (typed records: record.ts decodes it). */
  onLine(handler: (text: string) => void): void {
    this.lineHandler = handler;
  }

  constructor(readonly writer: ToolWriter) {}

  /**
   * Route event records to `handler`, split into `fieldCount` fields (0: split at every separator).
   */
  onEvent(handler: EventHandler, fieldCount = 0): void {
    this.handler = handler;
    this.fieldCount = fieldCount;
  }

  /** printf text kept aside by {@link hold}, or null when it is handled as it comes. */
  private held: string[] | null = null;

  /**
   * Keep printf text aside until {@link release}: the runtime drains the ring buffer while it attaches (after BEGIN),
   * and those events belong after the tool's header, as in bcc (which polls only once it has printed it).
   */
  hold(): void {
    this.held ??= [];
  }

  /** Handle the text kept since {@link hold}, in order, and whatever comes from now on as it comes. */
  release(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const text of held) this.printf(text);
  }

  printf(text: string): void {
    if (this.held) {
      this.held.push(text);
      return;
    }
    if (this.lineHandler) {
      this.lineHandler(text);
      return;
    }
    if (!this.handler) {
      this.writer.write(text);
      return;
    }
    const body = text.endsWith('\n') ? text.slice(0, -1) : text;
    this.handler(splitFields(body, this.fieldCount));
  }

  printMap(_dump: MapDump): void {}
  printValue(_v: Value | AggValue): void {}
  time(text: string): void {
    this.writer.write(text);
  }
  cat(text: string): void {
    this.writer.write(text);
  }
  join(text: string): void {
    this.writer.write(text);
  }
  syscall(text: string): void {
    this.writer.write(text);
  }
  attachedProbes(_n: number): void {}
  lostEvents(n: number | bigint): void {
    this.writer.flush();
    if (this.writer.mode !== 'api') this.writer.err.write(`Possibly lost ${n} samples\n`);
  }
  end(): void {}
  benchmarkResult(_names: string[], _index: number, _averageNs: number, _iters: number): void {}
  testStart(_names: string[], _index: number): void {}
  testResult(_names: string[], _index: number, _durationNs: number, _passed: boolean[]): void {}
  exitMaps(_dumps: MapDump[]): void {}
  signalMaps(_dumps: MapDump[]): void {}
  flush(): void {
    this.writer.flush();
  }
}

/** Split an event record into fields; with `count` > 0 the last field keeps any further separators. */
export function splitFields(body: string, count = 0): string[] {
  if (count <= 0) return body.split(FIELD_SEP);
  const out: string[] = [];
  let start = 0;
  while (out.length < count - 1) {
    const i = body.indexOf(FIELD_SEP, start);
    if (i < 0) break;
    out.push(body.slice(start, i));
    start = i + 1;
  }
  out.push(body.slice(start));
  return out;
}
