/**
 * bpftrace's text output format, byte for byte as bpftrace v0.26 `src/output/text.cpp` prints it (differences from
 * bpftrace 0.17 are listed in docs/compat.md):
 * - values: ints in decimal (or their symbol), `true`/`false`, strings raw, tuples `(1, abc)`, records and structs
 *   `{ .a = 1, .b = abc }`, arrays `[1,2,3]`, none `null`,
 *   stats records `{ .count = 3, .average = 2, .total = 6 }`;
 * - maps: `@x: 5`, `@x[k1, k2]: 5` (one line per entry, no blank line after the map); histogram maps print
 *   `@h:` / `@h[k]:` then the rows and one blank line;
 * - tseries maps print `@t:` / `@t[k]:`, the graph (runtime/output/tseries.ts) and one blank line;
 * - histogram rows: range label left-aligned in 16 columns, count right-aligned in 8, then ` |`, a bar of `@`
 *   scaled to the largest count in 52 columns, `|`;
 * - `Attached N probe(s)` and `Lost N events` go to stderr; at the end of a run two newlines precede the maps.
 */
import { compareMapNames, type Display, type DisplayMap, formatMap, intOf, toDisplay } from './format.js';
import type { HistLabel, Histogram } from './hist.js';
import type { AggValue, MapDump, Value } from './model.js';
import type { OutputSink } from './sink.js';
import { tseriesText } from './tseries.js';

/** The text form of a value (bpftrace's default representation, also what printf `%s` prints). */
export function valueText(v: Value): string {
  switch (v.kind) {
    case 'int':
      return v.symbol ?? intOf(v).toString();
    case 'bool':
      return v.value ? 'true' : 'false';
    case 'string':
      return v.value;
    case 'tuple': {
      let s = '(';
      for (let i = 0; i < v.elems.length; i++) {
        if (i > 0) s += ', ';
        s += valueText(v.elems[i]!);
      }
      return s + ')';
    }
    case 'record':
      // bpftrace v0.26 `{ .a = 1, .b = str }`: no quotes around strings, nested records and tuples inline
      return `{ ${v.fields.map((f) => `.${f.name} = ${valueText(f.value)}`).join(', ')} }`;
    case 'array':
      return `[${v.elems.map(valueText).join(',')}]`;
    case 'none':
      return 'null';
  }
}

function statsText(d: Extract<Display, { kind: 'stats' }>): string {
  return `{ .count = ${d.count}, .average = ${d.average}, .total = ${d.total} }`;
}

const BAR_WIDTH = 52;
const BAR = '@'.repeat(BAR_WIDTH);
const BLANK_BAR = ' '.repeat(BAR_WIDTH);

/** bpftrace prints `[n]` instead of `[n, n+1)` when both bounds are plain integers one apart. */
function singleValue(a: HistLabel, b: HistLabel): boolean {
  return a.plain && b.plain && a.num + 1n === b.num;
}

function rowLabel(h: Histogram, i: number): string {
  if (i === 0) {
    const first = h.labels[0];
    if (!h.lower) return `(..., ${first!.text})`;
    if (!first) return `[${h.lower.text}, ...)`;
    if (singleValue(h.lower, first)) return `[${h.lower.text}]`;
    return `[${h.lower.text}, ${first.text})`;
  }
  const prev = h.labels[i - 1]!;
  const cur = h.labels[i];
  if (!cur) return `[${prev.text}, ...)`;
  if (singleValue(prev, cur)) return `[${prev.text}]`;
  return `[${prev.text}, ${cur.text})`;
}

/**
 * Bar length for `count` out of `max`: bpftrace computes `(count / (float)max) * 52` in single precision and
 * truncates; an all-zero histogram (possible after `div`) gets empty bars.
 */
export function barWidth(count: bigint, max: bigint): number {
  if (max === 0n) return 0;
  const ratio = Math.fround(Math.fround(Number(count)) / Math.fround(Number(max)));
  const w = Math.trunc(Math.fround(ratio * BAR_WIDTH));
  return Math.max(0, Math.min(BAR_WIDTH, w));
}

/** The rows of a histogram, each ending in `\n`; '' for an empty histogram. */
export function histText(h: Histogram): string {
  let max = 0n;
  for (const c of h.counts) if (c > max) max = c;
  let out = '';
  for (let i = 0; i < h.counts.length; i++) {
    const count = h.counts[i]!;
    const w = barWidth(count, max);
    out +=
      rowLabel(h, i).padEnd(16) + count.toString().padStart(8) + ' |' + BAR.slice(0, w) + BLANK_BAR.slice(w) + '|\n';
  }
  return out;
}

/** A display value on its own (no trailing newline for values/stats; histogram rows end in `\n`). */
export function displayText(d: Display): string {
  switch (d.kind) {
    case 'value':
      return valueText(d.value);
    case 'stats':
      return statsText(d);
    case 'hist':
      return histText(d.hist);
    case 'tseries':
      return tseriesText(d.series);
  }
}

/** The key between `[` and `]`: the value's text, with a tuple's parentheses dropped (`@[1, abc]`). */
export function keyText(key: Value): string {
  const s = valueText(key);
  if (s.length >= 2 && s.charCodeAt(0) === 0x28 && s.charCodeAt(s.length - 1) === 0x29) return s.slice(1, -1);
  return s;
}

/** A whole map in text form ('' when it has no entries). */
export function mapText(m: DisplayMap): string {
  let out = '';
  for (const { key, value } of m.entries) {
    const head = key === null ? m.name : `${m.name}[${keyText(key)}]`;
    if (value.kind === 'hist') out += `${head}:\n${histText(value.hist)}\n`;
    else if (value.kind === 'tseries') out += `${head}:\n${tseriesText(value.series)}\n`;
    else out += `${head}: ${displayText(value)}\n`;
  }
  return out;
}

/** bpftrace's text output on a stdout sink and a stderr sink. */

const GREEN = '\x1b[32m';
const RED = '\x1b[31m';
const RESET = '\x1b[0m';
export class TextOutput {
  constructor(
    readonly out: OutputSink,
    readonly err: OutputSink,
  ) {}

  /** printf() output, as formatted (no newline added). */
  printf(text: string): void {
    this.out.write(text);
  }

  /** print(@m), print(@m, top, div). */
  printMap(dump: MapDump, opts?: { top?: number | bigint; div?: number | bigint }): void {
    this.out.write(mapText(formatMap(dump, opts)));
  }

  /** print(expr) of a non-map value: its text and a newline. */
  printValue(v: Value | AggValue): void {
    this.out.write(`${displayText(toDisplay(v))}\n`);
  }

  /** time() output, already formatted with strftime (the default format ends in `\n`). */
  time(text: string): void {
    this.out.write(text);
  }

  /** cat() output, as read. */
  cat(text: string): void {
    this.out.write(text);
  }

  /** join() output: the joined string and a newline. */
  join(text: string): void {
    this.out.write(`${text}\n`);
  }

  /** system() output: what the command printed, as printed. */
  syscall(text: string): void {
    this.out.write(text);
  }

  /** `Attached N probe(s)` on stderr (bpftrace 0.26; 0.17 printed `Attaching N probes...` on stdout). */
  /** bpftrace's table (`output/text.cpp` benchmark_result): name column at least 40 wide, time column 15. */
  benchmarkResult(names: string[], index: number, averageNs: number, iters: number): void {
    const width = Math.max(40, ...names.map((n) => n.length)) + 1;
    if (index === 0) {
      this.out.write(`${'Benchmark'.padEnd(width)}${'Time(ns)'.padEnd(15)}Iterations\n`);
      this.out.write(`${'-'.repeat(width + 15 + 'Iterations'.length)}\n`);
    }
    this.out.write(`${names[index]!.padEnd(width)}${String(averageNs).padEnd(15)}${iters}\n`);
  }

  /** bpftrace's googletest-style lines (`output/text.cpp` test_result), colours included as bpftrace prints them. */
  testStart(names: string[], index: number): void {
    if (index === 0) this.out.write(`${GREEN}[==========]${RESET} Running ${names.length} tests.\n`);
    this.out.write(`${GREEN}[ RUN      ]${RESET} ${names[index]}\n`);
  }

  testResult(names: string[], index: number, durationNs: number, passed: boolean[]): void {
    const tests = (n: number): string => (n === 1 ? 'test' : 'tests');
    const [scale, unit] =
      durationNs >= 1e9 ? [1e9, 's'] : durationNs >= 1e6 ? [1e6, 'ms'] : durationNs >= 1e3 ? [1e3, 'us'] : [1, 'ns'];
    const mark = passed[index] ? `${GREEN}[       OK ]${RESET}` : `${RED}[  FAILED  ]${RESET}`;
    this.out.write(`${mark} ${names[index]} (${Math.floor(durationNs / scale)} ${unit})\n`);
    if (index !== names.length - 1) return;
    const failed = passed.filter((p) => !p).length;
    const ok = passed.length - failed;
    this.out.write(`${GREEN}[==========]${RESET} ${names.length} ${tests(names.length)} ran.\n`);
    this.out.write(`${GREEN}[  PASSED  ]${RESET} ${ok} ${tests(ok)}.\n`);
    if (failed > 0) {
      this.out.write(`${RED}[  FAILED  ]${RESET} ${failed} ${tests(failed)}, listed below:\n`);
      names.forEach((n, i) => {
        if (!passed[i]) this.out.write(`${RED}[  FAILED  ]${RESET} ${n}\n`);
      });
    }
  }

  attachedProbes(n: number): void {
    this.out.flush();
    this.err.write(`Attached ${n} ${n === 1 ? 'probe' : 'probes'}\n`);
    this.err.flush();
  }

  /** `Detaching N probes...` on stderr (bpfscope's own notice: detaching hundreds of probes takes seconds). */
  detachingProbes(n: number): void {
    this.out.flush();
    this.err.write(`Detaching ${n} probes...\n`);
    this.err.flush();
  }

  /** `Lost N events` on stderr. */
  lostEvents(n: number | bigint): void {
    this.out.flush();
    this.err.write(`Lost ${n} events\n`);
    this.err.flush();
  }

  /** End of the run: two newlines (printed even when no maps follow). */
  end(): void {
    this.out.write('\n\n');
  }

  /** End of the run with the maps printed at exit: `end()`, then every map in name order (empty maps print nothing). */
  exitMaps(dumps: MapDump[]): void {
    this.end();
    this.signalMaps(dumps);
  }

  signalMaps(dumps: MapDump[]): void {
    for (const d of [...dumps].sort((a, b) => compareMapNames(a.name, b.name))) this.printMap(d);
  }

  flush(): void {
    this.out.flush();
    this.err.flush();
  }
}
