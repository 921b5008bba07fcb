/**
 * Per-interval `hist()`/`lhist()` maps of a bpftrace program as heat map columns (`bpfscope heatmap --hist`).
 *
 * Input: the `-f json` output of bpfscope or bpftrace, one JSON object a line (bpftrace's output format, "json" in
 * its docs: `{"type": "hist", "data": {"@name": BUCKETS}}` for an unkeyed map, `{"@name": {"key": BUCKETS, ...}}`
 * for a keyed one, BUCKETS being `[{"min": A, "max": B, "count": N}, ...]`; an underflow bucket has no "min", an
 * lhist overflow bucket no "max"). Each `hist` record of the chosen map is one column, oldest first: a program that
 * does `interval:s:1 { print(@h); clear(@h); }` gives one column a second. The keys of a keyed map are summed. An
 * empty record (`[]`, a `print` of a cleared map) is a column of zeros. Records of other types (`printf`,
 * `attached_probes`, `map`, ...) and blank lines are skipped; any other line is an error (a wrong picture is
 * worse than none).
 *
 * Rows: the buckets, bottom up, from the smallest bucket that counted anything in any column to the largest, with
 * the buckets between drawn even when no record printed them: log2 buckets (`hist()`: 0, 1, 2-3, 4-7, ...) when
 * every bounded bucket is one, else linear buckets of the common width (`lhist()`). Labels: `A-B` (`A` when A is B),
 * `<A` for the underflow bucket, `>=A` for lhist's overflow, then the unit label if one is given.
 */
import { StringDecoder } from 'node:string_decoder';
import { HeatMapError, type HistHeatMap } from './heatmap.js';
import { LineSplitter } from './input.js';

/** One bucket: [min, max] (both inclusive); min absent for the underflow bucket, max for lhist's overflow. */
interface Bucket {
  min?: bigint;
  max?: bigint;
}

interface MapColumns {
  /** Bucket key (`min|max`) to bucket. */
  buckets: Map<string, Bucket>;
  /** Per column, bucket key to count. */
  columns: Map<string, bigint>[];
}

const key = (b: Bucket): string => `${b.min ?? ''}|${b.max ?? ''}`;

/** Reads bpftrace `-f json` lines; {@link HistJsonInput.heatMap} gives the columns of one histogram map. */
export class HistJsonInput {
  private readonly maps = new Map<string, MapColumns>();
  private readonly decoder = new StringDecoder('utf8');
  private readonly splitter = new LineSplitter((t, s, e) => this.line(t.slice(s, e)));
  private lineNo = 0;

  /** Feeds raw bytes (any chunking). */
  bytes(chunk: Uint8Array): void {
    this.splitter.push(this.decoder.write(chunk as Buffer));
  }

  /** End of one input file: a last line without "\n" counts. */
  end(): void {
    this.splitter.push(this.decoder.end());
    this.splitter.end();
  }

  /** One line of input. @throws HeatMapError when it is not a JSON object or a hist record is malformed */
  line(text: string): void {
    this.lineNo++;
    const t = text.trim();
    if (t === '') return;
    const bad = (why: string) =>
      new HeatMapError(`line ${this.lineNo} is not bpftrace's -f json output (${why}): "${clip(t)}"`);
    let rec: unknown;
    try {
      // Quote the bucket numbers so they are read exactly (bounds reach 2^63; JSON numbers are doubles).
      rec = JSON.parse(t.replace(/(?<!\\)("(?:min|max|count)":\s*)(-?\d+)(?=\s*[,}])/g, '$1"$2"'));
    } catch {
      throw bad('one JSON object a line');
    }
    if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) throw bad('one JSON object a line');
    const r = rec as { type?: unknown; data?: unknown };
    if (r.type !== 'hist') return;
    if (r.data === null || typeof r.data !== 'object' || Array.isArray(r.data)) throw bad('"data" is not an object');
    for (const [name, value] of Object.entries(r.data as Record<string, unknown>)) {
      let m = this.maps.get(name);
      if (!m) this.maps.set(name, (m = { buckets: new Map(), columns: [] }));
      const col = new Map<string, bigint>();
      const lists = Array.isArray(value)
        ? [value]
        : value !== null && typeof value === 'object'
          ? Object.values(value as Record<string, unknown>)
          : [value];
      for (const list of lists) {
        if (!Array.isArray(list)) throw bad(`${name}'s buckets are not a list`);
        for (const item of list) {
          const b = bucket(item);
          if (!b) throw bad(`${name} has a bucket that is not {"min": A, "max": B, "count": N}`);
          const k = key(b.bucket);
          m.buckets.set(k, b.bucket);
          if (b.count > 0n) col.set(k, (col.get(k) ?? 0n) + b.count);
        }
      }
      m.columns.push(col);
    }
  }

  /** Names of the histogram maps seen, in order of appearance. */
  mapNames(): string[] {
    return [...this.maps.keys()];
  }

  /**
   * The heat map of map `name` (default: the only histogram map of the input), rows labelled with `unitsLabel`.
   * @throws HeatMapError when the input has no histogram, several and no name, not `name`, no counts, or buckets
   *   that are neither log2 nor of one width
   */
  heatMap(name?: string, unitsLabel = ''): HistHeatMap {
    const names = this.mapNames();
    if (names.length === 0) {
      throw new HeatMapError(
        'no histogram in the input (expected bpftrace -f json output with {"type": "hist"} lines)',
      );
    }
    if (name === undefined) {
      if (names.length > 1) {
        throw new HeatMapError(`the input has several histogram maps (${names.join(', ')}): choose one with --map`);
      }
      name = names[0]!;
    }
    const m = this.maps.get(name);
    if (!m) throw new HeatMapError(`no histogram map ${name} in the input (it has ${names.join(', ')})`);
    const counted = new Map<string, Bucket>();
    for (const c of m.columns) for (const k of c.keys()) counted.set(k, m.buckets.get(k)!);
    if (counted.size === 0) throw new HeatMapError(`histogram ${name} counted nothing: no heat map to draw`);
    const rows = bucketRows([...counted.values()], [...m.buckets.values()], name);
    const unit = unitsLabel === '' ? '' : ` ${unitsLabel}`;
    const keys = rows.map(key);
    return {
      rows: rows.map((b) => label(b) + unit),
      columns: m.columns.map((c) => keys.map((k) => Number(c.get(k) ?? 0n))),
    };
  }
}

function clip(s: string): string {
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

const INT = /^-?\d+$/;

function bucket(item: unknown): { bucket: Bucket; count: bigint } | null {
  if (item === null || typeof item !== 'object') return null;
  const o = item as Record<string, unknown>;
  const num = (v: unknown) => (typeof v === 'string' && INT.test(v) ? BigInt(v) : undefined);
  const count = num(o.count);
  const min = num(o.min);
  const max = num(o.max);
  if (count === undefined || count < 0n) return null;
  if ((o.min !== undefined && min === undefined) || (o.max !== undefined && max === undefined)) return null;
  if (min === undefined && max === undefined) return null;
  if (min !== undefined && max !== undefined && max < min) return null;
  return { bucket: { min, max }, count };
}

/** [0,0], [1,1] and [2^k, 2^(k+1) - 1]: hist()'s buckets. */
function isLog2(b: Bucket): boolean {
  if (b.min === undefined || b.max === undefined) return false;
  if (b.min === 0n || b.min === 1n) return b.max === b.min;
  return b.min > 0n && (b.min & (b.min - 1n)) === 0n && b.max === 2n * b.min - 1n;
}

/** The rows from the smallest to the largest counted bucket, the buckets between included (see the module). */
function bucketRows(counted: Bucket[], all: Bucket[], name: string): Bucket[] {
  // Underflow first, overflow last, bounded ones by their minimum.
  const order = (b: Bucket): bigint => (b.min === undefined ? -(1n << 80n) : b.min);
  counted.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  const bounded = all.filter((b) => b.min !== undefined && b.max !== undefined);
  const log2 = bounded.every(isLog2) && all.every((b) => b.max !== undefined && (b.min !== undefined || b.max === -1n));
  let width = 0n;
  if (!log2) {
    for (const b of bounded) {
      const w = b.max! - b.min! + 1n;
      if (width === 0n) width = w;
      else if (w !== width) {
        throw new HeatMapError(`histogram ${name}'s buckets are neither log2 (hist) nor of one width (lhist)`);
      }
    }
  }
  const rows: Bucket[] = [];
  for (const b of counted) {
    const prev = rows[rows.length - 1];
    if (prev?.max !== undefined && b.min !== undefined && (log2 || width > 0n)) {
      // Fill the gap: the buckets after prev that start below b.
      let next = nextBucket(prev, log2, width);
      while (next.min! < b.min) {
        if (rows.length > 10_000) throw new HeatMapError(`histogram ${name} has too many rows (>10000)`);
        rows.push(next);
        next = nextBucket(next, log2, width);
      }
    }
    rows.push(b);
  }
  return rows;
}

/** The bucket after `b` (which has a max: bounded or underflow). */
function nextBucket(b: Bucket, log2: boolean, width: bigint): Bucket {
  const max = b.max!;
  if (log2) {
    // After the underflow (max -1): [0,0]; then [1,1], [2,3], [4,7], ...
    if (max <= 0n) return { min: max + 1n, max: max + 1n };
    return { min: max + 1n, max: 2n * max + 1n };
  }
  return { min: max + 1n, max: max + width };
}

function label(b: Bucket): string {
  if (b.min === undefined) return `<${b.max! + 1n}`;
  if (b.max === undefined) return `>=${b.min}`;
  return b.min === b.max ? `${b.min}` : `${b.min}-${b.max}`;
}
