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

/** Text output of a tool: buffered stdout with explicit flushes, and unbuffered stderr. */
export class ToolWriter {
  readonly out: OutputSink;
  readonly err: OutputSink;
  private brokenPipe: (() => void) | null = null;

  /** Writes to fd 1 and fd 2 unless other sinks are given (tests). */
  constructor(out?: OutputSink, err?: OutputSink) {
    this.out = out ?? new OutputSink(1, { onBrokenPipe: () => this.brokenPipe?.() });
    this.err = err ?? new OutputSink(2, { bufferSize: 0 });
  }

  /** Call `cb` once stdout's reader has gone away (EPIPE); later writes are dropped. */
  onBrokenPipe(cb: () => void): void {
    this.brokenPipe = cb;
    if (this.out.broken) cb();
  }

  /** Write `text` as is. */
  write(text: string): void {
    this.out.write(text);
  }

  /** Write `text` and a newline (Python's `print(text)`). */
  line(text = ''): void {
    this.out.write(`${text}\n`);
  }

  flush(): void {
    this.out.flush();
  }
}

export class ToolOutput implements Output {
  private handler: EventHandler | null = null;
  private fieldCount = 0;

  constructor(readonly writer: ToolWriter) {}

  /**
   * Route event records to `handler`, split into `fieldCount` fields (0: split at every separator).
   */
  onEvent(handler: EventHandler, fieldCount = 0): void {
    this.handler = handler;
    this.fieldCount = fieldCount;
  }

  printf(text: string): void {
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
    this.writer.err.write(`Possibly lost ${n} samples\n`);
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
