/**
 * bpftrace's `-f json` output: NDJSON, one object per line, spaced exactly as bpftrace v0.26
 * `src/output/json.cpp` writes it (`{"type": "map", "data": {"@x": 5}}`: a space after `:` and after `,` in
 * objects, none after `,` in arrays). Differences from bpftrace 0.17 are listed in docs/compat.md.
 * - integers that a double cannot hold exactly are written as strings (`"9223372036854775807"`, RFC 8259 advice,
 *   as bpftrace 0.26 does);
 * - map keys are the key's text form with a tuple's parentheses and all spaces removed (`"comm,2"`);
 * - histograms are arrays of `{"min": a, "max": b, "count": n}` with closed bounds; the first bucket of a
 *   histogram with negative values has no "min", the overflow bucket of an lhist no "max".
 */
import { compareMapNames, type Display, type DisplayMap, formatMap, intOf, toDisplay } from './format.js';
import type { HistLabel, Histogram } from './hist.js';
import { tseriesJson } from './tseries.js';
import type { AggValue, MapDump, Value } from './model.js';
import type { OutputSink } from './sink.js';
import { keyText } from './text.js';

const HEX = '0123456789abcdef';

/**
 * A JSON string literal with bpftrace's escapes: `\"`, `\\`, `\n`, `\r`, `\t`, other control characters as
 * `\u00XX`; everything else (including non-ASCII, which bpftrace mangles) is written as is.
 */
export function jsonString(s: string): string {
  let out = '"';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c) continue;
    out += s.slice(start, i);
    start = i + 1;
    switch (c) {
      case 0x22:
        out += '\\"';
        break;
      case 0x5c:
        out += '\\\\';
        break;
      case 0x0a:
        out += '\\n';
        break;
      case 0x0d:
        out += '\\r';
        break;
      case 0x09:
        out += '\\t';
        break;
      default:
        out += `\\u00${HEX[c >> 4]}${HEX[c & 15]}`;
    }
  }
  return out + s.slice(start) + '"';
}

/** An integer as JSON: a number, or a string when a double cannot represent it exactly. */
export function jsonInt(v: bigint): string {
  const s = v.toString();
  return BigInt(Number(v)) === v ? s : `"${s}"`;
}

/**
 * The JSON form of a value: numbers, strings, `true`/`false`, tuples and arrays as arrays, records and structs as
 * objects, none as `null`.
 */
export function jsonValue(v: Value): string {
  switch (v.kind) {
    case 'int':
      return jsonInt(intOf(v));
    case 'bool':
      return v.value ? 'true' : 'false';
    case 'string':
      return jsonString(v.value);
    case 'tuple': {
      let s = '[';
      for (let i = 0; i < v.elems.length; i++) {
        if (i > 0) s += ',';
        s += jsonValue(v.elems[i]!);
      }
      return s + ']';
    }
    case 'record':
      // bpftrace: an object in field order, `{"a": 0, "c": "str"}`
      return `{${v.fields.map((f) => `${jsonString(f.name)}: ${jsonValue(f.value)}`).join(', ')}}`;
    case 'array':
      return `[${v.elems.map(jsonValue).join(',')}]`;
    case 'none':
      return 'null';
  }
}

/** JSON of the value just below a bucket's exclusive upper bound (bpftrace's `one_less`, an int64). */
function oneLess(l: HistLabel): string {
  return jsonInt(BigInt.asIntN(64, l.num - 1n));
}

/** A histogram as a JSON array of `{"min": a, "max": b, "count": n}` objects (closed bounds). */
export function jsonHist(h: Histogram): string {
  let out = '[';
  for (let i = 0; i < h.counts.length; i++) {
    if (i > 0) out += ',';
    out += '{';
    if (i === 0 && h.lower) out += `"min": ${jsonInt(h.lower.num)}, `;
    else if (i > 0) out += `"min": ${jsonInt(h.labels[i - 1]!.num)}, `;
    const upper = h.labels[i];
    if (upper) out += `"max": ${oneLess(upper)}, `;
    out += `"count": ${h.counts[i]}}`;
  }
  return out + ']';
}

function jsonDisplay(d: Display): string {
  switch (d.kind) {
    case 'value':
      return jsonValue(d.value);
    case 'stats':
      return `{"count": ${jsonInt(d.count)}, "average": ${jsonInt(d.average)}, "total": ${jsonInt(d.total)}}`;
    case 'hist':
      return jsonHist(d.hist);
    case 'tseries':
      return tseriesJson(d.series);
  }
}

/** A map key as a JSON object key: its text form without a tuple's parentheses and without any spaces. */
export function jsonKey(key: Value): string {
  return jsonString(keyText(key).replaceAll(' ', ''));
}

/**
 * A whole map as one NDJSON line (with its `\n`), or '' when bpftrace prints nothing: a map without entries,
 * except avg/stats maps, which print `{}` (bpftrace 0.26 quirk).
 */
export function mapJson(m: DisplayMap): string {
  if (m.entries.length === 0 && m.type !== 'stats') return '';
  let body: string;
  if (m.scalar && m.entries.length > 0) {
    body = jsonDisplay(m.entries[0]!.value);
  } else {
    body = '{';
    for (let i = 0; i < m.entries.length; i++) {
      const e = m.entries[i]!;
      if (i > 0) body += ', ';
      body += `${e.key === null ? '""' : jsonKey(e.key)}: ${jsonDisplay(e.value)}`;
    }
    body += '}';
  }
  return `{"type": "${m.type}", "data": {${jsonString(m.name)}: ${body}}}\n`;
}

function message(type: string, data: string): string {
  return `{"type": "${type}", "data": ${data}}\n`;
}

/** bpftrace's `-f json` output; everything, including attached_probes and lost_events, goes to `out`. */
export class JsonOutput {
  constructor(readonly out: OutputSink) {}

  printf(text: string): void {
    this.out.write(message('printf', jsonString(text)));
  }

  printMap(dump: MapDump, opts?: { top?: number | bigint; div?: number | bigint }): void {
    this.out.write(mapJson(formatMap(dump, opts)));
  }

  printValue(v: Value | AggValue): void {
    this.out.write(message('value', jsonDisplay(toDisplay(v))));
  }

  time(text: string): void {
    this.out.write(message('time', jsonString(text)));
  }

  cat(text: string): void {
    this.out.write(message('cat', jsonString(text)));
  }

  join(text: string): void {
    this.out.write(message('join', jsonString(text)));
  }

  syscall(text: string): void {
    this.out.write(message('syscall', jsonString(text)));
  }

  /** `{"type": "attached_probes", "count": N, "data": {"probes": N}}` (0.26 added `count`). */
  /** `{"type": "benchmark_result", "data": {"NAME": {"average": NS, "iters": N}}}` (`output/json.cpp`). */
  benchmarkResult(names: string[], index: number, averageNs: number, iters: number): void {
    const name = JSON.stringify(names[index]);
    this.out.write(`{"type": "benchmark_result", "data": {${name}: {"average": ${averageNs}, "iters": ${iters}}}}\n`);
  }

  testStart(): void {}

  /**
   * `{"type": "test_result", "data": {"NAME": {"duration": NS, "passed": B, "output": ""}}}` (`output/json.cpp`);
   * a failing test's own records come before it rather than inside `output`.
   */
  testResult(names: string[], index: number, durationNs: number, passed: boolean[]): void {
    const name = JSON.stringify(names[index]);
    this.out.write(
      `{"type": "test_result", "data": {${name}: {"duration": ${durationNs}, "passed": ${passed[index]}, "output": ""}}}\n`,
    );
  }

  attachedProbes(n: number): void {
    this.out.write(`{"type": "attached_probes", "count": ${n}, "data": {"probes": ${n}}}\n`);
  }

  /** `{"type": "lost_events", "count": N, "data": {"events": N}}` (0.26 added `count`). */
  lostEvents(n: number | bigint): void {
    this.out.write(`{"type": "lost_events", "count": ${n}, "data": {"events": ${n}}}\n`);
  }

  /** End of the run: JSON prints nothing (0.17 printed two empty lines). */
  end(): void {}

  /** The maps printed at exit, in name order. */
  exitMaps(dumps: MapDump[]): void {
    this.end();
    this.signalMaps(dumps);
  }

  signalMaps(dumps: MapDump[]): void {
    for (const d of [...dumps].sort((a, b) => compareMapNames(a.name, b.name))) this.printMap(d);
  }

  flush(): void {
    this.out.flush();
  }
}
